#!/bin/bash
# Third-party check: stock fio's own `rdma` engine (server + client, verb=write
# and verb=read) runs over softverbs and finishes with err=0.
# Usage: fio_rdma_test.sh SOFTVERBS_RUN FIO
set -u
run=$1
fio=$2
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT
# fio is not ours: its own leaks must not fail the test under an ASan build.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export SOFTVERBS_STATS="$work/stats-%p.json"

# A free port below the kernel's ephemeral range, picked as the perf runner
# picks its fio servers' (a port handed out by binding to 0 can be taken by a
# parallel test before fio binds it: "Address already in use").
perf_dir="$(cd "$(dirname "$0")/../../perf" && pwd)"
free_port() {
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from nvmeof_perf.fio_rdma import free_port; print(free_port())' \
    "$perf_dir"
}

for verb in write read; do
  # A server that exits before it listens (its port was taken meanwhile) is
  # started again on another port.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    timeout 60 "$run" "$fio" --name=server --ioengine=rdma --port="$port" --rw=read --bs=64k --size=8m \
      --output="$work/server-$verb.log" 2>"$work/server-$verb.err" &
    server_pid=$!
    # Bounded wait for the listener (a bare TCP probe is ignored by softverbs).
    for _ in $(seq 100); do
      kill -0 "$server_pid" 2>/dev/null || break
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.1
    done
    # The probe may have reached another program on a port taken meanwhile,
    # while fio's own bind is still to fail: give that a moment to show.
    sleep 0.5
    if kill -0 "$server_pid" 2>/dev/null && ! grep -q "rdma_bind_addr fail" "$work/server-$verb.err"; then
      break
    fi
    kill -9 "$server_pid" 2>/dev/null
    wait "$server_pid"
    server_pid=""
    echo "fio rdma server did not listen on port $port (attempt $attempt): $(tail -c 300 "$work/server-$verb.err")"
  done
  [ -n "$server_pid" ] || { echo "FAIL: fio rdma server never listened"; exit 1; }
  timeout 60 "$run" "$fio" --name=client --ioengine=rdma --hostname=127.0.0.1 --port="$port" --verb="$verb" \
    --rw=write --bs=64k --size=8m --output="$work/client-$verb.log"
  client_rc=$?
  wait "$server_pid"
  server_rc=$?
  server_pid=""
  for side in client server; do
    log="$work/$side-$verb.log"
    if ! grep -q "err= 0" "$log"; then
      echo "FAIL: fio $side verb=$verb did not finish with err=0 (client rc=$client_rc server rc=$server_rc)"
      cat "$log"
      exit 1
    fi
  done
  [ "$client_rc" -eq 0 ] && [ "$server_rc" -eq 0 ] || { echo "FAIL: fio exit codes $client_rc/$server_rc"; exit 1; }
  echo "ok: fio rdma verb=$verb client+server err=0"
done
# Canary: the traffic really went through softverbs (its stats files exist).
ls "$work"/stats-*.json >/dev/null 2>&1 || { echo "FAIL: no softverbs stats written"; exit 1; }
# 8 MiB in 64 KiB blocks: the clients issued 128 RDMA WRITEs, then 128 RDMA READs.
for op in writes reads; do
  grep -q "\"$op\": 128," "$work"/stats-*.json || { echo "FAIL: no QP with 128 $op"; cat "$work"/stats-*.json; exit 1; }
done
echo "PASS"
