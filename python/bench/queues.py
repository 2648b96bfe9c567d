"""Python against C++ at QD 1 and QD 32 (4 KiB reads), and 1 MiB / 64 MiB reads
with 1, 2, 4 and 8 I/O queues, against nvmeof-target on loopback over
softverbs. Prints a table; a measurement, not a test.

    meson compile -C build && PYTHONPATH=build/python \\
        build/softverbs/softverbs-run python3 python/bench/queues.py build [SECONDS]
"""
import concurrent.futures
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
build = sys.argv[1] if len(sys.argv) > 1 else "build"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
os.environ.setdefault("NVMEOF_TARGET_BIN", os.path.join(build, "target", "nvmeof-target"))
os.environ.setdefault("NVMEOF_SOFTVERBS_RUN", os.path.join(build, "softverbs", "softverbs-run"))

import nvmeof  # noqa: E402
from conftest import SOFTVERBS_RUN, start_target  # noqa: E402

BLOCK = 4096
DEPTH = 32


def python_qd1(target):
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        namespace = controller.namespace(1)
        blocks, limit = BLOCK // namespace.lba_size, namespace.size_lbas - BLOCK // namespace.lba_size
        with controller.allocate(BLOCK) as block:
            reads, start = 0, time.monotonic()
            while time.monotonic() - start < seconds:
                namespace.read(block, slba=(reads * blocks) % limit, blocks=blocks)
                reads += 1
            return reads / (time.monotonic() - start)


def python_qd32(target):
    with nvmeof.Controller(target.address, target.nqn, port=target.port, queue_depth=DEPTH + 1) as controller:
        namespace = controller.namespace(1)
        blocks, limit = BLOCK // namespace.lba_size, namespace.size_lbas - BLOCK // namespace.lba_size
        with controller.allocate(BLOCK * DEPTH) as window:
            issued = 0

            def read(slot):
                nonlocal issued
                issued += 1
                future = namespace.read_async(window, slba=(issued * blocks) % limit, blocks=blocks,
                                              buffer_offset=slot * BLOCK)
                future.slot = slot
                return future

            pending = {read(slot) for slot in range(DEPTH)}
            completed, start = 0, time.monotonic()
            while time.monotonic() - start < seconds:
                done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    future.result()
                    completed += 1
                    pending.add(read(future.slot))
            rate = completed / (time.monotonic() - start)
            concurrent.futures.wait(pending)
            return rate


def bandwidth(target, size, queues):
    with nvmeof.Controller(target.address, target.nqn, port=target.port, io_queues=queues) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(size) as buffer:
            moved, start = 0, time.monotonic()
            while time.monotonic() - start < seconds or moved == 0:
                namespace.read(buffer, slba=0)
                moved += size
            return moved / (time.monotonic() - start) / 1e9


with start_target(namespace="ram:80M:4096") as target:
    cpp_qd1, _, cpp_qd32 = map(float, subprocess.run(
        [SOFTVERBS_RUN, os.path.join(build, "python", "qd1_read"), target.address, target.nqn,
         str(target.port), str(seconds)], check=True, capture_output=True, text=True).stdout.split())
    py_qd1 = python_qd1(target)
    py_qd32 = python_qd32(target)
    print(f"4 KiB reads/s     C++         Python (ratio)")
    print(f"QD 1 blocking     {cpp_qd1:9.0f}   {py_qd1:9.0f} ({py_qd1 / cpp_qd1:.2f}x)")
    print(f"QD 32 async       {cpp_qd32:9.0f}   {py_qd32:9.0f} ({py_qd32 / cpp_qd32:.2f}x)")
    print()
    print("blocking Namespace.read, GB/s   " + "  ".join(f"{q} queue{'s' if q > 1 else ' '}" for q in (1, 2, 4, 8)))
    for size, name in ((1 << 20, "1 MiB"), (64 << 20, "64 MiB")):
        rates = [bandwidth(target, size, q) for q in (1, 2, 4, 8)]
        print(f"{name:<32}" + "  ".join(f"{r:8.2f}" for r in rates))
