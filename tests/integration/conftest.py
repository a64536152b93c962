"""Shared fixtures for the aztfs integration tests.

* ``azurite`` (session): a private Azurite table emulator on a free port,
  started from .deps-node/ (scripts/deps.sh installs it). Never skipped: if it
  is missing or cannot start, every test that needs it fails with the reason.
* ``sdk`` (session): an azure.data.tables.TableServiceClient on that emulator.
* ``mounter`` / ``module_mounter``: start ``./aztfs -f MOUNTPOINT`` as a
  subprocess, wait for the mount, and unmount + reap at teardown (also checks
  that aztfs exited cleanly and that no sanitizer report was printed).
* ``sh``: run shell tools (ls, find, grep, cat, stat, du) with a timeout.

Seed data first, then mount: the mount caches listings for a while.
Run with:  /usr/bin/python3 -m pytest tests/integration
Environment: AZTFS_BIN overrides ./aztfs; AZTFS_TEST_DEBUG=1 prints aztfs'
stderr after every mount.
"""

import base64
import faulthandler
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AZTFS = Path(os.environ.get("AZTFS_BIN", str(ROOT / "aztfs")))

# The emulator's account, its start and the port/unmount helpers are shared
# with the benchmark (bench/common.py, standard library only).
sys.path.insert(0, str(ROOT / "bench"))
import sdk_values  # noqa: E402
from common import (ACCOUNT, AZURITE_BIN, KEY, conn_str_for, free_port,  # noqa: E402
                    port_answers, spawn_azurite, stop_process, unmount_path)

MOUNT_TIMEOUT = 15      # seconds for a mount to appear
EXIT_TIMEOUT = 15       # seconds for a refused mount to exit
CMD_TIMEOUT = 60        # seconds for any shell tool
TEST_HARD_LIMIT = 240   # seconds: dump tracebacks and abort a hung test run

SANITIZER_PATTERNS = re.compile(
    r"ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer)"
    r"|runtime error:|SUMMARY: UndefinedBehaviorSanitizer")


