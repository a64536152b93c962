#!/usr/bin/env bash
# test.sh [--sanitizers] [--quick] - install deps, build, run the C unit tests
# (make check, TAP) and the integration tests (pytest against a private
# Azurite); then, unless --quick: the unit tests under valgrind, every fuzz
# target for FUZZ_SECONDS (default 15) with its regression inputs, the
# unit tests that run threads (TSAN_TESTS below) built with ThreadSanitizer
# (.run/tsan), and the unit and integration suites
# again built with ASan+UBSan (in .run/asan, so ./aztfs stays a normal build).
# make lint runs after the unit tests, each of its checks counted as a test.
# Always ends with exactly one line "N passed, N failed" (unit + integration).
# A passing run's log is short; a failing test's output is shown whole (its
# sanitizer, valgrind or libFuzzer report, its pytest failure message).
# Exit status: 0 only when something ran and nothing failed.
#   Counted as failed: TAP FAIL/XFAIL/XPASS/ERROR/SKIP, pytest failures, errors
#   and skips, a build failure, a crashed or timed-out run, a suite with no
#   tests at all (pytest exit 5, an empty make check).
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

build_args=()
quick=0
for a in "$@"; do
    case $a in
        --sanitizers) build_args+=(--sanitizers) ;;
        --quick) quick=1 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "test.sh: unknown argument: $a" >&2; exit 2 ;;
    esac
done

