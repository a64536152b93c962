#!/usr/bin/env bash
# deps.sh - install what aztfs needs to build and test, idempotently.
#   - Debian packages (apt-get), only when one of them is missing;
#   - the Azurite emulator (npm package azurite, pinned) into .deps-node/.
# Safe to rerun: does nothing when everything is already there.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

AZURITE_VERSION=3.35.0
APT_PACKAGES=(
    autoconf automake libtool pkg-config make gcc
    libfuse3-dev fuse3
    libcurl4-openssl-dev libssl-dev libjansson-dev
    python3 python3-azure python3-pytest
    rsync attr vim nano groff man-db util-linux openssl ca-certificates
    clang libclang-rt-14-dev valgrind
    nodejs npm
)

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

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
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    log "Debian packages: all present"
fi

# --- Azurite ----------------------------------------------------------------
AZ_PKG="$ROOT/.deps-node/node_modules/azurite/package.json"
have_version=
if [ -f "$AZ_PKG" ]; then
    have_version=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$AZ_PKG" | head -n1)
fi
if [ "$have_version" = "$AZURITE_VERSION" ] && [ -x "$ROOT/.deps-node/node_modules/.bin/azurite-table" ]; then
    log "Azurite $AZURITE_VERSION: present in .deps-node/"
else
    command -v npm >/dev/null 2>&1 || die "npm not found (apt-get install npm)"
    log "installing Azurite $AZURITE_VERSION into .deps-node/ (takes ~30 s)"
    mkdir -p "$ROOT/.deps-node"
    npm install --prefix "$ROOT/.deps-node" --no-audit --no-fund --loglevel=error \
        "azurite@$AZURITE_VERSION" >&2
    [ -x "$ROOT/.deps-node/node_modules/.bin/azurite-table" ] \
        || die "npm install finished but .deps-node/node_modules/.bin/azurite-table is missing"
fi

# --- FUSE device --------------------------------------------------------------
if [ ! -c /dev/fuse ]; then
    log "warning: /dev/fuse is missing: mounting (and the integration tests) will fail."
    log "         In a container, run with --device /dev/fuse --cap-add SYS_ADMIN."
fi
log "done"
