#!/usr/bin/python3
# find_parallel.py - cold find of a table at a distance, by scan_parallel value (median of runs).
"""For each table shape (bench/seed.py's tables, seeded once) and each
delay D (every request held D ms by tests/faultproxy.py), time the
sequential raw paged scan (bench/rest_scan.py) and aztfs's cold
``find -type f | wc -l`` on a fresh mount for each ``-o scan_parallel``
value; each the median of REPEAT runs. Prints a markdown table: seconds,
the ratio to the REST scan, and the requests of the median run.

    /usr/bin/python3 bench/find_parallel.py [--tables 20000x20,20000x1,30000x10]
                                            [--delays 0,25] [--parallel 1,4,8] [--repeat 3]
                                            [--server azurite|memtable]
                                            [--aztfs BIN]...

AZTFS_BIN overrides ./aztfs; ``--aztfs`` (repeated) times several builds
side by side, each cell's runs interleaved with the others'. Cheaper than
bench/latency.py (no SDK dump, no rsync), for choosing scan_parallel's
default. ``--server memtable``
serves the same entities from bench/memtable.py instead of Azurite: a
read-only endpoint in processes of its own that serves requests in
parallel (Azurite serves one at a time), to see what the parallel listing
does when the server is not the limit; it holds each answer D ms itself
(no proxy relaying the bytes through Python on the same two cores).
"""

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile

from common import Azurite, BenchError, emit_report
from harness import FaultProxy, conn_str_for
from latency import script, walk
from memtable import MemTable
from seed import seed_table


def walk_with(binary, work, cs, cmd, opts):
    """latency.walk with aztfs BINARY (None: $AZTFS_BIN or ./aztfs)."""
    saved = os.environ.get("AZTFS_BIN")
    if binary:
        os.environ["AZTFS_BIN"] = binary
    try:
        return walk(work, cs, cmd, opts)
    finally:
        if saved is None:
            os.environ.pop("AZTFS_BIN", None)
        else:
            os.environ["AZTFS_BIN"] = saved


def delay_rows(a, work, shapes, names, d, cs, pars, bins):
    """The table's rows for delay D against the endpoint at CS: a cell per
    scan_parallel value and build, their runs interleaved (the machine
    drifts between runs; interleaving spreads that over every cell)."""
    rows = []
    for n, p in shapes:
        t = names[(n, p)]
        rest = statistics.median(script("rest_scan.py", [t], cs, work)[0]
                                 for _ in range(a.repeat))
        runs = {(par, b): [] for par in pars for b in bins}
        for _ in range(a.repeat):
            for par in pars:
                for b in bins:
                    runs[(par, b)].append(walk_with(b, work, cs,
                                                    "find '{m}/%s' -type f | wc -l" % t,
                                                    "scan_parallel=%d" % par))
        cells = []
        for par in pars:
            for b in bins:
                m = sorted(runs[(par, b)], key=lambda w: w[0])[len(runs[(par, b)]) // 2]
                if int(m[3].strip()) != n:
                    raise BenchError("find saw %s files" % m[3].strip())
                cells.append("%.2f (%.2fx) / %d" % (m[0], m[0] / rest, m[1]))
        rows.append("| %d in %d | %g | %.2f | %s |" % (n, p, d, rest, " | ".join(cells)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", default="20000x20,20000x1,30000x10")
    ap.add_argument("--delays", default="0,25")
    ap.add_argument("--parallel", default="1,4,8")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--server", choices=("azurite", "memtable"), default="azurite")
    ap.add_argument("--aztfs", action="append", metavar="BIN",
                    help="an aztfs binary to time (repeat to compare builds, runs interleaved; "
                    "default: $AZTFS_BIN or ./aztfs)")
    ap.add_argument("--out")
    a = ap.parse_args()
    bins = a.aztfs or [None]
    shapes = [tuple(int(x) for x in t.split("x")) for t in a.tables.split(",")]
    pars = [int(x) for x in a.parallel.split(",")]
    work = tempfile.mkdtemp(prefix="aztfs-findpar-")
    out = ["| table | D ms | REST scan s | " +
           " | ".join("find, scan_parallel=%d%s s (x REST) / req"
                      % (p, " (%s)" % b if len(bins) > 1 else "") for p in pars for b in bins) +
           " |", "|---|---|---|" + "---|" * (len(pars) * len(bins))]
    try:
        names = {(n, p): "findPar%dx%d" % (n, p) for n, p in shapes}
        with contextlib.ExitStack() as stack:
            if a.server == "azurite":
                az = stack.enter_context(Azurite(work))
                for (n, p), name in names.items():
                    seed_table(az.conn_str, name, n, p)
            for d in (float(x) for x in a.delays.split(",")):
                with contextlib.ExitStack() as per_delay:
                    if a.server == "azurite":
                        port = per_delay.enter_context(
                            FaultProxy(az.port, rate=0.0, delay=d / 1000.0)).port
                    else:
                        srv = MemTable({names[s]: s for s in shapes}, delay=d / 1000.0)
                        per_delay.callback(srv.close)
                        port = srv.port
                    out += delay_rows(a, work, shapes, names, d, conn_str_for(port), pars, bins)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    emit_report("\n".join(out), a.out)


if __name__ == "__main__":
    main()
