"""Configuration: connection strings, config files, refusals, options, and
that the account key never shows up in the logs."""

import base64
import json
import os
import re
import socket
import stat as statmod
import subprocess
import tempfile

import pytest

from conftest import (ACCOUNT, AZTFS, KEY, aztfs_env, conn_str_for, free_port,
                      unmount_path)

TABLE = "cfgProbe"
WRONG_KEY = base64.b64encode(bytes(range(64))).decode()   # valid base64, not the key


@pytest.fixture(scope="module")
def probe(sdk, seed):
    t = seed.table(sdk, TABLE)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "probe": "config-probe-value"})
    return TABLE


def secret_fragments():
    """Pieces of the account key that must never be printed."""
    raw = base64.b64decode(KEY)
    return [KEY, KEY[:20], KEY[-24:], raw.hex()[:32]]


def assert_no_secret(text):
    for frag in secret_fragments():
        assert frag not in text, "account key material printed: %r" % frag


def assert_refused(res, mountpoint, pattern):
    assert res.returncode != 0, res
    lines = [l for l in res.stderr.split("\n") if l.strip()]
    assert len(lines) == 1, "want exactly one line on stderr, got: %r" % res.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert not os.path.ismount(str(mountpoint))
    assert os.listdir(str(mountpoint)) == []
    assert_no_secret(res.stderr + res.stdout)


@pytest.fixture
def mp(tmp_path):
    d = tmp_path / "mp"
    d.mkdir()
    yield d
    unmount_path(str(d))   # in case a refusal test mounted after all


def write_config(tmp_path, text, mode):
    p = tmp_path / "aztfs.conf"
    p.write_text(text)
    os.chmod(str(p), mode)
    return p


# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case,conn,pattern", [
    ("wrong-key", "WRONGKEY",
     r"(?i)auth|key|403|signature|credential|forbidden|denied"),
    ("malformed", "garbage",
     r"(?i)connection.?string|malformed|invalid|parse|unrecogni[sz]ed"),
    ("unreachable", "CLOSEDPORT",
     r"(?i)connect|reach|refused|endpoint|127\.0\.0\.1|network"),
    ("empty-key-value", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=",
     r"(?i)key|auth|403|connection.?string|invalid|malformed|missing|empty"),
])
def test_refused(case, conn, pattern, azurite, probe, mp, aztfs_run):
    if conn == "WRONGKEY":
        conn = conn_str_for(azurite.port, key=WRONG_KEY)
    elif conn == "CLOSEDPORT":
        conn = conn_str_for(free_port())
    res = aztfs_run(["-f", mp], aztfs_env(conn))
    assert_refused(res, mp, pattern)
    assert WRONG_KEY not in res.stderr


def test_refused_without_any_connection_string(azurite, mp, aztfs_run):
    res = aztfs_run(["-f", mp], aztfs_env(None))
    assert_refused(res, mp, r"(?i)AZURE_STORAGE_CONNECTION_STRING|config|connection")


def test_wrong_key_refused_in_daemon_mode(azurite, probe, mp, aztfs_run):
    """Without -f the check must still happen before forking: the command
    itself fails, nothing is left mounted."""
    res = aztfs_run([mp], aztfs_env(conn_str_for(azurite.port, key=WRONG_KEY)))
    assert_refused(res, mp, r"(?i)auth|key|403|signature|credential|forbidden|denied")


def test_config_file_with_key_must_be_private(azurite, probe, mp, tmp_path, aztfs_run):
    cfg = write_config(tmp_path, azurite.conn_str + "\n", 0o644)
    res = aztfs_run(["-f", "-o", "config=%s" % cfg, mp], aztfs_env(None))
    assert_refused(res, mp, r"(?i)chmod|permission|mode")
    cfg.chmod(0o640)
    res = aztfs_run(["-f", "-o", "config=%s" % cfg, mp], aztfs_env(None))
    assert_refused(res, mp, r"(?i)chmod|permission|mode")