# --------------------------------------------------------------------------
# hang protection: no pytest-timeout in Debian's default install
# --------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _hard_time_limit():
    faulthandler.dump_traceback_later(TEST_HARD_LIMIT, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


# --------------------------------------------------------------------------
# Azurite
# --------------------------------------------------------------------------
class Azurite:
    def __init__(self, port, proc, log_path):
        self.port = port
        self.proc = proc
        self.log_path = log_path
        self.endpoint = "http://127.0.0.1:%d/%s" % (port, ACCOUNT)
        self.conn_str = conn_str_for(port)
        self.key = KEY
        self.account = ACCOUNT

    def log_tail(self, n=30):
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    if not AZURITE_BIN.exists():
        pytest.fail("Azurite not found at %s: run scripts/deps.sh (it installs "
                    "azurite@3.35.0 into .deps-node/)" % AZURITE_BIN, pytrace=False)
    logdir = tmp_path_factory.mktemp("azurite")
    last_err = ""
    for attempt in range(3):
        port = free_port()
        log_path = logdir / ("azurite-%d.log" % port)
        proc = spawn_azurite(port, log_path)
        az = Azurite(port, proc, log_path)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            if port_answers(port):
                try:
                    yield az
                finally:
                    stop_process(proc)
                return
            time.sleep(0.2)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        last_err = ("Azurite (%s) did not answer on 127.0.0.1:%d within 30 s "
                    "(exit status %s). Log:\n%s" % (AZURITE_BIN, port, proc.returncode,
                                                    az.log_tail()))
    pytest.fail(last_err, pytrace=False)


@pytest.fixture(scope="session")
def sdk(azurite):
    try:
        from azure.data.tables import TableServiceClient
    except ImportError as e:  # pragma: no cover
        pytest.fail("azure.data.tables is missing (apt-get install python3-azure; "
                    "run the tests with /usr/bin/python3): %s" % e, pytrace=False)
    return TableServiceClient.from_connection_string(azurite.conn_str)


# --------------------------------------------------------------------------
# aztfs mounts
# --------------------------------------------------------------------------
def _check_fuse_available():
    problems = []
    if not os.path.exists("/dev/fuse"):
        problems.append("/dev/fuse does not exist (containers: --device /dev/fuse "
                        "--cap-add SYS_ADMIN)")
    if shutil.which("fusermount3") is None:
        problems.append("fusermount3 not found (apt-get install fuse3)")
    if not AZTFS.exists():
        problems.append("%s not found: build first (scripts/build.sh)" % AZTFS)
    if problems:
        pytest.fail("cannot mount aztfs: " + "; ".join(problems), pytrace=False)


def aztfs_env(conn_str=None, extra=None):
    """Environment for aztfs: ours, minus any inherited connection string."""
    env = dict(os.environ)
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    if conn_str is not None:
        env["AZURE_STORAGE_CONNECTION_STRING"] = conn_str
    # Sanitizer builds: make reports visible and fatal.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    if extra:
        env.update(extra)
    return env


def sanitizer_report(text):
    m = SANITIZER_PATTERNS.search(text or "")
    return bool(m)


class Mount:
    """A running `aztfs -f` process and its mountpoint."""

    def __init__(self, path, proc, stderr_path, args):
        self.path = str(path)
        self.proc = proc
        self.stderr_path = stderr_path
        self.args = args
        self.closed = False
        self.exit_status = None

    def __str__(self):
        return self.path

    def __fspath__(self):
        return self.path

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def stderr(self):
        try:
            return Path(self.stderr_path).read_text(errors="replace")
        except OSError:
            return ""

    def unmount(self, check=True):
        """Unmount, wait for aztfs to exit, return its stderr.
        With CHECK, fail if aztfs did not exit 0 by itself or printed a
        sanitizer report."""
        if self.closed:
            return self.stderr()
        self.closed = True
        problems = []
        try:
            unmount_path(self.path)
        except subprocess.TimeoutExpired:
            problems.append("fusermount3 -u timed out")
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            problems.append("aztfs did not exit within 15 s of the unmount (killed)")
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
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
                pytest.fail("%s (args %s); stderr:\n%s"
                            % ("; ".join(problems), self.args, err[-6000:]),
                            pytrace=False)
        return err


def start_mount(workdir, conn_str=None, options=(), env_extra=None, env=None,
                wait=True):
    """Run `aztfs -f [options] MOUNTPOINT` and wait until it is mounted.
    Fails the test with aztfs' stderr if it exits or does not mount in time."""
    _check_fuse_available()
    workdir = Path(workdir)
    mp = Path(tempfile.mkdtemp(prefix="mnt-", dir=str(workdir)))
    stderr_path = mp.parent / (mp.name + ".stderr")
    args = [str(AZTFS), "-f"] + list(options) + [str(mp)]
    if env is None:
        env = aztfs_env(conn_str, env_extra)
    errf = open(stderr_path, "wb")
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                            env=env, cwd=str(workdir))
    errf.close()
    m = Mount(mp, proc, stderr_path, args[1:])
    if not wait:
        return m
    deadline = time.monotonic() + MOUNT_TIMEOUT
    while time.monotonic() < deadline:
        if os.path.ismount(str(mp)):
            return m
        if proc.poll() is not None:
            m.closed = True
            pytest.fail("aztfs exited with status %s before mounting (args %s); stderr:\n%s"
                        % (proc.returncode, args[1:], m.stderr()[-6000:]), pytrace=False)
        time.sleep(0.05)
    m.unmount(check=False)
    pytest.fail("aztfs did not mount within %d s (args %s); stderr:\n%s"
                % (MOUNT_TIMEOUT, args[1:], m.stderr()[-6000:]), pytrace=False)


class Mounter:
    def __init__(self, azurite, workdir):
        self.azurite = azurite
        self.workdir = workdir
        self.mounts = []

    def mount(self, conn_str=None, options=(), env_extra=None, env=None):
        """Mount with the emulator's connection string unless CONN_STR or ENV
        is given; returns a Mount (usable as a path)."""
        if conn_str is None and env is None:
            conn_str = self.azurite.conn_str
        m = start_mount(self.workdir, conn_str, options, env_extra, env)
        self.mounts.append(m)
        return m

    def close(self):
        failures = []
        for m in reversed(self.mounts):
            try:
                m.unmount(check=True)
            except BaseException as e:  # pytest.fail raises an OutcomeException
                failures.append(str(e))
        self.mounts = []
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)


