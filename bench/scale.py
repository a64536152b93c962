#!/usr/bin/python3
# scale.py - whole-table walks at 100k and 1M entities: time, requests, peak RSS, kernel inodes.
"""For each table size (P partitions, served by bench/memtable.py: in
memory, in parallel, so the service is not the limit) and each walk
(``find -type f``, ``grep -r -c``, ``tar -cf - . | cat``, ``rsync -a``
into a local directory), a cold mount per run, for each
``-o forget_after`` value side by side: wall seconds, the daemon's CPU
seconds (user + system, /proc/PID/stat), the CPU time the hypervisor
stole from this machine meanwhile (/proc/stat: on a shared host the
walls move with it, the daemon's CPU much less), requests, the daemon's
peak RSS (VmHWM), its RSS sampled every second, and the fuse_inode
objects the kernel holds at the walk's end (/proc/slabinfo, kernel-wide:
run nothing else meanwhile; root only). Every size's endpoint is up for
the whole run and the sizes take turns within each round and walk, so a
ratio between sizes compares runs made minutes apart, not a whole size's
runs apart. Prints a markdown table, the medians with the ratio of each
size to the smallest, and two slopes of RSS per entity: within each walk,
from its half-time sample to its peak (the entities walked in between
taken as half the table: a walk goes at an even pace), and between the
smallest and largest size's peaks. A size N:P overrides --partitions.

With ``--floor``, every walk also runs, in turn with aztfs's, over the same
shape of tree served from memory by bench/floorfs.c (the FUSE floor: what
FUSE, the kernel and the tool cost without aztfs; each entity a file of
its JSON in /dev/shm, written once per size), so the ratio between sizes
of a walk over aztfs can be read against the same ratio over the floor.

    /usr/bin/python3 bench/scale.py [--sizes 100000,1000000] [--partitions 100]
                                    [--walks find,grep,tar,rsync] [--forget 32768,0]
                                    [--rounds N] [--floor] [--bins LABEL=PATH,...] [--out F]

With ``--bins``, every walk runs, in turn, under each aztfs binary given
(``before=/tmp/old/aztfs,after=./aztfs``): builds compared side by side in
one run, each row's walk named with its label.
"""

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time

from common import BenchError, Mount, emit_report, run_timed, shell
from harness import conn_str_for
from latency import build_floor, floor_mounted
from memtable import MemTable
from seed import entity, entity_path

WALKS = {
    "find": "find '{m}/{t}' -type f | wc -l",
    "grep": "grep -r -c '\"PartitionKey\"' '{m}/{t}' | wc -l",
    "tar": "cd '{m}/{t}' && tar -cf - . | cat | wc -c",
    "rsync": "rsync -a '{m}/{t}/' '{w}/copy/' && find '{w}/copy' -type f | wc -l"
             " && rm -rf '{w}/copy'",
}


class RssSampler:
    """VmRSS of PID every second, in a thread, while the walk runs."""

    def __init__(self, pid):
        self.pid, self.samples, self.stop = pid, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.t0 = time.perf_counter()
        self.thread.start()

    def run(self):
        while not self.stop.wait(1.0):
            try:
                with open("/proc/%d/status" % self.pid) as f:
                    kib = next(int(x.split()[1]) for x in f if x.startswith("VmRSS:"))
            except (OSError, StopIteration):
                return
            self.samples.append((time.perf_counter() - self.t0, kib / 1024.0))

    def halves(self):
        """RSS MiB at the walk's half time, and the largest after it."""
        self.stop.set()
        self.thread.join()
        if len(self.samples) < 4:
            return None, None
        mid = self.samples[-1][0] / 2
        first = [r for t, r in self.samples if t <= mid]
        second = [r for t, r in self.samples if t > mid]
        return first[-1], max(second)


def fuse_inodes():
    """Active fuse_inode objects, kernel-wide, the slab shrunk first (objects
    freed into a CPU's cache count as active until then)."""
    try:
        with open("/sys/kernel/slab/fuse_inode/shrink", "w") as f:
            f.write("1")
    except OSError:
        pass
    with open("/proc/slabinfo") as f:
        for line in f:
            if line.startswith("fuse_inode "):
                return int(line.split()[1])
    raise BenchError("no fuse_inode line in /proc/slabinfo")