def test_config_file_saying_devstorage_false_with_a_key_must_be_private(
        azurite, probe, mp, tmp_path, aztfs_run):
    """Whether a file holds a secret is decided from what it sets, not from
    a word in it: "UseDevelopmentStorage=false" next to a real key is a
    secret."""
    cfg = write_config(tmp_path, "UseDevelopmentStorage=false;" + azurite.conn_str + "\n",
                       0o644)
    res = aztfs_run(["-f", "-o", "config=%s" % cfg, mp], aztfs_env(None))
    assert_refused(res, mp, r"(?i)chmod|permission|mode")


def test_plain_http_beyond_loopback_refused(azurite, mp, aztfs_run):
    # 192.0.2.1 is TEST-NET-1: the refusal comes before any request is sent
    conn = conn_str_for(azurite.port).replace("127.0.0.1:%d" % azurite.port, "192.0.2.1:10002")
    assert "192.0.2.1" in conn
    res = aztfs_run(["-f", mp], aztfs_env(conn))
    assert_refused(res, mp, r"refusing plain http to 192\.0\.2\.1.*allow_http")


@pytest.mark.parametrize("opt,pattern", [
    ("cache_timeout=-1", r"cache_timeout must be between 0 and 86400"),
    ("attr_timeout=-1", r"attr_timeout must be between 0 and 86400"),
    ("attr_timeout=90000", r"attr_timeout must be between 0 and 86400"),
    ("timeout=0", r"timeouts must be positive"),
    ("retry_time=0", r"timeouts must be positive"),
    ("retries=-1", r"retries not negative"),
])
def test_bad_option_value_refused(opt, pattern, azurite, mp, aztfs_run):
    res = aztfs_run(["-f", "-o", opt, mp], aztfs_env(azurite.conn_str))
    assert_refused(res, mp, pattern)


def test_missing_config_file_refused(azurite, mp, tmp_path, aztfs_run):
    res = aztfs_run(["-f", "-o", "config=%s" % (tmp_path / "nope.conf"), mp],
                    aztfs_env(azurite.conn_str))
    assert_refused(res, mp, r"(?i)nope\.conf|no such|config")


def check_probe_visible(mnt, sh):
    assert TABLE in sh.ls(mnt)
    out = sh(["cat", os.path.join(str(mnt), TABLE, "p", "r.json")]).stdout
    assert json.loads(out)["probe"] == "config-probe-value"


def test_config_file_one_line(azurite, probe, tmp_path, mounter, sh):
    cfg = write_config(tmp_path, azurite.conn_str + "\n", 0o600)
    mnt = mounter.mount(options=["-o", "config=%s" % cfg], env=aztfs_env(None))
    check_probe_visible(mnt, sh)


def test_config_file_one_field_per_line(azurite, probe, tmp_path, mounter, sh):
    text = ("# aztfs test account\n"
            "DefaultEndpointsProtocol=http\n"
            "\n"
            "AccountName=%s\n"
            "AccountKey=%s\n"
            "TableEndpoint=%s\n" % (ACCOUNT, KEY, azurite.endpoint))
    cfg = write_config(tmp_path, text, 0o600)
    mnt = mounter.mount(options=["-o", "config=%s" % cfg], env=aztfs_env(None))
    check_probe_visible(mnt, sh)


def test_config_file_wins_over_environment(azurite, probe, tmp_path, mounter, sh):
    cfg = write_config(tmp_path, azurite.conn_str, 0o600)   # no trailing newline
    mnt = mounter.mount(options=["-o", "config=%s" % cfg], env=aztfs_env("garbage"))
    check_probe_visible(mnt, sh)


def test_version_and_help(aztfs_run):
    res = aztfs_run(["--version"], aztfs_env(None))
    assert res.returncode == 0, res
    assert re.search(r"\d+\.\d+", res.stdout + res.stderr), res
    res = aztfs_run(["--help"], aztfs_env(None))
    assert res.returncode == 0, res
    out = res.stdout + res.stderr
    assert "config" in out and "loglevel" in out, out
    assert "AZURE_STORAGE_CONNECTION_STRING" in out, out


