#!/usr/bin/env bash
# GPU device check (issue #8), for a machine with an NVIDIA GPU; self-contained:
# no package registry needed, about 15 minutes at most. Prints everything.
#   tests/gpu/device-check.sh [BUILD_DIR]      (default build-gpu; built here if missing)
# 1. probes: driver version, kernel module flavour (open/proprietary), dma-buf,
#    nvidia_peermem, RDMA devices;
# 2. builds with CUDA if needed and runs the GPU unit tests (fake driver);
# 3. register_gpu by every path the machine allows (NVMEOF_GPU_REGISTRATION=
#    dma-buf / peermem / both) with a GPU write+read, data checked (gpu_io_check);
# 4. softverbs serving the real GPU's memory (softverbs_gpu_memory_test against
#    libcuda.so.1: device-address and dma-buf registrations, remote WRITE/READ,
#    SEND/RECV and READ with device SGEs, data checked);
# 5. the GPU fio jobs with verify over softverbs;
# 6. GPU read/write bandwidth over softverbs (128 KiB, QD 16), host memory beside it.
# BUILD may also be a carried subset of a build (tools/device-carry.sh): then the
# meson test step is skipped and FIO names the fio binary to use.
# Every step runs under a timeout and is reported; one failing does not stop the rest.
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
T0=$SECONDS
export SOFTVERBS_LIBDIR=${SOFTVERBS_LIBDIR:-$PWD/$BUILD/softverbs}  # softverbs-run's default is the build machine's path
section() { printf '\n===== %s (t=%ds) =====\n' "$*" $((SECONDS - T0)); }
run() { printf '$ %s\n' "$*"; "$@"; printf '[exit %s]\n' "$?"; }

section "probe: GPU and driver"
run nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
cat /proc/driver/nvidia/version 2>/dev/null || echo "no /proc/driver/nvidia/version"
if grep -qi "open kernel module" /proc/driver/nvidia/version 2>/dev/null; then
    echo "kernel module: open (dma-buf export possible)"
else
    echo "kernel module: proprietary or unknown (no dma-buf export)"
