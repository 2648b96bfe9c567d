"""Starts nvmeof-target on loopback under softverbs for the Python API tests.
This process must itself run under softverbs-run (meson test does that).

NVMEOF_TEST_TRANSPORT=tcp runs the same suite over NVMe/TCP: the target
listens with --transport tcp (no softverbs under it) and every controller
connects with transport="tcp" unless a test names its transport itself.
Tests of what only NVMe/RDMA has (GPU memory) skip there, with RDMA_ONLY."""
import functools
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager

import pytest

import nvmeof.controller

TRANSPORT = os.environ.get("NVMEOF_TEST_TRANSPORT", "rdma")
RDMA_ONLY = "NVMe/RDMA only (this run is over NVMe/TCP)"

# For tests of what only NVMe/RDMA has (GPUDirect registration paths, softverbs' port mapping of
# the documented snippets, the reference package's RDMA-only examples, the
# target's reorder-io fault).
rdma_only = pytest.mark.skipif(TRANSPORT == "tcp", reason=RDMA_ONLY)

if TRANSPORT == "tcp":
    _Controller = nvmeof.controller.Controller
    _init, _connect = _Controller.__init__, _Controller.connect.__func__

    @functools.wraps(_init)
    def _init_over_tcp(self, *args, transport="tcp", **options):
        _init(self, *args, transport=transport, **options)

    @functools.wraps(_connect)
    def _connect_over_tcp(cls, *args, transport="tcp", **options):
        return _connect(cls, *args, transport=transport, **options)

    _Controller.__init__ = _init_over_tcp
    _Controller.connect = classmethod(_connect_over_tcp)

TARGET = os.environ["NVMEOF_TARGET_BIN"]
SOFTVERBS_RUN = os.environ["NVMEOF_SOFTVERBS_RUN"]
NQN = "nqn.2026-12.io.nvmeof:python"
READY = re.compile(r"listening on (\S+):(\d+)")


class Target:
    def __init__(self, proc, address, port, stats_path, log):
        self.proc, self.address, self.port, self.stats_path = proc, address, port, stats_path
        self.nqn = NQN
        self.transport = TRANSPORT
        self._log = log

    def stats(self):
        """The target's statistics (written when it stops)."""
        with open(self.stats_path) as f:
            return json.load(f)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("nvmeof-target did not stop within 15 s of SIGTERM")
        self._log.seek(0)
        return self._log.read()


@contextmanager
def start_target(*extra, namespace="ram:16M:512", port=0, env=None):
    stats = os.path.join(tempfile.gettempdir(), f"nvmeof-python-stats-{os.getpid()}-{time.monotonic_ns()}.json")
    runner = [SOFTVERBS_RUN] if TRANSPORT == "rdma" else []
    cmd = [*runner, TARGET, "--transport", TRANSPORT, "--listen", "127.0.0.1", "--port", str(port),
           "--subsystem", NQN, "--namespace", namespace, "--stats", stats, *extra]
    # The target logs every controller to stderr: a file, since a pipe nobody
    # reads until the end would stop it after a few hundred connections.
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                            env=dict(os.environ, **(env or {})))
    deadline = time.monotonic() + 30
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line or proc.poll() is not None:
            break
    match = READY.search(line)
    if not match:
        proc.kill()
        proc.communicate(timeout=10)
        log.seek(0)
        raise AssertionError(f"nvmeof-target did not start: {line!r} {log.read()}")
    target = Target(proc, match.group(1), int(match.group(2)), stats, log)
    try:
        yield target
    finally:
        target.stop()
        log.close()


@pytest.fixture(scope="module")
def target():
    with start_target() as t:
        yield t


@pytest.fixture
def fresh_target_factory():
    """start_target(*extra) for tests that need their own target options."""
    return start_target


# Why the PyTorch tests skip on a machine without python3-torch. Meson says
# whether it found torch (NVMEOF_TEST_TORCH); only when it did not is this skip
# allowed.
TORCH_MISSING = "python3-torch is not installed (tools/setup.sh installs it)"

# meson (and CI's unexpected-skip check) sees one test: a skipped pytest case
# would pass unnoticed, so any other skip fails the run.
_skipped = []


def _allowed_skip(report):
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return ((TORCH_MISSING in reason and os.environ.get("NVMEOF_TEST_TORCH") == "absent") or
            (RDMA_ONLY in reason and TRANSPORT == "tcp"))


def pytest_runtest_logreport(report):
    if report.skipped and not _allowed_skip(report):
        _skipped.append(report.nodeid)


def pytest_collectreport(report):
    if report.skipped and not _allowed_skip(report):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if _skipped and exitstatus == 0:
        print(f"\nskipped tests are failures here: {', '.join(_skipped)}")
        session.exitstatus = 1
