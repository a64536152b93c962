#!/usr/bin/env bash
# demo.sh - try aztfs locally: install deps, build, start Azurite on 127.0.0.1:10002,
# load a sample dataset and mount it at ./mnt. Safe to rerun.
# Stop with:  fusermount3 -u mnt; scripts/azurite.sh stop [PORT]
# DEMO_PORT=N uses another port than 10002 (e.g. when 10002 is taken).
# Installs only what builds and runs aztfs, Azurite and the seeding
# (scripts/deps.sh; the test tools come with scripts/test.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
MNT="$ROOT/mnt"
PORT=${DEMO_PORT:-10002}
if [ "$PORT" = 10002 ]; then
    export AZURE_STORAGE_CONNECTION_STRING="UseDevelopmentStorage=true"
else
    export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:$PORT/devstoreaccount1;"
fi

scripts/deps.sh
scripts/build.sh

# A mount left over from a previous run (possibly with a dead daemon).
if mountpoint -q "$MNT" 2>/dev/null || grep -qs " $MNT fuse" /proc/mounts; then
    echo "demo: unmounting the previous mount at $MNT"
    fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"
fi

scripts/azurite.sh start "$PORT" || {
    echo "demo: could not start Azurite on port $PORT; if another emulator holds it," >&2
    echo "      stop it or rerun with DEMO_PORT=<free port> $0" >&2
    exit 1
}
/usr/bin/python3 scripts/seed_sample.py

mkdir -p "$MNT"
LOG="$ROOT/aztfs-demo.log"
# aztfs writes its log only in a directory of root's or its own (doc/OPERATIONS.md,
# "Files aztfs writes"): a clone in another user's home, run with sudo, is
# shared on purpose
SHARED=()
d=$ROOT
while :; do
    case $(stat -c %u "$d") in 0|"$EUID") ;; *) SHARED=(-o allow_shared_dirs) ;; esac
    [ "$d" = / ] && break
    d=$(dirname "$d")
done
./aztfs -o logfile="$LOG" "${SHARED[@]}" "$MNT"    # daemonizes once mounted; logs to $LOG
for _ in $(seq 1 50); do
    mountpoint -q "$MNT" && break
    sleep 0.1
done
mountpoint -q "$MNT" || { echo "demo: aztfs did not mount $MNT" >&2; exit 1; }

cat <<MSG

aztfs is mounted at ./mnt (Azurite on 127.0.0.1:$PORT, in memory).
Try:
  ls mnt                                  # tables
  ls mnt/customers                        # one directory per PartitionKey
  ls -l mnt/customers/US                  # one <RowKey>.json per entity
  cat 'mnt/customers/US/ACME Corp.json'
  cat mnt/customers/FR/café.json
  cat mnt/customers/US/a%25b.json         # '%' in a key is written %25
  cat mnt/customers/US/%2Ehidden.json     # a leading '.' is written %2E
  grep -rl '"Paid": true' mnt/orders
  find mnt/orders -type f | wc -l
  du -sh mnt/orders

Saves are checked at close: use cp or tee (a bare '>' hides a refused save).
Why a save failed: tail aztfs-demo.log, or
  getfattr -n user.aztfs.errors --only-values mnt

Stop:
  fusermount3 -u mnt; scripts/azurite.sh stop $PORT
MSG