def test_debug_log_never_shows_the_key(azurite, probe, mounter, sh):
    mnt = mounter.mount(options=["-o", "loglevel=debug"])
    check_probe_visible(mnt, sh)
    sh(["ls", "-lR", str(mnt)])
    err = mnt.unmount()
    assert err.strip(), "loglevel=debug logged nothing to stderr in the foreground"
    assert_no_secret(err)
    assert "AccountKey" not in err
    # the Authorization header may be mentioned, never its value
    assert not re.search(r"SharedKey(Lite)? +%s:[A-Za-z0-9+/=]{20,}" % ACCOUNT, err), err


def test_uid_gid_umask_options(azurite, probe, mounter):
    mnt = mounter.mount(options=["-o", "uid=12345,gid=23456,umask=027"])
    for p in [os.path.join(str(mnt), TABLE), os.path.join(str(mnt), TABLE, "p"),
              os.path.join(str(mnt), TABLE, "p", "r.json")]:
        st = os.stat(p)
        assert (st.st_uid, st.st_gid) == (12345, 23456), p
        assert st.st_mode & 0o027 == 0, (p, oct(st.st_mode))
        assert st.st_mode & 0o400, (p, oct(st.st_mode))
    st = os.stat(os.path.join(str(mnt), TABLE, "p"))
    assert statmod.S_ISDIR(st.st_mode) and st.st_mode & 0o100


def test_read_only_mount(azurite, probe, mounter, sh):
    mnt = mounter.mount(options=["-o", "ro"])
    check_probe_visible(mnt, sh)
    r = sh(["touch", os.path.join(str(mnt), TABLE, "p", "new.json")], check=False)
    assert r.returncode != 0 and "Read-only" in r.stderr, r
    r = sh("echo '{}' > '%s'" % os.path.join(str(mnt), TABLE, "p", "r.json"), check=False)
    assert r.returncode != 0, r
    out = sh(["cat", os.path.join(str(mnt), TABLE, "p", "r.json")]).stdout
    assert json.loads(out)["probe"] == "config-probe-value"


def test_key_not_in_environ_or_cmdline_and_no_core_dumps():
    """While it runs (here: stuck in the mount-time probe against a server
    that accepts and never answers), the daemon shows the key neither in
    /proc/PID/environ (`ps e`) nor in its command line, and it is not
    dumpable: run as an unprivileged user, its /proc files belong to root,
    which is what the kernel does for a process that writes no core dump."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    mp = tempfile.mkdtemp(prefix="aztfs-nobody-")   # pytest's tmp_path is root-only
    os.chmod(mp, 0o755)
    env = aztfs_env(conn_str_for(srv.getsockname()[1]))

    def as_nobody():
        os.setgid(65534)
        os.setuid(65534)

    proc = subprocess.Popen([str(AZTFS), "-f", "-o", "timeout=30,retries=0", mp], env=env,
                            preexec_fn=as_nobody, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        srv.settimeout(20)
        conn, _ = srv.accept()          # the probe: the key has been read by now
        with open("/proc/%d/environ" % proc.pid, "rb") as f:
            environ = f.read()
        with open("/proc/%d/cmdline" % proc.pid, "rb") as f:
            cmdline = f.read()
        owner = os.stat("/proc/%d/environ" % proc.pid).st_uid
        with open("/proc/%d/status" % proc.pid) as f:
            uid = [l.split()[1] for l in f if l.startswith("Uid:")][0]
        conn.close()
    finally:
        proc.kill()
        proc.wait()
        srv.close()
        os.rmdir(mp)
    assert uid == "65534"
    for frag in secret_fragments():
        assert frag.encode() not in environ, "key in /proc/PID/environ"
        assert frag.encode() not in cmdline
    assert b"AccountKey" not in environ
    assert b"AZURE_STORAGE_CONNECTION_STRING" not in environ, "the name stays in the block"
    assert owner == 0, "dumpable: /proc/PID/environ belongs to uid %d" % owner