def cpu_seconds(pid):
    """User + system CPU seconds of process PID so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_seconds():
    """CPU seconds stolen from this machine by its hypervisor so far (all CPUs)."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    return int(cpu[8]) / os.sysconf("SC_CLK_TCK") if len(cpu) > 8 else 0.0


class Run:
    """One walk's measures (see one())."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def one(work, cs, table, walk, forget):
    """WALK of TABLE on a fresh mount with forget_after=FORGET: a Run of
    wall, cpu (the daemon's), steal, reqs, rss (peak, MiB), inodes (kernel
    fuse_inode objects at the end), out (the walk's stdout), half and late
    (RSS MiB at half time, the largest after it)."""
    with Mount(work, cs, options=["-o", "forget_after=%d" % forget]) as m:
        before = m.stats()["requests"]
        cpu0, steal0 = cpu_seconds(m.proc.pid), steal_seconds()
        t0 = time.perf_counter()
        rs = RssSampler(m.proc.pid)
        r = run_timed(shell(WALKS[walk].format(m=str(m), t=table, w=work)), work,
                      timeout=7200).check()
        wall = time.perf_counter() - t0
        cpu, steal = cpu_seconds(m.proc.pid) - cpu0, steal_seconds() - steal0
        half, late = rs.halves()
        time.sleep(0.5)                 # inodes freed after an RCU grace period
        inodes = fuse_inodes()
        reqs = m.stats()["requests"] - before
        rss = m.peak_rss_kib() / 1024.0
    return Run(wall=wall, cpu=cpu, steal=steal, reqs=reqs, rss=rss, inodes=inodes,
               out=r.stdout.strip(), half=half, late=late)


def floor_tree(root, table, n, parts):
    """ROOT/TABLE/PK/RK.json for the N entities of bench/seed.py in PARTS
    partitions, each its JSON laid out as a file (about the size of
    aztfs's rendering of it)."""
    for i in range(n):
        path = os.path.join(root, table, entity_path(i, parts))
        if i < parts:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(entity(i, parts), f, indent=2)
            f.write("\n")


def one_floor(exe, tree, work, table, walk):
    """WALK of TABLE over floorfs serving TREE: a Run of wall and out (the
    other measures are aztfs's and stay 0)."""
    with floor_mounted(exe, tree, work, timeout=600) as mnt:   # it reads the tree first
        t0 = time.perf_counter()
        r = run_timed(shell(WALKS[walk].format(m=mnt, t=table, w=work)), work,
                      timeout=7200).check()
        wall = time.perf_counter() - t0
    return Run(wall=wall, cpu=0.0, steal=0.0, reqs=0, rss=0.0, inodes=0, out=r.stdout.strip(),
               half=None, late=None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--walks", default="find,grep,tar,rsync")
    ap.add_argument("--forget", default="32768,0")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each walk, one row each")
    ap.add_argument("--floor", action="store_true", help="the walks over floorfs too")
    ap.add_argument("--bins", help="LABEL=PATH,...: aztfs binaries taking turns")
    ap.add_argument("--out")
    a = ap.parse_args()
    sizes = [(int(x.split(":")[0]), int(x.split(":")[1]) if ":" in x else a.partitions)
             for x in a.sizes.split(",")]
    forgets = [int(x) for x in a.forget.split(",")]
    walks = a.walks.split(",")
    bins = [tuple(x.split("=", 1)) for x in a.bins.split(",")] if a.bins else [(None, None)]
    for label, exe in bins:
        if exe and not os.access(exe, os.X_OK):
            raise SystemExit("--bins: %s is not an executable" % exe)
    work = tempfile.mkdtemp(prefix="aztfs-scale-")
    out = ["| walk | entities | partitions | forget_after | seconds | daemon CPU s | "
           "stolen CPU s | requests | ceil(N/1000)+P | peak RSS MiB | "
           "RSS at half time / after MiB | second half's slope, B per entity | "
           "kernel fuse_inode at the end |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    peaks, runs = {}, {}
    servers, trees, floor = {}, {}, None
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    try:
        for n, parts in sizes:
            servers[(n, parts)] = MemTable({"scale%d" % n: (n, parts)})
            if a.floor:
                trees[(n, parts)] = tempfile.mkdtemp(prefix="aztfs-scale-floor-", dir=shm)
                floor_tree(trees[(n, parts)], "scale%d" % n, n, parts)
        if a.floor:
            floor = build_floor(work)
        base = fuse_inodes()
        for w, g, _ in [(w, g, k) for k in range(a.rounds) for w in walks for g in forgets]:
            for (n, parts), (label, exe) in [(s, b) for s in sizes for b in bins]:
                cs = conn_str_for(servers[(n, parts)].port)   # sizes and builds take turns
                if exe:
                    os.environ["AZTFS_BIN"] = exe
                r = one(work, cs, "scale%d" % n, w, g)
                wl = "%s, %s" % (w, label) if label else w
                runs.setdefault((wl, n, parts, g), []).append(r)
                if w in ("find", "grep", "rsync") and int(r.out.split()[-1]) != n:
                    raise BenchError("%s saw %s files of %d" % (w, r.out, n))
                peaks.setdefault((wl, g), []).append((n, r.rss))
                within = ("%.1f / %.1f" % (r.half, r.late), "%.1f" % (
                    (r.late - r.half) * 1048576 / (n / 2))) if r.half else ("-", "-")
                out.append("| %s | %d | %d | %d | %.2f | %.2f | %.1f | %d | %d | %.1f | %s | %s "
                           "| %d |" % (w, n, parts, g, r.wall, r.cpu, r.steal, r.reqs,
                                       -(-n // 1000) + parts, r.rss, within[0], within[1],
                                       r.inodes - base))
                out[-1] = out[-1].replace("| %s |" % w, "| %s |" % wl, 1)
                print(out[-1], flush=True)
                if floor and g == forgets[0] and exe == bins[-1][1]:
                    r = one_floor(floor, trees[(n, parts)], work, "scale%d" % n, w)
                    runs.setdefault(("%s, floorfs" % w, n, parts, g), []).append(r)
                    out.append("| %s, floorfs | %d | %d | - | %.1f | - | - | - | - | - | - | - "
                               "| - |" % (w, n, parts, r.wall))
                    print(out[-1], flush=True)
        out += ["", "| walk | entities | partitions | forget_after | seconds, median (all) | "
                "x smallest | daemon CPU s, median | x smallest |", "|---|---|---|---|---|---|---|---|"]
        for (w, n, parts, g), rs in runs.items():
            wall = statistics.median(x.wall for x in rs)
            cpu = statistics.median(x.cpu for x in rs)
            small = runs[(w,) + sizes[0] + (g,)]
            cpus = ("%.1f | %.2f" % (cpu, cpu / max(statistics.median(x.cpu for x in small),
                                                    1e-9))) if cpu > 0 else "- | -"
            out.append("| %s | %d | %d | %d | %.1f (%s) | %.2f | %s |" % (
                w, n, parts, g, wall, ", ".join("%.1f" % x.wall for x in rs),
                wall / statistics.median(x.wall for x in small), cpus))
        if len(sizes) > 1:
            out.append("")
            out.append("| walk | forget_after | peak RSS slope between sizes, bytes per entity |")
            out.append("|---|---|---|")
            for (w, g), pts in sorted(peaks.items()):
                (n0, r0), (n1, r1) = pts[0], pts[len(sizes) - 1]
                if n1 == n0:
                    continue        # sizes of one N (other partition counts): no slope
                out.append("| %s | %d | %.1f |" % (w, g, (r1 - r0) * 1048576 / (n1 - n0)))
    finally:
        for srv in servers.values():
            srv.close()
        for tree in trees.values():
            shutil.rmtree(tree, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    emit_report("\n".join(out), a.out)


if __name__ == "__main__":
    main()
