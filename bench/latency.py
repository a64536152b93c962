#!/usr/bin/python3
# latency.py - walks of a table at a distance: aztfs with and without scan_parallel, against scripts.
"""For each table shape (N entities in P partitions, bench/seed.py's: by
default 20,000 in 20, 30,000 in 10 and 20,000 in 1), read through a
proxy that holds every request for D ms (tests/faultproxy.py's delay=),
side by side in one run for each D:

* the sequential raw paged scan (bench/rest_scan.py, REPEAT runs, the
  median shown) and the SDK's
  ``list_entities`` writing one file per entity (bench/sdk_dump.py);
* aztfs cold ``find -type f | wc -l`` and cold ``rsync -a`` of the
  table (REPEAT runs each, the median shown), each on a fresh mount, with
  ``-o scan_parallel=1`` and with the default;
* ``rsync -a`` of the same tree served from memory by bench/floorfs.c (the
  FUSE floor: what FUSE itself costs on this machine in this run; REPEAT
  runs, the median), built here with cc.

The copies rsync writes go to COPY_DIR, by default /dev/shm when it is a
mount (tmpfs): written to this machine's disk, 20,000 small files took
anything from 1.8 to 13 s for the same tree, which measured the disk, not
the walk.

Prints a markdown table: wall seconds, requests (the mount's own count) and
the daemon's peak RSS, and the ratios asked by issue 20.

    /usr/bin/python3 bench/latency.py [--tables 20000x20,30000x10,20000x1]
                                      [--delays 0,25] [--repeat 3] [--out FILE]
                                      [--copy-dir DIR]

AZTFS_BIN overrides ./aztfs.
"""

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import Azurite, BenchError, Mount, emit_report, run_timed, shell
from harness import FaultProxy, conn_str_for
from seed import seed_table

TABLE = "benchLatency"
HERE = os.path.dirname(os.path.abspath(__file__))


def script(name, args, conn_str, scratch):
    """Run bench/NAME with ARGS against CONN_STR: (wall seconds, its JSON)."""
    r = run_timed(["/usr/bin/python3", os.path.join(HERE, name)] + args, scratch,
                  env={"AZURE_STORAGE_CONNECTION_STRING": conn_str}).check()
    return r.wall, json.loads(r.stdout.strip().splitlines()[-1])


def walk(workdir, conn_str, cmd, opts):
    """CMD ({m}: the mount point) on a fresh mount with OPTS: wall seconds,
    requests, peak RSS KiB, stdout."""
    with Mount(workdir, conn_str, options=["-o", opts] if opts else ()) as m:
        before = m.stats()["requests"]
        t0 = time.perf_counter()
        r = run_timed(shell(cmd.format(m=str(m))), workdir).check()
        wall = time.perf_counter() - t0
        reqs = m.stats()["requests"] - before
        rss = m.peak_rss_kib()
    return wall, reqs, rss, r.stdout


def build_floor(work):
    """Compile bench/floorfs.c into WORK; its path."""
    exe = os.path.join(work, "floorfs")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                           capture_output=True, text=True).stdout.split()
    r = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror",
                        os.path.join(HERE, "floorfs.c"), "-o", exe] + flags,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError("floorfs.c did not build:\n" + r.stderr)
    return exe


