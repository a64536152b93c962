"""What an operator needs to find a failure and watch a mount: -o logfile=
(0600, appended, reopened on SIGHUP), the rule for a daemon without syslog,
the last failures (user.aztfs.errors) and their count (user.aztfs.stats),
each entity's ETag and Timestamp as read-only xattrs (getfattr, rsync -a and
-X), -o metrics_file= in the Prometheus text format."""

import errno
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import AZTFS, rewrite_and_close
from harness import aztfs_env, unmount_path

T = "opsLog"


def wait_for(pred, timeout=10, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    pytest.fail("timed out waiting for %s" % what, pytrace=False)


def errors_xattr(m):
    return json.loads(os.getxattr(str(m), "user.aztfs.errors"))


@pytest.fixture
def table(sdk, seed):
    t = seed.table(sdk, T)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a", "v": "orig"})
    t.upsert_entity({"PartitionKey": "p", "RowKey": "b", "v": "orig"})
    return t


# -- the log file -------------------------------------------------------------
def test_logfile_gets_a_failed_redirection_and_is_reopened_on_sighup(table, mounter, sh,
                                                                     tmp_path):
    log = tmp_path / "logs" / "aztfs.log"
    log.parent.mkdir()
    m = mounter.mount(options=["-o", "logfile=%s" % log])
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    # bash ignores the failure of close: the redirection "succeeds"
    bad = m.join(T, "p", "new.json")
    r = sh("echo '{bad json' > '%s'" % bad, check=False)
    assert r.returncode == 0, r
    assert not os.path.exists(bad)
    text = wait_for(lambda: log.read_text() if "new.json" in log.read_text() else None,
                    what="the failure in the log file")
    line = [l for l in text.splitlines() if "new.json" in l][-1]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z aztfs\[\d+\]: error: "
                    r"\S*/p/new\.json: not saved: ", line), line
    assert m.stderr().strip() == "", "with logfile= nothing goes to stderr"

    # logrotate: move the file away, SIGHUP, the next lines go to a new file
    os.rename(log, str(log) + ".1")
    m.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: log.exists(), what="the reopened log file")
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    sh("echo '[1]' > '%s'" % m.join(T, "p", "other.json"))
    wait_for(lambda: "other.json" in log.read_text(), what="a line in the new file")
    assert "other.json" not in open(str(log) + ".1").read()
    assert "log file reopened" in log.read_text()
    assert os.path.ismount(str(m)), "SIGHUP with logfile= must not unmount"


def test_logfile_that_cannot_be_opened_fails_the_mount(azurite, aztfs_run, tmp_path):
    mp = tmp_path / "mp"
    mp.mkdir()
    res = aztfs_run(["-o", "logfile=%s/no/such/dir/a.log" % tmp_path, str(mp)],
                    aztfs_env(azurite.conn_str))
    assert res.returncode != 0
    assert "cannot open the log file" in res.stderr and "No such file" in res.stderr, res


def syslog_listening():
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        s = socket.socket(socket.AF_UNIX, kind)
        try:
            s.connect("/dev/log")
            return True
        except OSError:
            pass
        finally:
            s.close()
    return False


def test_daemon_says_where_its_logs_go(azurite, table, tmp_path):
    """Without -f: if nothing listens on /dev/log, aztfs says so on stderr
    before it detaches; with a log file it says nothing and logs there."""
    env = aztfs_env(azurite.conn_str)
    for opts, warned in ((["-o", "cache_timeout=1"], not syslog_listening()),
                         (["-o", "logfile=%s" % (tmp_path / "d.log")], False)):
        mp = tempfile.mkdtemp(dir=str(tmp_path))
        p = subprocess.run([str(AZTFS)] + opts + [mp], env=env, capture_output=True,
                           timeout=60, cwd=str(tmp_path))
        try:
            assert p.returncode == 0, p
            assert os.path.ismount(mp)
            err = p.stderr.decode()
            if warned:
                assert "nothing listens on /dev/log" in err and "logfile=" in err, err
                assert "user.aztfs.errors" in err, err
            else:
                assert "/dev/log" not in err, err
        finally:
            unmount_path(mp)
    wait_for(lambda: "mounted" in (tmp_path / "d.log").read_text(), what="the daemon's log")


