"""The package as pip installed it, used from outside the source tree: `import
nvmeof` finds the virtual environment's copy, its version is the meson
project's, and it connects to nvmeof-target over softverbs, writes a block and
reads it back.

Run by CI (.ci/run) with the environment's interpreter under softverbs-run,
since this process itself talks RDMA:

    softverbs-run VENV/bin/python installed_smoke.py VENV VERSION TARGET_BIN SOFTVERBS_RUN

Prints one line: "installed nvmeof: ok ..." or "installed nvmeof: FAIL: <cause>"
(exit status 1).
"""
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

NQN = "nqn.2026-12.io.nvmeof:pip-smoke"
SLBA = 7


def fail(cause):
    # One line, whatever the cause's text holds: CI shows the last line first.
    print(f"installed nvmeof: FAIL: {' '.join(str(cause).split())}", flush=True)
    sys.exit(1)


def inside(path, directory):
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([path, directory]) == directory


def start_target(target_bin, softverbs_run, log):
    """nvmeof-target on 127.0.0.1, a free port; returns (process, port)."""
    cmd = [softverbs_run, target_bin, "--listen", "127.0.0.1", "--port", "0",
           "--subsystem", NQN, "--namespace", "ram:1M:512"]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    except OSError as e:
        fail(f"cannot run {target_bin}: {e}")
    # The target says "listening on ADDR:PORT" on stdout once it accepts.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        if "listening on " in line:
            return proc, int(line.rsplit(":", 1)[1])
    exited = proc.poll()
    if exited is None:
        proc.kill()
        proc.wait()
    log.seek(0)
    last = (log.read().strip().splitlines() or ["nothing on stderr"])[-1]
    if exited is None:
        fail(f"nvmeof-target did not say it was listening within 30 s: {last}")
    fail(f"nvmeof-target exited with status {exited} before listening: {last}")


def stop_target(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        fail("nvmeof-target did not stop within 15 s of SIGTERM")


def check_package(venv, version):
    try:
        import nvmeof
        import nvmeof._version
    except Exception as e:
        fail(f"import nvmeof: {type(e).__name__}: {e}")
    for module in (nvmeof, nvmeof._core):
        if not inside(module.__file__, venv):
            fail(f"{module.__name__} was imported from {module.__file__}, not from the virtual environment {venv}")
    if nvmeof._version.__version__ != version:
        fail(f"nvmeof._version.__version__ is {nvmeof._version.__version__!r}, the meson project's is {version!r}")
    found = getattr(nvmeof, "__version__", None)
    if found is None:
        fail("nvmeof.__version__ is missing (python/nvmeof/__init__.py imports it from nvmeof._version)")
    if found != version:
        fail(f"nvmeof.__version__ is {found!r}, the meson project's is {version!r}")
    return nvmeof


def write_and_read(nvmeof, port):
    with nvmeof.Controller.connect("127.0.0.1", NQN, port=port, timeout=30) as controller:
        namespace = controller.namespace(1)
        size = namespace.lba_size
        pattern = os.urandom(size)
        with controller.allocate(size) as out, controller.allocate(size) as back:
            memoryview(out)[:] = pattern
            namespace.write(out, slba=SLBA, blocks=1)
            namespace.read(back, slba=SLBA, blocks=1)
            if bytes(memoryview(back)) != pattern:
                fail(f"LBA {SLBA} read back differs from what was written ({size} bytes)")
    return size


def main():
    if len(sys.argv) != 5:
        fail("usage: installed_smoke.py VENV VERSION TARGET_BIN SOFTVERBS_RUN")
    venv, version, target_bin, softverbs_run = sys.argv[1:]
    if "libibverbs" not in os.environ.get("LD_PRELOAD", ""):
        fail("not run under softverbs-run (no softverbs libraries preloaded)")
    nvmeof = check_package(venv, version)
    print(f"installed nvmeof {nvmeof.__version__} at {os.path.dirname(nvmeof.__file__)}", flush=True)
    with tempfile.TemporaryFile("w+") as log:
        proc, port = start_target(target_bin, softverbs_run, log)
        try:
            size = write_and_read(nvmeof, port)
        finally:
            stop_target(proc)
    print(f"installed nvmeof: ok (version {version}; wrote and read back LBA {SLBA}, {size} bytes, "
          "from nvmeof-target over softverbs)")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        # The traceback for whoever debugs it, then the one line.
        import traceback
        traceback.print_exc()
        fail(f"{type(e).__name__}: {e}")
