#!/usr/bin/python3
# scale.py - whole-table walks at 100k and 1M entities: time, requests, peak RSS, kernel inodes.
"""For each table size (P partitions, served by bench/memtable.py: in
memory, in parallel, so the service is not the limit) and each walk
(``find -type f``, ``grep -r -c``, ``tar -cf - . | cat``), a cold mount
per run, for each ``-o forget_after`` value side by side: wall seconds,
requests, the daemon's peak RSS (VmHWM), and the fuse_inode objects the
kernel holds at the walk's end (/proc/slabinfo, kernel-wide: run nothing
else meanwhile; root only). Prints a markdown table, with the slope of the
peak RSS per entity between the smallest and largest size.

    /usr/bin/python3 bench/scale.py [--sizes 100000,1000000] [--partitions 100]
                                    [--walks find,grep,tar] [--forget 32768,0] [--out F]
"""

import argparse
import os
import shutil
import tempfile
import time

from common import BenchError, Mount, emit_report, run_timed, shell
from harness import conn_str_for
from memtable import MemTable

WALKS = {
    "find": "find '{m}/{t}' -type f | wc -l",
    "grep": "grep -r -c '\"PartitionKey\"' '{m}/{t}' | wc -l",
    "tar": "cd '{m}/{t}' && tar -cf - . | cat | wc -c",
}


def fuse_inodes():
    with open("/proc/slabinfo") as f:
        for line in f:
            if line.startswith("fuse_inode "):
                return int(line.split()[1])
    raise BenchError("no fuse_inode line in /proc/slabinfo")


def one(work, cs, table, walk, forget):
    """WALK of TABLE on a fresh mount with forget_after=FORGET: (wall,
    requests, peak RSS MiB, fuse_inode objects at the end, stdout)."""
    with Mount(work, cs, options=["-o", "forget_after=%d" % forget]) as m:
        before = m.stats()["requests"]
        t0 = time.perf_counter()
        r = run_timed(shell(WALKS[walk].format(m=str(m), t=table)), work, timeout=7200).check()
        wall = time.perf_counter() - t0
        time.sleep(0.5)                 # inodes freed after an RCU grace period
        inodes = fuse_inodes()
        reqs = m.stats()["requests"] - before
        rss = m.peak_rss_kib() / 1024.0
    return wall, reqs, rss, inodes, r.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--walks", default="find,grep,tar")
    ap.add_argument("--forget", default="32768,0")
    ap.add_argument("--out")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    forgets = [int(x) for x in a.forget.split(",")]
    walks = a.walks.split(",")
    work = tempfile.mkdtemp(prefix="aztfs-scale-")
    out = ["| walk | entities | forget_after | seconds | requests | ceil(N/1000)+P | "
           "peak RSS MiB | kernel fuse_inode at the end |", "|---|---|---|---|---|---|---|---|"]
    peaks = {}
    try:
        for n in sizes:
            table = "scale%d" % n
            srv = MemTable({table: (n, a.partitions)})
            try:
                cs = conn_str_for(srv.port)
                base = fuse_inodes()
                for w in walks:
                    for g in forgets:
                        wall, reqs, rss, inodes, outp = one(work, cs, table, w, g)
                        if w in ("find", "grep") and int(outp) != n:
                            raise BenchError("%s saw %s files of %d" % (w, outp, n))
                        peaks.setdefault((w, g), []).append((n, rss))
                        out.append("| %s | %d | %d | %.1f | %d | %d | %.1f | %d |" % (
                            w, n, g, wall, reqs, -(-n // 1000) + a.partitions, rss,
                            inodes - base))
                        print(out[-1], flush=True)
            finally:
                srv.close()
        if len(sizes) > 1:
            out.append("")
            out.append("| walk | forget_after | peak RSS slope, bytes per entity |")
            out.append("|---|---|---|")
            for (w, g), pts in sorted(peaks.items()):
                (n0, r0), (n1, r1) = pts[0], pts[-1]
                out.append("| %s | %d | %.1f |" % (w, g, (r1 - r0) * 1048576 / (n1 - n0)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    emit_report("\n".join(out), a.out)


if __name__ == "__main__":
    main()