# -- recent failures ----------------------------------------------------------
def test_errors_xattr_lists_the_last_failures(table, mounter, sh):
    m = mounter.mount()
    assert errors_xattr(m) == {"failures": 0, "recent": []}
    assert m.stats()["failures"] == 0
    sh("echo '{bad json' > '%s'" % m.join(T, "p", "new.json"), check=False)
    path = m.join(T, "p", "a.json")
    f = open(path, "r+")
    f.read()
    table.update_entity({"PartitionKey": "p", "RowKey": "a", "v": "sdk"}, mode="replace")
    assert rewrite_and_close(f, '{"v": "mount"}').errno == errno.ESTALE
    got = errors_xattr(m)
    assert got["failures"] == 2 and len(got["recent"]) == 2, got
    bad, stale = got["recent"]
    assert bad["op"] == "save" and bad["path"] == "/%s/p/new.json" % T, bad
    assert bad["errno"] == errno.EINVAL and bad["error"] == "EINVAL", bad
    assert "http_status" not in bad and bad["message"], bad
    assert stale["op"] == "save" and stale["path"] == "/%s/p/a.json" % T, stale
    assert stale["errno"] == errno.ESTALE and stale["error"] == "ESTALE", stale
    assert stale["http_status"] == 412, stale
    assert stale["code"] == "UpdateConditionNotSatisfied", stale
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", stale["time"]), stale
    assert m.stats()["failures"] == 2
    # not listed: rsync -X and cp --preserve=xattr copy no counters
    assert os.listxattr(str(m)) == []


def test_errors_ring_is_bounded(table, mounter, sh):
    m = mounter.mount()
    for i in range(40):
        sh("echo '{bad' > '%s'" % m.join(T, "p", "bad%02d.json" % i), check=False)
    got = errors_xattr(m)
    assert got["failures"] == 40
    assert len(got["recent"]) == 32
    assert got["recent"][0]["path"].endswith("/bad08.json"), got["recent"][0]
    assert got["recent"][-1]["path"].endswith("/bad39.json")


# -- per-entity xattrs --------------------------------------------------------
def test_entity_etag_and_timestamp(table, mounter, sh):
    m = mounter.mount()
    path = m.join(T, "p", "a.json")
    ent = table.get_entity("p", "a")
    etag = os.getxattr(path, "user.aztfs.etag").decode()
    assert etag == ent.metadata["etag"], (etag, ent.metadata)
    ts = os.getxattr(path, "user.aztfs.timestamp").decode()
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$", ts), ts
    assert json.loads(open(path).read())["Timestamp"].rstrip("Z").ljust(27, "0") == \
        ts.rstrip("Z"), ts
    assert sorted(os.listxattr(path)) == ["user.aztfs.etag", "user.aztfs.timestamp"]
    dump = sh(["getfattr", "-d", path]).stdout
    assert "user.aztfs.etag=" in dump and "user.aztfs.timestamp=" in dump, dump
    # directories have none
    assert os.listxattr(m.join(T, "p")) == []
    # read-only: ENOTSUP (what cp and mv take quietly), for any name
    for name in ("user.aztfs.etag", "user.other"):
        with pytest.raises(OSError) as ei:
            os.setxattr(path, name, b"x")
        assert ei.value.errno == errno.ENOTSUP
        with pytest.raises(OSError) as ei:
            os.removexattr(path, name)
        assert ei.value.errno == errno.ENOTSUP
    # a save changes both
    sh("printf '{\"v\": \"new\"}' | tee '%s' >/dev/null" % path)
    etag2 = os.getxattr(path, "user.aztfs.etag").decode()
    assert etag2 != etag and etag2 == table.get_entity("p", "a").metadata["etag"]


