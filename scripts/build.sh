#!/usr/bin/env bash
# build.sh [--sanitizers] - autoreconf (when needed), configure, make. Leaves ./aztfs.
#   --sanitizers   configure with --enable-sanitizers (ASan + UBSan)
# Switching between a normal and a sanitizer build reconfigures and rebuilds everything.
set -euo pipefail

cd "$(dirname "$0")/.."

want_args=()
for a in "$@"; do
    case $a in
        --sanitizers) want_args+=(--enable-sanitizers) ;;
        -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
        *) echo "build.sh: unknown argument: $a" >&2; exit 2 ;;
    esac
done
JOBS=${JOBS:-2}

log() { printf 'build: %s\n' "$*" >&2; }

# 1. autoreconf when configure is missing or older than its inputs.
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ] \
   || [ ! -f Makefile.in ]; then
    log "autoreconf -fi"
    mkdir -p m4 build-aux
    autoreconf -fi
fi
# The TAP driver is not always installed by automake --add-missing: copy it.
if [ ! -f build-aux/tap-driver.sh ]; then
    src=$(ls /usr/share/automake-*/tap-driver.sh 2>/dev/null | sort -V | tail -n1 || true)
    [ -n "$src" ] || { log "error: tap-driver.sh not found (is automake installed?)"; exit 1; }
    mkdir -p build-aux
    cp "$src" build-aux/tap-driver.sh
    chmod +x build-aux/tap-driver.sh
fi

# 2. configure when never configured, or configured with other arguments.
want="${want_args[*]:-}"
have=
reconf=0
if [ -x config.status ] && [ -f Makefile ]; then
    # config.status --config prints the original arguments, each single-quoted.
    have=$(./config.status --config 2>/dev/null | tr -d "'" | xargs || true)
    [ "$have" = "$want" ] || reconf=1
else
    reconf=1
fi
if [ "$reconf" = 1 ]; then
    log "./configure ${want}"
    ./configure "${want_args[@]}"
    if [ -n "$have" ] || [ -f aztfs ]; then
        log "configuration changed: make clean"
        make clean >/dev/null
    fi
fi

# 3. make.
log "make -j$JOBS"
make -j"$JOBS"
[ -x aztfs ] || { log "error: make succeeded but ./aztfs is missing"; exit 1; }
log "built ./aztfs${want:+ ($want)}"
