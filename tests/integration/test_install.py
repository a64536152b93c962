"""Installation and system integration: `make install` (out of tree), the man
page, mount(8) / mount.fuse3 / fstab, and secrets in debug logs.

How mount(8) finds aztfs: `mount -t fuse.aztfs SRC DIR -o OPTS` runs
/sbin/mount.fuse (Debian's fuse3), which runs `aztfs SRC DIR -o OPTS` through
/bin/sh. mount(8) first removes PATH from the environment (util-linux
sanitize_env), so the shell searches its default PATH
(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin): aztfs must be
installed there (`make install` puts it in /usr/local/bin). The tests below
install into a temporary prefix and bind-mount its bin/ over /usr/local/bin in
a private mount namespace (unshare -m), so the real system is not touched.
mount.fuse3 run directly keeps the caller's PATH; that is tested too.
"""

import base64
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import ACCOUNT, AZTFS, KEY, ROOT, unmount_path

# The fstab options doc/OPERATIONS.md gives (the test below mounts with exactly
# this line; keep both in sync).
FSTAB_OPTS = ("_netdev,nofail,noauto,x-systemd.automount,"
              "x-systemd.requires=network-online.target,allow_other,cache_timeout=30")
# Options that only mean something to mount(8), systemd or fstab readers.
FSTAB_ONLY = ("_netdev,nofail,noauto,x-systemd.automount,"
              "x-systemd.requires=network-online.target")

MAN_PAGE = ROOT / "doc" / "aztfs.1"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def run(cmd, check=True, timeout=300, **kw):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        pytest.fail("command failed (exit %s): %r\nstdout:\n%s\nstderr:\n%s"
                    % (p.returncode, cmd, p.stdout.decode(errors="replace")[-4000:],
                       p.stderr.decode(errors="replace")[-4000:]), pytrace=False)
    return p


def pids_using(path):
    """PIDs whose command line mentions PATH (our unique mount point)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if os.fsencode(path) in args and any(a.endswith(b"aztfs") for a in args[:1]):
            out.append(int(d))
    return out


def wait_daemon_gone(path, timeout=15):
    """Wait for the aztfs daemon serving PATH to exit; kill it (by pid) and
    fail if it does not."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pids_using(path):
            return
        time.sleep(0.1)
    left = pids_using(path)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    pytest.fail("aztfs (pids %s) still running %d s after the unmount of %s"
                % (left, timeout, path), pytrace=False)


def write_config(path, port, mode=0o600):
    path = Path(path)
    path.write_text("# aztfs test account (Azurite)\n"
                    "AccountName=%s\nAccountKey=%s\n"
                    "TableEndpoint=http://127.0.0.1:%d/%s\n" % (ACCOUNT, KEY, port, ACCOUNT))
    os.chmod(str(path), mode)
    return path


def in_namespace(bindir, script, timeout=120):
    """Run bash SCRIPT in a private mount namespace where BINDIR is mounted
    over /usr/local/bin (where mount(8)'s helper looks for aztfs)."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) not found", pytrace=False)
    if not os.path.isdir("/usr/local/bin"):
        pytest.fail("/usr/local/bin does not exist", pytrace=False)
    full = ("set -euo pipefail\n"
            "mount --bind %s /usr/local/bin\n" % shq(bindir)) + script
    env = dict(os.environ)
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    env["LC_ALL"] = "C.UTF-8"
    return run(["unshare", "--mount", "--propagation", "private", "/bin/bash", "-c", full],
               check=False, timeout=timeout, env=env)


def shq(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


def seed_table(sdk, seed, name):
    t = seed.table(sdk, name)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "v": "value-of-%s" % name})
    return t


# --------------------------------------------------------------------------
# make install, out of tree
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`make install` of a VPATH build of the distribution files (make
    distdir), so the main build tree is left alone. Returns the prefix."""
    if not (ROOT / "Makefile").exists():
        pytest.fail("the source tree is not configured: run scripts/build.sh first",
                    pytrace=False)
    base = tmp_path_factory.mktemp("install")
    src, build, prefix = base / "src", base / "build", base / "prefix"
    run(["make", "-s", "-C", str(ROOT), "distdir", "distdir=%s" % src, "top_distdir=%s" % src])
    build.mkdir()
    run([str(src / "configure"), "--prefix=%s" % prefix, "--quiet"], cwd=str(build))
    run(["make", "-s", "-j%d" % max(2, os.cpu_count() or 2), "install"], cwd=str(build))
    return prefix


