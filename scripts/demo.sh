#!/usr/bin/env bash
# demo.sh - try aztfs locally: install deps, build, start Azurite on 127.0.0.1:10002,
# load a sample dataset and mount it at /mnt/aztfs-demo. Safe to rerun.
# Stop with:  fusermount3 -u /mnt/aztfs-demo; scripts/azurite.sh stop [PORT]
# DEMO_PORT=N uses another port than 10002 (e.g. when 10002 is taken);
# DEMO_MNT=DIR another mount point, which may not be inside the clone: a
# mount there is walked by every tool that walks the clone (git clean -fdx
# deletes the account's entities through it; dpkg-buildpackage's dh_clean,
# grep -r, find).
# Installs only what builds and runs aztfs, Azurite and the seeding
# (scripts/deps.sh; the test tools come with scripts/test.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
MNT=${DEMO_MNT:-/mnt/aztfs-demo}
case $MNT in /*) ;; *) MNT="$ROOT/$MNT" ;; esac
MNT=$(realpath -m "$MNT")
case $MNT/ in
"$ROOT"/*)
    echo "demo: $MNT is inside the clone ($ROOT): tools that walk the clone (git clean -fdx," >&2
    echo "      dpkg-buildpackage, grep -r) would walk, and some delete, the account through" >&2
    echo "      the mount; give DEMO_MNT a directory outside it" >&2
    exit 2
    ;;
esac
PORT=${DEMO_PORT:-10002}
if [ "$PORT" = 10002 ]; then
    export AZURE_STORAGE_CONNECTION_STRING="UseDevelopmentStorage=true"
else
    export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:$PORT/devstoreaccount1;"
fi

scripts/deps.sh
scripts/build.sh

# A mount left over from a previous run (possibly with a dead daemon), and
# one at ./mnt, where the demo mounted before it moved out of the clone.
for old in "$MNT" "$ROOT/mnt"; do
    if grep -qs " $old fuse" /proc/mounts; then
        echo "demo: unmounting the previous mount at $old"
        fusermount3 -u "$old" 2>/dev/null || fusermount3 -uz "$old"
    fi
done

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

aztfs is mounted at $MNT (Azurite on 127.0.0.1:$PORT, in memory),
outside the clone: tools that walk the clone do not walk the account.
Try:
  cd $MNT
  ls                                      # tables
  ls customers                            # one directory per PartitionKey
  ls -l customers/US                      # one <RowKey>.json per entity
  cat 'customers/US/ACME Corp.json'
  cat customers/FR/café.json
  cat customers/US/a%25b.json             # '%' in a key is written %25
  cat customers/US/%2Ehidden.json         # a leading '.' is written %2E
  grep -rl '"Paid": true' orders
  find orders -type f | wc -l
  du -sh orders

Saves are checked at close: use cp or tee (a bare '>' hides a refused save).
Why a save or a mkdir failed: tail $LOG, or
  getfattr -n user.aztfs.errors --only-values $MNT

Stop (leave $MNT first):
  fusermount3 -u $MNT; scripts/azurite.sh stop $PORT
MSG
