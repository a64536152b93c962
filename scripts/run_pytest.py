#!/usr/bin/python3
"""run_pytest.py - run an integration suite within a time budget, and always
say which tests passed and which failed, even when a run is killed.

    scripts/run_pytest.py --budget SECONDS --results FILE [--junit FILE]
                          [--label NAME] -- PYTEST-ARGS...

A pytest process that dies (its conftest's hard limit for a hung test, a
crash, an out-of-memory kill) takes its JUnit report with it, so the counts
come from a file the suite writes as it goes instead: conftest.py's
pytest_runtest_logstart/logreport hooks append one line per phase to
$AZTFS_TEST_RESULTS ("start NODEID", "PHASE OUTCOME NODEID").

The suite is collected first; then pytest runs over the tests not yet
reported, again and again, until every test has run or the budget is spent.
A test whose run was cut (started, never finished) is a failure, named;
a run cut by the budget names the tests that never ran and counts them as
one failure. So one hung test costs its own time, not the rest of the suite.

Prints the failing tests' names, then exactly one line "N passed, N failed".
Exit status: 0 when every collected test passed, else 1.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

PY = "/usr/bin/python3"


def collect(pytest_args):
    """The node ids pytest would run for PYTEST_ARGS, in its order."""
    args = [x for x in pytest_args if x not in ("-q", "--quiet", "-v", "--verbose")]
    p = subprocess.run([PY, "-m", "pytest", "--collect-only", "-q"] + args,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    ids = [line for line in p.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if p.returncode not in (0, 5) or not ids:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
    return ids


def read_results(path):
    """{nodeid: state} from the results file, state one of 'started',
    'passed', 'failed' (a phase failed or was skipped)."""
    state = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return state
    for line in lines:
        if line.startswith("start "):       # a node id may hold spaces
            state.setdefault(line[len("start "):], "started")
            continue
        parts = line.split(" ", 2)
        if len(parts) == 3:
            when, outcome, nodeid = parts
            if outcome != "passed":
                state[nodeid] = "failed"
            elif when == "teardown" and state.get(nodeid) != "failed":
                state[nodeid] = "passed"
    return state


def run(cmd, env, timeout, cwd=None):
    """Run CMD in its own process group; kill the group at TIMEOUT seconds.
    Returns its exit status, or None when it was killed."""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        return p.wait(timeout=max(1, timeout))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--junit")
    ap.add_argument("--label", default="integration")
    ap.add_argument("--rootdir", default="tests/integration",
                    help="the directory of pytest.ini: node ids are relative to it")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.pytest_args if x != "--"]
    deadline = time.monotonic() + a.budget

    ids = collect(args)
    if not ids:
        print("%s: pytest collected no test" % a.label)
        print("0 passed, 1 failed")
        return 1
    paths = [x for x in args if os.path.exists(x)]
    opts = [x for x in args if not os.path.exists(x)]
    if os.path.exists(a.results):
        os.unlink(a.results)
    env = dict(os.environ, AZTFS_TEST_RESULTS=os.path.abspath(a.results))

    rounds = 0
    budget_cut = False
    while True:
        state = read_results(a.results)
        todo = [i for i in ids if i not in state]
        if not todo:
            break
        left = deadline - time.monotonic()
        if left < 5:
            budget_cut = True
            break
        rounds += 1
        junit = ["--junitxml=%s.%d" % (os.path.abspath(a.junit), rounds)] if a.junit else []
        # the first round runs the paths as given; later ones the node ids
        # left, which are relative to the rootdir: run from there
        if rounds == 1:
            rc = run([PY, "-m", "pytest"] + opts + junit + paths, env, left)
        else:
            rc = run([PY, "-m", "pytest"] + opts + junit + todo, env, left, cwd=a.rootdir)
        if rc is None:
            print("%s: run %d cut at the budget of %d s" % (a.label, rounds, a.budget))
            budget_cut = True
            state = read_results(a.results)
            break
        if rc not in (0, 1):
            print("%s: run %d ended with exit status %d; going on with the tests not run"
                  % (a.label, rounds, rc))
        if rounds > len(ids):  # cannot happen unless pytest ran none of them
            break

    state = read_results(a.results)
    passed = [i for i in ids if state.get(i) == "passed"]
    failed = [i for i in ids if state.get(i) == "failed"]
    cut = [i for i in ids if state.get(i) == "started"]
    unrun = [i for i in ids if i not in state]
    extra = [i for i, s in state.items() if i not in set(ids) and s != "passed"]
    for i in failed + extra:
        print("%s: FAILED %s" % (a.label, i))
    for i in cut:
        print("%s: FAILED (killed while running) %s" % (a.label, i))
    if unrun:
        why = "the budget of %d s was spent" % a.budget if budget_cut else "pytest did not run them"
        print("%s: %d tests never ran (%s), counted as 1 failure; the first: %s"
              % (a.label, len(unrun), why, ", ".join(unrun[:5])))
    nfail = len(failed) + len(extra) + len(cut) + (1 if unrun else 0)
    print("%s: %d collected, %d runs" % (a.label, len(ids), rounds))
    print("%d passed, %d failed" % (len(passed), nfail))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
