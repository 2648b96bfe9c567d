#!/bin/sh
# Starts nvmeof-target on a free port, runs the example against it, stops it.
# usage: run_example.sh TARGET_BIN EXAMPLE [ARGS...]
# (the example runs as EXAMPLE ARGS... 127.0.0.1 NQN PORT)
set -eu
target_bin=$1
shift
# The preload (softverbs, maybe the ASan runtime first) is for the two programs
# under test, not for the shell tools.
preload=${LD_PRELOAD:-}
unset LD_PRELOAD
nqn=nqn.2026-01.io.nvmeof:example
out=$(mktemp)
LD_PRELOAD=$preload "$target_bin" --listen 127.0.0.1 --port 0 --subsystem "$nqn" --namespace ram:16M >"$out" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do
    grep -q '^listening on ' "$out" && break
    sleep 0.1
done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
[ -n "$port" ] || { echo "target did not start" >&2; exit 1; }
LD_PRELOAD=$preload "$@" 127.0.0.1 "$nqn" "$port"
