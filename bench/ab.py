#!/usr/bin/python3
# ab.py - two aztfs binaries side by side, interleaved: cold backup and restore times, requests.
"""Compare two aztfs binaries, OLD and NEW, in one run against one private
Azurite, their runs interleaved, to show that a change (a refactoring) is
not slower and sends the same requests.

One table of N entities in P partitions is seeded once (bench/seed.py) and
one local backup of N entity files in P directories made once
(restore.make_backup). Then, for each delay D (every request held D ms by
tests/faultproxy.py) and R rounds, the order of the binaries alternating
(old, new in the first round, new, old in the second, ...), each workload
runs once per binary, each run on a fresh mount:

* cold backup: ``rsync -a /mnt/T/ dest/`` into an empty local directory;
  checked: dest holds N files;
* restore, per mode of --modes: ``mkdir /mnt/T2 && rsync -a backup/
  /mnt/T2/`` into a new table (a new name each run); sync: aztfs' defaults;
  writeback: ``-o writeback`` (a fresh journal_dir each run); checked with
  the official SDK: the table holds N entities; then it is dropped.

Wall time: the command (spawn to exit), then an fsync of the mount's root
and the unmount (so that a writeback mount's batches are in it); requests:
the mount's counters by kind (``user.aztfs.stats``), everything it sent
since it started, read after the fsync and before the unmount.

Prints a markdown report: per workload and binary the median and min-max
wall time over the rounds, new/old of the medians, and the request counts
by kind side by side, differences flagged. Exits 1 when a run fails a check.

    /usr/bin/python3 bench/ab.py --old BIN --new BIN [--entities 10000]
        [--partitions 20] [--rounds 3] [--delays 0] [--modes sync,writeback]
        [--out FILE]
"""

import argparse
import datetime
import hashlib
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Azurite, BenchError, HarnessError, Mount, emit_report, run_timed, shell
from harness import FaultProxy, conn_str_for, fsync_dir
from restore import make_backup
from run import default_scratch, filesystem_of, git_commit, machine, tool_versions
from seed import seed_table

SOURCE = "abSource"
BINARIES = ("old", "new")


def log(msg):
    print("ab: " + msg, file=sys.stderr, flush=True)


def count_files(root):
    return sum(len(files) for _, _, files in os.walk(root))


def sdk_count_and_drop(conn_str, table):
    """Entities of TABLE as the official SDK lists them; then drop TABLE."""
    from azure.data.tables import TableClient
    with TableClient.from_connection_string(conn_str, table_name=table) as client:
        n = sum(1 for _ in client.list_entities(select=["RowKey"]))
        client.delete_table()
    return n


