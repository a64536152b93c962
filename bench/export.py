#!/usr/bin/python3
# export.py - a table's export stream against the raw REST scan and tar over its files.
"""One table of N entities in P partitions, served by bench/memtable.py (in
memory, in parallel: the service is not the limit), read side by side in one
run, each on a fresh mount where aztfs takes part:

* ``REST scan``: bench/rest_scan.py, Query Entities over one keep-alive
  connection, decoding each page, writing nothing (the protocol floor);
* ``cat .ndjson``: ``cat MOUNT/T/.ndjson > /dev/null``, with aztfs's
  defaults (scan_parallel=4) and with ``-o scan_parallel=1``; its lines are
  counted afterwards on the same mount (``wc -l``, untimed) and must be N;
* ``head -n 1``: the first line only; how many requests the stream sent
  before it was closed;
* ``tar``: ``tar -cf - -C MOUNT T | cat > /dev/null`` over the per-entity
  files.

For each: wall seconds (spawn to exit), requests (aztfs: its own counter,
every attempt; the REST scan: its pages), the daemon's peak RSS since the
mount (VmHWM; the REST scan's own), and the ratios to the REST scan. The
targets of issue 33: the stream within 1.5x of the REST scan, and at least
5x faster than tar.

    /usr/bin/python3 bench/export.py [--entities 100000] [--partitions 100]
                                     [--delays 0,10] [--repeat 1] [--skip-tar] [--out F]
    /usr/bin/python3 bench/export.py --entities 5000 --partitions 10   # the smoke run, seconds
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from common import BenchError, Mount, emit_report, run_timed, shell
from harness import conn_str_for
from memtable import MemTable

HERE = os.path.dirname(os.path.abspath(__file__))


def rest_scan(work, cs, table):
    r = run_timed([sys.executable, os.path.join(HERE, "rest_scan.py"), table], work,
                  env={"AZURE_STORAGE_CONNECTION_STRING": cs}, timeout=7200).check()
    out = json.loads(r.stdout)
    return r.wall, out["requests"], out["peak_rss_kib"] / 1024.0, out["entities"]


def on_mount(work, cs, cmd, options=(), count=None):
    """CMD (a shell command; {m} is the mount) on a fresh mount: (wall,
    requests, the daemon's peak RSS MiB since the mount). With COUNT, the
    stream's lines are counted afterwards (untimed) and must be COUNT."""
    with Mount(work, cs, options=list(options)) as m:
        before = m.stats()["requests"]
        r = run_timed(shell(cmd.format(m=str(m))), work, timeout=7200).check()
        time.sleep(0.5)          # a closed stream's last fetches settle in the counter
        reqs = m.stats()["requests"] - before
        rss = m.peak_rss_kib() / 1024.0
        if count is not None:
            lines = run_timed(shell("wc -l < '%s/%s'" % (m, count[0])), work,
                              timeout=7200).check().stdout.strip()
            if int(lines) != count[1]:
                raise BenchError("%s has %s lines, not %d" % (count[0], lines, count[1]))
    return r.wall, reqs, rss


def measure(work, n, table, partitions, delay_ms, repeat, skip_tar):
    """Every workload REPEAT times against one MemTable holding TABLE (N
    entities in PARTITIONS) answering after DELAY_MS: {workload: [(wall,
    requests, peak RSS MiB)]}, and the seconds the table took to build."""
    stream = "%s/.ndjson" % table
    runs = {}
    t_seed = time.perf_counter()
    srv = MemTable({table: (n, partitions)}, delay=delay_ms / 1000.0)
    t_seed = time.perf_counter() - t_seed
    try:
        cs = conn_str_for(srv.port)
        for _ in range(repeat):
            wall, reqs, rss, ents = rest_scan(work, cs, table)
            if ents != n:
                raise BenchError("the REST scan saw %d entities of %d" % (ents, n))
            runs.setdefault("REST scan", []).append((wall, reqs, rss))
            runs.setdefault("cat .ndjson", []).append(on_mount(
                work, cs, "cat '{m}/%s' > /dev/null" % stream, count=(stream, n)))
            runs.setdefault("cat .ndjson, scan_parallel=1", []).append(on_mount(
                work, cs, "cat '{m}/%s' > /dev/null" % stream, ["-o", "scan_parallel=1"],
                count=(stream, n)))
            runs.setdefault("head -n 1 .ndjson", []).append(on_mount(
                work, cs, "head -n 1 '{m}/%s' | grep -q PartitionKey" % stream))
            if not skip_tar:
                runs.setdefault("tar of the files", []).append(on_mount(
                    work, cs, "tar -cf - -C '{m}' %s | cat > /dev/null" % table))
            for k, v in runs.items():
                print("%g ms, %s: %s" % (delay_ms, k, v[-1]), file=sys.stderr, flush=True)
    finally:
        srv.close()
    return runs, t_seed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=100000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--delays", default="0", help="ms each answer is held, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-tar", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    n, table = a.entities, "export%d" % a.entities
    work = tempfile.mkdtemp(prefix="aztfs-export-")
    results = []
    try:
        for d in (float(x) for x in a.delays.split(",")):
            results.append((d,) + measure(work, n, table, a.partitions, d, a.repeat, a.skip_tar))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    out = ["# Export stream benchmark", "",
           "%d entities in %d partitions (bench/seed.py's, about 300 bytes each), served by "
           "bench/memtable.py (each answer held the delay shown; the table built in %s s); "
           "median of %d run(s); nproc %d." % (
               n, a.partitions, ", ".join("%.1f" % r[2] for r in results), a.repeat,
               os.cpu_count()), "",
           "| delay ms | workload | seconds | requests | peak RSS MiB | x REST | entities/s |",
           "|---|---|---|---|---|---|---|"]
    targets = ["", "| delay ms | target | value | met |", "|---|---|---|---|"]
    for d, runs, _ in results:
        med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3))
               for k, v in runs.items()}
        rest = med["REST scan"][0]
        for k, (wall, reqs, rss) in med.items():
            out.append("| %g | %s | %.2f | %d | %.1f | %.2f | %s |" % (
                d, k, wall, reqs, rss, wall / rest,
                "-" if k.startswith("head") else "%.0f" % (n / wall)))
        cat = med["cat .ndjson"][0]
        targets.append("| %g | cat .ndjson / REST scan <= 1.5 | %.2f | %s |" % (
            d, cat / rest, "yes" if cat / rest <= 1.5 else "NO"))
        if "tar of the files" in med:
            tar = med["tar of the files"][0]
            targets.append("| %g | tar / cat .ndjson >= 5 | %.1f | %s |" % (
                d, tar / cat, "yes" if tar / cat >= 5 else "NO"))
    emit_report("\n".join(out + targets), a.out)


if __name__ == "__main__":
    main()
