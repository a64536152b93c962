"""The Debian package (debian/, issue 31): built from a clean clone of this
repository's HEAD with Debian's own tools (dpkg-buildpackage -us -uc -b,
which runs make check), lintian without errors, then installed with
dpkg -i: what it ships, mount -t fuse.aztfs with the installed binary, the
template unit's own command line (ExecStart, then ExecStop, as systemd
would run them, without systemd), and dpkg -r leaving no file behind.

It changes the machine (/usr/bin/aztfs while it runs), so it runs only as
root, and fails (not skips) when the tools are missing: scripts/deps.sh
--test installs them. Uncommitted changes are not in the clone."""

import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ACCOUNT, KEY, ROOT, unmount_path

pytestmark = pytest.mark.source_build

TOOLS = ("dpkg-buildpackage", "dh", "lintian", "fakeroot", "git")
SHIPPED = ["/usr/bin/aztfs", "/usr/share/man/man1/aztfs.1.gz",
           "/lib/systemd/system/aztfs@.service",
           "/usr/share/bash-completion/completions/aztfs",
           # not compressed: the man page and the log name them so
           "/usr/share/doc/aztfs/OPERATIONS.md", "/usr/share/doc/aztfs/NAMES.md",
           "/usr/share/doc/aztfs/copyright", "/usr/share/doc/aztfs/examples/aztfs.conf"]


def run(cmd, timeout=600, **kw):
    # a build's log may hold any bytes (a test's name, a compiler's quote)
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                       **kw)
    assert p.returncode == 0, "%r exited %d:\n%s\n%s" % (cmd, p.returncode, p.stdout[-3000:],
                                                         p.stderr[-3000:])
    return p


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    """The .deb built from a clean clone of HEAD; removed again afterwards
    if a test left it installed."""
    if os.geteuid() != 0:
        pytest.fail("test_package installs a package: run as root", pytrace=False)
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        pytest.fail("missing %s: scripts/deps.sh --test installs them" % " ".join(missing),
                    pytrace=False)
    if subprocess.run(["dpkg", "-s", "aztfs"], capture_output=True).returncode == 0:
        pytest.fail("a package aztfs is installed already: dpkg -r aztfs first",
                    pytrace=False)
    work = tmp_path_factory.mktemp("deb")
    run(["git", "clone", "-q", str(ROOT), str(work / "aztfs")])
    build = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=str(work / "aztfs"), timeout=900)
    debs = sorted(work.glob("aztfs_*_*.deb"))
    assert len(debs) == 1, (debs, build.stdout[-2000:])
    yield debs[0], work
    subprocess.run(["dpkg", "-r", "aztfs"], capture_output=True)


def test_lintian_reports_no_error(deb):
    path, work = deb
    changes = sorted(work.glob("aztfs_*.changes"))
    p = subprocess.run(["lintian", str(changes[0])], capture_output=True, text=True,
                       timeout=600)
    errors = [l for l in p.stdout.splitlines() if l.startswith("E:")]
    assert errors == [], p.stdout
    # the one warning we accept: the example config is private on purpose
    warnings = [l for l in p.stdout.splitlines() if l.startswith("W:")]
    assert all("non-standard-file-perm 0600" in w for w in warnings), warnings


def write_config(path, port):
    path.write_text("AccountName=%s\nAccountKey=%s\nTableEndpoint=http://127.0.0.1:%d/%s\n"
                    % (ACCOUNT, KEY, port, ACCOUNT))
    os.chmod(str(path), 0o600)


def exec_lines(unit, key, name):
    """The command lines KEY= of UNIT's text, %i as instance NAME (the
    unit uses %i alone: test_docs.py expands it as systemd does)."""
    out = []
    for line in unit.splitlines():
        if line.startswith(key + "="):
            assert "%I" not in line, line
            cmd = line.split("=", 1)[1].replace("%i", name)
            out.append(cmd[1:] if cmd.startswith("-") else cmd)
    return out