@contextlib.contextmanager
def floor_mounted(exe, src, work, timeout=60):
    """SRC served by floorfs (EXE) at WORK/floor-mnt for the with block,
    which gets the mountpoint; unmounted after it."""
    mnt = os.path.join(work, "floor-mnt")
    os.makedirs(mnt, exist_ok=True)
    proc = subprocess.Popen([exe, src, mnt, "-f"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not os.path.ismount(mnt):
            if time.monotonic() > deadline:
                raise BenchError("floorfs did not mount")
            time.sleep(0.05)
        yield mnt
    finally:
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        proc.wait(timeout=120)


def floor_rsync(exe, src, work, copies):
    """rsync -a of SRC served by floorfs into COPIES: wall seconds."""
    dest = os.path.join(copies, "floor-copy")
    try:
        with floor_mounted(exe, src, work, timeout=10) as mnt:
            return run_timed(shell("rsync -a '%s/' '%s/'" % (mnt, dest)), work).check().wall
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def median_run(runs):
    """The run of median wall time among RUNS (tuples, wall first)."""
    return sorted(runs, key=lambda w: w[0])[len(runs) // 2]


def run(args, entities, partitions):
    work = tempfile.mkdtemp(prefix="aztfs-latency-")
    copies = tempfile.mkdtemp(prefix="aztfs-latency-copies-", dir=args.copy_dir)
    rows = []
    try:
        floor = build_floor(work)
        tree = os.path.join(copies, "tree")    # the table as files: floorfs serves it
        with Azurite(work) as az:
            seed_table(az.conn_str, TABLE, entities, partitions)
            for d in args.delays:
                with FaultProxy(az.port, rate=0.0, delay=d / 1000.0) as px:
                    cs = conn_str_for(px.port)
                    row = {"delay": d}
                    row["rest"] = statistics.median(
                        script("rest_scan.py", [TABLE], cs, work)[0] for _ in range(args.repeat))
                    dest = os.path.join(work, "sdk")
                    row["sdk"] = script("sdk_dump.py", [TABLE, dest], cs, work)[0]
                    shutil.rmtree(dest, ignore_errors=True)
                    for label, opts in (("seq", "scan_parallel=1"), ("par", "")):
                        f = median_run([walk(work, cs, "find '{m}/%s' -type f | wc -l" % TABLE,
                                             opts) for _ in range(args.repeat)])
                        if int(f[3].strip()) != entities:
                            raise BenchError("find saw %s files" % f[3].strip())
                        rsyncs = []
                        for _ in range(args.repeat):
                            out = os.path.join(copies, "copy")
                            rsyncs.append(walk(work, cs, "rsync -a '{m}/%s/' '%s/'"
                                               % (TABLE, out), opts))
                            n = sum(len(fs) for _, _, fs in os.walk(out))
                            if n != entities:
                                raise BenchError("rsync copied %d files" % n)
                            if os.path.exists(tree):
                                shutil.rmtree(out)
                            else:
                                os.rename(out, tree)
                        row["find_" + label], row["rsync_" + label] = f, median_run(rsyncs)
                    row["floor"] = statistics.median(floor_rsync(floor, tree, work, copies)
                                                     for _ in range(args.repeat))
                    rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(copies, ignore_errors=True)
    return rows


def report(rows, entities, partitions):
    out = ["### %d entities in %d partition(s)" % (entities, partitions), "",
           "| D ms | REST scan s | SDK dump s | find s / req / RSS, scan_parallel=1 "
           "| find, default | rsync s / req / RSS, scan_parallel=1 | rsync, default "
           "| rsync, floorfs s | find default / REST scan | rsync default / floorfs |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cell = [("%.2f / %d / %.0f" % (r[k][0], r[k][1], r[k][2] / 1024.0))
                for k in ("find_seq", "find_par", "rsync_seq", "rsync_par")]
        out.append("| %g | %.2f | %.2f | %s | %s | %s | %s | %.2f | %.2f | %.2f |"
                   % (r["delay"], r["rest"], r["sdk"], cell[0], cell[1], cell[2], cell[3],
                      r["floor"], r["find_par"][0] / r["rest"], r["rsync_par"][0] / r["floor"]))
    if len(rows) >= 2:
        lo, hi = rows[0], rows[-1]
        out += ["", "rsync at D = %g over rsync at D = %g: %.2f (scan_parallel=1), %.2f "
                "(default)." % (hi["delay"], lo["delay"], hi["rsync_seq"][0] / lo["rsync_seq"][0],
                                hi["rsync_par"][0] / lo["rsync_par"][0])]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", default="20000x20,30000x10,20000x1",
                    help="table shapes ENTITIESxPARTITIONS, comma-separated")
    ap.add_argument("--delays", default="0,25", help="ms added to every request, comma-separated")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the REST scan, each find and each rsync (medians shown)")
    ap.add_argument("--out")
    ap.add_argument("--copy-dir", default="/dev/shm" if os.path.ismount("/dev/shm") else None,
                    help="where rsync's copies go (default: /dev/shm when it is a mount)")
    a = ap.parse_args()
    a.delays = [float(x) for x in a.delays.split(",")]
    parts = ["## Latency: walks at a distance", "",
             "Every request held D ms by the proxy; s = wall seconds, req = requests the "
             "mount sent, RSS = the daemon's peak (MiB)."]
    try:
        for shape in a.tables.split(","):
            n, p = (int(x) for x in shape.split("x"))
            parts += ["", report(run(a, n, p), n, p)]
        text = "\n".join(parts) + "\n"
    except BenchError as e:
        print("latency.py: %s" % e, file=sys.stderr)
        return 1
    emit_report(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
