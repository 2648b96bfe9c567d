#!/usr/bin/env bash
# The one command for a GPU machine lent by the device tool, over what
# tools/device-carry.sh staged (default .devcarry):
#   bash tests/gpu/device-run.sh [CARRY]     (logs and scaling.json to $OUT if set)
# Prints the machine, runs tests/gpu/device-check.sh on the carried build, then
# tests/gpu/python-check.sh (the Python API with real torch CUDA tensors), then
# bench/scaling.py (IOPS per core, numjobs 1-8, over softverbs). SKIP_CHECK=1 and
# SKIP_PYTHON=1 leave out the first two.
set -u
cd "$(dirname "$0")/../.."
CARRY=${1:-.devcarry}
OUT=${OUT:-/tmp}
echo "===== machine"
uname -a; grep -E '^(PRETTY_NAME)=' /etc/os-release; ldd --version | head -1; nproc; free -g | head -2
ulimit -l unlimited 2>/dev/null; echo "memlock: $(ulimit -l)"
. tests/gpu/carried-libs.sh
export FIO=$PWD/$CARRY/fio SOFTVERBS_LIBDIR=$PWD/$CARRY/build/softverbs
"$CARRY/build/softverbs/softverbs-run" "$FIO" --version
[ -n "${SKIP_CHECK:-}" ] || bash tests/gpu/device-check.sh "$CARRY/build" 2>&1 | tee "$OUT/device-check.log"
[ -n "${SKIP_PYTHON:-}" ] || bash tests/gpu/python-check.sh "$CARRY"
echo "===== scaling (t=${SECONDS}s)"
python3 bench/scaling.py --build "$CARRY/build" --fio "$FIO" ${SCALING_ARGS:-} --json "$OUT/scaling.json" 2>&1 | tee "$OUT/scaling.log"
echo "===== end (t=${SECONDS}s)"
