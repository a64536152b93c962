#!/usr/bin/python3
# limits.py - aztfs' bulk jobs against Azure Table Storage's scalability targets.
"""How close aztfs' bulk jobs come to what the service allows. A table of N
entities in P partitions (bench/seed.py's ~300-byte typed entities, seeded
into Azurite directly) is moved through bench/limitmodel.py - Azurite
behind the Table service's scalability targets, scaled by --scale - with
every request held D ms, each job on a fresh mount, timed with the unmount:

* export:  ``cat /mnt/src/.ndjson > f``
* backup:  ``rsync -a /mnt/src/ backup/``
* import:  ``mkdir /mnt/T && cat f > /mnt/T/.ndjson`` (f in partition order,
  as the export wrote it) and, with --shuffled (the default), the same
  with the lines shuffled
* import_spool, import_memory: the import in partition order with 1 MiB of
  memory (``-o cache_size=1``), reading ahead through the spool (-o
  spool_dir=) or not (spool_dir=none)
* restore: ``mkdir /mnt/T && rsync -a backup/ /mnt/T/`` synchronous, and
  with ``-o writeback`` (the mount's root fsync'd before the unmount)

For each: seconds, entities moved, the rate and its **fraction of the
limit** = (entities / s) / min(account rate, P x partition rate) (for one
partition, the partition rate), the best one-second rate, the 503s the
model sent (partition / account), requests, aztfs' peak RSS, the time of
the last entity the model charged (the service's part of the job done) and
the fraction by then, and the check: every imported or restored table
compared with the source through the SDK (all entities, every typed value),
the export's line count, the backup's file count.

    /usr/bin/python3 bench/limits.py [--entities 20000] [--partitions 20]
        [--scale 0.05] [--delays 25] [--runs 1] [--no-shuffled] [--jobs export,...]
        [--timeout 1800] [--out FILE]

AZTFS_BIN overrides ./aztfs.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

from common import Azurite, BenchError, Mount, emit_report, run_timed, shell
from harness import conn_str_for, fsync_dir
from limitmodel import LimitModel
from seed import seed_table

_imp = __import__("import")          # bench/import.py: its table comparison
same_tables = _imp.same_tables

SOURCE = "src"
JOBS = ("export", "backup", "import", "import_shuffled", "import_spool", "import_memory",
        "restore", "restore_writeback")
SETTLE = 2.0      # seconds between jobs: the buckets (one second each) refill


class Job:
    """One row: what was run and what the model and the mount saw."""

    def __init__(self, name, wall, entities, win, rss, check):
        self.name = name
        self.wall = wall
        self.entities = entities
        self.win = win
        self.rss = rss
        self.check = check


def timed(lm, work, conn_str, options, cmd, writeback, timeout):
    """Mount, run CMD(mount) (a shell command), fsync the root if WRITEBACK,
    unmount: (wall seconds including the unmount, the model's window, peak
    RSS KiB)."""
    m = Mount(work, conn_str, options)
    m.start()
    try:
        mark = lm.mark()
        t0 = time.perf_counter()
        run_timed(shell(cmd(m)), work, timeout=timeout).check()
        if writeback:
            fsync_dir(m)
        rss = m.peak_rss_kib()
        m.unmount()
        wall = time.perf_counter() - t0
        win = lm.window(mark)
    finally:
        m.unmount(check=False)
    return wall, win, rss


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def count_entity_files(root):
    """Files <partition>/<row>.json under ROOT (a backup)."""
    n = 0
    for d in os.listdir(root):
        if os.path.isdir(os.path.join(root, d)) and not d.startswith("."):
            n += sum(1 for f in os.listdir(os.path.join(root, d)) if f.endswith(".json"))
    return n


def table_check(az, table, n):
    got, same = same_tables(az.conn_str, SOURCE, table)
    if got != n or not same:
        raise BenchError("%s: %d entities, same as the source: %s" % (table, got, same))
    return "%d entities = source" % got


def run_delay(args, az, work, d, run_no):
    """The jobs at delay D ms, run RUN_NO (0, 1, ...): [Job]."""
    n, rows = args.entities, []
    tag = ("%g" % d).replace(".", "p") + ("r%d" % run_no if run_no else "")
    export = os.path.join(work, "export%s.ndjson" % tag)
    shuffled = os.path.join(work, "shuffled%s.ndjson" % tag)
    backup = os.path.join(work, "backup%s" % tag)
    journal = os.path.join(work, "journal%s" % tag)
    with LimitModel(az.port, scale=args.scale, delay=d / 1000.0) as lm:
        cs = conn_str_for(lm.port)

        def job(name, cmd, options=(), writeback=False, moved=n, check=None):
            if name not in args.jobs:
                return
            time.sleep(SETTLE)
            wall, win, rss = timed(lm, work, cs, list(options), cmd, writeback, args.timeout)
            rows.append(Job(name, wall, moved, win, rss, check() if check else ""))
            print("%g ms %s: %.1f s, %d requests, %d+%d 503s" % (
                d, name, wall, win["requests"], win["busy_partition"], win["busy_account"]),
                file=sys.stderr, flush=True)

        def lines_ok():
            got = count_lines(export)
            if got != n:
                raise BenchError("export: %d lines, not %d" % (got, n))
            return "%d lines" % got

        def files_ok():
            got = count_entity_files(backup)
            if got != n:
                raise BenchError("backup: %d entity files, not %d" % (got, n))
            return "%d files" % got

        job("export", lambda m: "cat %s > %s" % (m.join(SOURCE, ".ndjson"), export),
            check=lines_ok)
        job("backup", lambda m: "rsync -a %s/ %s/" % (m.join(SOURCE), backup), check=files_ok)
        if os.path.exists(export):
            with open(export, encoding="utf-8") as f:
                lines = f.readlines()
            random.Random(1).shuffle(lines)
            with open(shuffled, "w", encoding="utf-8") as f:
                f.writelines(lines)
        spool = os.path.join(work, "spool")
        os.makedirs(spool, exist_ok=True)
        for name, src, table, options in (
                ("import", export, "imp" + tag, []),
                ("import_shuffled", shuffled, "shuf" + tag, []),
                ("import_spool", export, "isp" + tag,
                 ["-o", "cache_size=1,spool_dir=%s" % spool]),
                ("import_memory", export, "imm" + tag, ["-o", "cache_size=1,spool_dir=none"])):
            job(name, lambda m, src=src, table=table: "mkdir %s && cat %s > %s" % (
                m.join(table), src, m.join(table, ".ndjson")), options,
                check=lambda table=table: table_check(az, table, n))
        for name, options, table in (
                ("restore", [], "rs" + tag),
                ("restore_writeback", ["-o", "writeback,journal_dir=%s" % journal], "rw" + tag)):
            job(name, lambda m, table=table: "mkdir %s && rsync -a %s/ %s/" % (
                m.join(table), backup, m.join(table)), options,
                writeback=bool(options), check=lambda table=table: table_check(az, table, n))
        limit = lm.limit(args.partitions)
    return rows, limit


def run(args):
    work = tempfile.mkdtemp(prefix="aztfs-limits-")
    out = []
    try:
        with Azurite(work) as az:
            secs = seed_table(az.conn_str, SOURCE, args.entities, args.partitions)
            print("seeded %d entities in %d partitions: %.1f s"
                  % (args.entities, args.partitions, secs), file=sys.stderr, flush=True)
            for d in args.delays:
                for r in range(args.runs):
                    rows, limit = run_delay(args, az, work, d, r)
                    out.append((d, limit, rows))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def report(results, args):
    text = []
    pr, ar = 2000 * args.scale, 20000 * args.scale
    for d, limit, rows in results:
        text.append("### delay %g ms: %d entities, %d partition%s, limit %g entities/s\n"
                    % (d, args.entities, args.partitions, "s" if args.partitions > 1 else "",
                       limit))
        text.append("| job | s | entities | entities/s | fraction of limit | last entity at s "
                    "(fraction) | best 1 s | 503s partition / account | requests | "
                    "peak RSS MiB | check |")
        text.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for j in rows:
            rate = j.entities / j.wall
            last = j.win["last"]
            text.append("| %s | %.1f | %d | %.0f | %.2f | %.1f (%.2f) | %d | %d / %d | %d | %.1f "
                        "| %s |" % (
                j.name, j.wall, j.entities, rate, rate / limit, last,
                j.entities / last / limit if last > 0 else 0, j.win["peak"],
                j.win["busy_partition"], j.win["busy_account"], j.win["requests"],
                (j.rss or 0) / 1024, j.check))
        text.append("")
    text.append("Through bench/limitmodel.py at scale %g: %g entities/s a partition, %g the "
                "account; limit = min(account, P x partition); seconds include the unmount; "
                "last entity at: when the model charged the job's last entity (the service's "
                "part done; what follows is the tool's own tail and the unmount); "
                "best 1 s: most entities the model charged in one second; requests and 503s "
                "as the model counted them." % (args.scale, pr, ar))
    return "\n".join(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=20000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--scale", type=float, default=0.05,
                    help="of Azure's 2,000 (partition) and 20,000 (account) entities/s")
    ap.add_argument("--delays", default="25", help="ms added to every request, comma-separated")
    ap.add_argument("--shuffled", action=argparse.BooleanOptionalAction, default=True,
                    help="also import the lines shuffled")
    ap.add_argument("--jobs", default=",".join(JOBS),
                    help="comma-separated, of %s (import and restore need export and backup)"
                    % ",".join(JOBS))
    ap.add_argument("--runs", type=int, default=1, help="runs of the jobs at each delay")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds a job may take")
    ap.add_argument("--out")
    a = ap.parse_args()
    a.delays = [float(x) for x in a.delays.split(",")]
    a.jobs = set(a.jobs.split(","))
    if not a.shuffled:
        a.jobs.discard("import_shuffled")
    if a.jobs - set(JOBS):
        ap.error("--jobs: %s" % ",".join(JOBS))
    try:
        text = ("## Bulk jobs against the scalability targets\n\n" + report(run(a), a) + "\n")
    except BenchError as e:
        print("limits.py: %s" % e, file=sys.stderr)
        return 1
    emit_report(text, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
