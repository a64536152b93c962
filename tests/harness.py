# harness.py - Azurite, aztfs mounts and the fault proxy for the tests and the benchmark.
"""The one place that starts and stops what the tests and the benchmark run
against (standard library only, no pytest):

* ``Azurite``: a private Azurite table emulator on a free port, in memory
  or on a database file (``location``), as a context manager.
* ``Mount``: ``aztfs -f [options] MOUNTPOINT`` on a fresh mountpoint: waits
  for the mount; ``unmount()`` unmounts, reaps aztfs and checks its exit
  status and stderr for sanitizer reports; the mount's request counters
  (the ``user.aztfs.stats`` xattr) and the daemon's peak RSS.
* ``FaultProxy`` (tests/faultproxy.py): the fault-injecting, counting HTTP
  proxy, imported from here on first use (http.client and the rest stay out
  of the benchmark's baseline scripts, which import this module).
* ``CosmosModel`` (tests/cosmosmodel.py): Azurite answering the way Cosmos
  DB for Table does (unsorted pages, opaque continuations, MERGE refused,
  429 throttling), imported likewise on first use.
* helpers: the emulator's account, connection strings, free ports,
  ``aztfs_env``, ``unmount_path``, ``stop_process``, ``peak_rss_kib``,
  ``stderr_excerpt`` (a log's tail, with its sanitizer reports whole).

Failures raise ``HarnessError`` with the reason (and aztfs' or Azurite's
output): tests/integration/conftest.py turns it into a test failure (never a
skip), bench/ into its error exit.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AZURITE_BIN = ROOT / ".deps-node" / "node_modules" / ".bin" / "azurite-table"
AZURITE_PACKAGE = ROOT / ".deps-node" / "node_modules" / "azurite" / "package.json"

# Azurite's well-known development account (public, documented by Microsoft).
ACCOUNT = "devstoreaccount1"
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
       "K1SZFPTOtr/KBHBeksoGMGw==")

AZURITE_TIMEOUT = 30         # seconds for Azurite to answer
AZURITE_ATTEMPTS = 3         # starts on a fresh port before giving up (ports race)
AZURITE_SAVE_TIMEOUT = 120   # seconds for Azurite to write its database file and exit
MOUNT_TIMEOUT = 15           # seconds for a mount to appear
UNMOUNT_TIMEOUT = 15         # seconds for aztfs to exit after the unmount

# A job a non-interactive shell starts in the background (`cmd &`, as a
# CI script may be) has SIGINT ignored, and an ignored signal stays ignored
# across exec: aztfs (libfuse installs its handlers only over the default,
# as a background job should) and the tests' writers would ignore the ^C
# the tests send. A handled signal is reset to the default at exec, so one
# handled here reaches every child as a terminal's ^C would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SANITIZER_PATTERNS = re.compile(
    r"ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer)"
    r"|WARNING: ThreadSanitizer:"  # a data race is reported as a warning
    r"|runtime error:|SUMMARY: UndefinedBehaviorSanitizer")


class HarnessError(Exception):
    """Azurite or a mount could not be started or did not stop cleanly; the
    message says why."""


def __getattr__(name):
    # PEP 562: `from harness import FaultProxy` loads the proxy module only then.
    if name == "FaultProxy":
        from faultproxy import FaultProxy
        return FaultProxy
    if name == "CosmosModel":
        from cosmosmodel import CosmosModel
        return CosmosModel
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------
def aztfs_binary():
    """The aztfs binary under test: $AZTFS_BIN, else ./aztfs of the repository."""
    return Path(os.environ.get("AZTFS_BIN", str(ROOT / "aztfs")))


def conn_str_for(port, key=KEY, account=ACCOUNT, scheme="http"):
    """The connection string of the emulator account on 127.0.0.1:PORT."""
    return ("DefaultEndpointsProtocol=%s;AccountName=%s;AccountKey=%s;"
            "TableEndpoint=%s://127.0.0.1:%d/%s;" % (scheme, account, key, scheme, port,
                                                      account))


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


def is_mounted(path):
    """Is something mounted at PATH? Read from /proc/mounts: os.path.ismount
    says no for the mount of a killed daemon (ENOTCONN)."""
    want = os.path.abspath(path)
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 1 and fields[1].replace("\\040", " ") == want:
                return True
    return False


def unmount_path(path):
    """Unmount the FUSE mount at PATH if there is one (lazily if busy, or
    left by a killed daemon)."""
    if is_mounted(path):
        r = subprocess.run(["fusermount3", "-u", path], capture_output=True, timeout=30)
        if r.returncode != 0 and is_mounted(path):
            subprocess.run(["fusermount3", "-uz", path], capture_output=True, timeout=30)


def release_barrier(path):
    """Have the daemon of the mount at PATH read every request the kernel
    queued so far: the RELEASE of a file or directory closed just before
    (close(2) does not wait for it) would otherwise be dropped by the
    unmount, and libfuse's own handle of a directory with it (a leak report
    under ASan that aztfs cannot prevent). An xattr is never cached, so its
    request queues behind them, and its answer means they were read."""
    try:
        subprocess.run(["getfattr", "-n", "user.aztfs.stats", path], capture_output=True,
                       timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass


def peak_rss_kib(pid="self"):
    """Peak resident set size (VmHWM) of process PID in KiB. Unlike the
    ru_maxrss a parent gets from wait4(), it does not include the memory of
    the (large) process the child was spawned from."""
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise HarnessError("no VmHWM in /proc/%s/status" % pid)


def fsync_dir(path):
    """fsync of directory PATH (of a mount's root: with -o writeback, every
    queued change sent, or OSError EIO)."""
    fd = os.open(str(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_through(path, flags, writes, mode=0o644):
    """Open PATH with FLAGS, call WRITES(fd) to write, close: the way an
    application saves, where the close (the commit) can fail too. Returns
    None, or (call, errno) of the first failing call ("open", "write" for
    anything WRITES raised, "close")."""
    try:
        fd = os.open(path, flags, mode)
    except OSError as e:
        return ("open", e.errno)
    err = None
    try:
        writes(fd)
    except OSError as e:
        err = ("write", e.errno)
    try:
        os.close(fd)
    except OSError as e:
        err = err or ("close", e.errno)
    return err


def sanitizer_report(text):
    """Whether TEXT (aztfs' stderr) holds an ASan/LSan/TSan/MSan/UBSan report."""
    return bool(SANITIZER_PATTERNS.search(text or ""))


def stderr_excerpt(text, tail=6000):
    """What of TEXT (aztfs' stderr) a failure message shows: its last TAIL
    characters, reaching back to the start of its first sanitizer report
    if it holds one, so that every report in it is shown whole (a report
    runs to the end: ASan and UBSan stop at the first, LeakSanitizer
    reports at exit)."""
    text = text or ""
    start = max(len(text) - tail, 0)
    m = SANITIZER_PATTERNS.search(text)
    if m:
        line = text.rfind("\n", 0, m.start()) + 1
        prev = text.rfind("\n", 0, max(line - 1, 0)) + 1
        if line > 0 and re.fullmatch(r"=+", text[prev:line - 1]):
            line = prev         # ASan's line of '=' above its ERROR line
        start = min(start, line)
    return text[start:]


def aztfs_env(conn_str=None, extra=None):
    """Environment for aztfs: ours, minus any inherited connection string,
    plus CONN_STR and EXTRA; sanitizer reports visible and fatal."""
    env = dict(os.environ)
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    if conn_str is not None:
        env["AZURE_STORAGE_CONNECTION_STRING"] = conn_str
    # a mount without key or SAS signs in with Entra ID: never let its
    # managed identity probe leave the machine (169.254.169.254)
    env.setdefault("AZTFS_IMDS_ENDPOINT", "http://127.0.0.1:9")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    if extra:
        env.update(extra)
    return env


def fuse_problems(binary):
    """What stops BINARY from mounting here: a list of reasons, empty if none."""
    problems = []
    if not os.path.exists("/dev/fuse"):
        problems.append("/dev/fuse does not exist (containers: --device /dev/fuse "
                        "--cap-add SYS_ADMIN)")
    if shutil.which("fusermount3") is None:
        problems.append("fusermount3 not found (apt-get install fuse3)")
    if not Path(binary).exists():
        problems.append("%s not found: build first (scripts/build.sh)" % binary)
    return problems


# --------------------------------------------------------------------------
# Azurite
# --------------------------------------------------------------------------
class Azurite:
    """A private Azurite table service, as a context manager: in memory, or
    with LOCATION (a directory) persisting in, and starting from, the
    database file there. Its log goes to LOGDIR/azurite-PORT.log. TIMEOUT:
    seconds to wait for it to answer (loading a big database file takes a
    while); ATTEMPTS: fresh ports to try before giving up; EXTRA_ARGS: more
    Azurite options (e.g. --oauth basic --cert F --key F for bearer tokens)."""

    def __init__(self, logdir, location=None, timeout=AZURITE_TIMEOUT,
                 attempts=AZURITE_ATTEMPTS, extra_args=()):
        self.logdir = Path(logdir)
        self.extra_args = [str(a) for a in extra_args]   # e.g. --oauth basic --cert ...
        self.location = location
        self.timeout = timeout
        self.attempts = attempts
        self.proc = None
        self.port = None
        self.log_path = None
        self.key = KEY
        self.account = ACCOUNT

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

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d/%s" % (self.port, ACCOUNT)

    def log_tail(self, n=30):
        """The last N lines of Azurite's log."""
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-n:])
        except (OSError, TypeError):
            return "(no log)"

    def _spawn(self):
        persistence = (["--location", str(self.location)] if self.location is not None
                       else ["--inMemoryPersistence"])
        with open(self.log_path, "wb") as log:
            return subprocess.Popen(
                [str(AZURITE_BIN)] + persistence + ["--tableHost", "127.0.0.1",
                 "--tablePort", str(self.port), "--disableTelemetry"] + self.extra_args,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)

    def start(self):
        """Start Azurite on a free port and wait until it answers."""
        if not AZURITE_BIN.exists():
            raise HarnessError("Azurite not found at %s: run scripts/deps.sh (it installs "
                               "azurite@3.35.0 into .deps-node/)" % AZURITE_BIN)
        last_err = ""
        for _ in range(self.attempts):
            self.port = free_port()
            self.log_path = self.logdir / ("azurite-%d.log" % self.port)
            self.proc = self._spawn()
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                if port_answers(self.port):
                    return self
                time.sleep(0.2)
            proc, self.proc = self.proc, None
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            last_err = ("Azurite (%s) did not answer on 127.0.0.1:%d within %d s "
                        "(exit status %s). Log:\n%s" % (AZURITE_BIN, self.port, self.timeout,
                                                        proc.returncode, self.log_tail()))
        raise HarnessError(last_err)

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
                raise HarnessError("Azurite did not save its database and exit within %d s "
                                   "of SIGINT" % AZURITE_SAVE_TIMEOUT) from None
        stop_process(proc)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# --------------------------------------------------------------------------