@pytest.fixture
def mounter(azurite, tmp_path):
    mt = Mounter(azurite, tmp_path)
    yield mt
    mt.close()


@pytest.fixture(scope="module")
def module_mounter(azurite, tmp_path_factory):
    mt = Mounter(azurite, tmp_path_factory.mktemp("mounts"))
    yield mt
    mt.close()


# --------------------------------------------------------------------------
# running aztfs and shell tools
# --------------------------------------------------------------------------
class Result:
    def __init__(self, args, returncode, stdout, stderr):
        self.args = args
        self.returncode = returncode
        self.stdout_bytes = stdout
        self.stderr_bytes = stderr
        self.stdout = stdout.decode("utf-8", "surrogateescape")
        self.stderr = stderr.decode("utf-8", "surrogateescape")

    def lines(self):
        return [l for l in self.stdout.split("\n") if l != ""]

    def __repr__(self):
        return "Result(%r, rc=%r, stdout=%r, stderr=%r)" % (
            self.args, self.returncode, self.stdout[:2000], self.stderr[:2000])


class Shell:
    """Run a command (list or shell string); check=True asserts exit 0."""

    def __call__(self, cmd, check=True, timeout=CMD_TIMEOUT, cwd=None, env=None,
                 input=None):
        shell = isinstance(cmd, str)
        full_env = dict(os.environ)
        full_env["LC_ALL"] = "C.UTF-8"
        if env:
            full_env.update(env)
        try:
            p = subprocess.run(cmd, shell=shell, capture_output=True, timeout=timeout,
                               cwd=cwd, env=full_env, input=input,
                               executable="/bin/bash" if shell else None)
        except subprocess.TimeoutExpired:
            pytest.fail("command timed out after %d s: %r" % (timeout, cmd), pytrace=False)
        r = Result(cmd, p.returncode, p.stdout, p.stderr)
        if check:
            assert p.returncode == 0, "command failed: %r" % (r,)
        return r

    def ls(self, path, *flags):
        """Names listed by `ls -1 [flags] PATH` (one per line, no quoting
        since stdout is a pipe)."""
        return self(["ls", "-1"] + list(flags) + [str(path)]).lines()


@pytest.fixture(scope="session")
def sh():
    return Shell()


def run_aztfs(args, env, timeout=EXIT_TIMEOUT, cwd=None):
    """Run aztfs expecting it to exit by itself (refusals, --help, --version).
    If it is still running after TIMEOUT, any mount it made is removed, it is
    killed, and the test fails."""
    if not AZTFS.exists():
        pytest.fail("%s not found: build first (scripts/build.sh)" % AZTFS, pytrace=False)
    p = subprocess.Popen([str(AZTFS)] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for a in args:
            if isinstance(a, (str, Path)) and os.path.isdir(str(a)):
                unmount_path(str(a))
        p.kill()
        out, err = p.communicate()
        pytest.fail("aztfs %s did not exit within %d s; stderr:\n%s"
                    % (args, timeout, err.decode(errors="replace")[-4000:]), pytrace=False)
    return Result(args, p.returncode, out, err)


@pytest.fixture(scope="session")
def aztfs_run():
    return run_aztfs


@pytest.fixture(scope="session")
def aztfs_paths():
    return {"aztfs": AZTFS, "root": ROOT}


# --------------------------------------------------------------------------
# SDK helpers
# --------------------------------------------------------------------------
def insert_batched(table_client, entities, batch=100):
    """Insert ENTITIES (dicts) with entity group transactions of up to BATCH
    operations, one partition per transaction."""
    by_pk = {}
    for e in entities:
        by_pk.setdefault(e["PartitionKey"], []).append(e)
    for pk, ents in by_pk.items():
        for i in range(0, len(ents), batch):
            table_client.submit_transaction([("upsert", e) for e in ents[i:i + batch]])


@pytest.fixture(scope="session")
def seed():
    """Helpers to create tables: seed.table(sdk, name) recreates NAME empty;
    seed.insert(table_client, entities) batches inserts."""
    class Seed:
        @staticmethod
        def table(sdk_client, name):
            try:
                sdk_client.delete_table(name)
            except Exception:
                pass
            return sdk_client.create_table(name)

        insert = staticmethod(insert_batched)
    return Seed()


def raw_get(azurite, path, accept="application/json;odata=minimalmetadata"):
    """Signed SharedKey GET of PATH (beginning with /<table>...) on the
    emulator; returns (status, headers, body bytes). For checking the wire."""
    import email.utils
    import hashlib
    import hmac
    import urllib.error
    import urllib.request
    full = "/" + ACCOUNT + path
    date = email.utils.formatdate(usegmt=True)
    resource = "/" + ACCOUNT + full.split("?", 1)[0]
    sts = "GET\n\n\n%s\n%s" % (date, resource)
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(),
                                    hashlib.sha256).digest()).decode()
    req = urllib.request.Request(
        "http://127.0.0.1:%d%s" % (azurite.port, full),
        headers={"x-ms-date": date, "x-ms-version": "2019-02-02", "Accept": accept,
                 "DataServiceVersion": "3.0",
                 "Authorization": "SharedKey %s:%s" % (ACCOUNT, sig)})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture(scope="session")
