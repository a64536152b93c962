"""Shared fixtures for the aztfs integration tests.

* ``azurite`` (session): a private Azurite table emulator on a free port,
  started from .deps-node/ (scripts/deps.sh installs it). Never skipped: if it
  is missing or cannot start, every test that needs it fails with the reason.
* ``sdk`` (session): an azure.data.tables.TableServiceClient on that emulator.
* ``mounter`` / ``module_mounter``: start ``./aztfs -f MOUNTPOINT`` as a
  subprocess, wait for the mount, and unmount + reap at teardown (also checks
  that aztfs exited cleanly and that no sanitizer report was printed).
* ``sh``: run shell tools (ls, find, grep, cat, stat, du) with a timeout.
* ``backend`` (module): what ``mounter``/``module_mounter`` mount by default:
  plain Azurite, or Azurite behind the Cosmos DB for Table model
  (tests/cosmosmodel.py). A test module marked ``pytestmark =
  pytest.mark.backends`` runs each of its mounting tests on every backend
  of AZTFS_BACKENDS (default "azurite,cosmos"), as ``[azurite]`` and
  ``[cosmos]`` (except tests that take ``azurite`` themselves, which wire
  their own servers or proxies to it, and tests marked ``azurite_only``).
  The SDK (``sdk``, ``wh``) always talks to Azurite directly: it checks what
  is stored. Run only the Cosmos variant with ``-k cosmos``;
  AZTFS_COSMOS_SEED (default 1) seeds the model's orders;
  COSMOS_MOUNT_OPTIONS are the mount options the Cosmos backend adds.

Azurite, the mounts and the fault proxy are tests/harness.py's (shared with
bench/); this file makes pytest fixtures of them and turns a HarnessError
into a test failure.

Seed data first, then mount: the mount caches listings for a while.
Run with:  /usr/bin/python3 -m pytest tests/integration
Environment: AZTFS_BIN overrides ./aztfs; AZTFS_TEST_DEBUG=1 prints aztfs'
stderr after every mount.
"""

import base64
import faulthandler
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402
import sdk_values  # noqa: E402
# Re-exported for the test modules (from conftest import ...).
from harness import (ACCOUNT, AZURITE_BIN, KEY, ROOT, Azurite, HarnessError,  # noqa: E402,F401
                     aztfs_env, conn_str_for, free_port, fuse_problems, sanitizer_report,
                     stderr_excerpt, unmount_path)

AZTFS = harness.aztfs_binary()
# Options every mount of the Cosmos backend gets (issue 42): the model's
# host (127.0.0.1) does not say Cosmos, the option does.
COSMOS_MOUNT_OPTIONS = ["-o", "service=cosmos"]
COSMOS_SEED = int(os.environ.get("AZTFS_COSMOS_SEED", "1"))
BACKENDS = ("azurite", "cosmos")
EXIT_TIMEOUT = 15       # seconds for a refused mount to exit
CMD_TIMEOUT = 60        # seconds for any shell tool
TEST_HARD_LIMIT = 240   # seconds: dump tracebacks and abort a hung test run


def loud(fn, *args, **kwargs):
    """FN(*ARGS, **KWARGS); a HarnessError fails the test with its message
    (these fail loudly, never skip)."""
    try:
        return fn(*args, **kwargs)
    except HarnessError as e:
        reason = str(e)
    pytest.fail(reason, pytrace=False)      # outside the except: no chained traceback


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
@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    az = loud(Azurite(tmp_path_factory.mktemp("azurite")).start)
    try:
        yield az
    finally:
        az.stop()


def pytest_configure(config):
    config.addinivalue_line("markers", "backends: run the module's mounting tests on "
                            "every backend (Azurite, the Cosmos DB for Table model)")
    config.addinivalue_line("markers", "azurite_only(reason): in a backends module, "
                            "mount plain Azurite only")


