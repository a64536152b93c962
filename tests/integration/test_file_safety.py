"""The files the daemon writes never trust their directory (issue 29, items 6
and 7): -o logfile= is never opened through a symlink, at mount or at SIGHUP;
-o metrics_file= is written through a new temporary file of a random name,
so a FIFO or another user's file planted at PATH.tmp changes nothing; a
directory other users may write is refused at mount with a message naming
-o allow_shared_dirs, and accepted with it."""

import os
import signal
import stat
import time

import pytest

from harness import aztfs_env, unmount_path
from test_operators import wait_for

T = "fileSafety"
NOBODY = 65534


@pytest.fixture
def table(sdk, seed):
    t = seed.table(sdk, T)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a", "v": "orig"})
    return t


def victim_file(tmp_path):
    """A root-owned 0600 file another user would like root to append to."""
    v = tmp_path / "victim"
    v.write_text("secret\n")
    os.chmod(v, 0o600)
    return v


def refused_mount(aztfs_run, env, mp, options):
    """Run aztfs as a daemon with OPTIONS, expecting a refusal; returns its
    Result. A mount the old code made anyway is removed."""
    try:
        return aztfs_run(options + [str(mp)], env)
    finally:
        unmount_path(str(mp))


def mountpoint(tmp_path):
    mp = tmp_path / "mp"
    mp.mkdir()
    return mp