fi
ls -l /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>/dev/null || ldconfig -p | grep libcuda || echo "libcuda.so.1 not in ld.so cache"
echo "nvidia_peermem: $( [ -d /sys/module/nvidia_peermem ] && echo loaded || echo 'not loaded')"
lsmod 2>/dev/null | grep -E '^nvidia' || true
nvidia-smi topo -m 2>/dev/null | head -20 || true
section "probe: RDMA devices"
ls -l /sys/class/infiniband/ 2>/dev/null || echo "no /sys/class/infiniband"
for d in /sys/class/infiniband/*; do
    [ -e "$d" ] || continue
    echo "$(basename "$d"): $(readlink -f "$d/device") numa=$(cat "$d/device/numa_node" 2>/dev/null) net=$(ls "$d/device/net" 2>/dev/null | tr '\n' ' ')"
done
ulimit -l

section "build"
if [ ! -x "$BUILD/tests/unit/gpu/gpu_io_check" ]; then
    run timeout 600 meson setup "$BUILD" -Dcuda=enabled -Dengine=auto || true
    run timeout 600 ninja -C "$BUILD" || true
fi
grep -h "GPU memory support" "$BUILD/meson-logs/meson-log.txt" 2>/dev/null | tail -1

section "unit + fake-driver GPU tests"
if [ -d "$BUILD/meson-private" ]; then
    run timeout 300 meson test -C "$BUILD" --no-rebuild --suite gpu --print-errorlogs
else
    echo "not a meson build directory (a carried subset): skipped; CI runs these"
fi

SV_RUN="$BUILD/softverbs/softverbs-run"
TARGET="$BUILD/target/nvmeof-target"
CHECK="$BUILD/tests/unit/gpu/gpu_io_check"
NQN=nqn.2026-01.io.nvmeof:gpu-check
start_target() {  # $1: port; uses softverbs unless $2 = real (or tcp: NVMe/TCP, no softverbs)
    local wrap=("$SV_RUN") transport=rdma
    [ "${2:-}" = real ] && wrap=()
    [ "${2:-}" = tcp ] && wrap=() && transport=tcp
    "${wrap[@]}" "$TARGET" --transport "$transport" --listen "${3:-127.0.0.1}" --port "$1" --subsystem "$NQN" --namespace ram:256M \
        > "/tmp/gpu-check-target-$1.out" 2> "/tmp/gpu-check-target-$1.err" &
    TARGET_PID=$!
    sleep 2
    cat "/tmp/gpu-check-target-$1.out"
}
stop_target() { kill "$TARGET_PID" 2>/dev/null; wait "$TARGET_PID" 2>/dev/null; tail -3 "/tmp/gpu-check-target-$1.err"; }

# bandwidth TRTYPE PORT [WRAPPER]: 128 KiB randread and randwrite at QD 16 from GPU memory and
# from host memory, one line each.
bandwidth() {
    local trtype=$1 port=$2 rw mem rc; shift 2
    for rw in randread randwrite; do
        for mem in gpu host; do
            gpu_opt=(--gpu=0); [ "$mem" = host ] && gpu_opt=()
            timeout 90 "$@" "$FIO" --output-format=json --name=bw --ioengine=external:"$NVMEOF_ENGINE" \
                --trtype="$trtype" --traddr=127.0.0.1 --trsvcid="$port" --subnqn="$NQN" --nsid=1 "${gpu_opt[@]}" \
                --rw=$rw --bs=128k --iodepth=16 --norandommap=1 --randrepeat=0 --time_based=1 --runtime=5 \
                --ramp_time=1 > /tmp/gpu-check-bw.json 2> /tmp/gpu-check-bw.err
            rc=$?
            python3 - "$trtype" "$rw" "$mem" "$rc" <<'PY'
import json, sys
trtype, rw, mem, rc = sys.argv[1:5]
try:
    job = json.load(open("/tmp/gpu-check-bw.json"))["jobs"][0]
    side = job["read" if rw == "randread" else "write"]
    print(f"{trtype} {rw:9} {mem:4} {side['bw'] / 1024:8.0f} MiB/s  {side['iops']:8.0f} IOPS  "
          f"mean {side['clat_ns']['mean'] / 1000:7.0f} us  fio cpu {job['usr_cpu'] + job['sys_cpu']:5.1f} %  [exit {rc}]")
except Exception as e:
    print(f"{trtype} {rw:9} {mem:4} no result (exit {rc}): {e}; " + open("/tmp/gpu-check-bw.err").read()[-300:])
PY
        done
    done
}

section "softverbs serving GPU memory (real driver)"
SOFTVERBS_CUDA_LIBRARY=libcuda.so.1 run timeout 120 "$SV_RUN" "$BUILD/softverbs/tests/softverbs_gpu_memory_test"

section "register_gpu + GPU write/read over softverbs, every path"
start_target 44300
for path in both dma-buf peermem; do
    echo "--- NVMEOF_GPU_REGISTRATION=$path"
    if [ "$path" = both ]; then
        run timeout 120 "$SV_RUN" "$CHECK" 127.0.0.1 44300 "$NQN" 0
    else
        NVMEOF_GPU_REGISTRATION=$path run timeout 120 "$SV_RUN" "$CHECK" 127.0.0.1 44300 "$NQN" 0
    fi
done
stop_target 44300

if ls /sys/class/infiniband/* >/dev/null 2>&1; then
    section "register_gpu + GPU write/read over the real RDMA device"
    ADDR=$(ip -4 -o addr show 2>/dev/null | awk '$2 != "lo" {split($4, a, "/"); print a[1]; exit}')
    if [ -n "$ADDR" ]; then
        start_target 44301 real "$ADDR"
        for path in both dma-buf peermem; do
            echo "--- NVMEOF_GPU_REGISTRATION=$path"
            NVMEOF_GPU_REGISTRATION=$([ "$path" = both ] && echo "" || echo "$path") \
                run timeout 120 "$CHECK" "$ADDR" 44301 "$NQN" 0
        done
        stop_target 44301
    fi
fi

section "fio GPU jobs with verify over softverbs"
FIO=${FIO:-$(command -v fio || echo .cache/fio-src/fio)}
if [ -x "$FIO" ] && [ -f "$BUILD/engine/libfio_nvmeof.so" ]; then
    start_target 44302
    export NVMEOF_ENGINE=$PWD/$BUILD/engine/libfio_nvmeof.so NVMEOF_TRADDR=127.0.0.1 NVMEOF_TRSVCID=44302 \
           NVMEOF_SUBNQN=$NQN NVMEOF_GPU=0
    run timeout 180 "$SV_RUN" "$FIO" --size=16m jobs/gpu-write-verify.fio
    run timeout 60 "$SV_RUN" "$FIO" --runtime=5 jobs/gpu-read.fio
    NVMEOF_GPU=rr run timeout 60 "$SV_RUN" "$FIO" --runtime=5 --numjobs=2 --group_reporting jobs/gpu-read.fio
    stop_target 44302

    section "bandwidth over softverbs: 128 KiB, QD 16, GPU memory and host memory (software transport)"
    start_target 44303
    bandwidth rdma 44303 "$SV_RUN"
    stop_target 44303

    section "GPU memory over NVMe/TCP (through each region's host copy): verify, then 128 KiB bandwidth"
    start_target 44304 tcp
    sed 's/^\[global\]$/[global]\ntrtype=tcp/' jobs/gpu-write-verify.fio > /tmp/gpu-write-verify-tcp.fio
    NVMEOF_TRSVCID=44304 run timeout 180 "$FIO" --size=16m /tmp/gpu-write-verify-tcp.fio
    bandwidth tcp 44304
    stop_target 44304
else
    echo "fio or the engine is missing: skipped"
fi
section "done"