# aztfs mounts
# --------------------------------------------------------------------------
class Mount:
    """``aztfs -f [OPTIONS] MOUNTPOINT`` on a fresh mountpoint under WORKDIR
    (its stderr in MOUNTPOINT.stderr), usable as a path (os.fspath, str) and
    as a context manager that always unmounts and reaps aztfs.

    OPTIONS: aztfs arguments (["-o", "a=1,b"]). The environment is ENV if
    given, else aztfs_env(CONN_STR, ENV_EXTRA). BINARY: default aztfs_binary()."""

    def __init__(self, workdir, conn_str=None, options=(), env_extra=None, env=None,
                 binary=None):
        self.workdir = Path(os.path.abspath(workdir))     # aztfs runs in it
        self.binary = str(binary if binary is not None else aztfs_binary())
        self.options = [str(o) for o in options]
        self.env = env if env is not None else aztfs_env(conn_str, env_extra)
        self.path = None
        self.proc = None
        self.stderr_path = None
        self.args = None           # aztfs' arguments (without the program)
        self.closed = False
        self.exit_status = None

    def __str__(self):
        return self.path

    def __fspath__(self):
        return self.path

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def stderr(self):
        """All aztfs printed so far."""
        try:
            return Path(self.stderr_path).read_text(errors="replace")
        except (OSError, TypeError):
            return ""

    def ranges_made(self):
        """Key ranges the mount's listings were cut into so far (-o
        scan_parallel; read from its debug log, so mount with
        loglevel=debug): each costs at most one request more than the
        sequential scan (doc/PERFORMANCE.md)."""
        return sum(int(n) for n in
                   re.findall(r"into (\d+) ranges fetched in parallel", self.stderr()))

    def _failure(self, what):
        return HarnessError("%s (args %s); stderr:\n%s"
                            % (what, self.args, stderr_excerpt(self.stderr())))

    def start(self, wait=True):
        """Start aztfs; with WAIT, return once it is mounted."""
        problems = fuse_problems(self.binary)
        if problems:
            raise HarnessError("cannot mount aztfs: " + "; ".join(problems))
        self.path = tempfile.mkdtemp(prefix="mnt-", dir=str(self.workdir))
        self.stderr_path = self.path + ".stderr"
        argv = [self.binary, "-f"] + self.options + [self.path]
        self.args = argv[1:]
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err,
                                         stderr=err, env=self.env, cwd=str(self.workdir))
        if wait:
            self.wait_mounted()
        return self

    def wait_mounted(self, timeout=MOUNT_TIMEOUT):
        """Return once the mount is there; if aztfs exits first or TIMEOUT
        passes, raise (after unmounting and reaping it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.ismount(self.path):
                return self
            if self.proc.poll() is not None:
                self.closed = True
                self.exit_status = self.proc.returncode
                raise self._failure("aztfs exited with status %s before mounting"
                                    % self.proc.returncode)
            time.sleep(0.02)
        self.unmount(check=False)
        raise self._failure("aztfs did not mount within %d s" % timeout)

    def unmount(self, check=True):
        """Unmount, wait for aztfs to exit, return its stderr. With CHECK,
        raise if aztfs did not exit 0 by itself or printed a sanitizer report."""
        if self.closed or self.proc is None:
            return self.stderr()
        self.closed = True
        problems = []
        release_barrier(self.path)
        try:
            unmount_path(self.path)
        except subprocess.TimeoutExpired:
            problems.append("fusermount3 -u timed out")
        try:
            self.proc.wait(UNMOUNT_TIMEOUT)
        except subprocess.TimeoutExpired:
            problems.append("aztfs did not exit within %d s of the unmount (killed)"
                            % UNMOUNT_TIMEOUT)
            stop_process(self.proc, grace=5)
            unmount_path(self.path)
        self.exit_status = self.proc.returncode
        err = self.stderr()
        if os.environ.get("AZTFS_TEST_DEBUG"):
            sys.stderr.write("---- aztfs %s stderr ----\n%s\n" % (self.args, err))
        if check:
            if not problems and self.exit_status != 0:
                problems.append("aztfs exited with status %s after the unmount"
                                % self.exit_status)
            if sanitizer_report(err):
                problems.append("sanitizer report in aztfs stderr")
            if problems:
                raise self._failure("; ".join(problems))
        return err

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        try:
            self.unmount()
        except HarnessError as e:
            if exc_type is None:
                raise
            sys.stderr.write("also: %s\n" % e)    # keep the first error

    # -- what the benchmark measures -------------------------------------------
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
