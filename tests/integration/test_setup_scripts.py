"""The setup scripts: the demo installs only what builds and runs aztfs,
Azurite and the seeding (test tools come with scripts/test.sh); apt's lock
is waited for, boundedly, with advice; the README's stop command works with
DEMO_PORT; configure.ac gives autoconf no warning."""

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from conftest import ROOT

DEPS = ROOT / "scripts" / "deps.sh"
TEST_ONLY = {"clang", "libclang-rt-14-dev", "valgrind", "groff", "nano", "vim",
             "python3-pytest", "man-db", "attr", "rsync"}


def package_lists():
    """APT_PACKAGES and TEST_PACKAGES as bash reads them from deps.sh."""
    text = DEPS.read_text()
    arrays = "\n".join(re.findall(r"^(?:APT|TEST)_PACKAGES=\([^)]*\)", text, re.M | re.S))
    out = subprocess.run(["bash", "-c", arrays + '\necho "${APT_PACKAGES[*]}"\n'
                          'echo "${TEST_PACKAGES[*]}"'], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    return set(out[0].split()), set(out[1].split())


def test_demo_installs_only_what_it_needs():
    demo, test = package_lists()
    assert not demo & TEST_ONLY, "test tools in the demo's list: %s" % (demo & TEST_ONLY)
    assert TEST_ONLY <= test, TEST_ONLY - test
    for need in ("libfuse3-dev", "fuse3", "libcurl4-openssl-dev", "libssl-dev",
                 "libjansson-dev", "autoconf", "automake", "pkg-config", "gcc", "make",
                 "nodejs", "npm"):
        assert need in demo, need
    # the seeding uses the SDK: it stays in the demo's list
    assert "azure.data.tables" in (ROOT / "scripts" / "seed_sample.py").read_text()
    assert "python3-azure" in demo
    # who asks for which list
    demo_sh = (ROOT / "scripts" / "demo.sh").read_text()
    assert re.search(r"^scripts/deps\.sh$", demo_sh, re.M), "demo.sh must not ask for --test"
    assert re.search(r"^if ! scripts/deps\.sh --test; then$",
                     (ROOT / "scripts" / "test.sh").read_text(), re.M)


def fake_apt(tmp_path, lock_times):
    """A PATH with a dpkg that calls every package missing and an apt-get
    that reports a held lock LOCK_TIMES times, then succeeds."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dpkg").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\nn=$(cat %s/count 2>/dev/null || echo 0)\necho $((n + 1)) > %s/count\n"
        "if [ \"$n\" -lt %d ]; then\n"
        "  echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1'"
        " >&2\n  exit 100\nfi\necho \"fake apt-get $*\"\n" % (tmp_path, tmp_path, lock_times))
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]))


def test_apt_lock_held_too_long_says_what_to_do(tmp_path):
    env = fake_apt(tmp_path, 1000)
    env["DEPS_APT_WAIT"] = "0"
    p = subprocess.run(["bash", str(DEPS)], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0
    assert "apt's lock has been held by another process" in p.stderr, p.stderr
    assert "DEPS_APT_WAIT" in p.stderr and "rerun" in p.stderr, p.stderr


def test_apt_lock_is_waited_for(tmp_path):
    env = fake_apt(tmp_path, 1)
    env["DEPS_APT_WAIT"] = "60"
    p = subprocess.run(["bash", str(DEPS)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "waiting" in p.stderr and re.search(r"fake apt-get .* install ", p.stderr), p.stderr
    assert int((tmp_path / "count").read_text()) == 3     # update twice, install once


def test_stop_commands_name_the_port():
    readme = (ROOT / "README").read_text()
    assert re.search(r"DEMO_PORT=N\s+scripts/demo\.sh`: `scripts/azurite\.sh stop N`", readme)
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert "scripts/azurite.sh stop $PORT" in demo


def test_configure_ac_gives_no_autoconf_warning(tmp_path):
    p = subprocess.run(["autoconf", "-Wall", "-o", str(tmp_path / "configure"),
                        "configure.ac"], cwd=str(ROOT), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "warning" not in p.stderr, p.stderr