@pytest.mark.source_build
def test_make_install_puts_binary_and_man_page(installed):
    binary = installed / "bin" / "aztfs"
    man = installed / "share" / "man" / "man1" / "aztfs.1"
    assert binary.is_file() and os.access(str(binary), os.X_OK), binary
    assert man.is_file(), man
    assert man.read_bytes() == MAN_PAGE.read_bytes()
    assert (installed / "share" / "doc" / "aztfs" / "README").is_file()
    p = run([str(binary), "--version"])
    assert b"aztfs version" in p.stdout, p.stdout
    # man finds the installed page by name
    p = run(["man", "--warnings", "-M", str(installed / "share" / "man"), "aztfs"],
            env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
    assert b"aztfs" in p.stdout and not p.stderr.strip(), p.stderr


# --------------------------------------------------------------------------
# mount(8), fstab and mount.fuse3
# --------------------------------------------------------------------------
@pytest.mark.source_build
def test_mount_t_fuse_aztfs(installed, azurite, sdk, seed, tmp_path):
    """mount -t fuse.aztfs CONFIGFILE MOUNTPOINT -o ...: list, read, write, umount."""
    t = seed_table(sdk, seed, "instMountT")
    cfg = write_config(tmp_path / "prod.conf", azurite.port)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    m = shq(mnt)
    p = in_namespace(installed / "bin", """
        trap 'umount %(m)s 2>/dev/null || true' EXIT
        mount -t fuse.aztfs %(cfg)s %(m)s -o cache_timeout=10,loglevel=info
        grep -q ' %(mnt)s fuse.aztfs ' /proc/self/mounts
        echo "== ls"; ls %(m)s/instMountT/p
        echo "== cat"; cat %(m)s/instMountT/p/r.json
        echo '{"a": 1}' > %(m)s/instMountT/p/new.json
        echo "== after"; ls %(m)s/instMountT/p
        cat %(m)s/instMountT/p/new.json
        umount %(m)s
        trap - EXIT
        echo "== unmounted"
    """ % {"m": m, "mnt": mnt, "cfg": shq(cfg)})
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 0, (out, p.stderr.decode(errors="replace"))
    ls_part = out.split("== ls\n")[1].split("== cat")[0].split()
    assert ls_part == ["r.json"], out
    assert '"v": "value-of-instMountT"' in out, out
    assert out.split("== after\n")[1].split("{")[0].split() == ["new.json", "r.json"], out
    assert '"a": 1' in out and "== unmounted" in out, out
    e = t.get_entity("p", "new")
    assert e["a"] == 1
    wait_daemon_gone(str(mnt))
    assert not os.path.ismount(str(mnt))


@pytest.mark.source_build
def test_fstab_line(installed, azurite, sdk, seed, tmp_path):
    """The fstab line of doc/OPERATIONS.md, mounted with `mount MOUNTPOINT`
    (mount -T reads our fstab file instead of /etc/fstab)."""
    seed_table(sdk, seed, "instFstab")
    cfg = write_config(tmp_path / "prod.conf", azurite.port)
    mnt = tmp_path / "tables"
    mnt.mkdir()
    fstab = tmp_path / "fstab"
    fstab.write_text("%s  %s  fuse.aztfs  %s  0  0\n" % (cfg, mnt, FSTAB_OPTS))
    m = shq(mnt)
    p = in_namespace(installed / "bin", """
        trap 'umount %(m)s 2>/dev/null || true' EXIT
        mount -T %(fstab)s %(m)s
        grep ' %(mnt)s fuse.aztfs ' /proc/self/mounts
        ls %(m)s/instFstab/p
        cat %(m)s/instFstab/p/r.json
        umount %(m)s
        trap - EXIT
    """ % {"m": m, "mnt": mnt, "fstab": shq(fstab)})
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 0, (out, p.stderr.decode(errors="replace"))
    assert "allow_other" in out, out          # reached the kernel mount
    assert "r.json" in out and '"v": "value-of-instFstab"' in out, out
    wait_daemon_gone(str(mnt))
    text = (ROOT / "doc" / "OPERATIONS.md").read_text()
    assert FSTAB_OPTS in text, "doc/OPERATIONS.md must show the tested fstab options"


@pytest.mark.source_build
def test_mount_t_with_fstab_only_options(installed, azurite, sdk, seed, tmp_path):
    seed_table(sdk, seed, "instFstabOpts")
    cfg = write_config(tmp_path / "prod.conf", azurite.port)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    m = shq(mnt)
    p = in_namespace(installed / "bin", """
        trap 'umount %(m)s 2>/dev/null || true' EXIT
        mount -t fuse.aztfs %(cfg)s %(m)s -o %(opts)s
        cat %(m)s/instFstabOpts/p/r.json
        umount %(m)s
        trap - EXIT
    """ % {"m": m, "cfg": shq(cfg), "opts": FSTAB_ONLY})
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 0, (out, p.stderr.decode(errors="replace"))
    assert '"v": "value-of-instFstabOpts"' in out, out
    wait_daemon_gone(str(mnt))


@pytest.mark.source_build
def test_mount_fuse3_helper_uses_callers_path(installed, azurite, sdk, seed, tmp_path):
    """mount.fuse3 run directly keeps PATH and passes x-systemd.* (and
    comment=) on to aztfs, which ignores them."""
    t = seed_table(sdk, seed, "instHelper")
    cfg = write_config(tmp_path / "prod.conf", azurite.port)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = dict(os.environ, PATH="%s:%s" % (installed / "bin", os.environ.get("PATH", "")))
    env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
    try:
        run(["mount.fuse3", str(cfg), str(mnt), "-t", "aztfs",
             "-o", FSTAB_ONLY + ",comment=aztfs,cache_timeout=5"], env=env, timeout=60)
        assert os.path.ismount(str(mnt))
        assert os.listdir(str(mnt / "instHelper" / "p")) == ["r.json"]
        assert "value-of-instHelper" in (mnt / "instHelper" / "p" / "r.json").read_text()
        with open(str(mnt / "instHelper" / "p" / "new.json"), "w") as f:
            f.write('{"a": 1}\n')
        assert t.get_entity("p", "new")["a"] == 1
        run(["umount", str(mnt)], timeout=60)
    finally:
        unmount_path(str(mnt))
    wait_daemon_gone(str(mnt))


def test_binary_ignores_fstab_only_options(azurite, sdk, seed, mounter, sh):
    """aztfs itself drops the options mount(8)/systemd use, in case a helper
    passes them on."""
    seed_table(sdk, seed, "instIgnored")
    mnt = mounter.mount(options=["-o", FSTAB_ONLY + ",auto,user,users,comment=x"])
    assert sh.ls(mnt.join("instIgnored", "p")) == ["r.json"]


# --------------------------------------------------------------------------
# the man page
# --------------------------------------------------------------------------
def test_man_page_renders_without_warnings():
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    p = run(["groff", "-ww", "-z", "-man", "-Tutf8", str(MAN_PAGE)], env=env)
    assert p.stderr == b"", p.stderr.decode(errors="replace")
    p = run(["man", "--warnings", "-l", str(MAN_PAGE)], env=env)
    assert p.stderr == b"", p.stderr.decode(errors="replace")
    assert b"aztfs" in p.stdout


def test_man_page_documents_every_option():
    """Every -o option of src/options.c appears in the man page."""
    src = (ROOT / "src" / "options.c").read_text()
    names = set(re.findall(r'OPT\("([a-z_0-9]+)', src))
    names |= set(re.findall(r'FUSE_OPT_KEY\("([a-z_]+)=?", FUSE_OPT_KEY_DISCARD', src))
    assert {"config", "loglevel", "cache_timeout", "merge", "_netdev"} <= names, names
    # groff escapes '-' and '_' nowhere we rely on: compare on the rendered text
    text = run(["groff", "-man", "-Tutf8", "-P-cbou", str(MAN_PAGE)],
               env=dict(os.environ, LC_ALL="C.UTF-8")).stdout.decode()
    missing = sorted(n for n in names if not re.search(r"(?<![\w-])%s\b" % re.escape(n), text))
    assert not missing, "options not in doc/aztfs.1: %s" % missing
    for std in ("allow_other", "uid=", "gid=", "umask=", "ro", "-f", "-d", "-s",
                "AZURE_STORAGE_CONNECTION_STRING", "x-systemd"):
        assert std in text, std


def help_options():
    """The -o option names `aztfs --help` lists (its own and FUSE's)."""
    p = run([str(AZTFS), "--help"])
    text = (p.stdout + p.stderr).decode()
    names = set()
    for m in re.finditer(r"^\s+(?:-\w\s+)?-o ([a-z_0-9]+)(=|\[=|\s|,|$)", text, re.M):
        names.add(m.group(1))
    for m in re.finditer(r"^\s+-o uid=N,gid=N", text, re.M):
        names.add("gid")
    return names


def test_help_options_are_in_the_man_page_and_usage():
    """Every -o option `aztfs --help` lists is in the man page (rendered)
    and in doc/USAGE.md, so the three cannot drift apart."""
    names = help_options()
    assert {"config", "scan_parallel", "writeback", "uid", "gid", "allow_other",
            "fsname", "max_threads"} <= names, names
    man = run(["groff", "-man", "-Tutf8", "-P-cbou", str(MAN_PAGE)],
              env=dict(os.environ, LC_ALL="C.UTF-8")).stdout.decode()
    usage = (ROOT / "doc" / "USAGE.md").read_text()
    for where, text in (("doc/aztfs.1", man), ("doc/USAGE.md", usage)):
        missing = sorted(n for n in names
                         if not re.search(r"(?<![\w-])%s\b" % re.escape(n), text))
        assert not missing, "options of --help not in %s: %s" % (where, missing)


def test_bash_completion_offers_every_help_option():
    """data/aztfs.bash-completion completes each -o option --help lists
    (after "-o", and after a comma), and auth='s and loglevel='s values."""
    comp = ROOT / "data" / "aztfs.bash-completion"

    def complete(*words):
        script = ("source %s; compopt() { :; }; COMP_WORDS=(%s); COMP_CWORD=%d; _aztfs; "
                  "printf '%%s\\n' \"${COMPREPLY[@]}\"" % (
                      comp, " ".join("'%s'" % w for w in words), len(words) - 1))
        return run(["bash", "-c", script]).stdout.decode().split()

    offered = {w.rstrip("=") for w in complete("aztfs", "-o", "")}
    missing = sorted(help_options() - offered)
    assert not missing, "options of --help the completion lacks: %s" % missing
    assert complete("aztfs", "-o", "ro,cache_t") == ["ro,cache_timeout="]
    assert complete("aztfs", "-o", "auth=ma") == ["auth=managed"]
    assert "loglevel=debug" in complete("aztfs", "-o", "loglevel=")


# --------------------------------------------------------------------------
# secrets and the debug log
# --------------------------------------------------------------------------
def test_debug_log_has_no_account_key(azurite, sdk, seed, mounter, sh, tmp_path):
    seed_table(sdk, seed, "instKeyLog")
    cfg = write_config(tmp_path / "key.conf", azurite.port)
    mnt = mounter.mount(options=["-o", "loglevel=debug,config=%s" % cfg])
    sh.ls(mnt.join("instKeyLog", "p"))
    sh(["cat", mnt.join("instKeyLog", "p", "r.json")])
    err = mnt.unmount()
    assert "debug: GET " in err, err[-2000:]
    raw = base64.b64decode(KEY)
    for frag in (KEY, KEY[:16], KEY[-16:], urllib.parse.quote(KEY, safe=""),
                 raw.hex(), base64.b64encode(raw[:24]).decode()):
        assert frag not in err, "account key material in the debug log: %r" % frag


def test_debug_log_redacts_sas_signature(azurite, sdk, seed, mounter, sh, tmp_path):
    from azure.core.credentials import AzureNamedKeyCredential
    from azure.data.tables import (AccountSasPermissions, ResourceTypes,
                                   generate_account_sas)
    seed_table(sdk, seed, "instSasLog")
    sas = generate_account_sas(
        AzureNamedKeyCredential(ACCOUNT, KEY),
        resource_types=ResourceTypes.from_string("sco"),
        permission=AccountSasPermissions(read=True, write=True, delete=True, list=True,
                                         add=True, update=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    sig = urllib.parse.parse_qs(sas)["sig"][0]
    assert len(sig) > 20
    cfg = tmp_path / "sas.conf"
    cfg.write_text("TableEndpoint=http://127.0.0.1:%d/%s\nSharedAccessSignature=?%s\n"
                   % (azurite.port, ACCOUNT, sas))
    os.chmod(str(cfg), 0o600)
    mnt = mounter.mount(options=["-o", "loglevel=debug,config=%s" % cfg])
    assert sh.ls(mnt.join("instSasLog", "p")) == ["r.json"]
    assert "value-of-instSasLog" in sh(["cat", mnt.join("instSasLog", "p", "r.json")]).stdout
    sh("echo '{\"a\": 1}' > %s" % shq(mnt.join("instSasLog", "p", "new.json")))
    err = mnt.unmount()
    assert "sig=REDACTED" in err, err[-2000:]
    for frag in (sig, urllib.parse.quote(sig, safe=""), sig[:12], KEY[:16]):
        assert frag not in err, "SAS signature in the debug log: %r" % frag