def test_rsync_and_the_entity_xattrs(table, mounter, sh, tmp_path):
    """rsync -a copies no xattrs; rsync -aX copies them out of the mount,
    and into it the mount refuses them (rsync exits 23) unless they are
    filtered out with --filter='-x user.aztfs.*'."""
    m = mounter.mount()
    src = m.join(T, "p") + "/"
    plain, withx = tmp_path / "plain", tmp_path / "withx"
    sh(["rsync", "-a", src, str(plain)])
    assert os.listxattr(str(plain / "a.json")) == []
    sh(["rsync", "-aX", src, str(withx)])
    assert os.getxattr(str(withx / "a.json"), "user.aztfs.etag") == \
        os.getxattr(m.join(T, "p", "a.json"), "user.aztfs.etag")
    # back into the mount: the local copies carry the xattrs rsync -X set
    back = m.join(T, "back") + "/"
    os.mkdir(m.join(T, "back"))
    r = sh(["rsync", "-rX", str(withx) + "/", back], check=False)
    assert r.returncode == 23 and "Operation not supported" in r.stderr, r
    r = sh(["rsync", "-rX", "--filter=-x user.aztfs.*", str(withx) + "/", back], check=False)
    assert r.returncode == 0, r
    # cp -a and mv take ENOTSUP quietly: the copy is made, nothing is printed
    for cmd in (["cp", "-a", str(withx / "b.json"), m.join(T, "p", "cpa.json")],
                ["mv", str(withx / "b.json"), m.join(T, "p", "mvd.json")]):
        r = sh(cmd, check=False)
        assert r.returncode == 0 and r.stderr == "", r
    assert table.get_entity("p", "cpa")["v"] == table.get_entity("p", "mvd")["v"] == "orig"


# -- metrics ------------------------------------------------------------------
SAMPLE = re.compile(r'^(aztfs_[a-z_]+)\{mountpoint="([^"]*)"(?:,(\w+)="([^"]*)")?\} '
                    r'(\d+(?:\.\d+)?)$')


def parse_metrics(text):
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
        elif line.startswith("# HELP "):
            continue
        else:
            mt = SAMPLE.match(line)
            assert mt, "not a sample line: %r" % line
            v = mt.group(5)
            samples[(mt.group(1), mt.group(4))] = (mt.group(2), float(v) if "." in v else int(v))
    return samples, types


def test_metrics_file(table, mounter, sh, tmp_path):
    prom = tmp_path / "aztfs.prom"
    m = mounter.mount(options=["-o", "metrics_file=%s,metrics_interval=1" % prom])
    sh(["cat", m.join(T, "p", "a.json")])
    sh("echo '{bad' > '%s'" % m.join(T, "p", "x.json"), check=False)
    f = open(m.join(T, "p", "b.json"), "r+")       # a conflict: the service's 412
    f.read()
    table.update_entity({"PartitionKey": "p", "RowKey": "b", "v": "theirs"}, mode="replace")
    assert rewrite_and_close(f, '{"v": "ours"}').errno == errno.ESTALE
    want = m.stats()
    assert want["errors_by_code"].get("UpdateConditionNotSatisfied") == 1, want
    samples, types = parse_metrics(wait_for(
        lambda: prom.exists() and "aztfs_failures_total" in prom.read_text() and
        'aztfs_failures_total{mountpoint="%s"} 2' % m in prom.read_text() and prom.read_text(),
        what="metrics with the two failures"))
    assert samples[("aztfs_failures_total", None)] == (str(m), 2)
    assert samples[("aztfs_service_errors_total", "UpdateConditionNotSatisfied")][1] == 1
    assert samples[("aztfs_requests_total", None)][1] >= 2
    assert samples[("aztfs_responses_total", "2xx")][1] >= 1
    assert ("aztfs_requests_by_kind_total", "query_entities") in samples or \
        any(k[0] == "aztfs_requests_by_kind_total" for k in samples)
    assert samples[("aztfs_cache_max_bytes", None)][1] == want["cache"]["max_bytes"]
    assert types["aztfs_requests_total"] == "counter"
    assert types["aztfs_cache_bytes"] == "gauge"
    assert all(n.endswith("_total") == (types[n] == "counter") for n in types
               if types[n] != "histogram"), types
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("aztfs.prom.tmp")] == []
    # the last write happens at unmount, with the final counts
    sh(["cat", m.join(T, "p", "b.json")])
    before = m.stats()["requests"]
    m.unmount()
    samples, types = parse_metrics(prom.read_text())
    assert samples[("aztfs_requests_total", None)][1] >= before
    # the request duration histogram: cumulative buckets up to +Inf, which
    # with _count is every request; the sum is in seconds
    h = "aztfs_request_duration_seconds"
    assert types[h] == "histogram", types
    bounds = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
              "+Inf"]
    counts = [samples[(h + "_bucket", le)][1] for le in bounds]
    assert counts == sorted(counts), counts
    total = samples[("aztfs_requests_total", None)][1]
    assert counts[-1] == samples[(h + "_count", None)][1] == total, (counts, total)
    assert 0 < samples[(h + "_sum", None)][1] < 60 * total, samples[(h + "_sum", None)]


