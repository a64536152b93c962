#!/usr/bin/env bash
# deps.sh [--test] - install what aztfs needs, idempotently.
#   - Debian packages (apt-get), only when one of them is missing:
#     without --test, what builds and runs aztfs, plus what the demo needs
#     (Node.js for Azurite, the Azure SDK for Python to load the sample
#     data); with --test, also the tools the test suite uses (scripts/test.sh);
#   - the Azurite emulator (npm package azurite, pinned) into .deps-node/;
#     with --test, also DuckDB (npm package @duckdb/node-api, pinned: not
#     packaged for Debian 12) into .deps-node-test/, for test_export.py.
# Safe to rerun: does nothing when everything is already there. When another
# apt (unattended-upgrades, say) holds apt's lock, waits up to
# DEPS_APT_WAIT seconds (120) for it, then says what to do.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

AZURITE_VERSION=3.35.0
DUCKDB_VERSION=1.5.6-r.1
with_test=0
# build and run aztfs; run the demo (Azurite, seed_sample.py)
APT_PACKAGES=(
    autoconf automake libtool pkg-config make gcc
    libfuse3-dev fuse3
    libcurl4-openssl-dev libssl-dev libjansson-dev
    ca-certificates
    python3 python3-azure
    nodejs npm
)
# only the tests use these (scripts/test.sh runs deps.sh --test)
TEST_PACKAGES=(
    python3-pytest python3-pandas     # test_export.py reads a stream with pandas
    rsync attr vim nano groff man-db util-linux openssl
    clang libclang-rt-14-dev valgrind
    clang-format cppcheck codespell    # make lint
    debhelper dh-autoreconf fakeroot lintian git   # test_package.py: the .deb
)
APT_WAIT=${DEPS_APT_WAIT:-120}

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

case ${1:-} in
    --test) APT_PACKAGES+=("${TEST_PACKAGES[@]}"); with_test=1 ;;
    "") ;;
    *) die "usage: scripts/deps.sh [--test]" ;;
esac

# apt-get ARGS..., waiting (bounded) while another apt or dpkg holds the lock.
apt_get() {
    local start=$SECONDS waited out
    while :; do
        if out=$($SUDO apt-get -o DPkg::Lock::Timeout=10 "$@" 2>&1); then
            printf '%s\n' "$out" >&2
            return 0
        fi
        if ! grep -qE 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' \
                <<<"$out"; then
            printf '%s\n' "$out" >&2
            return 1
        fi
        waited=$((SECONDS - start))
        if ((waited >= APT_WAIT)); then
            die "apt's lock has been held by another process for ${APT_WAIT} s (often
      unattended-upgrades after boot). See who holds it with:
          ps -o pid,etime,args -C apt,apt-get,dpkg,unattended-upgr
      then wait for it to finish and rerun, or rerun with DEPS_APT_WAIT=600."
        fi
        log "apt's lock is held by another process; waiting (${waited}/${APT_WAIT} s)"
        sleep 5
    done
}

# --- Debian packages -------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
    # nodejs/npm may come from elsewhere (nvm, NodeSource): accept the commands.
    case $p in
        nodejs) command -v node >/dev/null 2>&1 && continue ;;
        npm)    command -v npm  >/dev/null 2>&1 && continue ;;
    esac
    if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    SUDO=
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install ${missing[*]} by hand"
        SUDO=sudo
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt_get update -q
    apt_get install -y -q --no-install-recommends "${missing[@]}"
else
    log "Debian packages: all present"
fi

# npm_pin PREFIX PACKAGE VERSION CHECK - npm install PACKAGE@VERSION into
# PREFIX unless PREFIX/node_modules/PACKAGE is that version and CHECK exists.
npm_pin() {
    local prefix=$1 pkg=$2 version=$3 check=$4 have=
    local json="$prefix/node_modules/$pkg/package.json"
    if [ -f "$json" ]; then
        have=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$json" | head -n1)
    fi
    if [ "$have" = "$version" ] && [ -e "$check" ]; then
        log "$pkg $version: present in ${prefix#"$ROOT"/}/"
        return 0
    fi
    command -v npm >/dev/null 2>&1 || die "npm not found (apt-get install npm)"
    log "installing $pkg $version into ${prefix#"$ROOT"/}/"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$pkg@$version" >&2
    [ -e "$check" ] || die "npm install finished but $check is missing"
}

# --- Azurite ----------------------------------------------------------------
npm_pin "$ROOT/.deps-node" azurite "$AZURITE_VERSION" "$ROOT/.deps-node/node_modules/.bin/azurite-table"

# --- DuckDB (tests only) ------------------------------------------------------
if [ "$with_test" = 1 ]; then
    npm_pin "$ROOT/.deps-node-test" @duckdb/node-api "$DUCKDB_VERSION" \
        "$ROOT/.deps-node-test/node_modules/@duckdb/node-api/lib/index.js"
fi

# --- FUSE device --------------------------------------------------------------
if [ ! -c /dev/fuse ]; then
    log "warning: /dev/fuse is missing: mounting (and the integration tests) will fail."
    log "         In a container, run with --device /dev/fuse --cap-add SYS_ADMIN."
fi
log "done"
