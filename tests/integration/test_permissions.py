"""-o allow_other: the kernel checks permissions (aztfs adds
default_permissions), so another local user (uid 65534) gets what the modes
shown allow and nothing more; -o no_default_permissions turns the checks off
and logs a warning. Mounted as root, as doc/OPERATIONS.md's fstab line and
systemd units do.

Every refused change is also checked through the SDK: nothing reached the
table service."""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT, Mounter, aztfs_env

NOBODY = 65534
TABLE = "permTab"
EMPTY = "permEmpty"
ORIGINAL = {"PartitionKey": "p", "RowKey": "r1", "v": "original"}
# The options of doc/OPERATIONS.md's fstab line and of its systemd units.
DOC_OPTIONS = [
    "_netdev,nofail,noauto,x-systemd.automount,x-systemd.requires=network-online.target,"
    "allow_other,cache_timeout=30",
    "_netdev,allow_other,cache_timeout=30",
    "config=/etc/aztfs/prod.conf,allow_other,cache_timeout=30",
]
WARNING = re.compile(r"aztfs: warn: allow_other with no_default_permissions: the kernel "
                     r"checks no permissions, so every local user can .* with the "
                     r"mounter's credentials")

# Run as uid 65534: one file operation, printing OK or the errno's name.
OP_SCRIPT = r"""
import errno, os, sys
op, path = sys.argv[1], sys.argv[2]
try:
    if op == "read":
        with open(path, "rb") as f:
            sys.stdout.buffer.write(f.read())
    elif op == "list":
        print("\n".join(sorted(os.listdir(path))))
    elif op == "write":
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b'{"v": "by nobody"}')
        os.close(fd)
    elif op == "truncate":
        os.truncate(path, 0)
    elif op == "create":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.write(fd, b'{"v": "new by nobody"}')
        os.close(fd)
    elif op == "unlink":
        os.unlink(path)
    elif op == "mkdir":
        os.mkdir(path)
    elif op == "rmdir":
        os.rmdir(path)
    elif op == "rename":
        os.rename(path, sys.argv[3])
    elif op == "utime":
        os.utime(path, (0, 0))
    print("\nOK")
except OSError as e:
    print("\n" + errno.errorcode[e.errno])
"""


