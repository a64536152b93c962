#!/usr/bin/env bash
# fuzz.sh [SECONDS_PER_TARGET] - build and run the libFuzzer targets in tests/fuzz.
#
# src/**/*.c but main.c are compiled with clang (ASan + UBSan + libFuzzer coverage)
# into a static archive; each tests/fuzz/fuzz_<name>.c is linked against it, so
# it gets exactly the source files it needs (the linker pulls in only the
# objects that resolve its symbols). For each target:
#   1. every file in tests/fuzz/regressions/<name>/ is run once (regressions);
#   2. libFuzzer runs for SECONDS_PER_TARGET (default 30) from the seed corpus
#      tests/fuzz/corpus/<name>/ (a scratch copy: the checked-in corpus is not
#      modified).
# Any crash, leak, sanitizer report, timeout or OOM fails the target; the
# input that caused it is copied into tests/fuzz/regressions/<name>/ so the
# next run replays it first. Prints one line per target and exits non-zero
# if any target failed.
# Environment: CC (default clang-14, else clang), FUZZ_TARGETS (space-separated
# names to run, default all), FUZZ_WORK (build/scratch dir, default .run/fuzz),
# FUZZ_JOBS (unused; one process per target).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

SECS=${1:-30}
case $SECS in
    ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a number, not '$SECS'" >&2; exit 2 ;;
esac

if [ -z "${CC:-}" ] || ! command -v "$CC" >/dev/null 2>&1; then
    if command -v clang-14 >/dev/null 2>&1; then CC=clang-14
    elif command -v clang >/dev/null 2>&1; then CC=clang
    else echo "fuzz.sh: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2
    fi
fi

WORK=${FUZZ_WORK:-$ROOT/.run/fuzz}
mkdir -p "$WORK"

PKGS="fuse3 libcurl libcrypto jansson"
if ! PKG_CFLAGS=$(pkg-config --cflags $PKGS 2>/dev/null) ||
   ! PKG_LIBS=$(pkg-config --libs $PKGS 2>/dev/null); then
    echo "fuzz.sh: pkg-config cannot find $PKGS (run scripts/deps.sh)" >&2
    exit 2
fi

SRCS=()
for f in $(find src -name "*.c" | sort); do
    [ "$f" = src/main.c ] || SRCS+=("$f")
done

CFLAGS=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -Isrc -Itests/fuzz $PKG_CFLAGS)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
    for t in $FUZZ_TARGETS; do targets+=("$t"); done
else
    for f in tests/fuzz/fuzz_*.c; do
        t=$(basename "$f" .c); targets+=("${t#fuzz_}")
    done
fi

failed=0
passed=0

# Instrumented objects of src/ (minus main.c) in one archive.
LIB=$WORK/libaztfs-fuzz.a
OBJDIR=$WORK/obj
rm -rf "$OBJDIR" "$LIB"
mkdir -p "$OBJDIR"
LIBCFLAGS=("${CFLAGS[@]/-fsanitize=fuzzer,address,undefined/-fsanitize=fuzzer-no-link,address,undefined}")
for f in "${SRCS[@]}"; do
    if ! "$CC" "${LIBCFLAGS[@]}" -c -o "$OBJDIR/$(echo "${f#src/}" | tr / _ | sed 's/\.c$//').o" "$f" >"$WORK/build-src.log" 2>&1; then
        echo "fuzz: FAIL (cannot compile $f, see $WORK/build-src.log)"
        sed -n '1,40p' "$WORK/build-src.log" >&2
        echo "fuzz: 0 passed, 1 failed"
        exit 1
    fi
done
ar cr "$LIB" "$OBJDIR"/*.o

# Print the report that ends LOG whole: from the line that opens it (a
# sanitizer's or libFuzzer's ERROR, a UBSan runtime error, a target's failed
# check; ASan's line of '=' above it) to the end; else LOG's last 30 lines.
show_report() {   # show_report LOG
    local n
    n=$(grep -n -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|check failed' \
        "$1" | cut -d: -f1)
    if [ -z "$n" ]; then
        tail -n 30 "$1"
        return
    fi
    if [ "$n" -gt 1 ] && sed -n "$((n - 1))p" "$1" | grep -qE '^=+$'; then
        n=$((n - 1))
    fi
    tail -n "+$n" "$1"
}

# Copy the newest crash-*/leak-*/timeout-*/oom-* of ART_DIR into the regressions,
# and print each as a here-document that recreates it (for a CI log).
keep_artifacts() {   # keep_artifacts ART_DIR NAME
    local art=$1 name=$2 f kept=""
    mkdir -p "tests/fuzz/regressions/$name"
    for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* "$art"/slow-unit-*; do
        [ -e "$f" ] || continue
        case $(basename "$f") in slow-unit-*) continue ;; esac
        cp "$f" "tests/fuzz/regressions/$name/"
        kept="$kept tests/fuzz/regressions/$name/$(basename "$f")"
        # the CI machine is thrown away: the log carries the input too
        echo "fuzz $name: to keep this input as a regression test, commit:" >&2
        echo "  base64 -d > tests/fuzz/regressions/$name/$(basename "$f") <<'EOF'" >&2
        base64 "$f" >&2
        echo "EOF" >&2
    done
    echo "${kept# }"
}

for name in "${targets[@]}"; do
    src=tests/fuzz/fuzz_$name.c
    bin=$WORK/fuzz_$name
    log=$WORK/fuzz_$name.log
    art=$WORK/artifacts_$name
    scratch=$WORK/corpus_$name
    if [ ! -f "$src" ]; then
        echo "fuzz $name: FAIL (no such target $src)"
        failed=$((failed + 1)); continue
    fi
    if ! "$CC" "${CFLAGS[@]}" -o "$bin" "$src" "$LIB" $PKG_LIBS -lpthread >"$log" 2>&1; then
        echo "fuzz $name: FAIL (build failed, see $log)"
        sed -n '1,40p' "$log" >&2
        failed=$((failed + 1)); continue
    fi
    rm -rf "$art" "$scratch"
    mkdir -p "$art" "$scratch" "tests/fuzz/corpus/$name" "tests/fuzz/regressions/$name"
    common=(-rss_limit_mb=2048 -timeout=10 -malloc_limit_mb=2048 -artifact_prefix="$art/")

    # 1. regression inputs: each must run cleanly.
    regs=()
    for f in tests/fuzz/regressions/"$name"/*; do
        [ -f "$f" ] && regs+=("$f")
    done
    if [ "${#regs[@]}" -gt 0 ]; then
        if ! "$bin" "${common[@]}" "${regs[@]}" >"$log" 2>&1; then
            echo "fuzz $name: FAIL (a regression input fails; see $log)"
            show_report "$log" >&2
            failed=$((failed + 1)); continue
        fi
    fi

    # 2. fuzzing from the seed corpus (copied, so new units stay out of git).
    cp -r tests/fuzz/corpus/"$name"/. "$scratch"/ 2>/dev/null || true
    set +e
    "$bin" "${common[@]}" -max_total_time="$SECS" -print_final_stats=1 \
        "$scratch" >>"$log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n1 | cut -d' ' -f2 || true)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $name: ok (${execs:-?} runs in ${SECS}s, cov ${cov:-?}, ${#regs[@]} regressions)"
        passed=$((passed + 1))
    else
        kept=$(keep_artifacts "$art" "$name")
        echo "fuzz $name: FAIL (exit $rc; input kept as ${kept:-<none>}; log $log)"
        show_report "$log" >&2
        failed=$((failed + 1))
    fi
done

echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