def test_install_mount_and_remove(deb, azurite, sdk, seed, tmp_path):
    path, _ = deb
    t = seed.table(sdk, "pkgTbl")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    run(["dpkg", "-i", str(path)])
    try:
        listed = run(["dpkg", "-L", "aztfs"]).stdout.split()
        for f in SHIPPED:
            assert f in listed and os.path.exists(f), f
        example = "/usr/share/doc/aztfs/examples/aztfs.conf"
        assert oct(os.stat(example).st_mode & 0o777) == "0o600"
        assert "--version" in run(["bash", "-c", "source /usr/share/bash-completion/"
                                   "completions/aztfs; COMP_WORDS=(aztfs --ver); "
                                   "COMP_CWORD=1; _aztfs; echo ${COMPREPLY[*]}"]).stdout
        assert run(["/usr/bin/aztfs", "--version"]).stdout.startswith("aztfs version")

        # mount -t fuse.aztfs: mount.fuse3 finds /usr/bin/aztfs on the default PATH
        cfg = tmp_path / "pkg.conf"
        write_config(cfg, azurite.port)
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        run(["mount", "-t", "fuse.aztfs", str(cfg), str(mnt), "-o", "cache_timeout=1"])
        try:
            assert os.listdir(str(mnt / "pkgTbl" / "p")) == ["r.json"]
            src = [l.split()[0] for l in open("/proc/self/mounts") if l.split()[1] == str(mnt)]
            assert src == ["aztfs:%s" % ACCOUNT], src
        finally:
            unmount_path(str(mnt))

        # the template unit's own command lines, as systemd runs them
        unit = Path("/lib/systemd/system/aztfs@.service").read_text()
        name = "pkgtest%d" % os.getpid()
        made_etc = not os.path.isdir("/etc/aztfs")
        os.makedirs("/etc/aztfs", mode=0o755, exist_ok=True)
        conf = Path("/etc/aztfs/%s.conf" % name)
        write_config(conf, azurite.port)
        where = str(tmp_path / "notify.sock")
        ln = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ln.bind(where)
        ln.settimeout(30)
        proc = None
        try:
            for pre in exec_lines(unit, "ExecStartPre", name):
                subprocess.run(shlex.split(pre), capture_output=True)
            start = exec_lines(unit, "ExecStart", name)
            assert len(start) == 1, start
            argv = [a for a in shlex.split(start[0]) if a != "$AZTFS_OPTIONS"]
            proc = subprocess.Popen(argv, env=dict(os.environ, NOTIFY_SOCKET=where),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            msg = ln.recv(4096).decode()
            assert "READY=1" in msg, msg
            assert os.listdir("/mnt/%s/pkgTbl/p" % name) == ["r.json"]
            for stop in exec_lines(unit, "ExecStop", name):
                run(shlex.split(stop))
            assert proc.wait(30) == 0, proc.stderr.read()[-2000:]
            assert re.search(r"TimeoutStopSec=\d+", unit)
        finally:
            ln.close()
            if proc and proc.poll() is None:
                proc.kill()
                unmount_path("/mnt/%s" % name)
            conf.unlink()
            if made_etc:
                os.rmdir("/etc/aztfs")
            if os.path.isdir("/mnt/%s" % name):
                os.rmdir("/mnt/%s" % name)
    finally:
        run(["dpkg", "-r", "aztfs"])
    left = [f for f in listed if not os.path.isdir(f) and os.path.lexists(f)]
    assert left == [], left
    assert subprocess.run(["dpkg", "-s", "aztfs"], capture_output=True).returncode != 0


def test_build_leaves_the_clone_clean_and_recommends_completion(deb):
    """dpkg-buildpackage leaves nothing untracked in the clone (dh_autoreconf's
    debian/autoreconf.before and .after are ignored), and the package
    recommends bash-completion, without which its completion does nothing."""
    path, work = deb
    status = run(["git", "status", "--porcelain", "--untracked-files=all"],
                 cwd=str(work / "aztfs")).stdout
    assert status == "", status
    recommends = run(["dpkg-deb", "-f", str(path), "Recommends"]).stdout
    assert "bash-completion" in recommends, recommends