def pytest_generate_tests(metafunc):
    """Tests of a module marked backends that mount (their fixtures need
    ``backend``) and do not take ``azurite`` themselves run on each backend."""
    d = metafunc.definition
    if ("backend" in metafunc.fixturenames and d.get_closest_marker("backends") is not None
            and d.get_closest_marker("azurite_only") is None
            and "azurite" not in d._fixtureinfo.argnames):
        # The same string objects for every test: pytest 7 keeps a
        # parametrized module fixture only while its param "is" the same.
        wanted = os.environ.get("AZTFS_BACKENDS", "azurite,cosmos").split(",")
        kinds = [k for k in BACKENDS if k in wanted]
        metafunc.parametrize("backend", kinds or [BACKENDS[0]], indirect=True, scope="module")


class Backend:
    """Where mounts point by default: KIND "azurite" or "cosmos"; PORT,
    CONN_STR, the mount OPTIONS it needs, and MODEL (the CosmosModel or None)."""

    def __init__(self, kind, port, options=(), model=None):
        self.kind = kind
        self.port = port
        self.options = list(options)
        self.model = model

    @property
    def conn_str(self):
        return conn_str_for(self.port)

    @property
    def cosmos(self):
        return self.kind == "cosmos"


@pytest.fixture(scope="session")
def cosmos_model(azurite):
    """The Cosmos DB for Table model in front of the session's Azurite."""
    cm = harness.CosmosModel(upstream_port=azurite.port, seed=COSMOS_SEED)
    cm.start()
    try:
        yield cm
    finally:
        cm.stop()


@pytest.fixture(scope="module")
def backend(request, azurite):
    if getattr(request, "param", "azurite") == "cosmos":
        cm = request.getfixturevalue("cosmos_model")
        return Backend("cosmos", cm.port, COSMOS_MOUNT_OPTIONS, cm)
    return Backend("azurite", azurite.port)


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
    problems = fuse_problems(AZTFS)
    if problems:
        pytest.fail("cannot mount aztfs: " + "; ".join(problems), pytrace=False)


class Mount(harness.Mount):
    """harness.Mount whose failures fail the test."""

    def unmount(self, check=True):
        """Unmount, wait for aztfs to exit, return its stderr.
        With CHECK, fail if aztfs did not exit 0 by itself or printed a
        sanitizer report."""
        return loud(super().unmount, check)


def start_mount(workdir, conn_str=None, options=(), env_extra=None, env=None,
                wait=True):
    """Run `aztfs -f [options] MOUNTPOINT` and wait until it is mounted.
    Fails the test with aztfs' stderr if it exits or does not mount in time."""
    _check_fuse_available()
    m = Mount(workdir, conn_str, options, env_extra, env, binary=AZTFS)
    return loud(m.start, wait)


class Mounter:
    def __init__(self, azurite, workdir, backend=None):
        self.azurite = azurite
        self.workdir = workdir
        self.backend = backend
        self.mounts = []

    def mount(self, conn_str=None, options=(), env_extra=None, env=None):
        """Mount the backend (the emulator, or the Cosmos model in front of
        it) unless CONN_STR or ENV is given; returns a Mount (usable as a path)."""
        if conn_str is None and env is None:
            if self.backend is not None:
                conn_str = self.backend.conn_str
                options = list(self.backend.options) + list(options)
            else:
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
def mounter(azurite, backend, tmp_path):
    mt = Mounter(azurite, tmp_path, backend)
    yield mt
    mt.close()


@pytest.fixture(scope="module")
def module_mounter(azurite, backend, tmp_path_factory):
    mt = Mounter(azurite, tmp_path_factory.mktemp("mounts"), backend)
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
        def write_all(fd):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        return harness.write_through(path, flags, write_all, mode)


@pytest.fixture(scope="session")
def wh(sdk):
    return WriteHelpers(sdk)


# --------------------------------------------------------------------------
# results as they come, for scripts/run_pytest.py: a killed pytest leaves no
# JUnit report, so each test's start and each phase's outcome are appended to
# $AZTFS_TEST_RESULTS as they happen (one line each, flushed)
# --------------------------------------------------------------------------
def _record(line):
    path = os.environ.get("AZTFS_TEST_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line.replace("\n", " ") + "\n")


def pytest_runtest_logstart(nodeid, location):
    _record("start " + nodeid)


def pytest_runtest_logreport(report):
    outcome = report.outcome
    if report.when == "call" and hasattr(report, "wasxfail"):
        outcome = "failed"          # test.sh counts xfail and xpass as failures
    _record("%s %s %s" % (report.when, outcome, report.nodeid))
