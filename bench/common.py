# common.py - shared plumbing of the aztfs benchmark: paths, Azurite, aztfs mounts, timed commands.
"""Building blocks for bench/run.py and its helper scripts.

* ``Azurite``: a private Azurite table emulator on a free port, in memory
  or on a database file (``--location``).
* ``AztfsMount``: ``aztfs -f MOUNTPOINT`` as a child process, with its
  request counters (the ``user.aztfs.stats`` xattr) and peak RSS (VmHWM).
* ``run_timed``: run a command, returning its wall time and output.
* ``peak_rss_kib``: a process's peak RSS (VmHWM).
* ``parse_conn_str``: the three fields of a connection string we need.

Standard library only, so the baseline scripts can import it cheaply; the
integration tests' conftest.py takes the account, the Azurite start and the
port and unmount helpers from here too.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AZURITE_BIN = ROOT / ".deps-node" / "node_modules" / ".bin" / "azurite-table"
AZURITE_PACKAGE = ROOT / ".deps-node" / "node_modules" / "azurite" / "package.json"

# Azurite's well-known development account (public, documented by Microsoft).
ACCOUNT = "devstoreaccount1"
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
       "K1SZFPTOtr/KBHBeksoGMGw==")

MOUNT_TIMEOUT = 15       # seconds for a mount to appear
AZURITE_TIMEOUT = 30     # seconds for Azurite to answer
AZURITE_SAVE_TIMEOUT = 120   # seconds for Azurite to write its database file and exit
TOOL_ENV = {"LC_ALL": "C.UTF-8"}


class BenchError(Exception):
    """A benchmark step failed; the message says which and why."""


def aztfs_binary():
    """The aztfs binary under test: $AZTFS_BIN, else ./aztfs of the repository."""
    return Path(os.environ.get("AZTFS_BIN", str(ROOT / "aztfs")))


def conn_str_for(port, key=KEY, account=ACCOUNT, scheme="http"):
    """The connection string of the emulator account on 127.0.0.1:PORT."""
    return ("DefaultEndpointsProtocol=%s;AccountName=%s;AccountKey=%s;"
            "TableEndpoint=%s://127.0.0.1:%d/%s;" % (scheme, account, key, scheme, port,
                                                      account))


def parse_conn_str(conn_str):
    """(table endpoint URL, account name, base64 key) of a connection string
    that names its TableEndpoint (as the benchmark's own strings do)."""
    fields = dict(part.split("=", 1) for part in conn_str.split(";") if "=" in part)
    try:
        return fields["TableEndpoint"].rstrip("/"), fields["AccountName"], fields["AccountKey"]
    except KeyError as e:
        raise BenchError("connection string lacks %s" % e) from None


def free_port():
    """A TCP port nothing listens on right now (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_answers(port):
    """Whether something accepts TCP connections on 127.0.0.1:PORT."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def stop_process(proc, grace=10):
    """SIGTERM PROC (a Popen), then SIGKILL after GRACE seconds; reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def spawn_azurite(port, log_path, location=None):
    """Start the Azurite table service (in its own session) on 127.0.0.1:PORT
    with its output in LOG_PATH; returns the Popen at once. In memory, or
    with LOCATION (a directory) persisting in its database file there, which
    it loads first if it exists. Shared with the integration tests' fixture."""
    persistence = (["--location", str(location)] if location is not None
                   else ["--inMemoryPersistence"])
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [str(AZURITE_BIN)] + persistence + ["--tableHost", "127.0.0.1",
             "--tablePort", str(port), "--disableTelemetry"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)


class Azurite:
    """A private Azurite table service, as a context manager: in memory, or
    with LOCATION persisting in (and starting from) the database file in that
    directory. TIMEOUT: seconds to wait for it to answer (loading a big
    database file takes a while)."""

    def __init__(self, logdir, location=None, timeout=AZURITE_TIMEOUT):
        self.logdir = Path(logdir)
        self.location = location
        self.timeout = timeout
        self.proc = None
        self.port = None

    @staticmethod
    def version():
        """The version of the Azurite npm package in .deps-node/."""
        try:
            return json.loads(AZURITE_PACKAGE.read_text())["version"]
        except (OSError, ValueError, KeyError):
            return "unknown"

    @property
    def conn_str(self):
        return conn_str_for(self.port)

    def start(self):
        """Start Azurite on a free port and wait until it answers."""
        if not AZURITE_BIN.exists():
            raise BenchError("Azurite not found at %s: run scripts/deps.sh" % AZURITE_BIN)
        self.port = free_port()
        log_path = self.logdir / ("azurite-%d.log" % self.port)
        self.proc = spawn_azurite(self.port, log_path, self.location)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if port_answers(self.port):
                return self
            time.sleep(0.2)
        self.stop()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise BenchError("Azurite did not answer on port %d within %d s; log:\n%s"
                         % (self.port, self.timeout, tail))

    def stop(self, save=False):
        """Stop Azurite (SIGTERM: a file-backed one loses what it has not
        autosaved yet). With SAVE, close it with SIGINT instead, on which it
        writes its database file before it exits."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if save and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(AZURITE_SAVE_TIMEOUT)
            except subprocess.TimeoutExpired:
                stop_process(proc)
                raise BenchError("Azurite did not save its database and exit within %d s "
                                 "of SIGINT" % AZURITE_SAVE_TIMEOUT) from None
        stop_process(proc)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def peak_rss_kib(pid="self"):
    """Peak resident set size (VmHWM) of process PID in KiB. Unlike the
    ru_maxrss a parent gets from wait4(), it does not include the memory of
    the (large) process the child was spawned from."""
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise BenchError("no VmHWM in /proc/%s/status" % pid)


def unmount_path(path):
    """Unmount the FUSE mount at PATH if there is one (lazily if busy)."""
    if os.path.ismount(path):
        r = subprocess.run(["fusermount3", "-u", path], capture_output=True, timeout=30)
        if r.returncode != 0 and os.path.ismount(path):
            subprocess.run(["fusermount3", "-uz", path], capture_output=True, timeout=30)


class AztfsMount:
    """``aztfs -f [-o OPTIONS] MOUNTPOINT`` on a fresh temporary mountpoint,
    as a context manager that always unmounts and reaps aztfs."""

    def __init__(self, binary, workdir, conn_str, options=""):
        self.binary = str(binary)
        self.workdir = Path(workdir)
        self.conn_str = conn_str
        self.options = options
        self.path = None
        self.proc = None
        self.stderr_path = None

    def start(self):
        if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
            raise BenchError("FUSE unavailable: need /dev/fuse and fusermount3 (fuse3)")
        self.path = tempfile.mkdtemp(prefix="mnt-", dir=str(self.workdir))
        self.stderr_path = self.path + ".stderr"
        args = [self.binary, "-f"] + (["-o", self.options] if self.options else []) + [self.path]
        env = dict(os.environ, AZURE_STORAGE_CONNECTION_STRING=self.conn_str)
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=err,
                                         stderr=err, env=env)
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while time.monotonic() < deadline:
            if os.path.ismount(self.path):
                return self
            if self.proc.poll() is not None:
                raise BenchError("aztfs exited with status %s before mounting:\n%s"
                                 % (self.proc.returncode, self.stderr()))
            time.sleep(0.02)
        self.stop()
        raise BenchError("aztfs did not mount within %d s:\n%s" % (MOUNT_TIMEOUT, self.stderr()))

    def stderr(self):
        try:
            return Path(self.stderr_path).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stats(self):
        """The mount's counters (the user.aztfs.stats xattr of its root)."""
        return json.loads(os.getxattr(self.path, "user.aztfs.stats"))

    def requests(self):
        """Requests sent so far (all attempts)."""
        return self.stats()["requests"]

    def peak_rss_kib(self):
        """The daemon's peak resident set size (VmHWM) in KiB."""
        return peak_rss_kib(self.proc.pid)

    def reset_peak_rss(self):
        """Reset VmHWM to the current RSS (Linux clear_refs 5); False if refused."""
        try:
            with open("/proc/%d/clear_refs" % self.proc.pid, "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def stop(self):
        """Unmount and wait for aztfs; raise BenchError if it did not exit 0."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            unmount_path(self.path)
            proc.wait(15)
        except subprocess.TimeoutExpired:
            stop_process(proc, grace=5)
            unmount_path(self.path)
        if proc.returncode != 0:
            raise BenchError("aztfs exited with status %s after the unmount:\n%s"
                             % (proc.returncode, self.stderr()))

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        try:
            self.stop()
        except BenchError as e:
            if exc_type is None:
                raise
            print("bench: also: %s" % e, file=sys.stderr)   # keep the first error


class Run:
    """Outcome of run_timed: wall seconds, exit code, output."""

    def __init__(self, argv, wall, code, stdout, stderr):
        self.argv = argv
        self.wall = wall
        self.code = code
        self.stdout = stdout
        self.stderr = stderr

    def check(self):
        """Raise BenchError unless the command exited 0; return self."""
        if self.code != 0:
            raise BenchError("command %r exited %s; stderr:\n%s"
                             % (self.argv, self.code, self.stderr[-2000:]))
        return self


def run_timed(argv, scratch_dir, env=None, timeout=1800):
    """Run ARGV (stdin /dev/null, stdout and stderr to files in SCRATCH_DIR)
    and measure its wall time from spawn to exit. Dirty pages are written
    back first, so one run's writeback does not slow the next. The command
    (its whole process group) is killed after TIMEOUT s, or when the wait is
    interrupted."""
    out_path = os.path.join(str(scratch_dir), "cmd.stdout")
    err_path = os.path.join(str(scratch_dir), "cmd.stderr")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, out_path, flags, 0o644),
               (os.POSIX_SPAWN_OPEN, 2, err_path, flags, 0o644)]
    full_env = dict(os.environ, **TOOL_ENV)
    full_env.update(env or {})
    os.sync()
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, full_env, file_actions=actions, setsid=True)
    killer = threading.Timer(timeout, os.killpg, (pid, signal.SIGKILL))
    killer.start()
    try:
        _, status = os.waitpid(pid, 0)
    except BaseException:          # e.g. SystemExit from SIGTERM: take the command down too
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        killer.cancel()
    wall = time.perf_counter() - t0
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    return Run(argv, wall, os.waitstatus_to_exitcode(status), stdout, stderr)


def shell(cmd):
    """ARGV running the shell command CMD with bash."""
    return ["/bin/bash", "-c", cmd]