def test_metrics_file_has_write_behind_gauges(table, mounter, sh, sdk, tmp_path):
    """With -o writeback the metrics file carries the queue's gauges, the
    numbers user.aztfs.pending gives: 2 queued, then 1 failed for good (a
    conflict) and none queued. A synchronous mount has none of them."""
    prom = tmp_path / "wb.prom"
    journal = tmp_path / "journal"
    journal.mkdir(mode=0o700)
    m = mounter.mount(options=["-o", "metrics_file=%s,metrics_interval=1,writeback=60000,"
                                     "journal_dir=%s" % (prom, journal)])
    sh(["cat", m.join(T, "p", "a.json")])
    for name in ("a", "n"):
        with open(m.join(T, "p", name + ".json"), "w") as f:
            f.write('{"v": 7}')
    gauge = 'aztfs_writeback_queued{mountpoint="%s"} 2' % m
    samples, types = parse_metrics(wait_for(
        lambda: prom.exists() and gauge in prom.read_text() and prom.read_text(),
        what="the queued gauge at 2"))
    assert types["aztfs_writeback_queued"] == "gauge", types
    assert samples[("aztfs_writeback_failed", None)][1] == 0
    c = sdk.get_table_client(T)
    e = c.get_entity("p", "a")
    c.update_entity(e, mode="replace")              # someone else: a.json conflicts
    fd = os.open(str(m), os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError):
            os.fsync(fd)                            # sent; a.json failed: EIO
    finally:
        os.close(fd)
    failed = 'aztfs_writeback_failed{mountpoint="%s"} 1' % m
    samples, _ = parse_metrics(wait_for(
        lambda: failed in prom.read_text() and prom.read_text(), what="the failed gauge at 1"))
    assert samples[("aztfs_writeback_queued", None)][1] == 0
    assert samples[("aztfs_writeback_sending", None)][1] == 0
    pending = json.loads(os.getxattr(str(m), "user.aztfs.pending"))
    assert (pending["queued"], pending["failed"]) == (0, 1), pending
    os.setxattr(str(m), "user.aztfs.discard", b"*")
    m.unmount()
    sync_prom = tmp_path / "sync.prom"
    m = mounter.mount(options=["-o", "metrics_file=%s,metrics_interval=1" % sync_prom])
    text = wait_for(lambda: sync_prom.exists() and sync_prom.read_text(), what="metrics")
    assert "aztfs_writeback" not in text, text


def test_metrics_file_is_replaced_atomically(table, mounter, tmp_path):
    """Readers see whole files only: the inode changes at each write (a
    rename), never a truncated file."""
    prom = tmp_path / "m.prom"
    m = mounter.mount(options=["-o", "metrics_file=%s,metrics_interval=1" % prom])
    wait_for(prom.exists, what="the metrics file")
    inodes = set()
    deadline = time.monotonic() + 3.5
    while time.monotonic() < deadline:
        with open(prom) as f:
            inodes.add(os.fstat(f.fileno()).st_ino)
            text = f.read()
        assert text.endswith("\n") and "aztfs_cache_max_bytes" in text
        time.sleep(0.01)
    assert len(inodes) >= 2, "rewritten in place instead of renamed over"
    assert "not written" not in m.stderr(), m.stderr()
