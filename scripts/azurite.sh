#!/usr/bin/env bash
# azurite.sh start|stop|status [PORT] - run the Azurite table emulator (in memory)
# in the background. Log and pid go to .run/azurite-PORT.{log,pid} (git-ignored).
# Default port 10002 (what "UseDevelopmentStorage=true" points at).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

cmd=${1:-}
PORT=${2:-10002}
RUN="$ROOT/.run"
PIDFILE="$RUN/azurite-$PORT.pid"
LOGFILE="$RUN/azurite-$PORT.log"
BIN="$ROOT/.deps-node/node_modules/.bin/azurite-table"

die() { printf 'azurite.sh: error: %s\n' "$*" >&2; exit 1; }
usage() { echo "usage: $0 start|stop|status [PORT]" >&2; exit 2; }

case $PORT in ''|*[!0-9]*) usage ;; esac

port_answers() {
    # bash's /dev/tcp: succeeds when something accepts connections on the port.
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

running_pid() {
    [ -f "$PIDFILE" ] || return 1
    local pid
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

start() {
    local pid
    if pid=$(running_pid); then
        if port_answers; then
            echo "Azurite already running on 127.0.0.1:$PORT (pid $pid)"
            return 0
        fi
    fi
    [ -x "$BIN" ] || die "$BIN not found: run scripts/deps.sh first"
    if port_answers; then
        die "port $PORT is already in use by another program (not started by this script)"
    fi
    mkdir -p "$RUN"
    # setsid: own session, so it survives the calling shell and Ctrl-C there.
    setsid "$BIN" --inMemoryPersistence --tableHost 127.0.0.1 --tablePort "$PORT" \
        --disableTelemetry </dev/null >"$LOGFILE" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    local i
    for i in $(seq 1 60); do           # 60 x 0.5 s = 30 s
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$PIDFILE"
            echo "---- $LOGFILE ----" >&2; tail -n 20 "$LOGFILE" >&2 || true
            die "Azurite exited during startup (see above)"
        fi
        if port_answers; then
            echo "Azurite table service on http://127.0.0.1:$PORT/devstoreaccount1 (pid $pid, log $LOGFILE)"
            return 0
        fi
        sleep 0.5
    done
    kill "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
    echo "---- $LOGFILE ----" >&2; tail -n 20 "$LOGFILE" >&2 || true
    die "Azurite did not answer on 127.0.0.1:$PORT within 30 s"
}

stop() {
    local pid i
    if ! pid=$(running_pid); then
        rm -f "$PIDFILE"
        echo "Azurite on port $PORT: not running (no live pid in $PIDFILE)"
        return 0
    fi
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    echo "Azurite on port $PORT stopped (pid $pid)"
}

status() {
    local pid
    if pid=$(running_pid) && port_answers; then
        echo "Azurite running on 127.0.0.1:$PORT (pid $pid)"
    else
        echo "Azurite not running on port $PORT"
        return 1
    fi
}

case $cmd in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) usage ;;
esac
