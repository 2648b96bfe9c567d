#!/usr/bin/env bash
# README command (a): installs everything, builds, starts nvmeof-target on
# loopback under softverbs (the built-in software RDMA device), runs
# jobs/quickstart.fio through the engine with fio's normal output, and stops
# the target. Exit status 0 only if fio reported no errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NVMEOF_BUILD:-$root/build}

"$root/tools/setup.sh"
if [ -f "$build/build.ninja" ]; then
    meson configure "$build" -Dengine=enabled >/dev/null
else
    meson setup "$build" "$root" -Dengine=enabled
fi
ninja -C "$build"

run="$build/softverbs/softverbs-run"
target="$build/target/nvmeof-target"
engine="$build/engine/libfio_nvmeof.so"
fio_bin=fio
[ -x "$root/.cache/fio-src/fio" ] && fio_bin="$root/.cache/fio-src/fio"
nqn=nqn.2026-12.io.nvmeof:demo

work=$(mktemp -d)
target_pid=""
cleanup() {
    if [ -n "$target_pid" ] && kill -0 "$target_pid" 2>/dev/null; then
        kill -TERM "$target_pid"
        wait "$target_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$run" "$target" --listen 127.0.0.1 --port 0 --subsystem "$nqn" --namespace ram:256M \
    >"$work/ready" 2>"$work/target.log" &
target_pid=$!
. "$root/tools/target-ready.sh"
if ! port=$(target_port "$work/ready" "$target_pid"); then
    echo "demo: nvmeof-target did not start:" >&2
    cat "$work/target.log" >&2
    exit 1
fi
echo "demo: nvmeof-target listening on 127.0.0.1:$port (subsystem $nqn, 256 MiB RAM namespace)"

export NVMEOF_ENGINE="$engine" NVMEOF_TRADDR=127.0.0.1 NVMEOF_TRSVCID="$port" NVMEOF_SUBNQN="$nqn"
status=0
"$run" "$fio_bin" "$root/jobs/quickstart.fio" || status=$?
if [ $status -eq 0 ]; then
    echo "demo: fio finished without errors"
else
    echo "demo: fio reported errors (exit $status)" >&2
fi
exit $status
