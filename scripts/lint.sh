#!/usr/bin/env bash
# lint.sh [SRCDIR [BUILDDIR]] - what `make lint` checks, one line each
# ("lint NAME: ok" or "lint NAME: FAILED" with what failed), then
# "N passed, N failed"; exit 1 when any failed. SRCDIR: the source tree
# (default .), BUILDDIR: where `make` put the objects (default SRCDIR).
#
#   format    the C sources are as clang-format (14, Debian 12) formats them
#             with .clang-format: `clang-format -i FILE` fixes a file
#   cppcheck  cppcheck finds nothing (warning, portability, performance)
#   spelling  codespell finds no misspelling in docs, comments and scripts
#   layers    scripts/layers.py: includes and calls go down the layers
#             doc/ARCHITECTURE.md names, no call circle, the seams hold,
#             the doc names every file of src/, no two share a name
#   pointers  scripts/pointers.py: every "See X.h" of src/ names a header
#             that exists and declares the function the comment stands on,
#             and every other header a comment names exists
#   threads   only src/util/worker.c starts threads
#   secrets   memory wiped and then freed goes through src/util/secret.c
#             (secret_free, secret_str_free, secret_buf_free): nowhere
#             else is what OPENSSL_cleanse wiped freed in the next two lines
#   size      no file of src/ is longer than 700 lines (one responsibility a
#             module: a longer one is split along what it owns)
#   commits   commit subjects since the rule began are at most 72
#             characters (skipped outside a git clone)
set -uo pipefail
SRC=$(cd "${1:-.}" && pwd)
BUILD=$(cd "${2:-$SRC}" && pwd)
cd "$SRC" || exit 2

# The first commit held to the subject rule comes after this one.
SUBJECT_RULE_BASE=cfd9c88
SUBJECT_MAX=72
SPELL_IGNORE=bu,clen,nd,fo
SRC_MAX_LINES=700

passed=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

check() {   # check NAME COMMAND...: run it, count it, show its output on failure
    local name=$1; shift
    if "$@" >"$out" 2>&1; then
        echo "lint $name: ok"
        passed=$((passed + 1))
    else
        echo "lint $name: FAILED"
        sed -n '1,60p' "$out" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

c_files() {
    find src tests/unit tests/fuzz -name '*.[ch]' | sort
}

format() {
    command -v clang-format >/dev/null || { echo "clang-format not found (apt-get install clang-format, or scripts/deps.sh --test)"; return 1; }
    c_files | xargs clang-format --dry-run --Werror
}

run_cppcheck() {
    command -v cppcheck >/dev/null || { echo "cppcheck not found (apt-get install cppcheck, or scripts/deps.sh --test)"; return 1; }
    cppcheck --quiet --std=c11 --enable=warning,portability,performance --inline-suppr \
        --error-exitcode=1 --library=scripts/cppcheck-jansson.cfg \
        -I src -I tests/unit -I tests/fuzz -j2 src tests/unit tests/fuzz
}

spelling() {
    command -v codespell >/dev/null || { echo "codespell not found (apt-get install codespell, or scripts/deps.sh --test)"; return 1; }
    codespell -L "$SPELL_IGNORE" --skip='*/corpus/*,*/regressions/*' \
        README doc src tests scripts bench configure.ac Makefile.am
}

layers() {
    python3 scripts/layers.py src "$BUILD" doc/ARCHITECTURE.md
}

threads() {
    local where
    where=$(grep -rln --include='*.c' 'pthread_create *(' src | grep -v '^src/util/worker.c$')
    [ -z "$where" ] || { echo "threads started outside src/util/worker.c: $where"; return 1; }
}

secrets() {
    python3 - <<'PY'
import pathlib, re
bad = []
for f in sorted(pathlib.Path("src").rglob("*.c")):
    if f.as_posix() == "src/util/secret.c":
        continue
    lines = f.read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"OPENSSL_cleanse\s*\(\s*(?:\(char \*\))?([^,]+?)\s*,", line)
        if not m:
            continue
        what = m.group(1).removesuffix(".ptr")
        for j in range(i + 1, min(i + 3, len(lines))):
            if re.search(r"(?<![\w.>])(free|buf_free)\s*\(\s*&?" + re.escape(what) + r"\s*\)", lines[j]):
                bad.append("%s:%d: %s" % (f, j + 1, lines[j].strip()))
if bad:
    print("a secret wiped and freed by hand (use util/secret.c):")
    print("\n".join(bad))
    raise SystemExit(1)
PY
}

size() {
    local long
    long=$(find src -name '*.[ch]' -exec wc -l {} + | grep -v ' total$' |
           awk -v max="$SRC_MAX_LINES" '$1 > max')
    [ -z "$long" ] || { echo "files over $SRC_MAX_LINES lines:"; echo "$long"; return 1; }
}

commits() {
    local long
    if ! git rev-parse --git-dir >/dev/null 2>&1 ||
       ! git cat-file -e "$SUBJECT_RULE_BASE^{commit}" 2>/dev/null; then
        echo "not a git clone with its history: skipped"
        return 0
    fi
    long=$(git log --no-merges --format='%h %s' "$SUBJECT_RULE_BASE..HEAD" |
           awk -v max="$SUBJECT_MAX" 'length($0) - index($0, " ") > max')
    [ -z "$long" ] || { echo "subjects over $SUBJECT_MAX characters:"; echo "$long"; return 1; }
}

check format format
check cppcheck run_cppcheck
check spelling spelling
check layers layers
check pointers python3 scripts/pointers.py
check threads threads
check secrets secrets
check size size
check commits commits
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
