#!/usr/bin/python3
# run.py - the aztfs benchmark: seed Azurite, run workloads cold and warm, print a markdown report.
"""Benchmark aztfs against a private Azurite and print markdown tables.

For every size N: a table of N entities in P partitions and a table of N
entities in one partition. Workloads (``ls -l`` of a partition, ``ls -f |
wc -l`` and ``find`` of the big partition, ``find``, ``grep -r`` and ``rsync
-a`` of the table) run cold on a fresh mount, then warm on the same mount.
Each row gives the requests aztfs sent, wall time, the daemon's peak RSS
and the ratios to the two baselines reading the same entities: a raw paged
REST scan (bench/rest_scan.py) and the official SDK (bench/sdk_dump.py).

Then ``rsync -a`` of a 20,000-entity table against a local rsync of the same
files, the SDK script and the REST scan; and parallel cold point reads
(``cat`` of M files from 1 process, then from several).

Tables are seeded through the REST API into an in-memory Azurite, except
those with a partition of more than --file-seed-above entities: Azurite's
inserts get slower with the size of the partition, so those are written
into the database file of a second, file-backed Azurite (bench/seed_file.py).

    /usr/bin/python3 bench/run.py [--sizes 1000,10000,100000] [--out FILE]
    /usr/bin/python3 bench/run.py --smoke --out /tmp/bench.md

AZTFS_BIN overrides ./aztfs. See bench/README.md for the columns.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import namedtuple
from contextlib import ExitStack
from pathlib import Path

import seed
import seed_file
from common import (ROOT, Azurite, BenchError, HarnessError, Mount, aztfs_binary,
                    run_timed, shell)

PYTHON = "/usr/bin/python3"
BENCH = Path(__file__).resolve().parent
MEMORY_TARGET_MIB = 64
FILE_AZURITE_TIMEOUT = 600   # seconds for a file-backed Azurite to load its database
COLUMNS = ["N", "workload", "path", "entities", "partitions", "mode", "requests",
           "wall s", "peak RSS MiB", "x REST", "x SDK"]


# One measured run: requests sent (None: not counted), wall seconds, peak RSS
# in KiB (None: not measured).
Result = namedtuple("Result", "requests wall peak_kib")


class Scope:
    """What a workload reads: a table, or one partition of it, and the
    connection string of the Azurite holding it."""

    def __init__(self, table, partition, entities, partitions, last, conn_str):
        self.table = table
        self.partition = partition
        self.entities = entities
        self.partitions = partitions
        self.last = last            # number of the scope's last entity (grep's needle)
        self.conn_str = conn_str

    @property
    def label(self):
        return self.table + ("/" + self.partition if self.partition else "")

    def path(self, mount):
        return os.path.join(mount.path, self.label)


def count_files(root):
    """Regular files under ROOT."""
    return sum(len(files) for _, _, files in os.walk(root))


def q(path):
    """PATH quoted for the shell."""
    return shlex.quote(str(path))


def stdout_lines(run, dest):
    """Lines the command printed."""
    return len(run.stdout.splitlines())


def scope_entities(scope):
    return scope.entities


class Workload:
    """A shell command over a scope, with how to check what it produced.

    COMMAND(path, dest, scope) -> shell text; PRODUCED(run, dest) -> a count;
    EXPECTED(scope) -> the count a correct run produces."""

    def __init__(self, name, scope_kind, command, produced, expected):
        self.name = name
        self.scope_kind = scope_kind
        self.command = command
        self.produced = produced
        self.expected = expected


def find_files(path, dest, scope):
    return "find %s -type f" % q(path)


WORKLOADS = [
    Workload("ls -l", "part", lambda p, d, s: "ls -l %s" % q(p),
             lambda r, d: stdout_lines(r, d) - 1, scope_entities),     # minus "total N"
    Workload("ls -f | wc -l", "big", lambda p, d, s: "ls -f %s | wc -l" % q(p),
             lambda r, d: int(r.stdout), lambda s: s.entities + 2),    # plus . and ..
    Workload("find -type f", "big", find_files, stdout_lines, scope_entities),
    Workload("find -type f", "table", find_files, stdout_lines, scope_entities),
    Workload("grep -r", "table",
             lambda p, d, s: "grep -rl %s %s" % (q(seed.needle(s.last)), q(p)),
             stdout_lines, lambda s: 1),
    Workload("rsync -a", "table", lambda p, d, s: "rsync -a %s/ %s/" % (q(p), q(d)),
             lambda r, d: count_files(d), scope_entities),
]
RSYNC = WORKLOADS[-1]
WALKS = ("find -type f", "grep -r", "rsync -a")     # whole-scope walks with a request bound


def median(results):
    """The Result of median wall time (the lower middle one of an even count)."""
    return sorted(results, key=lambda r: r.wall)[(len(results) - 1) // 2]


def mib(kib):
    return None if kib is None else kib / 1024.0


def fmt(value, digits=3):
    """A table cell: numbers rounded, None as a dash, pipes escaped."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%.*f" % (digits, value)
    return str(value).replace("|", "\\|")


