#!/usr/bin/python3
# views.py - the query-view benchmark: a filtered slice of a table against the whole table.
"""A table of N entities (bench/seed.py's, P partitions) of which a filter
matches M (``Visits lt K``: Visits is i % 1000, so K = 1000 M / N), read
through a proxy that holds every request for D ms, side by side in one run,
each from a fresh mount:

* ``find`` of the view ``/mnt/T/.where/Visits lt K/`` (the listing);
* ``grep -r`` in the view (listing and reading every file);
* ``rsync -a`` of the view to a local directory;
* ``rsync -a`` of the whole table (what a user without views would copy,
  then filter).

Prints a markdown table with wall times, requests as the mount counted them
(point reads apart), the files copied, and the ratios whole table / view.

    /usr/bin/python3 bench/views.py [--entities 20000] [--partitions 20]
                                    [--matches 200] [--delays 0,10] [--out FILE]

AZTFS_BIN overrides ./aztfs.
"""

import argparse
import math
import os
import shutil
import sys
import tempfile
import time

from common import Azurite, BenchError, Mount, emit_report, run_timed, shell
from harness import FaultProxy, conn_str_for
from seed import seed_table

TABLE = "benchViews"


def timed(workdir, conn_str, cmd, scratch):
    """Run CMD (a shell command with {m} for the mount point) on a fresh
    mount: wall seconds, requests, point reads, stdout."""
    with Mount(workdir, conn_str) as m:
        before = m.stats()["requests_by_kind"]
        t0 = time.perf_counter()
        r = run_timed(shell(cmd.format(m=str(m))), scratch).check()
        wall = time.perf_counter() - t0
        after = m.stats()["requests_by_kind"]
    total = sum(after[k] - before[k] for k in after)
    return wall, total, after["get_entity"] - before["get_entity"], r.stdout


def count_files(d):
    return sum(len(f) for _, _, f in os.walk(d))


def run(args):
    work = tempfile.mkdtemp(prefix="aztfs-views-")
    rows = []
    k = 1000 * args.matches // args.entities
    view = "{m}/%s/.where/Visits lt %d" % (TABLE, k)
    try:
        with Azurite(work) as az:
            seed_table(az.conn_str, TABLE, args.entities, args.partitions)
            for d in args.delays:
                with FaultProxy(az.port, rate=0.0, delay=d / 1000.0) as px:
                    cs = conn_str_for(px.port)
                    out_v, out_t = os.path.join(work, "view%g" % d), os.path.join(work, "all%g" % d)
                    ls = timed(work, cs, "find '%s' -type f | wc -l" % view, work)
                    grep = timed(work, cs, "grep -rl Customer '%s' | wc -l" % view, work)
                    rs_v = timed(work, cs, "rsync -a '%s/' '%s/'" % (view, out_v), work)
                    rs_t = timed(work, cs, "rsync -a '{m}/%s/' '%s/'" % (TABLE, out_t), work)
                    listed, grepped = int(ls[3].strip()), int(grep[3].strip())
                    copied_v, copied_t = count_files(out_v), count_files(out_t)
                    if not listed == grepped == copied_v == args.matches:
                        raise BenchError("the view showed %d/%d/%d files, not %d"
                                         % (listed, grepped, copied_v, args.matches))
                    if copied_t != args.entities:
                        raise BenchError("the table copy has %d files" % copied_t)
                    rows.append((d, ls, grep, rs_v, rs_t, copied_v, copied_t))
                    shutil.rmtree(out_v)
                    shutil.rmtree(out_t)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows, k


def report(rows, args, k):
    bound = math.ceil(args.matches / 1000)
    out = ["N = %d entities in %d partitions, filter `Visits lt %d` matching M = %d; "
           "bound for a view: ceil(M/1000) = %d request(s) (Azurite sends no empty pages)."
           % (args.entities, args.partitions, k, args.matches, bound), "",
           "| delay ms | find view: s / req | grep -r view: s / req | rsync view: s / req "
           "| rsync table: s / req | point reads | x time (table / view) "
           "| x requests (table / view) |",
           "|---|---|---|---|---|---|---|---|"]
    for d, ls, grep, rs_v, rs_t, _, _ in rows:
        out.append("| %g | %.2f / %d | %.2f / %d | %.2f / %d | %.2f / %d | %d | %.1f | %.1f |"
                   % (d, ls[0], ls[1], grep[0], grep[1], rs_v[0], rs_v[1], rs_t[0], rs_t[1],
                      ls[2] + grep[2] + rs_v[2] + rs_t[2], rs_t[0] / rs_v[0],
                      rs_t[1] / max(rs_v[1], 1)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=20000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--matches", type=int, default=200)
    ap.add_argument("--delays", default="0,10", help="ms added to every request, comma-separated")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.delays = [float(x) for x in a.delays.split(",")]
    if a.entities % 1000 or (1000 * a.matches) % a.entities:
        print("views.py: --entities must be a multiple of 1000 and --matches a multiple of "
              "N/1000", file=sys.stderr)
        return 2
    try:
        rows, k = run(a)
        text = "## Query views (a filtered slice vs the whole table)\n\n" + \
            report(rows, a, k) + "\n"
    except BenchError as e:
        print("views.py: %s" % e, file=sys.stderr)
        return 1
    emit_report(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