PY=/usr/bin/python3
# The whole run ends within TOTAL_BUDGET seconds (CI stops a run at 5,400):
# the integration suites are given what is left, so a slow machine gets a
# report naming what ran and what did not, never a run cut off unreported.
TOTAL_BUDGET=${TOTAL_BUDGET:-4800}
START=$SECONDS
# left_for CAP RESERVE -> min(CAP, what TOTAL_BUDGET leaves after RESERVE s)
left_for() {
    local left=$((TOTAL_BUDGET - (SECONDS - START) - $2))
    [ "$left" -lt 60 ] && left=60
    [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
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
if ! scripts/deps.sh --test; then
    echo "test.sh: scripts/deps.sh --test failed" >&2
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
# VERBOSE=yes: automake prints test-suite.log (the failing tests' logs) on failure
timeout -k 10 600 make -j"${JOBS:-2}" check AM_COLOR_TESTS=no VERBOSE=yes 2>&1 | tee "$CHECK_OUT"
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

# count_line NAME FILE: add the counts of the last "N passed, N failed" in FILE.
count_line() {
    local line p f
    line=$(grep -E '^(fuzz: )?[0-9]+ passed, [0-9]+ failed' "$2" | tail -n1)
    if [ -z "$line" ]; then
        echo "test.sh: $1 printed no result line: counted as 1 failure" >&2
        failed=$((failed + 1)); return
    fi
    p=$(sed -E 's/^(fuzz: )?([0-9]+) passed.*/\2/' <<<"$line")
    f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    echo "$1: $p passed, $f failed"
    passed=$((passed + p)); failed=$((failed + f))
}

# --- 3. integration tests (pytest) -----------------------------------------------
# scripts/run_pytest.py runs the suite within a budget and counts from the
# results the suite writes as it goes (conftest.py), so a run that is killed
# (a hung test, a crash, the budget) still names what passed and what failed;
# the tests a killed run did not reach are run again in a new pytest.
# The budgets leave room for a machine twice as slow as the one the suite
# was timed on (doc/TESTING.md, "Time").
# The plain run leaves 1,500 s for what follows it (lint, valgrind, fuzzing,
# TSan, the sanitizer build and its unit tests, its integration run's share).
IT_BUDGET=$(left_for "${IT_BUDGET:-2400}" 1500)
section "integration tests (pytest, budget ${IT_BUDGET} s)"
"$PY" scripts/run_pytest.py --budget "$IT_BUDGET" --results "$RUN/pytest-results.txt" \
    --junit "$RUN/pytest-junit.xml" --label integration -- tests/integration -q \
    </dev/null 2>&1 | tee "$RUN/pytest.out"
count_line integration "$RUN/pytest.out"

# show_pytest FILE: a pytest run's output (FILE) for the log: from its
# ERRORS or FAILURES section on, whole (each failing test's message, with
# aztfs' sanitizer report: tests/harness.py's stderr_excerpt), else its
# last 15 lines.
show_pytest() {
    if grep -qE '^=+ (ERRORS|FAILURES) =+$' "$1"; then
        sed -n -E '/^=+ (ERRORS|FAILURES) =+$/,$p' "$1"
    else
        tail -n 15 "$1"
    fi
}

# --- 4. more of the same, harder (skipped with --quick) -----------------------------
section "lint (make lint: format, cppcheck, spelling, layers, pointers, threads, secrets, size, commits)"
timeout -k 10 300 make lint 2>&1 | tee "$RUN/lint.out"
count_line lint "$RUN/lint.out"

# Every unit test that runs more than one thread (doc/TESTING.md, "Data
# races"); the others run one, where ThreadSanitizer has nothing to find.
TSAN_TESTS="test_cache test_worker test_lock test_split test_http test_import
 test_journal test_credential test_profile test_send_split"
# And the daemon's threads at work through a mount (write-behind's senders
# and journal, split and prefetched pages, import senders, the shared token
# fetch, FUSE's own): these integration tests against a TSan-built aztfs
# (about 7 minutes here).
TSAN_IT="test_writeback.py test_export.py test_scan_parallel.py test_import.py
 test_concurrency.py test_auth.py"
if [ "$quick" = 0 ] && [ "${#build_args[@]}" -eq 0 ]; then
    section "unit tests under valgrind"
    vp=0; vf=0
    for t in tests/unit/test_*; do
        [ -x "$t" ] && [ "${t%.c}" = "$t" ] || continue
        if valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
               --error-exitcode=99 "$t" > "$RUN/valgrind-$(basename "$t").log" 2>&1; then
            vp=$((vp + 1))
        else
            vf=$((vf + 1)); echo "valgrind: $t failed (see $RUN/valgrind-$(basename "$t").log)" >&2
            cat "$RUN/valgrind-$(basename "$t").log" >&2
        fi
    done
    echo "$vp passed, $vf failed" > "$RUN/valgrind.out"
    count_line valgrind "$RUN/valgrind.out"

    section "fuzzing (${FUZZ_SECONDS:-15} s per target, regression inputs first)"
    timeout -k 10 900 scripts/fuzz.sh "${FUZZ_SECONDS:-15}" 2>&1 | tee "$RUN/fuzz.out"
    count_line fuzz "$RUN/fuzz.out"

    section "ThreadSanitizer build: the threaded unit tests ("$TSAN_TESTS") and integration tests ("$TSAN_IT")"
    TSAN_DIR="$RUN/tsan"
    rm -rf "$TSAN_DIR"; mkdir -p "$TSAN_DIR"
    rsync -a --exclude=/.run --exclude=/.deps-node --exclude=/mnt ./ "$TSAN_DIR/"
    if (cd "$TSAN_DIR" && { make distclean >/dev/null 2>&1 || true; } &&
        { [ configure -nt configure.ac ] || autoreconf -fi; } &&
        ./configure --enable-tsan &&
        make -j"${JOBS:-2}" aztfs $(printf 'tests/unit/%s ' $TSAN_TESTS)) \
           > "$RUN/tsan-build.log" 2>&1; then
        tp=0; tf=0
        for t in $TSAN_TESTS; do
            if TSAN_OPTIONS=halt_on_error=1 "$TSAN_DIR/tests/unit/$t" > "$RUN/tsan-$t.log" 2>&1 &&
               ! grep -q '^not ok' "$RUN/tsan-$t.log"; then
                tp=$((tp + 1))
            else
                tf=$((tf + 1))
                echo "test.sh: $t failed under ThreadSanitizer (see $RUN/tsan-$t.log)" >&2
                cat "$RUN/tsan-$t.log" >&2
            fi
        done
        echo "$tp passed, $tf failed" > "$RUN/tsan.out"
        count_line tsan "$RUN/tsan.out"
        # a race report stops the daemon (halt_on_error): its mount fails
        # the test, and the harness shows the report (SANITIZER_PATTERNS)
        TSAN_OPTIONS=halt_on_error=1 AZTFS_BACKENDS=azurite AZTFS_BIN="$TSAN_DIR/aztfs" \
            "$PY" scripts/run_pytest.py --budget "$(left_for 900 1500)" \
            --results "$RUN/tsan-results.txt" --junit "$RUN/tsan-junit.xml" \
            --label tsan-integration -- $(printf 'tests/integration/%s ' $TSAN_IT) -q \
            -m "not source_build and not heavy" </dev/null > "$RUN/tsan-pytest.out" 2>&1
        show_pytest "$RUN/tsan-pytest.out"
        count_line tsan-integration "$RUN/tsan-pytest.out"
    else
        echo "test.sh: ThreadSanitizer build failed (see $RUN/tsan-build.log)" >&2
        tail -n 30 "$RUN/tsan-build.log" >&2
        failed=$((failed + 1))
    fi

    section "ASan + UBSan build: unit and integration tests"
    ASAN_DIR="$RUN/asan"
    rm -rf "$ASAN_DIR"; mkdir -p "$ASAN_DIR"
    rsync -a --exclude=/.run --exclude=/.deps-node --exclude=/mnt ./ "$ASAN_DIR/"
    (cd "$ASAN_DIR" && { make distclean >/dev/null 2>&1 || true; }) 
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    if (cd "$ASAN_DIR" && scripts/build.sh --sanitizers > "$RUN/asan-build.log" 2>&1); then
        (cd "$ASAN_DIR" && timeout -k 10 600 make -j"${JOBS:-2}" check AM_COLOR_TESTS=no) \
            > "$RUN/asan-check.out" 2>&1
        ap=$(count PASS "$RUN/asan-check.out"); at=$(count TOTAL "$RUN/asan-check.out")
        if [ "${ap:-0}" != "${at:-1}" ]; then
            echo "test.sh: unit tests failed under ASan+UBSan (their logs follow)" >&2
            if [ -f "$ASAN_DIR/test-suite.log" ]; then cat "$ASAN_DIR/test-suite.log" >&2
            else tail -n 30 "$RUN/asan-check.out" >&2; fi
        fi
        echo "${ap:-0} passed, $(( ${at:-1} - ${ap:-0} )) failed" > "$RUN/asan-unit.out"
        count_line asan-unit "$RUN/asan-unit.out"
        # what builds from the sources (not the binary under test), the
        # largest runs of paths smaller tests cover, and the Cosmos model's
        # variants (conftest.py backend: the same paths) are left to the
        # plain run
        AZTFS_BACKENDS=azurite AZTFS_BIN="$ASAN_DIR/aztfs" "$PY" scripts/run_pytest.py \
            --budget "$(left_for "${ASAN_IT_BUDGET:-2400}" 30)" \
            --results "$RUN/asan-results.txt" --junit "$RUN/asan-junit.xml" \
            --label asan-integration -- tests/integration -q \
            -m "not source_build and not heavy" </dev/null > "$RUN/asan-pytest.out" 2>&1
        show_pytest "$RUN/asan-pytest.out"
        count_line asan-integration "$RUN/asan-pytest.out"
    else
        echo "test.sh: sanitizer build failed (see $RUN/asan-build.log)" >&2
        tail -n 30 "$RUN/asan-build.log" >&2
        failed=$((failed + 1))
    fi
fi

finish
