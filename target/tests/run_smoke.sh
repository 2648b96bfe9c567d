#!/bin/sh
# run_smoke.sh SOFTVERBS_RUN TARGET CLIENT [smoke|restart]
# Starts nvmeof-target on a free port over softverbs, runs the smoke client
# against it, stops it with SIGINT and checks the exit status and stats JSON.
# "restart" writes through a file-backed namespace, restarts the target and
# checks the data read back. "parallel" runs four clients at once; "faults"
# exercises the fault options.
set -eu
run=$1 target=$2 client=$3 mode=${4:-smoke}
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
nqn=nqn.2024-01.io.nvmeof:smoke

fail() {
    echo "run_smoke: $*" >&2
    echo "--- target stderr:" >&2
    cat "$work/err" >&2 || true
    exit 1
}

start() {
    : >"$work/out"
    "$run" "$target" --port 0 --subsystem "$nqn" "$@" --stats "$work/stats.json" \
        >"$work/out" 2>"$work/err" &
    pid=$!
    tries=0
    while ! grep -q '^listening on ' "$work/out"; do
        kill -0 "$pid" 2>/dev/null || fail "the target exited before listening"
        tries=$((tries + 1))
        [ "$tries" -lt 400 ] || fail "no readiness line after 20 s"
        sleep 0.05
    done
    [ "$(wc -l <"$work/out")" -eq 1 ] || fail "stdout is more than the readiness line"
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/out")
    [ -n "$port" ] && [ "$port" -ne 0 ] || fail "bad readiness line: $(cat "$work/out")"
}

stop() {
    kill -INT "$pid"
    status=0
    wait "$pid" || status=$?
    pid=
    [ "$status" -eq 0 ] || fail "the target exited with $status after SIGINT"
    [ -s "$work/stats.json" ] || fail "no stats file"
}

expect_stat() {
    grep -q "$1" "$work/stats.json" || fail "stats lack $1: $(cat "$work/stats.json")"
}

case "$mode" in
smoke)
    start --namespace ram:16M
    "$run" "$client" 127.0.0.1 "$port" "$nqn" both || fail "smoke client failed"
    stop
    cat "$work/stats.json"
    expect_stat '"controllers": 1'
    expect_stat '"read": 3, "write": 3, "flush": 1'
    expect_stat '"connect": 2'
    expect_stat '"bytes": {"read": 139264, "write": 139264}'
    expect_stat '"rdma": {"read_ops": 3, "write_ops": 5, "post_send_calls": '
    expect_stat '"in_capsule_writes": 1'
    expect_stat '"errors": 0'
    ;;
restart)
    start --namespace "file:$work/ns.img" --size 8M
    "$run" "$client" 127.0.0.1 "$port" "$nqn" write || fail "writing client failed"
    stop
    start --namespace "file:$work/ns.img"
    "$run" "$client" 127.0.0.1 "$port" "$nqn" verify || fail "data did not survive the restart"
    stop
    [ "$(stat -c %s "$work/ns.img")" -eq 8388608 ] || fail "the file changed size"
    ;;
parallel)
    # Several controllers at once, each with an admin and an I/O queue.
    start --namespace ram:16M
    pids=
    for i in 1 2 3 4; do
        "$run" "$client" 127.0.0.1 "$port" "$nqn" both >"$work/client$i" 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do
        wait "$p" || { cat "$work"/client*; fail "a parallel client failed"; }
    done
    stop
    expect_stat '"controllers": 4'
    expect_stat '"errors": 0'
    ;;
faults)
    start --namespace ram:16M --fault reject-connect=6
    "$run" "$client" 127.0.0.1 "$port" "$nqn" reject 6 || fail "reject-connect"
    stop
    expect_stat '"faults_injected": 1'
    grep -q 'fault: reject-connect' "$work/err" || fail "reject-connect was not logged"
    start --namespace ram:16M --fault connect-status=1/0x81
    "$run" "$client" 127.0.0.1 "$port" "$nqn" connect-status 1/129 || fail "connect-status"
    stop
    expect_stat '"faults_injected": 1'
    start --namespace ram:16M --fault delay-ms=20
    "$run" "$client" 127.0.0.1 "$port" "$nqn" both || fail "delay-ms"
    stop
    start --namespace ram:16M
    "$run" "$client" 127.0.0.1 "$port" "$nqn" kato || fail "keep-alive timeout"
    stop
    grep -q 'keep-alive timeout' "$work/err" || fail "the keep-alive expiry was not logged"
    start --namespace ram:16M --fault drop-after=5
    if "$run" "$client" 127.0.0.1 "$port" "$nqn" both >"$work/client" 2>&1; then
        fail "the client survived drop-after=5"
    fi
    stop
    grep -q 'fault: drop-after' "$work/err" || fail "drop-after was not logged"
    # I/O command 1 (the keyed Write) runs, its answer never comes: the
    # connections drop, and the namespace counts the Write.
    start --namespace ram:16M --fault drop-after-run=1
    if "$run" "$client" 127.0.0.1 "$port" "$nqn" both >"$work/client" 2>&1; then
        fail "the client survived drop-after-run=1"
    fi
    stop
    grep -q 'fault: drop-after-run=1: QID 1 CID .* ran; its answer is not sent' "$work/err" ||
        fail "drop-after-run was not logged"
    grep -q 'QID 1 CNTLID 1: disconnecting: drop-after-run fault' "$work/err" ||
        fail "drop-after-run did not drop the I/O queue"
    expect_stat '"faults_injected": 1,'
    expect_stat '"nsid": 1, "commands": {"read": 0, "write": 1}'
    start --namespace ram:16M --fault stop-answering-after=3
    if "$run" "$client" 127.0.0.1 "$port" "$nqn" both >"$work/client" 2>&1; then
        fail "the client survived stop-answering-after=3"
    fi
    grep -q 'timed out' "$work/client" || fail "expected a command timeout: $(cat "$work/client")"
    stop
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "run_smoke: $mode OK"
