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

from conftest import ROOT, stderr_excerpt

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


# ---------------------------------------------------------------------------
# A failing test's report reaches CI's log whole (issue 29, item 13)
# ---------------------------------------------------------------------------
LEAK = ("=" * 65 + "\n==7==ERROR: LeakSanitizer: detected memory leaks\n\n"
        + "".join("Direct leak of 8 byte(s) in 1 object(s) allocated from:\n"
                  "    #0 0x7f0 in malloc\n    #1 0x55e in f%d src/x.c:%d\n\n" % (i, i)
                  for i in range(200))
        + "SUMMARY: AddressSanitizer: 1600 byte(s) leaked in 200 allocation(s).\n")


def run_function(script, name, path):
    """Bash function NAME of scripts/SCRIPT run on PATH: its output."""
    text = (ROOT / "scripts" / script).read_text()
    m = re.search(r"^%s\(\) \{.*?^\}$" % name, text, re.M | re.S)
    assert m, "no function %s in scripts/%s" % (name, script)
    return subprocess.run(["bash", "-c", '%s\n%s "$1"' % (m.group(0), name), "bash",
                           str(path)], capture_output=True, text=True, check=True).stdout


def test_failure_message_holds_the_sanitizer_report_whole():
    log = "aztfs: debug: GET /t -> 200\n" * 1000
    assert len(LEAK) > 6000
    assert stderr_excerpt(log + LEAK) == LEAK
    assert stderr_excerpt(log) == log[-6000:]
    ubsan = "src/x.c:1:2: runtime error: signed integer overflow\n    #0 f\n"
    assert stderr_excerpt(log + ubsan) == (log + ubsan)[-6000:]
    assert stderr_excerpt("a\n" + ubsan + log, 100) == ubsan + log


def test_ci_log_shows_pytest_failures_whole(tmp_path):
    passing = tmp_path / "pass.out"
    lines = ["." * 80 + " [%2d%%]\n" % i for i in range(60)] + ["4808 passed in 600s\n"]
    passing.write_text("".join(lines))
    assert run_function("test.sh", "show_pytest", passing) == "".join(lines[-15:])
    failing = tmp_path / "fail.out"
    report = ("=" * 20 + " ERRORS " + "=" * 20 + "\n"
              + "_ ERROR at teardown of test_x _\n"
              + "".join("E   " + line + "\n" for line in LEAK.splitlines())
              + "=" * 10 + " short test summary info " + "=" * 10 + "\n"
              + "ERROR test_x.py::test_x - Failed: sanitizer report in aztfs stderr\n"
              + "4808 passed, 1 error in 600s\n")
    failing.write_text("".join(lines[:-1]) + report)
    assert run_function("test.sh", "show_pytest", failing) == report


def test_ci_log_shows_a_fuzz_report_whole(tmp_path):
    log = tmp_path / "fuzz.log"
    progress = "".join("#%d\tNEW    cov: 10 ft: 10 corp: 1/1b exec/s: 0\n" % i
                       for i in range(500))
    after = "MS: 1 ChangeBit-; base unit: 0\nTest unit written to x/leak-1\n"
    log.write_text(progress + LEAK + after)
    assert run_function("fuzz.sh", "show_report", log) == LEAK + after
    check = "fuzz_keycodec: check failed: rc == 0: x\n==9== ERROR: libFuzzer: deadly signal\n"
    log.write_text(progress + check + after)
    assert run_function("fuzz.sh", "show_report", log) == check + after


# ---------------------------------------------------------------------------
# scripts/run_pytest.py: a killed suite still names what passed and failed
# ---------------------------------------------------------------------------
DUMMY_TESTS = '''
import os, signal, time
import pytest

def test_a_passes():
    pass

@pytest.mark.parametrize("name", ["a name with spaces"])
def test_a2_passes(name):
    pass

def test_b_fails():
    assert False

def test_c_kills_pytest():
    # what conftest's hard limit (faulthandler, exit=True) or an OOM kill does
    os.kill(os.getpid(), signal.SIGKILL)

def test_d_passes():
    pass

def test_e_hangs():
    if os.environ.get("DUMMY_HANG"):
        time.sleep(600)
'''