def md_table(headers, rows):
    """A markdown table of ROWS (lists of cells) under HEADERS."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


class Bench:
    """One benchmark run: the in-memory Azurite, the binary under test,
    scratch space and results."""

    def __init__(self, args, workdir, binary, azurite):
        self.args = args
        self.workdir = Path(workdir)
        self.scratch_fs = "%s (%s)" % (self.workdir, filesystem_of(self.workdir))
        self.binary = binary
        self.azurite = azurite
        self.rows = []            # the workload table: dicts keyed by COLUMNS, and "kind"
        self.headline = []        # the rsync comparison table
        self.readers = []         # the parallel reads table
        self.targets = []         # [target, measured, goal, met]
        self.seeded = 0           # entities seeded through the API, and the seconds it took
        self.seed_seconds = 0.0
        self.file_tables = []     # "table (N entities, P partitions)" written into a database file
        self.file_seconds = 0.0   # building those database files
        self.file_start_seconds = 0.0   # starting Azurite on them
        self.entity_bytes = {}    # "wire" / "file": average bytes per entity
        self.hwm_reset = True     # whether warm peaks could be measured on their own

    # ---- plumbing -----------------------------------------------------------
    def scratch(self, name):
        """An empty directory NAME under the work directory."""
        path = self.workdir / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
        return path

    def mount(self, scope):
        """A mount of the Azurite holding SCOPE."""
        opts = self.args.mount_opts
        return Mount(self.workdir, scope.conn_str, ["-o", opts] if opts else [],
                     binary=self.binary)

    def run(self, argv, conn_str):
        """run_timed ARGV with CONN_STR as its connection string; checked."""
        return run_timed(argv, self.workdir,
                         {"AZURE_STORAGE_CONNECTION_STRING": conn_str}).check()

    def by_file(self, n, partitions):
        """Whether a table of N entities in PARTITIONS partitions is written
        into a database file: its biggest partition exceeds --file-seed-above."""
        return math.ceil(n / partitions) > self.args.file_seed_above

    def provision(self, stack, specs):
        """Seed the tables SPECS, a list of (table, n, partitions); return
        {table: connection string of the Azurite holding it}.

        Through the REST API into the in-memory Azurite, except the tables
        by_file() picks: Azurite checks each insert against the whole
        partition, so seeding a partition through the API is quadratic in its
        size. Those are written into the database file of a file-backed
        Azurite (bench/seed_file.py) that is started for them; STACK stops it
        and removes its directory."""
        conn = {}
        for table, n, partitions in specs:
            if not self.by_file(n, partitions):
                secs = seed.seed_table(self.azurite.conn_str, table, n, partitions)
                self.seeded += n
                self.seed_seconds += secs
                conn[table] = self.azurite.conn_str
                log("seeded %s: %d entities, %d partitions, %.1f s" % (table, n, partitions, secs))
        in_file = [spec for spec in specs if spec[0] not in conn]
        if in_file:
            location = self.workdir / ("azurite-db-" + in_file[0][0])
            stack.callback(shutil.rmtree, location, True)      # after Azurite has stopped
            secs = seed_file.build_database(location, in_file, self.workdir)
            t0 = time.perf_counter()
            azurite = stack.enter_context(Azurite(self.workdir, location=location,
                                                  timeout=FILE_AZURITE_TIMEOUT, attempts=1))
            start = time.perf_counter() - t0
            self.file_seconds += secs
            self.file_start_seconds += start
            for table, n, partitions in in_file:
                conn[table] = azurite.conn_str
                self.file_tables.append("%s (%d entities, %d partition%s)"
                                        % (table, n, partitions, "s" * (partitions > 1)))
            log("wrote %s into Azurite's database file in %.1f s; file-backed Azurite "
                "started on it in %.1f s (port %d)"
                % (", ".join(spec[0] for spec in in_file), secs, start, azurite.port))
        return conn

    def drop(self, conn):
        """Drop the tables of CONN (from provision) that the in-memory
        Azurite holds, giving it its memory back (a file-backed Azurite goes
        with its stack)."""
        for table, conn_str in conn.items():
            if conn_str == self.azurite.conn_str:
                seed.delete_table(conn_str, table)

    # ---- measurements -----------------------------------------------------------
    def repeated(self, measure):
        """Call MEASURE() (-> Result) --repeat times; the run of median wall time."""
        return median([measure() for _ in range(self.args.repeat)])

    def baselines(self, scope):
        """The REST scan and the SDK script over SCOPE: {"REST": Result, "SDK": Result}."""
        args = [scope.table] + ([scope.partition] if scope.partition else [])
        dest = self.workdir / "sdk-dest"

        def baseline(name, argv, produced):
            self.scratch(dest.name)
            run = self.run([PYTHON, str(BENCH / argv[0])] + argv[1:], scope.conn_str)
            doc = json.loads(run.stdout)
            got = produced(doc)
            if got != scope.entities:
                raise BenchError("%s baseline of %s produced %s entities, expected %d"
                                 % (name, scope.label, got, scope.entities))
            if "bytes" in doc:
                self.entity_bytes.setdefault("wire", doc["bytes"] / doc["entities"])
            return Result(doc["requests"], run.wall, doc["peak_rss_kib"])

        out = {"REST": self.repeated(lambda: baseline(
                   "REST", ["rest_scan.py"] + args, lambda doc: doc["entities"])),
               "SDK": self.repeated(lambda: baseline(
                   "SDK", ["sdk_dump.py", scope.table, str(dest)] + args[1:],
                   lambda doc: count_files(dest)))}
        shutil.rmtree(dest)
        log("%s: REST scan %.2f s (%d requests), SDK %.2f s (%d pages)"
            % (scope.label, out["REST"].wall, out["REST"].requests, out["SDK"].wall,
               out["SDK"].requests))
        return out

    def workload(self, wl, scope, keep=None):
        """Run WL over SCOPE cold on a fresh mount, then warm on the same
        mount, --repeat times; return [(mode, median Result)]. With KEEP, the
        last cold run's destination directory is left there."""
        runs = {"cold": [], "warm": []}
        for rep in range(self.args.repeat):
            with self.mount(scope) as m:
                for mode in runs:
                    if mode == "warm":
                        self.hwm_reset = m.reset_peak_rss() and self.hwm_reset
                    dest = self.scratch("dest-" + mode)
                    before = m.requests()
                    run = run_timed(shell(wl.command(scope.path(m), dest, scope)), self.workdir)
                    requests = m.requests() - before
                    peak = m.peak_rss_kib()
                    run.check()
                    got, want = wl.produced(run, dest), wl.expected(scope)
                    if got != want:
                        raise BenchError("%s %s of %s produced %s, expected %s"
                                         % (wl.name, mode, scope.label, got, want))
                    log("%-14s %-22s %s: %d requests, %.3f s, %.1f MiB"
                        % (wl.name, scope.label, mode, requests, run.wall, mib(peak)))
                    runs[mode].append(Result(requests, run.wall, peak))
                    if keep and mode == "cold" and rep == self.args.repeat - 1:
                        dest.rename(keep)
                    else:
                        shutil.rmtree(dest)
        return [(mode, median(results)) for mode, results in runs.items()]

    def size(self, n):
        """Seed the two tables of size N, run every workload, drop the tables."""
        with ExitStack() as stack:
            p = self.args.partitions
            wide, flat = "bench%dw" % n, "bench%df" % n
            conn = self.provision(stack, [(wide, n, p), (flat, n, 1)])
            in_p00 = len(range(0, n, p))
            scopes = {"part": Scope(wide, seed.partition_key(0, p), in_p00, 1, (in_p00 - 1) * p,
                                    conn[wide]),
                      "big": Scope(flat, seed.partition_key(0, 1), n, 1, n - 1, conn[flat]),
                      "table": Scope(wide, None, n, p, n - 1, conn[wide])}
            for kind, scope in scopes.items():
                base = self.baselines(scope)

                def row(name, mode, res):
                    ratios = [res.wall / base[b].wall if mode != "-" else None
                              for b in ("REST", "SDK")]
                    cells = [n, name, scope.label, scope.entities, scope.partitions, mode,
                             res.requests, res.wall, mib(res.peak_kib)] + ratios
                    self.rows.append(dict(zip(COLUMNS, cells), kind=kind))

                row("REST scan", "-", base["REST"])
                row("SDK script", "-", base["SDK"])
                for wl in (w for w in WORKLOADS if w.scope_kind == kind):
                    for mode, res in self.workload(wl, scope):
                        row(wl.name, mode, res)
            self.drop(conn)

    def headline_runs(self):
        """Seed the --headline table, run the rsync comparison and the
        parallel reads on it, drop it."""
        args = self.args
        table = "benchrsync%d" % args.headline
        with ExitStack() as stack:
            conn = self.provision(stack, [(table, args.headline, args.partitions)])
            scope = Scope(table, None, args.headline, args.partitions, args.headline - 1,
                          conn[table])
            self.rsync_comparison(scope)
            self.parallel_reads(scope, args.files, args.readers)
            self.drop(conn)

    def rsync_comparison(self, scope):
        """aztfs rsync of SCOPE (cold, warm) beside a local rsync of the same
        files, the SDK script and the REST scan."""
        base = self.baselines(scope)
        source = self.workdir / "rsync-source"
        shutil.rmtree(source, ignore_errors=True)
        runs = self.workload(RSYNC, scope, keep=source)
        self.entity_bytes["file"] = (sum(f.stat().st_size for f in source.rglob("*.json"))
                                     / scope.entities)

        def local_rsync():
            dest = self.scratch("local-dest")
            run = self.run(["rsync", "-a", "%s/" % source, "%s/" % dest], scope.conn_str)
            if count_files(dest) != scope.entities:
                raise BenchError("local rsync copied %d files, expected %d"
                                 % (count_files(dest), scope.entities))
            shutil.rmtree(dest)
            return Result(None, run.wall, None)

        local = self.repeated(local_rsync)
        shutil.rmtree(source)
        cold = runs[0][1].wall
        aztfs = [("aztfs rsync -a (%s)" % mode, res, None) for mode, res in runs]
        others = [(name, res, cold / res.wall) for name, res in (
            ("local rsync -a", local), ("SDK script", base["SDK"]), ("REST scan", base["REST"]))]
        for name, res, ratio in aztfs + others:
            self.headline.append([name, res.requests, res.wall, mib(res.peak_kib), ratio])
        self.targets.append(["rsync %d entities: aztfs cold / local rsync" % scope.entities,
                             cold / local.wall, "<= 1.5", cold / local.wall <= 1.5])
        self.targets.append(["rsync %d entities: aztfs cold / SDK script" % scope.entities,
                             cold / base["SDK"].wall, "< 1", cold / base["SDK"].wall < 1])

    def parallel_reads(self, scope, files, readers):
        """cat FILES known entity files of SCOPE on a fresh mount, from one
        process and then split over READERS processes (fresh mount each)."""
        numbers = [k * scope.entities // files for k in range(files)]

        def cat_files(procs):
            with self.mount(scope) as m:
                listing = self.workdir / "files.list"
                listing.write_text("".join(os.path.join(scope.path(m), seed.entity_path(
                    i, scope.partitions)) + "\n" for i in numbers))
                before = m.requests()
                cmd = "xargs -d '\\n' -a %s -P %d -n %d cat" % (
                    q(listing), procs, math.ceil(files / procs))
                run = run_timed(shell(cmd), self.workdir)
                requests = m.requests() - before
                run.check()
                done = run.stdout.count("\n}\n")
                if done != files:
                    raise BenchError("parallel reads: %d of %d entities read" % (done, files))
                log("cat of %d files by %d process(es): %d requests, %.3f s"
                    % (files, procs, requests, run.wall))
                return Result(requests, run.wall, m.peak_rss_kib())

        single = self.repeated(lambda: cat_files(1))
        parallel = self.repeated(lambda: cat_files(readers))
        for procs, res in ((1, single), (readers, parallel)):
            self.readers.append([procs, files, res.requests, res.wall, mib(res.peak_kib),
                                 single.wall / res.wall])
        speedup = single.wall / parallel.wall
        self.targets.append(["cold point reads: %d processes vs 1 (speed-up)" % readers,
                             speedup, ">= 1.5", speedup >= 1.5])

    def memory_and_bound_targets(self):
        """Targets read off the workload table: daemon memory on the big
        partition (largest N) and the request bound of cold walks."""
        largest = max(row["N"] for row in self.rows)
        aztfs = [row for row in self.rows if row["mode"] != "-"]
        for row in aztfs:
            if row["N"] == largest and row["kind"] == "big":
                rss = row["peak RSS MiB"]
                self.targets.append(["peak RSS, %s of a %d-entity partition (%s)"
                                     % (row["workload"], row["entities"], row["mode"]), rss,
                                     "< %d MiB" % MEMORY_TARGET_MIB, rss < MEMORY_TARGET_MIB])
        for row in aztfs:
            if row["workload"] in WALKS and row["mode"] == "cold":
                bound = math.ceil(row["entities"] / 1000) + row["partitions"] + 2
                self.targets.append(["requests, %s of %s (cold)" % (row["workload"], row["path"]),
                                     row["requests"], "<= %d" % bound, row["requests"] <= bound])


# ---- report ---------------------------------------------------------------------------
def git_commit():
    """HEAD's short hash, marked when src/ has uncommitted changes."""
    def git(*a):
        return subprocess.run(["git", "-C", str(ROOT)] + list(a), capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" + uncommitted changes in src/" if git("status", "--porcelain", "--", "src")
                   else "")


def machine():
    """nproc, CPU model, memory and kernel."""
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return "%d CPUs (nproc), %s, %.0f GiB RAM, Linux %s" % (
        os.cpu_count(), model, mem, platform.release())


def tool_versions():
    rsync = subprocess.run(["rsync", "--version"], capture_output=True, text=True).stdout
    try:
        from azure.data.tables import __version__ as sdk
    except ImportError:
        sdk = "missing"
    return "rsync %s, Python %s, azure-data-tables %s" % (
        rsync.split("version")[1].split()[0] if "version" in rsync else "?",
        platform.python_version(), sdk)


def report(bench, args, started, provenance):
    """The whole markdown report; PROVENANCE describes the binary."""
    yes = {True: "yes", False: "**NO**"}
    targets = [[t, m, g, yes[ok]] for t, m, g, ok in bench.targets]
    warm_rss = ("peak since the warm run began (VmHWM reset before it)" if bench.hwm_reset
                else "peak since the mount (VmHWM could not be reset)")
    lines_ = [
        "# aztfs benchmark",
        "",
        "- date: %s" % started.strftime("%Y-%m-%d %H:%M UTC"),
        "- machine: %s" % machine(),
        "- Azurite %s (table service, 127.0.0.1, in memory%s)"
        % (Azurite.version(), "; a second, file-backed one for the tables written into its "
           "database file" if bench.file_tables else ""),
        "- aztfs: %s" % provenance,
        "- mount options: %s" % (args.mount_opts or "none (aztfs defaults)"),
        "- scratch (copies, local rsync): %s" % bench.scratch_fs,
        "- repeats: every row is the median of %d run(s)" % args.repeat,
        "- tools: %s" % tool_versions(),
        "- entities: %.0f bytes each on the wire (minimalmetadata), %.0f bytes as an aztfs file"
        % (bench.entity_bytes.get("wire", 0), bench.entity_bytes.get("file", 0)),
        "- seeding through the API: %d entities in %.1f s (%.0f entities/s, raw $batch of 100)"
        % (bench.seeded, bench.seed_seconds, bench.seeded / max(bench.seed_seconds, 1e-9)),
    ] + ([
        "- written into Azurite's database file instead (bench/seed_file.py), because "
        "seeding through the API is quadratic in partition size (Azurite checks each insert "
        "against the whole partition), for the tables with a partition of more than %d "
        "entities: %s; %.1f s to write, %.1f s for Azurite to load"
        % (args.file_seed_above, ", ".join(bench.file_tables), bench.file_seconds,
           bench.file_start_seconds),
    ] if bench.file_tables else []) + [
        "- total runtime: %.1f s" % (time.time() - started.timestamp()),
        "- warm peak RSS: %s" % warm_rss,
        "",
        "## Workloads (sizes %s, %d partitions)" % (args.sizes, args.partitions),
        "",
        md_table(COLUMNS, [[row[c] for c in COLUMNS] for row in bench.rows]),
        "",
        "## rsync -a of a %d-entity table (%d partitions)" % (args.headline, args.partitions),
        "",
        md_table(["run", "requests", "wall s", "peak RSS MiB", "aztfs cold / this"],
                 bench.headline),
        "",
        "## Parallel cold point reads (cat of known files, no listing)",
        "",
        md_table(["processes", "files", "requests", "wall s", "peak RSS MiB", "speed-up"],
                 bench.readers),
        "",
        "## Targets",
        "",
        md_table(["target", "measured", "goal", "met"], targets),
        "",
    ]
    return "\n".join(lines_)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See bench/README.md.")
    ap.add_argument("--sizes", default="1000,10000,100000",
                    help="entity counts of the workload tables (default %(default)s)")
    ap.add_argument("--partitions", type=int, default=20,
                    help="partitions of the wide tables (default %(default)s)")
    ap.add_argument("--headline", type=int, default=20000,
                    help="entities of the rsync comparison table (default %(default)s)")
    ap.add_argument("--files", type=int, default=2000,
                    help="files read by the parallel point reads (default %(default)s)")
    ap.add_argument("--readers", type=int, default=4,
                    help="processes of the parallel point reads (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every measurement this many times, report the median "
                         "(default %(default)s)")
    ap.add_argument("--mount-opts", default="",
                    help="aztfs -o options for every mount (default: none)")
    ap.add_argument("--file-seed-above", type=int, default=20000, metavar="E",
                    help="write tables with a partition of more than E entities into "
                         "Azurite's database file instead of seeding them through the API "
                         "(default %(default)s)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny run: 200 entities in 4 partitions, 100 files; the "
                         "single-partition table written into the database file")
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--workdir", help="scratch directory: copies land here (default: a new "
                                      "one under /dev/shm when it is a tmpfs, else /tmp; "
                                      "removed at the end)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.sizes, args.partitions, args.headline, args.files = "200", 4, 200, 100
        args.file_seed_above = 100
    try:
        args.size_list = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error("--sizes takes comma-separated integers")
    if min(args.size_list + [args.headline]) < args.partitions or args.files > args.headline:
        ap.error("every size must be >= --partitions and --files <= --headline")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    return args


def filesystem_of(path):
    """Type of the filesystem holding PATH (from /proc/mounts), or '?'."""
    best, kind = "", "?"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                fields = line.split()
                mnt = fields[1]
                if (str(path) == mnt or str(path).startswith(mnt.rstrip("/") + "/")) \
                        and len(mnt) > len(best):
                    best, kind = mnt, fields[2]
    except OSError:
        pass
    return kind


def default_scratch():
    """/dev/shm when it is a writable tmpfs, else the system's temporary
    directory. On tmpfs the copies (rsync destinations, the local rsync that
    is the time floor) do not wait for a disk, whose writeback made the local
    rsync vary from 2.9 to 9 s between runs on the reference machine."""
    shm = filesystem_of("/dev/shm") == "tmpfs" and os.access("/dev/shm", os.W_OK)
    return "/dev/shm" if shm else None


def _terminate(signum, frame):
    raise SystemExit("bench: stopped by signal %d" % signum)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    started = datetime.datetime.now(datetime.timezone.utc)
    binary_src = aztfs_binary()
    if not binary_src.exists():
        raise BenchError("%s not found: build first (scripts/build.sh)" % binary_src)
    with ExitStack() as stack:
        if args.workdir:
            workdir = Path(args.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(tempfile.mkdtemp(prefix="aztfs-bench-", dir=default_scratch()))
            stack.callback(shutil.rmtree, workdir, True)
        # A private copy: a rebuild of ./aztfs during the run cannot mix binaries.
        binary = workdir / "aztfs"
        shutil.copy2(binary_src, binary)
        provenance = "git %s; binary %s built %s (sha256 %s)" % (
            git_commit(), binary_src,
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(binary.stat().st_mtime)),
            hashlib.sha256(binary.read_bytes()).hexdigest()[:12])
        azurite = stack.enter_context(Azurite(workdir))
        log("Azurite %s on port %d, work directory %s" % (Azurite.version(), azurite.port, workdir))
        bench = Bench(args, workdir, binary, azurite)
        bench.headline_runs()
        for n in args.size_list:
            bench.size(n)
        bench.memory_and_bound_targets()
        text = report(bench, args, started, provenance)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except HarnessError as e:         # BenchError too
        sys.exit("bench: error: %s" % e)
