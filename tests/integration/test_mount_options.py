"""Options that shape what the mount shows: umask=, file_mode=, dir_mode=
(checked with stat(1)), ino32, df's numbers, --help listing only the FUSE
options that apply, and the connection string gone from /proc/PID/environ."""

import os
import re
import subprocess

import pytest

from conftest import AZTFS
from harness import aztfs_env, release_barrier

T = "optsTbl"


@pytest.fixture
def table(sdk, seed):
    t = seed.table(sdk, T)
    for i in range(20):
        t.upsert_entity({"PartitionKey": "p", "RowKey": "r%02d" % i, "v": i})
    return t


def stat_modes(sh, mnt):
    """(file mode, dir mode) as stat(1) prints them (%a, octal)."""
    f = sh(["stat", "-c", "%a %A", os.path.join(str(mnt), T, "p", "r00.json")]).stdout.split()
    d = sh(["stat", "-c", "%a %A", os.path.join(str(mnt), T, "p")]).stdout.split()
    r = sh(["stat", "-c", "%a", str(mnt)]).stdout.strip()
    t = sh(["stat", "-c", "%a", os.path.join(str(mnt), T)]).stdout.strip()
    assert r == t == d[0], (r, t, d)
    return f, d


@pytest.mark.parametrize("opts, fmode, dmode", [
    ("", "644", "755"),
    ("umask=027", "640", "750"),
    ("umask=077", "600", "700"),
    ("umask=000", "666", "777"),
    ("file_mode=0600,dir_mode=0711", "600", "711"),
    ("umask=022,file_mode=0444", "444", "755"),
])
def test_modes(table, mounter, sh, opts, fmode, dmode):
    mnt = mounter.mount(options=["-o", opts] if opts else [])
    (f, fsym), (d, dsym) = stat_modes(sh, mnt)
    assert (f, d) == (fmode, dmode), (opts, fsym, dsym)
    assert fsym.startswith("-") and dsym.startswith("d")
    # a listing's stat (readdirplus) shows the same
    line = [l for l in sh(["ls", "-l", os.path.join(str(mnt), T, "p")]).lines()
            if l.endswith("r01.json")][0]
    assert line.split()[0] == fsym, line


def test_bad_modes_are_refused(azurite, aztfs_run, tmp_path):
    for opt in ("umask=0888", "umask=1777", "file_mode=17777", "dir_mode=x", "umask="):
        res = aztfs_run(["-f", "-o", opt, str(tmp_path)], aztfs_env(azurite.conn_str))
        assert res.returncode != 0, (opt, res)
        assert "not an octal mode" in res.stderr, (opt, res)


def inodes(sh, mnt):
    out = sh(["ls", "-i1", os.path.join(str(mnt), T, "p")]).lines()
    listed = {l.split()[1]: int(l.split()[0]) for l in out}
    for name, ino in listed.items():
        assert os.stat(os.path.join(str(mnt), T, "p", name)).st_ino == ino, name
    return listed


def test_ino32(table, mounter, sh):
    wide = inodes(sh, mounter.mount())
    assert any(i >= 2 ** 32 for i in wide.values()), wide
    m = mounter.mount(options=["-o", "ino32"])
    narrow = inodes(sh, m)
    assert all(1 < i < 2 ** 32 for i in narrow.values()), narrow
    assert len(set(narrow.values())) == len(narrow)
    assert os.stat(str(m)).st_ino == 1
    assert all(os.stat(os.path.join(str(m), T, *p)).st_ino < 2 ** 32
               for p in [(), ("p",)])
    # the folding is the documented one: the two halves XORed
    for name, ino in wide.items():
        assert narrow[name] == (ino >> 32) ^ (ino & 0xFFFFFFFF), name


def test_df_shows_a_zero_sized_file_system(table, mounter, sh):
    mnt = mounter.mount()
    sv = os.statvfs(str(mnt))
    assert (sv.f_blocks, sv.f_bfree, sv.f_bavail, sv.f_files, sv.f_ffree) == (0, 0, 0, 0, 0)
    assert sv.f_namemax == 255
    line = sh(["df", "-P", str(mnt)]).lines()[-1].split()
    assert line[1:4] == ["0", "0", "0"] and line[-1] == str(mnt), line
    # plain df leaves zero-sized file systems out, as it does proc and sysfs
    assert str(mnt) not in sh(["df", "-P"], check=False).stdout