@pytest.fixture(scope="module")
def setpriv():
    path = shutil.which("setpriv")
    if path is None:
        pytest.fail("setpriv not found: these tests run file operations as uid 65534 "
                    "with it (apt-get install util-linux; scripts/deps.sh does)",
                    pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("these tests mount as root and switch to uid 65534: run them as root",
                    pytrace=False)
    return path


def as_nobody(setpriv, op, *paths):
    """Run OP on PATHS as uid/gid 65534 without supplementary groups; returns
    (outcome, output): outcome is "OK" or an errno name such as "EACCES"."""
    p = subprocess.run([setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", "/usr/bin/python3", "-c", OP_SCRIPT, op]
                       + [str(x) for x in paths],
                       capture_output=True, timeout=60, cwd="/", env={"LC_ALL": "C.UTF-8"})
    assert p.returncode == 0, p
    out = p.stdout.decode(errors="replace")
    body, _, outcome = out.rstrip("\n").rpartition("\n")
    return outcome, body


@pytest.fixture
def shared(azurite):
    """A Mounter whose mount points uid 65534 can reach (pytest's own
    temporary directories are private to root)."""
    work = tempfile.mkdtemp(prefix="aztfs-perm-")
    os.chmod(work, 0o755)
    mt = Mounter(azurite, work)
    yield mt
    mt.close()
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture
def tables(sdk, seed):
    t = seed.table(sdk, TABLE)
    t.upsert_entity(dict(ORIGINAL))
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r2", "v": "second"})
    seed.table(sdk, EMPTY)
    return t


def mount_options(mnt):
    """The kernel's options of the mount at MNT (from /proc/self/mounts)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == str(mnt):
                return fields[3].split(",")
    pytest.fail("%s is not in /proc/self/mounts" % mnt)


def remote_state(sdk):
    """What the service holds: the tables and our table's entities."""
    names = sorted(t.name for t in sdk.list_tables() if t.name.startswith("perm"))
    ents = sorted((e["PartitionKey"], e["RowKey"], e["v"], e.metadata["etag"])
                  for e in sdk.get_table_client(TABLE).list_entities())
    return names, ents


def assert_denied(outcome, what):
    assert outcome in ("EACCES", "EPERM"), "%s: want EACCES or EPERM, got %s" % (what, outcome)


def check_nobody_reads_but_changes_nothing(setpriv, sdk, mnt):
    part = os.path.join(str(mnt), TABLE, "p")
    r1 = os.path.join(part, "r1.json")
    st = os.stat(r1)
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o644), oct(st.st_mode)
    assert os.stat(part).st_mode & 0o7777 == 0o755
    before = remote_state(sdk)

    outcome, text = as_nobody(setpriv, "read", r1)
    assert outcome == "OK" and '"v": "original"' in text, (outcome, text)
    outcome, text = as_nobody(setpriv, "list", part)
    assert outcome == "OK" and text.split() == ["r1.json", "r2.json"], (outcome, text)

    for what, op, args in [
            ("write a 0644 entity", "write", [r1]),
            ("truncate a 0644 entity", "truncate", [r1]),
            ("rm an entity", "unlink", [os.path.join(part, "r2.json")]),
            ("create an entity", "create", [os.path.join(part, "new.json")]),
            ("create a scratch file", "create", [os.path.join(part, ".new.tmp")]),
            ("rename an entity", "rename", [r1, os.path.join(part, "moved.json")]),
            ("set an entity's times", "utime", [r1]),
            ("mkdir a partition", "mkdir", [os.path.join(str(mnt), TABLE, "newpart")]),
            ("mkdir a table", "mkdir", [os.path.join(str(mnt), "permNew")]),
            ("rmdir an empty table", "rmdir", [os.path.join(str(mnt), EMPTY)])]:
        assert_denied(as_nobody(setpriv, op, *args)[0], what)
    assert remote_state(sdk) == before, "a refused change reached the service"
    assert not os.path.exists(os.path.join(str(mnt), TABLE, "newpart"))


def check_root_still_writes(sdk, mnt):
    with open(os.path.join(str(mnt), TABLE, "p", "r1.json"), "w") as f:
        f.write('{"v": "by root"}\n')
    assert sdk.get_table_client(TABLE).get_entity("p", "r1")["v"] == "by root"


def test_allow_other_checks_permissions(setpriv, tables, sdk, shared):
    mnt = shared.mount(options=["-o", "allow_other"])
    opts = mount_options(mnt)
    assert "allow_other" in opts and "default_permissions" in opts, opts
    check_nobody_reads_but_changes_nothing(setpriv, sdk, mnt)
    check_root_still_writes(sdk, mnt)
    assert not WARNING.search(mnt.stderr()), mnt.stderr()


@pytest.mark.parametrize("opts", DOC_OPTIONS)
def test_documented_options_check_permissions(opts, setpriv, tables, sdk, shared, azurite,
                                              tmp_path):
    """The option lists doc/OPERATIONS.md gives for fstab and systemd: safe
    as written."""
    doc = (ROOT / "doc" / "OPERATIONS.md").read_text()
    assert opts in doc, "doc/OPERATIONS.md no longer shows %r" % opts
    cfg = tmp_path / "prod.conf"
    cfg.write_text(azurite.conn_str + "\n")
    cfg.chmod(0o600)
    opts = opts.replace("/etc/aztfs/prod.conf", str(cfg))
    mnt = shared.mount(options=["-o", opts])
    assert "default_permissions" in mount_options(mnt)
    check_nobody_reads_but_changes_nothing(setpriv, sdk, mnt)


def test_modes_shown_are_enforced(setpriv, tables, sdk, shared):
    """uid=, gid= and umask= mean what they show: umask=077 keeps other users
    out (files 0600, directories 0700); owner uid 65534 may write; umask=022
    (files 0644) lets them read only; umask=000 lets anyone change anything."""
    r1 = lambda m: os.path.join(str(m), TABLE, "p", "r1.json")   # noqa: E731

    private = shared.mount(options=["-o", "allow_other,umask=077"])
    assert os.stat(r1(private)).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(r1(private))).st_mode & 0o777 == 0o700
    assert_denied(as_nobody(setpriv, "read", r1(private))[0], "read with umask=077")
    assert_denied(as_nobody(setpriv, "list", os.path.join(str(private), TABLE))[0],
                  "list with umask=077")
    with open(r1(private)) as f:                                # root: no checks
        assert '"v": "original"' in f.read()

    owned = shared.mount(options=["-o", "allow_other,uid=%d,gid=%d" % (NOBODY, NOBODY)])
    assert os.stat(r1(owned)).st_uid == NOBODY
    assert as_nobody(setpriv, "write", r1(owned))[0] == "OK"
    assert sdk.get_table_client(TABLE).get_entity("p", "r1")["v"] == "by nobody"
    # the table directory is 0755 and owned by 65534 as well
    assert as_nobody(setpriv, "create", os.path.join(str(owned), TABLE, "p", "n1.json"))[0] \
        == "OK"
    assert sdk.get_table_client(TABLE).get_entity("p", "n1")["v"] == "new by nobody"

    libfuse = shared.mount(options=["-o", "allow_other,umask=022"])
    assert os.stat(r1(libfuse)).st_mode & 0o777 == 0o644      # 0666 & ~umask: no x bits
    assert as_nobody(setpriv, "read", r1(libfuse))[0] == "OK"
    assert_denied(as_nobody(setpriv, "write", r1(libfuse))[0], "write with umask=022")

    open_to_all = shared.mount(options=["-o", "allow_other,umask=000"])
    part = os.path.join(str(open_to_all), TABLE, "p")
    assert os.stat(part).st_mode & 0o777 == 0o777
    assert as_nobody(setpriv, "create", os.path.join(part, "n2.json"))[0] == "OK"
    assert as_nobody(setpriv, "unlink", os.path.join(part, "n1.json"))[0] == "OK"
    names = sorted(e["RowKey"] for e in sdk.get_table_client(TABLE).list_entities())
    assert names == ["n2", "r1", "r2"], names


