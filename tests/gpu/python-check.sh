#!/usr/bin/env bash
# The Python API on a GPU machine, over what tools/device-carry.sh staged (default
# .devcarry):   bash tests/gpu/python-check.sh [CARRY]     (logs to $OUT if set)
# That machine's python3 is not the one the carried build was made for, so the
# extension (python/nvmeof/_core.cpp) is compiled there, against its Python and
# pybind11 and the carried libnvmeof. Then, over softverbs:
#   1. tests/gpu/torch_check.py: register_gpu with real torch CUDA tensors;
#   2. the package's own tests (python/tests) with the real libcuda.so.1 in place
#      of the fake driver, and that machine's torch.
set -u
cd "$(dirname "$0")/../.."
CARRY=${1:-.devcarry}
OUT=${OUT:-/tmp}
BUILD=$PWD/$CARRY/build
PKG=/tmp/nvmeof-python
section() { printf '\n===== %s (t=%ds) =====\n' "$*" "$SECONDS"; }

section "python, torch, compiler"
python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
c++ --version | head -1
EXT=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# pybind11 from pip where installed, else the system's headers (pybind11-dev).
INCLUDES=$(python3 -m pybind11 --includes 2>/dev/null) ||
    INCLUDES="-I$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
echo "includes: $INCLUDES"

section "build the extension for this python3"
mkdir -p "$PKG/nvmeof" /tmp/nvmeof-ext
. tests/gpu/carried-libs.sh
export LD_LIBRARY_PATH=$BUILD/core:$LD_LIBRARY_PATH
for source in _core dlpack; do
    # shellcheck disable=SC2086  # INCLUDES is a list of -I options
    c++ -std=c++20 -O2 -fPIC -fvisibility=hidden -D_FILE_OFFSET_BITS=64 $INCLUDES -Icore/include \
        -c "python/nvmeof/$source.cpp" -o "/tmp/nvmeof-ext/$source.o" &
done
wait
c++ -shared -o "$PKG/nvmeof/_core$EXT" /tmp/nvmeof-ext/_core.o /tmp/nvmeof-ext/dlpack.o \
    "$BUILD/core/libnvmeof.so.0" -Wl,-rpath,"$BUILD/core" || { echo "link failed"; exit 1; }
cp python/nvmeof/*.py python/nvmeof/*.pyi "$PKG/nvmeof/"
export PYTHONPATH=$PKG PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export SOFTVERBS_LIBDIR=$BUILD/softverbs
SV_RUN=$BUILD/softverbs/softverbs-run
"$SV_RUN" python3 -c 'import nvmeof; print("import nvmeof:", nvmeof.__file__)' || exit 1

section "register_gpu with torch CUDA tensors (tests/gpu/torch_check.py)"
NQN=nqn.2026-01.io.nvmeof:torch-check
"$SV_RUN" "$BUILD/target/nvmeof-target" --listen 127.0.0.1 --port 44320 --subsystem "$NQN" \
    --namespace ram:256M > /tmp/torch-check-target.out 2> /tmp/torch-check-target.err &
TARGET_PID=$!
sleep 2
timeout 120 "$SV_RUN" python3 tests/gpu/torch_check.py 127.0.0.1 "$NQN" 44320 2>&1 | tee "$OUT/torch-check.log"
echo "[exit ${PIPESTATUS[0]}]"
kill "$TARGET_PID"; wait "$TARGET_PID" 2>/dev/null

section "python/tests with the real driver in place of the fake one"
# Not the leak test: thousands of connect/close cycles, nothing GPU-specific.
NVMEOF_TARGET_BIN=$BUILD/target/nvmeof-target NVMEOF_SOFTVERBS_RUN=$SV_RUN \
NVMEOF_EXAMPLE_READ_WRITE=$BUILD/examples/read_write NVMEOF_TEST_FAKE_CUDA=libcuda.so.1 \
NVMEOF_TEST_TORCH=found \
    timeout 180 "$SV_RUN" python3 -m pytest -q -p no:cacheprovider --ignore python/tests/test_leak.py python/tests 2>&1 | tee "$OUT/python-tests.log"
echo "[exit ${PIPESTATUS[0]}]"
section "done"
