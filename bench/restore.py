#!/usr/bin/python3
# restore.py - the restore benchmark: rsync a backup into the mount, against two SDK scripts.
"""Restore a backup of N entities in P partitions (about 300-byte entities,
written in aztfs' file format) into a new table, through a proxy that holds
every request for D ms, three ways side by side in one run:

* aztfs: ``mkdir /mnt/T && rsync -a backup/ /mnt/T/`` (or, with ``--tool
  cp``, ``cp -r backup/. /mnt/T/``: cp creates each file with O_EXCL),
  timed together with the unmount; requests as the mount counted them (point reads apart); in
  each mode asked for: synchronous (the default) and ``-o writeback``
  (there the mount's root is fsync'd before the unmount, so that the
  counters include every batch);
* the official SDK inserting one entity per request (bench/sdk_restore.py);
* the SDK sending entity group transactions of 100 (--batch).

Then the same backup again through a fresh mount: what it sends (it should
write nothing). Prints a markdown table; ratios are aztfs' time over each
script's.

    /usr/bin/python3 bench/restore.py [--entities 20000] [--partitions 20]
                                      [--delays 0,10] [--modes sync,writeback]
                                      [--tool rsync|cp] [--out FILE]

AZTFS_BIN overrides ./aztfs.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import Azurite, BenchError, Mount, emit_report, run_timed, shell
from harness import FaultProxy, conn_str_for, fsync_dir

PYTHON = "/usr/bin/python3"
BENCH = Path(__file__).resolve().parent
WRITES = ("insert", "replace", "merge", "delete", "batch")


def make_backup(dest, n, parts):
    """N entity files of about 300 bytes in PARTS partition directories."""
    for p in range(parts):
        os.makedirs(os.path.join(dest, "part%02d" % p))
    for i in range(n):
        doc = {"Amount": i * 1.25, "Amount@odata.type": "Edm.Double", "Count": i,
               "Customer": "customer-%05d" % (i % 997), "Id": "%08d-0000-4000-8000-%012d" % (i, i),
               "Id@odata.type": "Edm.Guid", "Paid": i % 3 == 0,
               "When": (datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i))
               .strftime("%Y-%m-%dT%H:%M:%S.0000000Z"), "When@odata.type": "Edm.DateTime",
               "Note": "order note %d " % i + "x" * 80}
        with open(os.path.join(dest, "part%02d" % (i % parts), "r%06d.json" % i), "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)


def sdk_restore(conn_str, table, backup, scratch, batch):
    argv = [PYTHON, str(BENCH / "sdk_restore.py"), table, backup] + (["--batch"] if batch else [])
    r = run_timed(argv, scratch, env={"AZURE_STORAGE_CONNECTION_STRING": conn_str}).check()
    return r.wall, json.loads(r.stdout.strip().splitlines()[-1])["requests"]


def mode_options(mode, workdir):
    if mode == "sync":
        return []
    return ["-o", "writeback,journal_dir=%s" % os.path.join(workdir, "journal")]


COPY = {"rsync": "rsync -a %s/ %s/", "cp": "cp -r %s/. %s/"}


def aztfs_restore(workdir, conn_str, table, backup, scratch, mode, tool):
    """Wall time of mkdir + TOOL's copy + unmount, requests by kind, peak
    RSS KiB."""
    m = Mount(workdir, conn_str, mode_options(mode, workdir))
    m.start()
    try:
        before = m.stats()["requests_by_kind"]
        t0 = time.perf_counter()
        run_timed(shell(("mkdir %s && " + COPY[tool]) % (
            m.join(table), backup, m.join(table))), scratch).check()
        fsync_dir(m)
        after = m.stats()["requests_by_kind"]
        rss = m.peak_rss_kib()
        m.unmount()
        wall = time.perf_counter() - t0
    finally:
        m.unmount(check=False)
    return wall, {k: after[k] - before[k] for k in after if after[k] != before[k]}, rss


def aztfs_again(workdir, conn_str, table, backup, scratch, mode):
    """Requests by kind of restoring BACKUP again onto TABLE, fresh mount."""
    with Mount(workdir, conn_str, mode_options(mode, workdir)) as m:
        before = m.stats()["requests_by_kind"]
        run_timed(shell("rsync -a %s/ %s/" % (backup, m.join(table))), scratch).check()
        fsync_dir(m)
        after = m.stats()["requests_by_kind"]
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def run(args):
    work = tempfile.mkdtemp(prefix="aztfs-restore-")
    rows = []
    try:
        backup = os.path.join(work, "backup")
        make_backup(backup, args.entities, args.partitions)
        with Azurite(work) as az:
            for d in args.delays:
                with FaultProxy(az.port, rate=0.0, delay=d / 1000.0) as px:
                    cs = conn_str_for(px.port)
                    one, one_req = sdk_restore(cs, "sdkOne%d" % d, backup, work, False)
                    bat, bat_req = sdk_restore(cs, "sdkBatch%d" % d, backup, work, True)
                    for mode in args.modes:
                        t = "fs%s%d" % (mode.capitalize(), d)
                        wall, kinds, rss = aztfs_restore(work, cs, t, backup, work, mode,
                                                         args.tool)
                        again = aztfs_again(work, cs, t, backup, work, mode)
                        n, p = args.entities, args.partitions
                        bound = n + p + 5 if mode == "sync" else math.ceil(n / 100) + 2 * p + 5
                        if mode == "writeback" and args.tool == "cp":
                            # each O_EXCL create inserts at its open, and the
                            # slow creates leave the delay, not 100, to fill
                            # a batch: at most one batch a file
                            bound = 2 * n + 2 * p + 5
                        rows.append((mode, args.tool, d, n, p, sum(kinds.values()), bound,
                                     kinds.get("get_entity", 0),
                                     sum(again.get(k, 0) for k in WRITES),
                                     sum(again.values()), wall, one, bat, one_req, bat_req,
                                     rss))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def report(rows):
    out = ["| mode | tool | delay ms | N | P | aztfs requests | bound | point reads | "
           "again: writes / all | aztfs s | SDK 1/request s | SDK batch s | "
           "x SDK 1/request | x SDK batch | SDK requests (1/req, batch) | peak RSS MiB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (mode, tool, d, n, p, req, bound, gets, again_w, again_all, wall, one, bat, one_req,
         bat_req, rss) in rows:
        out.append("| %s | %s | %g | %d | %d | %d | %d | %d | %d / %d | %.1f | %.1f | %.1f | "
                   "%.2f | %.2f | %d, %d | %.1f |" % (
                       mode, tool, d, n, p, req, bound, gets, again_w, again_all, wall, one, bat,
                       wall / one, wall / bat, one_req, bat_req, (rss or 0) / 1024))
    out.append("")
    out.append("bound: N+P+5 synchronous, ceil(N/100)+2P+5 with -o writeback "
               "(with cp, 2N+2P+5: its O_EXCL creates insert at the open)")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=20000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--delays", default="0,10", help="ms added to every request, comma-separated")
    ap.add_argument("--modes", default="sync,writeback",
                    help="sync, writeback or both, comma-separated")
    ap.add_argument("--tool", default="rsync", choices=sorted(COPY),
                    help="what copies the backup into the mount")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.modes = [m for m in a.modes.split(",") if m]
    if any(m not in ("sync", "writeback") for m in a.modes):
        ap.error("--modes: sync, writeback")
    a.delays = [float(x) for x in a.delays.split(",")]
    try:
        text = "## Restore (%s into a new table)\n\n" % a.tool + report(run(a)) + "\n"
    except BenchError as e:
        print("restore.py: %s" % e, file=sys.stderr)
        return 1
    emit_report(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
