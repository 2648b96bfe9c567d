#!/usr/bin/env bash
# Stages what the GPU machine needs into DEST (default .devcarry, ignored by git) for
# the device tool's `carry`: that machine has CUDA but no rdma-core, GoogleTest or fio,
# and reaches no package registry. Copies, debug info stripped, keeping the build's
# layout so that $ORIGIN run paths resolve:
#   build/{core,engine,target,softverbs,softverbs/tests,tests/unit/gpu,examples}/...  (from BUILD)
#   fio                 a fio built from .cache/fio-src with this build's config-host.h
#                       (the engine's ABI), without the engines that need other libraries
#   lib-fallback/       libraries the binaries need beyond glibc and libstdc++, used there
#                       only where the machine lacks them (tests/gpu/device-run.sh)
# Usage: tools/device-carry.sh [BUILD] [DEST]      then run tests/gpu/device-run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DEST=${2:-.devcarry}
grep -qx "/$DEST/" .git/info/exclude 2>/dev/null || echo "/$DEST/" >> .git/info/exclude
rm -rf "$DEST"
mkdir -p "$DEST/lib-fallback"
for f in core/libnvmeof.so.0 engine/libfio_nvmeof.so target/nvmeof-target softverbs/libibverbs.so.1 \
         softverbs/librdmacm.so.1 softverbs/softverbs-run softverbs/tests/softverbs_gpu_memory_test examples/read_write \
         tests/unit/gpu/gpu_io_check; do
    mkdir -p "$DEST/build/$(dirname "$f")"
    cp -L "$BUILD/$f" "$DEST/build/$f"
    case "$f" in *softverbs-run) ;; *) strip --strip-debug "$DEST/build/$f" ;; esac
done
FIO_BUILD=.cache/fio-device
if [ ! -x "$FIO_BUILD/fio" ]; then
    rm -rf "$FIO_BUILD"
    cp -r .cache/fio-src "$FIO_BUILD"
    (cd "$FIO_BUILD" && make clean >/dev/null 2>&1 || true
     ./configure --disable-numa --disable-rados --disable-rbd --disable-http --disable-gfapi \
         --disable-libnfs --disable-pmem --disable-xnvme --disable-libzbc --disable-tcmalloc \
         --disable-dfs --disable-native >/dev/null
     make -j"$(nproc)" fio >/dev/null)
fi
if ! diff <(grep '^#define' .cache/fio-src/config-host.h | sort) <(grep '^#define' "$FIO_BUILD/config-host.h" | sort); then
    echo "device-carry: the carried fio's config-host.h differs from the engine's (ABI)" >&2
    exit 1
fi
cp "$FIO_BUILD/fio" "$DEST/fio"
strip --strip-debug "$DEST/fio"
for lib in libcrypto.so.3 libz.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ { print $NF; exit }')" "$DEST/lib-fallback/"
done
du -sh "$DEST"