FUSE_MANAGED = ("entry_timeout", "kernel_cache", "auto_cache",
                "ac_attr_timeout", "modules=", "subdir", "iconv", "from_code",
                "rellinks", "noforget", "remember=", "no_rofd_flush")


def test_help_lists_only_options_that_apply(aztfs_run):
    res = aztfs_run(["--help"], aztfs_env(None))
    assert res.returncode == 0, res
    out = res.stdout
    options = re.findall(r"^\s+(?:-\w\s+)?(?:--\w+\s+)?-o ([a-z_]+)", out, re.M)
    assert len(options) == len(set(options)), "listed twice: %s" % sorted(
        o for o in options if options.count(o) > 1)
    assert out.count("attr_timeout=") == 1, out
    listed = out.split("aztfs sets the rest")[0]
    for name in FUSE_MANAGED:
        assert name not in listed, name
    for name in ("allow_other", "max_threads", "auto_unmount", "logfile", "metrics_file",
                 "allow_shared_dirs", "umask", "file_mode", "dir_mode", "ino32",
                 "negative_timeout"):
        assert "-o " + name in out, name


@pytest.mark.parametrize("opt", ["entry_timeout=5", "kernel_cache", "auto_cache",
                                 "modules=subdir,subdir=/x"])
def test_options_aztfs_sets_itself_are_refused(azurite, aztfs_run, tmp_path, opt):
    res = aztfs_run(["-o", opt, str(tmp_path)], aztfs_env(azurite.conn_str))
    assert res.returncode != 0, res
    assert "aztfs sets this itself" in res.stderr, res


def test_connection_string_name_gone_from_environ(table, mounter):
    """The variable is gone from the block the kernel shows, name and value;
    the rest of the environment is intact."""
    m = mounter.mount(env_extra={"AZTFS_TEST_NEIGHBOUR": "still-here"})
    with open("/proc/%d/environ" % m.proc.pid, "rb") as f:
        env = f.read()
    assert b"AZURE_STORAGE_CONNECTION_STRING" not in env
    assert b"AccountKey" not in env
    assert b"AZTFS_TEST_NEIGHBOUR=still-here" in env.split(b"\0")


def mountinfo_line(path):
    """The /proc/self/mountinfo fields of the mount on top at PATH, split
    at " - ": (the fields before, the fields after)."""
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            before, _, after = line.rstrip("\n").partition(" - ")
            if before.split()[4] == os.path.realpath(path):
                found = (before.split(), after.split())
    assert found, "nothing mounted on %s" % path
    return found


def test_mount_shows_the_account_and_its_type(table, mounter):
    """mount, findmnt and df show the account as the source and fuse.aztfs
    as the type, not the program's path; -o fsname= still wins."""
    mnt = mounter.mount()
    _, (fstype, source, _opts) = mountinfo_line(str(mnt))
    assert (fstype, source) == ("fuse.aztfs", "aztfs:devstoreaccount1")
    out = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", str(mnt)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["aztfs:devstoreaccount1", "fuse.aztfs"], out
    mnt.unmount()
    mnt = mounter.mount(options=["-o", "fsname=tables"])
    assert mountinfo_line(str(mnt))[1][:2] == ["fuse.aztfs", "tables"]


def test_a_mount_point_in_use_is_refused(table, mounter, azurite, aztfs_run, sh):
    """A second aztfs on a live aztfs mount exits 1 with a message that
    names the mount point and its type; the first mount keeps serving."""
    mnt = mounter.mount()
    res = aztfs_run(["-f", str(mnt)], aztfs_env(azurite.conn_str))
    assert res.returncode == 1, res
    assert "%s is already a mount point (fuse.aztfs)" % str(mnt) in res.stderr, res.stderr
    assert "fusermount3 -u" in res.stderr, res.stderr
    tops = [l for l in open("/proc/self/mountinfo") if l.split()[4] == str(mnt)]
    assert len(tops) == 1, tops
    assert "r00.json" in sh.ls(os.path.join(str(mnt), T, "p"))