def dummy_suite(tmp_path):
    """A pytest rootdir whose conftest is the integration suite's recorder."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    hooks = (ROOT / "tests" / "integration" / "conftest.py").read_text()
    recorder = hooks[hooks.index("def _record(line):"):]
    (suite / "conftest.py").write_text("import os\n\n\n" + recorder)
    (suite / "test_dummy.py").write_text(DUMMY_TESTS)
    return suite


def run_suite(tmp_path, suite, budget, env_extra=()):
    env = dict(os.environ, **dict(env_extra))
    env.pop("AZTFS_TEST_RESULTS", None)
    return subprocess.run(["/usr/bin/python3", str(ROOT / "scripts" / "run_pytest.py"),
                           "--budget", str(budget), "--results", str(tmp_path / "res.txt"),
                           "--rootdir", str(suite), "--", str(suite), "-q"],
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_killed_pytest_still_names_what_passed_and_failed(tmp_path):
    suite = dummy_suite(tmp_path)
    p = run_suite(tmp_path, suite, 120)
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    # a, a2, d and e ran although c killed the first pytest; b and c are
    # named (a node id with spaces is read whole)
    assert out.splitlines()[-1] == "4 passed, 2 failed", out
    assert "FAILED test_dummy.py::test_b_fails" in out, out
    assert "FAILED (killed while running) test_dummy.py::test_c_kills_pytest" in out, out
    assert "never ran" not in out, out


def test_a_suite_past_its_budget_names_what_never_ran(tmp_path):
    suite = dummy_suite(tmp_path)
    p = run_suite(tmp_path, suite, 20, {"DUMMY_HANG": "1"})
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    # a, a2, d passed; b failed; c killed; e cut by the budget while running
    assert out.splitlines()[-1] == "3 passed, 3 failed", out
    assert "FAILED (killed while running) test_dummy.py::test_e_hangs" in out, out


def demo_mount_point():
    """The demo's default mount point, as demo.sh spells it."""
    m = re.search(r"^MNT=\$\{DEMO_MNT:-([^}]+)\}$", (ROOT / "scripts" / "demo.sh").read_text(),
                  re.M)
    assert m, "demo.sh: no MNT=${DEMO_MNT:-...} line"
    return m.group(1)


def test_the_demo_mounts_outside_the_clone():
    """The demo mounted the account at ./mnt, inside the clone: git clean
    -fdx deleted every entity and table through it, and dpkg-buildpackage
    walked it. Its mount point is now outside, and README's commands (try,
    stop) name it."""
    mnt = demo_mount_point()
    assert mnt.startswith("/"), mnt
    real = os.path.realpath(mnt)
    root = os.path.realpath(str(ROOT))
    assert not (real + "/").startswith(root + "/"), (mnt, root)
    readme = (ROOT / "README").read_text()
    quick = readme.split("Quick start", 1)[1].split("A 15-line tour", 1)[0]
    assert "fusermount3 -u\n%s" % mnt in quick or "fusermount3 -u %s" % mnt in quick, quick
    assert "ls %s" % mnt in quick, quick
    assert not re.search(r"(?<![\w/.-])\.?/?mnt\b(?!/)", quick.replace(mnt, "")), quick


def test_the_demo_refuses_a_mount_point_inside_the_clone(tmp_path):
    """DEMO_MNT inside the clone (relative, absolute, or through a symlink
    outside that points in) is refused before anything is installed,
    built or started."""
    link = tmp_path / "into-clone"
    link.symlink_to(ROOT)
    for where in ("mnt", str(ROOT / "mnt"), str(link / "mnt")):
        p = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL,
                           env=dict(os.environ, DEMO_MNT=where, PATH="/usr/bin:/bin"))
        assert p.returncode == 2, (where, p.stdout, p.stderr)
        assert "inside the clone" in p.stderr and "git clean" in p.stderr, p.stderr
        assert p.stdout == "", p.stdout                     # deps.sh never ran
    assert not (ROOT / "mnt").exists() or not os.path.ismount(str(ROOT / "mnt"))