def test_opt_out_restores_unchecked_access_and_warns(setpriv, tables, sdk, shared):
    mnt = shared.mount(options=["-o", "allow_other,no_default_permissions"])
    opts = mount_options(mnt)
    assert "allow_other" in opts and "default_permissions" not in opts, opts
    assert len(WARNING.findall(mnt.stderr())) == 1, mnt.stderr()
    # uid 65534 now acts with the mounter's key: a 0644 root-owned entity changes
    r1 = os.path.join(str(mnt), TABLE, "p", "r1.json")
    assert as_nobody(setpriv, "write", r1)[0] == "OK"
    assert sdk.get_table_client(TABLE).get_entity("p", "r1")["v"] == "by nobody"
    assert as_nobody(setpriv, "mkdir", os.path.join(str(mnt), "permNew"))[0] == "OK"
    assert "permNew" in remote_state(sdk)[0]
    sdk.delete_table("permNew")


def test_no_warning_without_allow_other(setpriv, tables, shared):
    mnt = shared.mount(options=["-o", "no_default_permissions"])
    opts = mount_options(mnt)
    assert "default_permissions" not in opts and "allow_other" not in opts, opts
    assert as_nobody(setpriv, "list", str(mnt))[0] == "EACCES"
    assert not WARNING.search(mnt.stderr()), mnt.stderr()


def test_contradiction_refused(azurite, tmp_path, aztfs_run):
    mp = tmp_path / "mp"
    mp.mkdir()
    res = aztfs_run(["-f", "-o", "allow_other,default_permissions,no_default_permissions",
                     mp], aztfs_env(azurite.conn_str))
    assert res.returncode == 1, res
    assert re.search(r"default_permissions and no_default_permissions contradict",
                     res.stderr), res
    assert not os.path.ismount(str(mp))


def test_explicit_default_permissions_given_once(tables, shared):
    mnt = shared.mount(options=["-o", "allow_other,default_permissions"])
    assert mount_options(mnt).count("default_permissions") == 1
    assert not WARNING.search(mnt.stderr())


def test_help_names_the_opt_out(aztfs_run):
    res = aztfs_run(["--help"], aztfs_env(None))
    assert res.returncode == 0, res
    assert "no_default_permissions" in res.stdout and "allow_other" in res.stdout, res