def wire(azurite):
    return lambda path, **kw: raw_get(azurite, path, **kw)


# --------------------------------------------------------------------------
# helpers for the write tests (test_write*.py, test_rsync.py)
# --------------------------------------------------------------------------
REQUEST_LINE = re.compile(r"debug: (GET|POST|PUT|MERGE|PATCH|DELETE) (\S+) -> (\d+)")


def rewrite_and_close(f, text):
    """Replace the contents of open file F with TEXT and close it, expecting
    the close (the commit) to fail; returns the OSError it raised."""
    f.seek(0)
    f.truncate()
    f.write(text)
    with pytest.raises(OSError) as ei:
        f.close()
    return ei.value


class WriteHelpers:
    """Remote state through the SDK, and the requests a debug mount logged."""

    def __init__(self, sdk_client):
        self.sdk = sdk_client

    def get(self, table, pk, rk):
        """The entity via the SDK, or None when it does not exist."""
        from azure.core.exceptions import ResourceNotFoundError
        try:
            return self.sdk.get_table_client(table).get_entity(pk, rk)
        except ResourceNotFoundError:
            return None

    def etag(self, table, pk, rk):
        e = self.get(table, pk, rk)
        return e.metadata["etag"] if e is not None else None

    def entities(self, table):
        return list(self.sdk.get_table_client(table).list_entities())

    def table_exists(self, name):
        return any(t.name == name for t in self.sdk.list_tables())

    typed = staticmethod(sdk_values.typed)

    @staticmethod
    def requests(mount, since=0):
        """[(method, url, status)] logged by a -o loglevel=debug mount after
        character offset SINCE of its stderr."""
        return [(m.group(1), m.group(2), int(m.group(3)))
                for m in REQUEST_LINE.finditer(mount.stderr()[since:])]

    @staticmethod
    def writes(mount, since=0):
        """The modifying requests (everything but GET) after SINCE."""
        return [r for r in WriteHelpers.requests(mount, since) if r[0] != "GET"]

    @staticmethod
    def mark(mount):
        return len(mount.stderr())

    @staticmethod
    def write_fd(path, data, flags=os.O_WRONLY | os.O_TRUNC, mode=0o644):
        """os.open + os.write + os.close; returns None, or the errno of the
        failing call as (call, errno)."""
        try:
            fd = os.open(path, flags, mode)
        except OSError as e:
            return ("open", e.errno)
        err = None
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except OSError as e:
            err = ("write", e.errno)
        try:
            os.close(fd)
        except OSError as e:
            err = err or ("close", e.errno)
        return err


@pytest.fixture(scope="session")
def wh(sdk):
    return WriteHelpers(sdk)
