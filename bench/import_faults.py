#!/usr/bin/python3
# import_faults.py - the import benchmark under faults: 503s and lost answers.
"""Restore an NDJSON backup of N entities in P partitions (bench/import.py's
file) into a new table through tests/faultproxy.py, once per fault mix, side
by side in one run:

* none: no fault (the baseline);
* 503 10% / 20%: that share of the requests refused with 503 before the
  service sees them (no Retry-After);
* 503_after 10%: that share applied by the service and answered with 503
  (the answer lost: the mount cannot tell whether it was applied).

``mkdir /mnt/T && cat backup.ndjson > /mnt/T/.ndjson`` (``>>`` with
--insert), timed with the unmount. Reports seconds, the requests the proxy
saw and the faults it injected (of the first run), and the median time
over the fault-free run's (after a warm-up import that is not counted); each
table is checked through the SDK against the backup (every entity, every
typed value).

    /usr/bin/python3 bench/import_faults.py [--entities 3000,20000]
        [--partitions 10] [--insert] [--repeat 1] [--timeout 600] [--out FILE]

AZTFS_BIN overrides ./aztfs.
"""

import argparse
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import time

from common import Azurite, BenchError, Mount, emit_report, run_timed, shell
from harness import FaultProxy, conn_str_for

_imp = importlib.import_module("import")   # bench/import.py: its file and its check
make_ndjson, same_tables = _imp.make_ndjson, _imp.same_tables

MIXES = [("none", 0.0, []), ("503 10%", 0.1, ["503"]), ("503 20%", 0.2, ["503"]),
         ("503_after 10%", 0.1, ["503_after"])]


def one(work, az, backup, table, rate, kinds, insert, timeout):
    """Import BACKUP into TABLE through a proxy injecting KINDS at RATE:
    (seconds, requests seen, faults injected)."""
    with FaultProxy(az.port, rate=0.0, seed=7) as px:
        m = Mount(work, conn_str_for(px.port), [])
        m.start()
        try:
            os.mkdir(m.join(table))
            before = px.counts()
            px.set_faults(rate=rate, kinds=kinds or None)
            t0 = time.perf_counter()
            run_timed(shell("cat %s >%s %s" % (backup, ">" if insert else "",
                                              m.join(table, ".ndjson"))),
                      work, timeout=timeout).check()
            m.unmount()
            wall = time.perf_counter() - t0
            after = px.counts()
        finally:
            m.unmount(check=False)
    faults = sum(after.get(k, 0) - before.get(k, 0) for k in kinds)
    return wall, after.get("requests", 0) - before.get("requests", 0), faults


def run(args):
    work = tempfile.mkdtemp(prefix="aztfs-importf-")
    rows = []
    try:
        with Azurite(work) as az:
            for n in args.entities:
                backup = make_ndjson(work, n, args.partitions)
                base = None
                # a warm-up (Azurite's first tables are slower), not counted
                one(work, az, backup, "w%d" % n, 0.0, [], args.insert, args.timeout)
                for i, (name, rate, kinds) in enumerate(MIXES):
                    runs = []
                    for r in range(args.repeat):
                        table = "f%d%s%d%d" % (n, "i" if args.insert else "u", i, r)
                        runs.append(one(work, az, backup, table, rate, kinds, args.insert,
                                        args.timeout))
                    wall = statistics.median(w for w, _, _ in runs)
                    _, req, faults = runs[0]
                    table = "f%d%s%d0" % (n, "i" if args.insert else "u", i)
                    if i == 0:
                        base = (table, wall, req)   # requests: one per transaction
                    else:
                        cnt, same = same_tables(az.conn_str, base[0], table)
                        if cnt != n or not same:
                            raise BenchError("%s: the tables differ: %d entities, same %s"
                                             % (name, cnt, same))
                    rows.append((n, name, wall, req, faults, base[2], wall / base[1]))
                    print("%d %s: %.2f s, %d requests, %d faults" % (n, name, wall, req, faults),
                          file=sys.stderr, flush=True)
                os.unlink(backup)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def report(rows, args):
    out = ["| N | faults | s | requests | injected | transactions | time / fault-free |",
           "|---|---|---|---|---|---|---|"]
    for n, name, wall, req, faults, tx, ratio in rows:
        out.append("| %d | %s | %.2f | %d | %d | %d | %.2f |" % (
            n, name, wall, req, faults, tx, ratio))
    out.append("")
    out.append("`mkdir /mnt/T && cat backup.ndjson >%s /mnt/T/.ndjson` and the unmount, "
               "%d partitions, through tests/faultproxy.py; requests and injected faults as "
               "the proxy counted them; transactions: the fault-free run's requests" % (">" if args.insert else "", args.partitions))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", default="3000,20000")
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--insert", action="store_true", help="append (>>): Insert, not Upsert")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each mix (median time)")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.entities = [int(x) for x in a.entities.split(",")]
    try:
        text = ("## Import under faults (%s)\n\n" % (">>" if a.insert else ">")
                + report(run(a), a) + "\n")
    except BenchError as e:
        print("import_faults.py: %s" % e, file=sys.stderr)
        return 1
    emit_report(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