# -- the log file -------------------------------------------------------------
def test_logfile_symlink_is_refused_at_mount(azurite, aztfs_run, tmp_path):
    victim = victim_file(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    (logs / "aztfs.log").symlink_to(victim)
    res = refused_mount(aztfs_run, aztfs_env(azurite.conn_str), mountpoint(tmp_path),
                        ["-o", "logfile=%s" % (logs / "aztfs.log")])
    assert res.returncode != 0, res
    assert "cannot open the log file" in res.stderr and "is a symlink" in res.stderr, res
    assert len(res.stderr.strip().splitlines()) == 1, res
    assert victim.read_text() == "secret\n"


def test_logfile_symlink_planted_after_rotation_is_refused_at_sighup(table, mounter, sh,
                                                                     tmp_path):
    victim = victim_file(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log, old = logs / "aztfs.log", logs / "aztfs.log.1"
    m = mounter.mount(options=["-o", "logfile=%s" % log])
    wait_for(lambda: "mounted" in log.read_text(), what="the first lines")
    os.rename(log, old)
    log.symlink_to(victim)
    m.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "cannot reopen the log file" in old.read_text(),
             what="the refusal in the old file")
    line = [l for l in old.read_text().splitlines() if "cannot reopen" in l][-1]
    assert "is a symlink" in line and "still writing to the old one" in line, line
    sh("echo '{bad json' > '%s'" % m.join(T, "p", "new.json"), check=False)
    wait_for(lambda: "new.json" in old.read_text(), what="later lines in the old file")
    assert victim.read_text() == "secret\n"
    assert os.path.islink(log)
    assert os.path.ismount(str(m)), "the mount keeps running"


# -- the metrics file ---------------------------------------------------------
@pytest.mark.parametrize("planted", ["fifo", "file of another user"])
def test_metrics_file_ignores_what_is_planted_at_its_tmp_name(planted, table, mounter,
                                                              tmp_path):
    d = tmp_path / "prom"
    d.mkdir(mode=0o700)
    prom, tmp = d / "aztfs.prom", d / "aztfs.prom.tmp"
    if planted == "fifo":
        os.mkfifo(tmp, 0o600)
    else:
        tmp.write_text("theirs\n")
        os.chown(tmp, NOBODY, NOBODY)
    m = mounter.mount(options=["-o", "metrics_file=%s,metrics_interval=1" % prom])
    wait_for(lambda: prom.exists() and "aztfs_requests_total" in prom.read_text(),
             what="the metrics file")
    for _ in range(2):      # the first write, then the next one
        st = os.stat(prom)
        assert st.st_uid == 0 and stat.S_ISREG(st.st_mode) and st.st_nlink == 1, st
        wait_for(lambda: os.stat(prom).st_ino != st.st_ino, what="another write")
    t0 = time.monotonic()
    m.unmount()
    assert time.monotonic() - t0 < 5, "the unmount waited for the metrics writer"
    st = os.lstat(tmp)
    if planted == "fifo":
        assert stat.S_ISFIFO(st.st_mode)
    else:
        assert st.st_uid == NOBODY and tmp.read_text() == "theirs\n"
    assert sorted(p.name for p in d.iterdir()) == ["aztfs.prom", "aztfs.prom.tmp"], \
        "a temporary file was left behind"
    assert os.stat(prom).st_uid == 0


def test_relative_metrics_file_is_taken_from_the_mount_time_cwd(azurite, aztfs_run,
                                                                tmp_path):
    """A daemon changes to "/": a relative metrics_file= is resolved before."""
    mp = mountpoint(tmp_path)
    stray = "/rel-%d.prom" % os.getpid()
    try:
        res = aztfs_run(["-o", "metrics_file=%s" % stray[1:], str(mp)],
                        aztfs_env(azurite.conn_str), cwd=str(tmp_path))
        assert res.returncode == 0, res
        wait_for(lambda: (tmp_path / stray[1:]).exists() or os.path.exists(stray),
                 what="the metrics file")
        assert (tmp_path / stray[1:]).exists() and not os.path.exists(stray)
    finally:
        unmount_path(str(mp))
        if os.path.exists(stray):
            os.unlink(stray)


# -- directories other users may write ----------------------------------------
@pytest.mark.parametrize("option", ["logfile", "metrics_file"])
def test_shared_directory_is_refused_unless_allow_shared_dirs(option, azurite, aztfs_run,
                                                              table, mounter, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    path = shared / ("aztfs.log" if option == "logfile" else "aztfs.prom")
    res = refused_mount(aztfs_run, aztfs_env(azurite.conn_str), mountpoint(tmp_path),
                        ["-o", "%s=%s" % (option, path)])
    assert res.returncode != 0, res
    err = res.stderr
    assert str(shared) in err and "writable by group or others" in err, err
    assert "chmod go-w" in err and "-o allow_shared_dirs" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not path.exists()

    m = mounter.mount(options=["-o", "%s=%s,allow_shared_dirs" % (option, path)])
    wait_for(lambda: path.exists() and path.read_text(), what="the %s" % option)
    assert os.stat(path).st_uid == 0
    assert os.path.ismount(str(m))


# -- a sticky directory (/tmp) --------------------------------------------------
@pytest.mark.parametrize("where", ["tmp", "sticky"])
def test_a_log_file_in_a_sticky_directory_is_accepted(where, azurite, mounter, tmp_path):
    """-o logfile=/tmp/aztfs.log was refused with the advice "run chmod go-w
    /tmp", which would break the machine. In a sticky directory no one else
    can remove or rename the file, and a name taken first is refused by the
    file rules: it is accepted, and the file is the mounter's own, 0600."""
    if where == "tmp":
        d = "/tmp"
        assert os.stat(d).st_mode & 0o1777 == 0o1777, oct(os.stat(d).st_mode)
    else:
        d = str(tmp_path / "sticky")
        os.mkdir(d)
        os.chmod(d, 0o1777)
    log = os.path.join(d, "aztfs-sticky-%d.log" % os.getpid())
    try:
        m = mounter.mount(options=["-o", "logfile=%s" % log])
        os.listdir(str(m))
        wait_for(lambda: os.path.exists(log) and "mounted" in open(log).read(),
                 what="the log file")
        st = os.lstat(log)
        assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid(), st
        assert st.st_mode & 0o777 == 0o600, oct(st.st_mode)
        m.unmount()
    finally:
        if os.path.exists(log):
            os.unlink(log)


def test_a_name_taken_first_in_a_sticky_directory_is_refused(azurite, aztfs_run, tmp_path):
    """What makes a sticky directory safe: a log name another user took
    first (their file, or their symlink to a victim) is refused, never
    written through."""
    d = tmp_path / "sticky"
    d.mkdir()
    os.chmod(str(d), 0o1777)
    victim = victim_file(tmp_path)
    theirs = d / "theirs.log"
    theirs.write_text("theirs\n")
    os.chown(str(theirs), 65534, 65534)
    link = d / "link.log"
    link.symlink_to(victim)
    os.lchown(str(link), 65534, 65534)
    # the symlink: aztfs's O_NOFOLLOW, or before it the kernel's
    # fs.protected_symlinks (EACCES) in a sticky directory
    for name, why in (("theirs.log", "belongs to uid 65534"),
                      ("link.log", ("is a symlink", "Permission denied"))):
        mp = tmp_path / ("mp-" + name)
        mp.mkdir()
        res = refused_mount(aztfs_run, aztfs_env(azurite.conn_str), mp,
                            ["-o", "logfile=%s" % (d / name)])
        assert res.returncode != 0, res
        assert any(w in res.stderr for w in ((why,) if isinstance(why, str) else why)), res
        assert "chmod go-w %s " % d not in res.stderr, res.stderr
    assert theirs.read_text() == "theirs\n"
    assert victim.read_text() == "secret\n"