def daemon_cpu_seconds(pid):
    """User + system CPU seconds process PID (all its threads) used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class AB:
    """One run: the work directory, Azurite, the two binaries, the results."""

    def __init__(self, args, work, az, binaries):
        self.args = args
        self.work = work
        self.az = az
        self.binaries = binaries      # {"old": copied path, "new": copied path}
        self.backup = os.path.join(work, "backup")
        self.serial = 0               # numbers the restored tables and journal dirs
        self.results = {}             # (delay, workload, binary) -> [(wall, kinds, rss KiB)]

    def workloads(self):
        return ["cold backup"] + ["restore %s" % m for m in self.args.modes]

    def timed(self, which, conn_str, options, command):
        """Run COMMAND(mount path) on a fresh mount of binary WHICH: wall
        seconds of the command (run_timed's sync before it not included),
        the fsync of the root and the unmount; the requests by kind the
        mount counted (nonzero ones); the daemon's peak RSS in KiB."""
        m = Mount(self.work, conn_str, options, binary=self.binaries[which])
        m.start()
        try:
            r = run_timed(shell(command(str(m))), self.work)
            t0 = time.perf_counter()
            r.check()
            fsync_dir(m)
            kinds = {k: v for k, v in m.stats()["requests_by_kind"].items() if v}
            rss = m.peak_rss_kib()
            cpu = daemon_cpu_seconds(m.proc.pid)
            m.unmount()
            wall = r.wall + (time.perf_counter() - t0)
        finally:
            m.unmount(check=False)
        return wall, kinds, rss, cpu

    def cold_backup(self, which, conn_str):
        dest = os.path.join(self.work, "dest")
        shutil.rmtree(dest, ignore_errors=True)
        os.mkdir(dest)
        res = self.timed(which, conn_str, [], lambda m: "rsync -a %s/ %s/" % (
            shlex.quote(os.path.join(m, SOURCE)), shlex.quote(dest)))
        got = count_files(dest)
        shutil.rmtree(dest)
        if got != self.args.entities:
            raise BenchError("cold backup with %s (%s): %d files in the destination, "
                             "expected %d" % (which, getattr(self.args, which), got,
                                              self.args.entities))
        return res

    def restore(self, which, conn_str, mode):
        self.serial += 1
        table = "abRestore%d" % self.serial
        journal = os.path.join(self.work, "journal%d" % self.serial)
        options = ["-o", "writeback,journal_dir=%s" % journal] if mode == "writeback" else []
        try:
            res = self.timed(which, conn_str, options, lambda m: "mkdir %s && rsync -a %s/ %s/" % (
                shlex.quote(os.path.join(m, table)), shlex.quote(self.backup),
                shlex.quote(os.path.join(m, table))))
        finally:
            shutil.rmtree(journal, ignore_errors=True)
        got = sdk_count_and_drop(self.az.conn_str, table)
        if got != self.args.entities:
            raise BenchError("restore %s with %s (%s): the SDK lists %d entities in %s, "
                             "expected %d" % (mode, which, getattr(self.args, which), got, table,
                                              self.args.entities))
        return res

    def run(self):
        a = self.args
        for d in a.delays:
            with FaultProxy(self.az.port, rate=0.0, delay=d / 1000.0) as px:
                cs = conn_str_for(px.port)
                for rnd in range(a.rounds):
                    order = BINARIES if rnd % 2 == 0 else BINARIES[::-1]
                    for wl in self.workloads():
                        for which in order:
                            if wl == "cold backup":
                                res = self.cold_backup(which, cs)
                            else:
                                res = self.restore(which, cs, wl.split()[1])
                            self.results.setdefault((d, wl, which), []).append(res)
                            log("delay %g ms, round %d/%d, %s, %s: %.2f s, %d requests, "
                                "daemon CPU %.2f s" % (d, rnd + 1, a.rounds, wl, which, res[0],
                                                       sum(res[1].values()), res[3]))


def per_round(values):
    """A cell of the requests table: the value when every round had it, else
    each round's value in order."""
    return str(values[0]) if len(set(values)) == 1 else " / ".join(map(str, values))


def report(ab, args, started, provenance):
    out = ["# aztfs A/B: old against new", "",
           "- date: %s" % started.strftime("%Y-%m-%d %H:%M UTC"),
           "- machine: %s" % machine(),
           "- Azurite %s (table service, 127.0.0.1, in memory); tools: %s"
           % (Azurite.version(), tool_versions()),
           "- aztfs tree: git %s" % git_commit()]
    out += ["- %s: %s" % (w, provenance[w]) for w in BINARIES]
    out += ["- data: %d entities in %d partitions (bench/seed.py, table %s); backup: %d "
            "files in %d directories (restore.make_backup)"
            % (args.entities, args.partitions, SOURCE, args.entities, args.partitions),
            "- %d round(s) per delay, each workload run once per binary per round, on a fresh "
            "mount; order old, new in odd rounds, new, old in even ones" % args.rounds,
            "- wall time: the command, the fsync of the mount's root and the unmount; "
            "daemon CPU: user + system seconds of the mount's process, all threads, "
            "from its start to the end of the fsync; "
            "requests: everything the mount sent (its counters, every attempt)",
            "- scratch: %s (%s)" % (ab.work, filesystem_of(ab.work)),
            "- total runtime: %.1f s" % (time.time() - started.timestamp()), "",
            "## Wall time (s, over the rounds)", "",
            "| delay ms | workload | old median | old min-max | new median | new min-max "
            "| new / old | daemon CPU s old / new (medians) | CPU new / old "
            "| peak RSS MiB old / new |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    for d in args.delays:
        for wl in ab.workloads():
            cells, med = [], {}
            for w in BINARIES:
                walls = [r[0] for r in ab.results[(d, wl, w)]]
                med[w] = statistics.median(walls)
                cells += ["%.2f" % med[w], "%.2f-%.2f" % (min(walls), max(walls))]
            ratio = med["new"] / med["old"]
            ratios.append(ratio)
            rss = ["%.1f" % (statistics.median(r[2] for r in ab.results[(d, wl, w)]) / 1024)
                   for w in BINARIES]
            cpu = {w: statistics.median(r[3] for r in ab.results[(d, wl, w)]) for w in BINARIES}
            cpu_ratio = "%.3f" % (cpu["new"] / cpu["old"]) if cpu["old"] > 0 else "-"
            out.append("| %g | %s | %s | %.3f | %.2f / %.2f | %s | %s |"
                       % (d, wl, " | ".join(cells), ratio, cpu["old"], cpu["new"], cpu_ratio,
                          " / ".join(rss)))
    out += ["", "## Requests by kind (per round; a / b / c: the rounds differed)", "",
            "| delay ms | workload | kind | old | new | same |", "|---|---|---|---|---|---|"]
    differ = []
    for d in args.delays:
        for wl in ab.workloads():
            runs = {w: [r[1] for r in ab.results[(d, wl, w)]] for w in BINARIES}
            kinds = sorted(set().union(*(k for w in BINARIES for k in runs[w])))
            for kind in kinds + ["all"]:
                vals = {w: [sum(k.values()) if kind == "all" else k.get(kind, 0)
                            for k in runs[w]] for w in BINARIES}
                same = sorted(vals["old"]) == sorted(vals["new"])
                if not same and kind != "all":
                    differ.append("%s at %g ms: %s" % (wl, d, kind))
                out.append("| %g | %s | %s | %s | %s | %s |"
                           % (d, wl, "**all**" if kind == "all" else kind,
                              per_round(vals["old"]), per_round(vals["new"]),
                              "yes" if same else "**DIFFERS**"))
    out += ["", "Requests: " + ("**differ** in " + "; ".join(differ) if differ else
                                "the same for both binaries in every workload."),
            "Median wall time, new / old: %.3f to %.3f." % (min(ratios), max(ratios)), "",
            "Counts can differ between rounds of one binary: with -o writeback a partition's "
            "last batch goes when its delay is over (at most ceil(N/100) + 2P + 5 = %d "
            "requests in all); synchronous walks list a directory again when its listing "
            "expired first (at most N + P + 5 = %d)."
            % (-(-args.entities // 100) + 2 * args.partitions + 5,
               args.entities + args.partitions + 5), ""]
    return "\n".join(out), differ


def copy_binaries(args, work):
    """Private copies of the two binaries in WORK (a rebuild during the
    run cannot change them); {which: path}, {which: provenance}."""
    paths, prov, digests = {}, {}, {}
    for w in BINARIES:
        src = getattr(args, w)
        dst = os.path.join(work, "aztfs-" + w)
        shutil.copy2(src, dst)
        digest = hashlib.sha256(Path(dst).read_bytes()).hexdigest()
        paths[w], digests[w] = dst, digest
        prov[w] = "%s (built %s, sha256 %s)" % (
            os.path.abspath(src),
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.stat(dst).st_mtime)), digest[:12])
    if digests["old"] == digests["new"]:
        prov["new"] += "; the same binary as old"
    return paths, prov


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See bench/README.md.")
    ap.add_argument("--old", required=True, help="the aztfs binary to compare against")
    ap.add_argument("--new", required=True, help="the aztfs binary under test")
    ap.add_argument("--entities", type=int, default=10000,
                    help="entities N of the table and the backup (default %(default)s)")
    ap.add_argument("--partitions", type=int, default=20,
                    help="partitions P (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds R, the order alternating (default %(default)s)")
    ap.add_argument("--delays", default="0",
                    help="ms added to every request, comma-separated (default %(default)s)")
    ap.add_argument("--modes", default="sync,writeback",
                    help="restore modes: sync, writeback or both (default %(default)s)")
    ap.add_argument("--out", help="also write the report to this file")
    a = ap.parse_args(argv)
    for w in BINARIES:
        path = getattr(a, w)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            ap.error("--%s %s: not an executable file" % (w, path))
    a.modes = [m for m in a.modes.split(",") if m]
    if not a.modes or any(m not in ("sync", "writeback") for m in a.modes):
        ap.error("--modes: sync, writeback or both, comma-separated")
    try:
        a.delays = [float(x) for x in a.delays.split(",")]
    except ValueError:
        ap.error("--delays takes comma-separated numbers (ms)")
    if a.rounds < 1 or a.partitions < 1 or a.entities < a.partitions or min(a.delays) < 0:
        ap.error("need --rounds >= 1, 1 <= --partitions <= --entities, --delays >= 0")
    return a


def _terminate(signum, frame):
    raise SystemExit("ab: stopped by signal %d" % signum)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    started = datetime.datetime.now(datetime.timezone.utc)
    work = tempfile.mkdtemp(prefix="aztfs-ab-", dir=default_scratch())
    try:
        binaries, provenance = copy_binaries(args, work)
        make_backup(os.path.join(work, "backup"), args.entities, args.partitions)
        with Azurite(work) as az:
            secs = seed_table(az.conn_str, SOURCE, args.entities, args.partitions)
            log("Azurite %s on port %d, %s seeded in %.1f s, work directory %s"
                % (Azurite.version(), az.port, SOURCE, secs, work))
            ab = AB(args, work, az, binaries)
            ab.run()
        text, differ = report(ab, args, started, provenance)
    except (HarnessError, OSError) as e:    # BenchError too; OSError: e.g. fsync's EIO
        print("ab: error: %s" % e, file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    emit_report(text, args.out)
    if differ:
        log("requests differ between the binaries: " + "; ".join(differ))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
