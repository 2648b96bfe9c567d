"""QD1 4 KiB reads per second: C++ (qd1_read) vs Python (Namespace.read and the
low-level submit/poll loop) against nvmeof-target on loopback over softverbs.
Prints one line; a measurement, not a test.

    meson compile -C build && softverbs-run python3 python/bench/qd1.py build [SECONDS]
(with PYTHONPATH=build/python; see docs/python.md)."""
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
from nvmeof import protocol  # noqa: E402
from conftest import SOFTVERBS_RUN, start_target  # noqa: E402

READ_BYTES = 4096


def python_rate(target, low_level):
    with nvmeof.Controller.connect(target.address, target.nqn, port=target.port) as controller:
        namespace = controller.namespace(1)
        blocks = READ_BYTES // namespace.lba_size
        limit = namespace.size_lbas - blocks + 1
        io = controller.io
        with controller.allocate(READ_BYTES) as block:
            reads, start = 0, time.monotonic()
            while time.monotonic() - start < seconds:
                slba = (reads * blocks) % limit
                if low_level:
                    command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=slba, blocks=blocks,
                                                  buffer=block, lba_size=namespace.lba_size)
                    request = io.submit(command, data_owner=block)
                    while not request.done:
                        io.poll()
                    request.response.raise_for_status()
                else:
                    namespace.read(block, slba=slba, blocks=blocks)
                reads += 1
            return reads / (time.monotonic() - start)


with start_target(namespace="ram:64M:512") as target:
    cpp, cpp_polled, _ = map(float, subprocess.run([SOFTVERBS_RUN, os.path.join(build, "python", "qd1_read"), target.address,
                                target.nqn, str(target.port), str(seconds)],
                               check=True, capture_output=True, text=True).stdout.split())
    blocking = python_rate(target, low_level=False)
    polled = python_rate(target, low_level=True)
print(f"QD1 4 KiB reads/s over softverbs loopback: Namespace.read C++ {cpp:.0f}, Python {blocking:.0f} "
      f"({blocking / cpp:.2f}x); submit/poll loop C++ {cpp_polled:.0f}, Python {polled:.0f} "
      f"({polled / cpp_polled:.2f}x)")