def test_an_unknown_option_is_refused_in_aztfs_words(azurite, aztfs_run, tmp_path):
    """An option neither aztfs nor libfuse knows: exit 1, the message with
    aztfs's prefix (not "fuse:") and where the options are listed."""
    res = aztfs_run(["-f", "-o", "frobnicate", str(tmp_path)], aztfs_env(azurite.conn_str))
    assert res.returncode == 1, res
    lines = res.stderr.splitlines()
    assert any(l.startswith("aztfs: error: unknown option") and "frobnicate" in l
               for l in lines), res.stderr
    assert "aztfs --help lists the options" in res.stderr, res.stderr
    assert not any(l.startswith("fuse:") for l in lines), res.stderr


def mounted_at(path):
    return any(l.split()[4] == str(path) for l in open("/proc/self/mountinfo"))


def test_a_regular_file_is_refused_as_a_mount_point(azurite, aztfs_run, tmp_path):
    """Mounting on a file exited 0 and every access then failed with EIO:
    now exit 1, with a message, and nothing mounted."""
    f = tmp_path / "notes.txt"
    f.write_text("mine\n")
    try:
        res = aztfs_run([str(f)], aztfs_env(azurite.conn_str))
    finally:
        if mounted_at(f):
            subprocess.run(["fusermount3", "-uz", str(f)], capture_output=True)
    assert res.returncode == 1, res
    assert "%s is not a directory" % f in res.stderr, res.stderr
    assert "mount on an empty directory" in res.stderr, res.stderr
    assert not mounted_at(f)
    assert f.read_text() == "mine\n"


def test_a_directory_holding_files_is_refused_unless_nonempty(table, azurite, aztfs_run,
                                                              tmp_path):
    """A mount over files hid them silently; now refused, naming the files
    and the option that allows it, -o nonempty, with which it mounts."""
    d = tmp_path / "busy"
    d.mkdir()
    (d / "keep.txt").write_text("kept\n")
    try:
        res = aztfs_run([str(d)], aztfs_env(azurite.conn_str))
        assert res.returncode == 1, res
        assert "%s is not empty (it holds 'keep.txt')" % d in res.stderr, res.stderr
        assert "-o nonempty" in res.stderr, res.stderr
        assert not mounted_at(d)
        assert os.listdir(str(d)) == ["keep.txt"]

        res = aztfs_run(["-o", "nonempty", str(d)], aztfs_env(azurite.conn_str))
        assert res.returncode == 0, res
        assert mounted_at(d)
        assert "r00.json" in os.listdir(str(d / T / "p"))
    finally:
        if mounted_at(d):
            release_barrier(str(d))     # the listing's RELEASEDIR first
            subprocess.run(["fusermount3", "-u", str(d)], capture_output=True)
    assert (d / "keep.txt").read_text() == "kept\n"


@pytest.mark.parametrize("flag", ["--debug", "-d"])
def test_debug_keeps_aztfs_in_the_foreground(table, azurite, tmp_path, flag):
    """--debug was taken by libfuse's lowlevel layer alone: FUSE's debug
    output but a daemon, unlike -d. Now both stay in the foreground and log
    to stderr: the process started is the one that serves, and its stderr
    ends with the mount's exit line."""
    mp = tmp_path / "mp"
    mp.mkdir()
    err_path = tmp_path / "stderr"
    with open(str(err_path), "wb") as err:
        p = subprocess.Popen([str(AZTFS), flag, str(mp)], stdin=subprocess.DEVNULL,
                             stdout=err, stderr=err, env=aztfs_env(azurite.conn_str))
    try:
        for _ in range(300):
            if mounted_at(mp) or p.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"])
        assert mounted_at(mp), err_path.read_text(errors="replace")[-3000:]
        assert "r00.json" in os.listdir(str(mp / T / "p"))
    finally:
        # the listing's RELEASEDIR read first: an unmount drops it, and with
        # it libfuse's own handle of the directory (a leak report under ASan,
        # so exit status 1, that aztfs cannot prevent; CI saw it once)
        release_barrier(str(mp))
        subprocess.run(["fusermount3", "-u", str(mp)], capture_output=True)
    rc = p.wait(timeout=30)
    text = err_path.read_text(errors="replace")
    assert rc == 0, text[-3000:]
    assert "unmounted %s, exiting with status 0" % mp in text, text[-3000:]
