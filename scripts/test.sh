#!/usr/bin/env bash
# test.sh [--sanitizers] - install deps, build, run the C unit tests (make check,
# TAP) and the integration tests (pytest against a private Azurite).
# Always ends with exactly one line "N passed, N failed" (unit + integration).
# Exit status: 0 only when something ran and nothing failed.
#   Counted as failed: TAP FAIL/XFAIL/XPASS/ERROR/SKIP, pytest failures, errors
#   and skips, a build failure, a crashed or timed-out run, a suite with no
#   tests at all (pytest exit 5, an empty make check).
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

build_args=()
for a in "$@"; do
    case $a in
        --sanitizers) build_args+=(--sanitizers) ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "test.sh: unknown argument: $a" >&2; exit 2 ;;
    esac
done

PY=/usr/bin/python3
RUN="$ROOT/.run"
mkdir -p "$RUN"
passed=0
failed=0

finish() {
    local total=$((passed + failed)) rc=0
    if [ "$failed" -ne 0 ] || [ "$total" -eq 0 ]; then rc=1; fi
    echo "$passed passed, $failed failed"
    exit "$rc"
}

section() { printf '\n==== %s ====\n' "$*"; }

# --- 1. dependencies and build ------------------------------------------------
section "dependencies"
if ! scripts/deps.sh; then
    echo "test.sh: scripts/deps.sh failed" >&2
    failed=$((failed + 1)); finish
fi

section "build ${build_args[*]:-}"
if ! scripts/build.sh "${build_args[@]}"; then
    echo "test.sh: build failed" >&2
    failed=$((failed + 1)); finish
fi

if [ "${#build_args[@]}" -gt 0 ]; then
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi

# --- 2. unit tests (TAP via automake) -------------------------------------------
section "unit tests (make check)"
CHECK_OUT="$RUN/make-check.out"
timeout -k 10 600 make -j"${JOBS:-2}" check AM_COLOR_TESTS=no 2>&1 | tee "$CHECK_OUT"
check_rc=${PIPESTATUS[0]}

# The summary printed by make check; test-suite.log carries the same block.
count() {   # count NAME FILE -> the number after "# NAME:" (last occurrence)
    sed -n "s/^# $1: *\([0-9][0-9]*\).*/\1/p" "$2" | tail -n1
}
src="$CHECK_OUT"
if [ -z "$(count TOTAL "$src")" ] && [ -f test-suite.log ]; then src=test-suite.log; fi
u_total=$(count TOTAL "$src"); u_pass=$(count PASS "$src")
u_skip=$(count SKIP "$src"); u_xfail=$(count XFAIL "$src")
u_fail=$(count FAIL "$src"); u_xpass=$(count XPASS "$src"); u_error=$(count ERROR "$src")
if [ -z "$u_total" ]; then
    echo "test.sh: no test summary from make check (exit status $check_rc): counted as 1 failure" >&2
    failed=$((failed + 1))
else
    u_bad=$(( ${u_fail:-0} + ${u_xfail:-0} + ${u_xpass:-0} + ${u_error:-0} + ${u_skip:-0} ))
    passed=$((passed + ${u_pass:-0}))
    failed=$((failed + u_bad))
    echo "unit: ${u_pass:-0} passed, ${u_fail:-0} failed, ${u_error:-0} errors, ${u_xfail:-0} xfail, ${u_xpass:-0} xpass, ${u_skip:-0} skipped (of $u_total)"
    if [ "$u_total" -eq 0 ]; then
        echo "test.sh: make check ran no test: counted as 1 failure" >&2
        failed=$((failed + 1))
    elif [ "$check_rc" -ne 0 ] && [ "$u_bad" -eq 0 ]; then
        echo "test.sh: make check failed (exit $check_rc) with no failing test: counted as 1 failure" >&2
        failed=$((failed + 1))
    fi
fi

# --- 3. integration tests (pytest) -----------------------------------------------
section "integration tests (pytest)"
JUNIT="$RUN/pytest-junit.xml"
rm -f "$JUNIT"
timeout -k 15 900 "$PY" -m pytest tests/integration -q --junitxml="$JUNIT" </dev/null
py_rc=$?

read -r i_pass i_bad i_total < <("$PY" - "$JUNIT" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 0 -1"); sys.exit(0)
ok = bad = 0
for tc in root.iter("testcase"):
    kinds = {c.tag for c in tc}
    if kinds & {"failure", "error", "skipped"}:
        bad += 1
    else:
        ok += 1
print(ok, bad, ok + bad)
PYEOF
)
i_pass=${i_pass:-0}; i_bad=${i_bad:-0}; i_total=${i_total:--1}
if [ "$i_total" -lt 0 ]; then
    echo "test.sh: pytest left no report (exit status $py_rc: crashed or timed out): counted as 1 failure" >&2
    failed=$((failed + 1))
else
    echo "integration: $i_pass passed, $i_bad failed/errors/skipped (of $i_total), pytest exit $py_rc"
    passed=$((passed + i_pass))
    failed=$((failed + i_bad))
    if [ "$py_rc" -eq 5 ] || [ "$i_total" -eq 0 ]; then
        echo "test.sh: pytest collected no test: counted as 1 failure" >&2
        failed=$((failed + 1))
    elif [ "$py_rc" -ne 0 ] && [ "$i_bad" -eq 0 ]; then
        echo "test.sh: pytest exit $py_rc with no failing test: counted as 1 failure" >&2
        failed=$((failed + 1))
    fi
fi

finish
