# common.py - plumbing of the aztfs benchmark: the shared harness, timed commands.
"""Building blocks for bench/run.py and its helper scripts.

* Azurite, aztfs mounts (with their request counters and peak RSS) and the
  emulator's account come from the harness the integration tests use too,
  tests/harness.py: this module puts tests/ on sys.path and re-exports what
  the benchmark takes from it.
* ``run_timed``: run a command, returning its wall time and output.
* ``parse_conn_str``: the three fields of a connection string we need.

Standard library only, so the baseline scripts can import it cheaply.
"""

import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from harness import (ACCOUNT, ROOT, Azurite, HarnessError, Mount,  # noqa: E402,F401
                     aztfs_binary, peak_rss_kib)

TOOL_ENV = {"LC_ALL": "C.UTF-8"}


class BenchError(HarnessError):
    """A benchmark step failed; the message says which and why. (Catch
    HarnessError to get these and the harness's own failures.)"""


def parse_conn_str(conn_str):
    """(table endpoint URL, account name, base64 key) of a connection string
    that names its TableEndpoint (as the benchmark's own strings do)."""
    fields = dict(part.split("=", 1) for part in conn_str.split(";") if "=" in part)
    try:
        return fields["TableEndpoint"].rstrip("/"), fields["AccountName"], fields["AccountKey"]
    except KeyError as e:
        raise BenchError("connection string lacks %s" % e) from None


class Run:
    """Outcome of run_timed: wall seconds, exit code, output."""

    def __init__(self, argv, wall, code, stdout, stderr):
        self.argv = argv
        self.wall = wall
        self.code = code
        self.stdout = stdout
        self.stderr = stderr

    def check(self):
        """Raise BenchError unless the command exited 0; return self."""
        if self.code != 0:
            raise BenchError("command %r exited %s; stderr:\n%s"
                             % (self.argv, self.code, self.stderr[-2000:]))
        return self


def run_timed(argv, scratch_dir, env=None, timeout=1800):
    """Run ARGV (stdin /dev/null, stdout and stderr to files in SCRATCH_DIR)
    and measure its wall time from spawn to exit. Dirty pages are written
    back first, so one run's writeback does not slow the next. The command
    (its whole process group) is killed after TIMEOUT s, or when the wait is
    interrupted."""
    out_path = os.path.join(str(scratch_dir), "cmd.stdout")
    err_path = os.path.join(str(scratch_dir), "cmd.stderr")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, out_path, flags, 0o644),
               (os.POSIX_SPAWN_OPEN, 2, err_path, flags, 0o644)]
    full_env = dict(os.environ, **TOOL_ENV)
    full_env.update(env or {})
    os.sync()
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, full_env, file_actions=actions, setsid=True)
    killer = threading.Timer(timeout, os.killpg, (pid, signal.SIGKILL))
    killer.start()
    try:
        _, status = os.waitpid(pid, 0)
    except BaseException:          # e.g. SystemExit from SIGTERM: take the command down too
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        killer.cancel()
    wall = time.perf_counter() - t0
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    return Run(argv, wall, os.waitstatus_to_exitcode(status), stdout, stderr)


def emit_report(text, out=None):
    """Print the markdown report TEXT, and write it to OUT too when given."""
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


def shell(cmd):
    """ARGV running the shell command CMD with bash."""
    return ["/bin/bash", "-c", cmd]
