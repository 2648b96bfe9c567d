"""The Python API against nvmeof-target over softverbs: the documented usage
verbatim, round trips into numpy arrays and bytearrays, transfers above MDTS,
the low-level queue, every error class, and the GIL released while blocking."""
import ctypes
import gc
import json
import os
import pydoc
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy
import pytest

import nvmeof
from nvmeof import protocol

from conftest import SOFTVERBS_RUN, TRANSPORT, rdma_only, start_target

LOOPBACK = "127.0.0.1"
EXAMPLE_READ_WRITE = os.environ["NVMEOF_EXAMPLE_READ_WRITE"]  # examples/read_write.cpp, built

# The documented usage, exactly as the package's documentation writes it.
DOCUMENTED_SNIPPET = """\
import nvmeof
with nvmeof.Controller.connect(target_ip, subsystem_nqn, source=initiator_ip) as controller:
    namespace = controller.namespace(1)
    with controller.allocate(4096) as block:
        namespace.read(block, slba=0, blocks=1)
"""

LOW_LEVEL_SNIPPET = """\
command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=1, buffer=buffer, lba_size=namespace.lba_size)
request = controller.io.submit(command, data_owner=buffer)
while not request.done:
    controller.io.poll()
request.response.raise_for_status()
"""


def connect(target, **options):
    return nvmeof.Controller.connect(target.address, target.nqn, port=target.port, **options)


def pattern(size, seed):
    return numpy.random.default_rng(seed).integers(0, 256, size, dtype=numpy.uint8)


def free_tcp_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@rdma_only
def test_documented_snippet_runs_verbatim_and_matches_the_cpp_api():
    # The snippet connects to the default port 4420: softverbs maps it to a free
    # TCP port (SOFTVERBS_PORT_OFFSET) so parallel test runs cannot collide.
    offset = {"SOFTVERBS_PORT_OFFSET": str(free_tcp_port() - 4420)}
    env = dict(os.environ, **offset)
    with start_target(port=4420, env=offset, namespace="ram:16M:4096") as target:
        # The C++ API first (examples/read_write.cpp, its defaults): it writes 0xA5
        # to LBA 0 and prints what it negotiated.
        cpp = subprocess.run([SOFTVERBS_RUN, EXAMPLE_READ_WRITE, LOOPBACK, target.nqn], capture_output=True,
                             text=True, env=env, timeout=120)
        assert cpp.returncode == 0, cpp.stderr
        negotiated = re.search(r"queue (\d+), MDTS (\d+) bytes", cpp.stdout)
        geometry = re.search(r"namespace 1: (\d+) blocks of (\d+) bytes", cpp.stdout)
        assert negotiated and geometry, cpp.stdout
        prologue = f"import json\ntarget_ip, subsystem_nqn, initiator_ip = {LOOPBACK!r}, {target.nqn!r}, {LOOPBACK!r}\n"
        # The epilogue's first lines continue the snippet's innermost `with`.
        epilogue = ("        seen = bytes(memoryview(block))\n        limits = controller.limits\n"
                    "print(json.dumps({'seen': seen.hex(), 'lba_size': namespace.lba_size,\n"
                    "                  'size_lbas': namespace.size_lbas, 'queue_size': limits['queue_size'],\n"
                    "                  'mdts_bytes': limits['mdts_bytes']}))\n")
        run = subprocess.run([SOFTVERBS_RUN, sys.executable, "-c", prologue + DOCUMENTED_SNIPPET + epilogue],
                             capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
    python = json.loads(run.stdout)
    assert bytes.fromhex(python["seen"]) == b"\xa5" * 4096, "the snippet reads what the C++ API wrote"
    assert (python["queue_size"], python["mdts_bytes"]) == tuple(map(int, negotiated.groups()))
    assert (python["size_lbas"], python["lba_size"]) == tuple(map(int, geometry.groups()))
    stats = target.stats()
    assert stats["commands"]["read"] == 2  # the C++ example's and the snippet's
    assert stats["bytes"]["read"] == 2 * 4096


@rdma_only
def test_documented_snippet_reads_what_was_written(target):
    expected = pattern(4096, 1)
    with connect(target) as writer:
        with writer.register(expected.copy()) as data:
            writer.namespace(1).write(data, slba=0)
    target_ip, subsystem_nqn, initiator_ip = target.address, target.nqn, LOOPBACK
    seen = None
    with nvmeof.Controller.connect(target_ip, subsystem_nqn, source=initiator_ip, port=target.port) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(4096) as block:
            namespace.read(block, slba=0, blocks=1)
            seen = bytes(memoryview(block))
    lba = namespace.lba_size
    assert seen[:lba] == expected.tobytes()[:lba]
    assert seen[lba:] == bytes(4096 - lba)


def test_connect_defaults_and_identity(target):
    with connect(target) as a, connect(target) as b:
        assert a.is_open
        limits = a.limits
        assert limits["subsystem_nqn"] == target.nqn
        assert limits["host_nqn"] == "nqn.2014-08.org.nvmexpress:uuid:" + limits["host_id"]
        assert b.limits["host_id"] != limits["host_id"], "the default host ID is random per connect"
        assert 2 <= limits["queue_size"] <= 128
    assert not a.is_open
    host_id = "0f6b8e0a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    with connect(target, host_id=host_id, queue_depth=16, timeout=10.0) as c:
        assert c.limits["host_id"] == host_id
        assert c.limits["host_nqn"] == "nqn.2014-08.org.nvmexpress:uuid:" + host_id
        assert c.limits["queue_size"] == 16
    with connect(target, host_nqn="nqn.2026-12.io.nvmeof:python-host") as c:
        assert c.limits["host_nqn"] == "nqn.2026-12.io.nvmeof:python-host"


def test_connect_options_are_keyword_only_and_documented():
    with pytest.raises(TypeError):
        nvmeof.Controller.connect(LOOPBACK, "nqn.x", 4420)
    shown = pydoc.render_doc(nvmeof.Controller.connect, renderer=pydoc.plaintext)  # what help() prints
    for option, default in (("port", "4420"), ("host_id", "None"), ("host_nqn", "None"), ("queue_depth", "128"),
                            ("keep_alive_ms", "0"), ("timeout", "30.0"), ("source", "None"),
                            ("ctrl_loss_tmo_ms", "0"), ("reconnect_delay_ms", "10000"),
                            ("fast_io_fail_tmo_ms", "0"), ("transport", "'rdma'"),
                            ("hdr_digest", "False"), ("data_digest", "False")):
        assert f"{option}: " in shown and f" = {default}" in shown, f"help() does not document {option}"
        assert shown.count(f"{option}:") >= 2, f"help() names {option} only in the signature"
    with pytest.raises(ValueError):
        nvmeof.Controller.connect(LOOPBACK, "nqn.x", host_id="not-a-uuid")
    with pytest.raises(ValueError):
        nvmeof.Controller.connect(LOOPBACK, "nqn.x", timeout=0)


def test_transport_is_checked_before_anything_connects():
    """transport= takes nvme-cli's names, "rdma" (the default) or "tcp", in any
    case; anything else is a ValueError naming the argument, and a non-str a
    TypeError, both before any connection is tried."""
    for bad in ("fc", "loop", "", "rdma ", "roce"):
        with pytest.raises(ValueError, match=r"^transport must be 'rdma' or 'tcp', not " + re.escape(repr(bad))):
            nvmeof.Controller.connect(LOOPBACK, "nqn.x", transport=bad)
    for bad in (None, 1, b"tcp"):
        with pytest.raises(TypeError, match=r"^transport must be a str"):
            nvmeof.Controller(LOOPBACK, "nqn.x", transport=bad)
    # The names it takes get as far as connecting: nothing listens on this port.
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        closed_port = s.getsockname()[1]
    for good in ("tcp", "TCP", "Tcp"):
        with pytest.raises(nvmeof.ConnectError):
            nvmeof.Controller.connect(LOOPBACK, "nqn.x", port=closed_port, transport=good, timeout=2.0,
                                      hdr_digest=True, data_digest=True)
    with pytest.raises(TypeError):
        nvmeof.Controller.connect(LOOPBACK, "nqn.x", "tcp")  # keyword only, as every option


def test_round_trip_numpy_arrays(target):
    with connect(target) as controller:
        namespace = controller.namespace(1)
        source = pattern(64 * 1024, 2)
        sink = numpy.zeros(64 * 1024, dtype=numpy.uint8)
        with controller.register(source) as out, controller.register(sink) as into:
            namespace.write(out, slba=100)
            namespace.read(into, slba=100)
        assert numpy.array_equal(sink, source)
        # A 2-D float array, registered in place and read into at a byte offset.
        matrix = numpy.zeros((8, 128), dtype=numpy.float32)
        with controller.register(matrix) as into:
            namespace.read(into, slba=100, blocks=4, buffer_offset=512)
        assert matrix.tobytes()[512:512 + 2048] == source.tobytes()[:2048]
        assert not matrix.tobytes()[:512].strip(b"\0")


def test_round_trip_bytearray_and_allocated_buffer(target):
    with connect(target) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(8192) as block:
            view = numpy.frombuffer(block, dtype=numpy.uint8)  # zero copy
            view[:] = pattern(8192, 3)
            assert memoryview(block)[:16] == view[:16].tobytes()
            namespace.write(block, slba=300)
            expected = view.tobytes()
            del view
        data = bytearray(8192)
        with controller.register(data) as into:
            assert into.obj is data
            namespace.read(into, slba=300, blocks=16)
        assert bytes(data) == expected
        # Views of allocated memory stay valid after the controller closed.
        block = controller.allocate(512)
        view = numpy.frombuffer(block, dtype=numpy.uint8)
        namespace.read(block, slba=300)
    assert view.tobytes() == expected[:512]
    with pytest.raises(nvmeof.TransportError):
        namespace.read(block, slba=300)  # the controller is closed


def test_register_keeps_the_object_and_refuses_bad_buffers(target):
    with connect(target) as controller:
        buffer = controller.register(bytearray(b"x" * 4096))
        assert len(buffer) == 4096 and buffer.obj == bytearray(b"x" * 4096)
        with pytest.raises(BufferError):
            buffer.obj.extend(b"more")  # registered memory cannot move
        data = buffer.obj
        buffer.close()
        assert buffer.closed
        data.extend(b"more")  # released with the registration
        with pytest.raises(ValueError):
            controller.register(b"read-only bytes")
        with pytest.raises(ValueError):
            controller.register(numpy.zeros(4096, dtype=numpy.uint8)[::2])  # not contiguous
        with pytest.raises(ValueError):
            controller.allocate(0)


def test_transfer_above_mdts_is_split():
    with start_target("--mdts", "1") as target:
        with connect(target) as controller:
            assert controller.limits["mdts_bytes"] == 8192
            namespace = controller.namespace(1)
            source, sink = pattern(256 * 1024, 4), numpy.zeros(256 * 1024, dtype=numpy.uint8)
            with controller.register(source) as out, controller.register(sink) as into:
                namespace.write(out, slba=0)
                namespace.read(into, slba=0)
            assert numpy.array_equal(source, sink)
    stats = target.stats()
    assert stats["commands"]["write"] == 32 and stats["commands"]["read"] == 32


def test_low_level_submit_and_poll(target):
    expected = pattern(512, 5)
    with connect(target) as controller:
        namespace = controller.namespace(1)
        with controller.register(expected.copy()) as data:
            namespace.write(data, slba=0, blocks=1)
        with controller.allocate(512) as buffer:
            exec(LOW_LEVEL_SNIPPET, {"protocol": protocol, "controller": controller,
                                     "namespace": namespace, "buffer": buffer})
            assert bytes(memoryview(buffer)) == expected.tobytes()
            # A write through the low level, read back through the blocking path.
            numpy.frombuffer(buffer, dtype=numpy.uint8)[:] = pattern(512, 6)
            command = protocol.rw_command(protocol.OPC_WRITE, namespace.nsid, slba=7, blocks=1,
                                          buffer=buffer, lba_size=namespace.lba_size)
            # A 64-byte capsule, as the reference package's builders return.
            assert isinstance(command, bytes) and len(command) == 64
            decoded = protocol.Command(command)
            assert decoded.opcode == protocol.OPC_WRITE and decoded.nsid == namespace.nsid
            request = controller.io.submit(command, data_owner=buffer)
            assert request.data_owner is buffer
            while not request.done:
                controller.io.poll()
            assert request.response.ok and request.response.status == 0
            request.response.raise_for_status()
            with controller.allocate(512) as check:
                namespace.read(check, slba=7)
                assert bytes(memoryview(check)) == bytes(memoryview(buffer))
        # The request alone keeps its data owner (and so the memory) alive.
        owner_only_here = controller.allocate(512)
        command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=7, blocks=1,
                                      buffer=owner_only_here, lba_size=namespace.lba_size)
        request = controller.io.submit(command, data_owner=owner_only_here)
        del owner_only_here
        while not request.done:
            controller.io.poll()
        request.response.raise_for_status()
        assert bytes(memoryview(request.data_owner)) == pattern(512, 6).tobytes()


def test_a_buffer_stays_registered_while_a_low_level_request_uses_it():
    # Every answer 300 ms late: the requests are surely in flight while close() is tried.
    with start_target("--fault", "delay-ms=300") as target, connect(target) as controller:
        namespace = controller.namespace(1)
        block = controller.allocate(512)
        command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=1,
                                      buffer=block, lba_size=namespace.lba_size)
        request = controller.io.submit(command, data_owner=block)
        with pytest.raises(ValueError, match="data_owner is still in flight"):
            block.close()
        assert not block.closed
        # Dropping the Request does not let the target write into deregistered memory.
        del request
        gc.collect()
        with pytest.raises(ValueError, match="in flight"):
            block.close()
        deadline = time.monotonic() + 10
        while controller.io.in_flight and time.monotonic() < deadline:
            controller.io.poll()
        assert controller.io.in_flight == 0
        block.close()  # seen done by poll(): free to go
        assert block.closed
        # The queue is whole (a deregistration in flight would have failed it).
        with controller.allocate(512) as check:
            namespace.read(check, slba=0)
        # Closing the controller ends every hold: its queues can reach nothing any more.
        held = controller.allocate(512)
        command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=1,
                                      buffer=held, lba_size=namespace.lba_size)
        request = controller.io.submit(command, data_owner=held)
        controller.close()
        held.close()
        assert held.closed


def test_wrong_nqn_is_a_connect_error(target):
    with pytest.raises(nvmeof.ConnectError) as caught:
        nvmeof.Controller.connect(target.address, "nqn.2026-12.io.nvmeof:nobody", port=target.port,
                                  timeout=10.0)
    error = caught.value
    assert isinstance(error, nvmeof.Error)
    assert error.cause == "connect_status", str(error)
    assert error.step and error.status is not None
    assert "nqn.2026-12.io.nvmeof:nobody" in str(error) or error.step in str(error)


def test_nothing_listening_is_a_connect_error():
    with pytest.raises(nvmeof.ConnectError) as caught:
        nvmeof.Controller.connect(LOOPBACK, "nqn.x", port=free_tcp_port(), timeout=5.0)
    assert caught.value.cause in ("no_listener", "address_unreachable", "rejected")


def test_bad_ranges_are_value_errors(target):
    with connect(target) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(4096) as block:
            with pytest.raises(ValueError):
                namespace.read(block, slba=namespace.size_lbas, blocks=1)  # LBA out of range
            with pytest.raises(ValueError):
                namespace.read(block, slba=0, blocks=9)  # more than the buffer holds
            with pytest.raises(ValueError):
                protocol.rw_command(protocol.OPC_READ, 1, slba=0, blocks=0, buffer=block, lba_size=512)
            with pytest.raises(ValueError):
                protocol.rw_command(protocol.OPC_READ, 1, slba=0, blocks=9, buffer=block, lba_size=512)
            with pytest.raises(ValueError):
                namespace.read(bytearray(4096), slba=0)  # not registered
        with pytest.raises(ValueError):
            memoryview(block)  # closed
        with pytest.raises(ValueError):
            namespace.read(block, slba=0)


def test_nvme_error_status():
    with start_target("--fault", "fail-lba=8-8:2/0x81") as target:
        with connect(target) as controller:
            namespace = controller.namespace(1)
            with controller.allocate(4096) as block:
                namespace.read(block, slba=0, blocks=8)  # below the failing LBA
                with pytest.raises(nvmeof.NvmeError) as caught:
                    namespace.read(block, slba=8, blocks=1)
                error = caught.value
                assert isinstance(error, nvmeof.Error)
                assert (error.sct, error.sc) == (2, 0x81)
                assert error.status == (2 << 9) | (0x81 << 1) | (0x8000 if error.dnr else 0)
                assert error.name == "Unrecovered Read Error"
                assert "Unrecovered Read Error" in str(error)
                command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=8, blocks=1,
                                              buffer=block, lba_size=namespace.lba_size)
                request = controller.io.submit(command, data_owner=block)
                while not request.done:
                    controller.io.poll()
                response = request.response
                assert not response.ok and (response.sct, response.sc) == (2, 0x81)
                with pytest.raises(nvmeof.NvmeError):
                    response.raise_for_status()


def test_transport_errors():
    with start_target() as target:
        controller = connect(target, timeout=5.0)
        namespace = controller.namespace(1)
        block = controller.allocate(512)
        target.proc.kill()
        target.proc.wait()
        started = time.monotonic()
        with pytest.raises(nvmeof.TransportError) as caught:
            namespace.read(block, slba=0)
        assert time.monotonic() - started < 5.0 + 1.0
        assert isinstance(caught.value, nvmeof.Error)
        assert caught.value.code in ("queue_error", "disconnected", "timeout"), str(caught.value)
        controller.close()
        with pytest.raises(nvmeof.TransportError) as caught:
            namespace.read(block, slba=0)
        assert caught.value.code == "closed"


@pytest.mark.parametrize("failure", ["target killed", "I/O never answered"])
def test_a_controller_whose_queue_failed_is_no_longer_open(failure):
    """Without ctrl_loss_tmo_ms a queue failure ends the association: is_open
    turns False, and later calls fail saying so, not as if close() was called."""
    extra = ("--fault", "ignore-io=2") if failure == "I/O never answered" else ()
    with start_target(*extra) as target:
        controller = connect(target, timeout=2.0)
        namespace = controller.namespace(1)
        block = controller.allocate(512)
        namespace.read(block, slba=0)
        assert controller.is_open
        if failure == "target killed":
            target.proc.kill()
            target.proc.wait()
        with pytest.raises(nvmeof.TransportError) as caught:
            namespace.read(block, slba=0)
        assert caught.value.code in ("queue_error", "disconnected", "timeout"), str(caught.value)
        assert not controller.is_open
        for call in (lambda: namespace.read(block, slba=0), lambda: controller.namespace(1),
                     lambda: controller.allocate(512)):
            with pytest.raises(nvmeof.TransportError) as caught:
                call()
            assert caught.value.code == "disconnected", str(caught.value)
            assert "failed" in str(caught.value) and "not reconnected" in str(caught.value)
        block.close()  # nothing of it is in flight on a failed queue
        controller.close()
        assert not controller.is_open
        with pytest.raises(nvmeof.TransportError) as caught:
            controller.namespace(1)
        assert caught.value.code == "closed"


# Connects to a target that never answers; the parent sends SIGINT once it is waiting.
INTERRUPTED_CONNECT = """\
import os, sys, time
import nvmeof
address, nqn, port, unused_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
transport = os.environ.get("NVMEOF_TEST_TRANSPORT", "rdma")
try:  # the RDMA stack's lasting descriptors are opened by a first, failing, connect
    nvmeof.Controller.connect(address, nqn, port=unused_port, timeout=5.0, transport=transport)
except nvmeof.ConnectError:
    pass
before = sorted(os.listdir("/proc/self/fd"))
print("connecting", flush=True)
try:
    nvmeof.Controller.connect(address, nqn, port=port, timeout=8.0, transport=transport)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    # The software device closes a connection's socket from its own thread,
    # a moment after the connect let go of it: wait for that, boundedly.
    deadline = time.monotonic() + 2.0
    while before != sorted(os.listdir("/proc/self/fd")) and time.monotonic() < deadline:
        time.sleep(0.02)
    print("descriptors", before == sorted(os.listdir("/proc/self/fd")), flush=True)
    raise
print("connect returned", flush=True)
"""


@pytest.mark.parametrize("silence", ["target stopped", "commands never answered"])
def test_ctrl_c_interrupts_a_connect_promptly(silence):
    extra = ("--fault", "stop-answering-after=0") if silence == "commands never answered" else ()
    with start_target(*extra) as target:
        if silence == "target stopped":
            target.proc.send_signal(signal.SIGSTOP)
        try:
            child = subprocess.Popen(
                [SOFTVERBS_RUN, sys.executable, "-c", INTERRUPTED_CONNECT, target.address,
                 target.nqn, str(target.port), str(free_tcp_port())],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                assert child.stdout.readline() == "connecting\n"
                time.sleep(1.0)
                assert child.poll() is None, "the connect to a silent target ended by itself"
                child.send_signal(signal.SIGINT)
                interrupted = time.monotonic()
                first = child.stdout.readline()
                took = time.monotonic() - interrupted
                # Read on through the same buffered pipe (communicate() would
                # miss what readline() already buffered); the child ends within
                # its 2 s descriptor wait, or its connect's 8 s timeout.
                out = child.stdout.read()
                err = child.stderr.read()
                child.wait(timeout=15)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.communicate()
        finally:
            if silence == "target stopped":
                target.proc.send_signal(signal.SIGCONT)
    assert first == "interrupted\n", (first, err)
    assert "KeyboardInterrupt" in err, err
    assert child.returncode == -signal.SIGINT, (child.returncode, err)
    # Promptly: about 50 ms to notice, then the exit; a connect left to its
    # timeout, or to softverbs giving the stopped target up (3 s), takes 2 s or more.
    assert took < 1.0, f"SIGINT honoured {took:.2f} s after it was sent"
    assert out == "descriptors True\n", "the interrupted connect left descriptors open: " + out


def test_low_level_submit_refuses_a_data_owner_that_does_not_hold_the_data():
    # Every answer late: a request that did go out would still be in flight below.
    with start_target("--fault", "delay-ms=300") as target, connect(target) as controller:
        namespace = controller.namespace(1)
        buffer = controller.allocate(4096)
        other = controller.allocate(4096)
        command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=2,
                                      buffer=buffer, lba_size=namespace.lba_size, offset=1024)
        with pytest.raises(ValueError, match=r"data_owner.*1024 bytes"):
            controller.io.submit(command)
        with pytest.raises(ValueError, match="rkey"):
            controller.io.submit(command, data_owner=other)
        assert controller.io.in_flight == 0, "a refused command was posted"
        # Nothing holds the buffer: closing it harms no request and no queue.
        buffer.close()
        with controller.allocate(512) as check:
            namespace.read(check, slba=0)
        assert controller.is_open
        with connect(target) as second:
            foreign = second.allocate(4096)
            command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=1,
                                          buffer=foreign, lba_size=namespace.lba_size)
            with pytest.raises(ValueError, match="another controller"):
                controller.io.submit(command, data_owner=foreign)
            foreign.close()
        assert controller.io.in_flight == 0
        other.close()


def test_reconnect_rides_out_an_outage_with_data_intact():
    """ctrl_loss_tmo_ms: the target drops every connection after 40 commands and
    stops listening for 700 ms; blocking calls wait the outage out, and every
    block reads back what was written."""
    with start_target("--fault", "outage-after=40:700") as target:
        with connect(target, timeout=5.0, ctrl_loss_tmo_ms=10000, reconnect_delay_ms=200) as c:
            namespace = c.namespace(1)
            assert c.reconnect_stats["reconnects"] == 0 and not c.reconnect_stats["lost"]
            block = c.allocate(512)
            view = numpy.frombuffer(block, dtype=numpy.uint8)
            for lba in range(60):
                view[:] = lba
                namespace.write(block, slba=lba)
            for lba in range(60):
                namespace.read(block, slba=lba)
                assert (view == lba).all(), f"block {lba} did not survive the reconnect"
            stats = c.reconnect_stats
            assert stats["reconnects"] == 1 and len(stats["outages_ms"]) == 1, stats
            assert stats["outages_ms"][0] > 0 and not stats["lost"] and not stats["reconnecting"], stats
            assert stats["path"] == f"{target.address}:{target.port}"


def test_reconnect_gives_up_after_ctrl_loss_tmo():
    with start_target("--fault", "outage-after=20:60000") as target:
        with connect(target, timeout=5.0, ctrl_loss_tmo_ms=1500, reconnect_delay_ms=200) as c:
            namespace = c.namespace(1)
            block = c.allocate(512)
            started = time.monotonic()
            with pytest.raises(nvmeof.TransportError) as caught:
                for _ in range(100):
                    namespace.write(block, slba=0)
            assert caught.value.code == "controller_lost", str(caught.value)
            assert time.monotonic() - started < 1.5 + 1.0 + 0.5
            stats = c.reconnect_stats
            assert stats["lost"] and "ctrl_loss_tmo" in stats["lost_reason"], stats
    with pytest.raises(ValueError):
        nvmeof.Controller.connect(LOOPBACK, "nqn.x", ctrl_loss_tmo_ms=1000, fast_io_fail_tmo_ms=2000)


def test_blocking_read_releases_the_gil():
    with start_target("--fault", "delay-ms=400") as target:
        with connect(target) as controller:
            namespace = controller.namespace(1)
            with controller.allocate(512) as block:
                ticks, stop = [], threading.Event()

                def count():
                    while not stop.is_set():
                        ticks.append(time.monotonic())
                        time.sleep(0.001)

                gc.collect()  # earlier tests' garbage is not collected in the timed window
                counter = threading.Thread(target=count)
                counter.start()
                try:
                    time.sleep(0.05)
                    started = time.monotonic()
                    for _ in range(3):  # long enough that a loaded machine still schedules the thread
                        namespace.read(block, slba=0)
                    finished = time.monotonic()
                finally:
                    stop.set()
                    counter.join()
    assert finished - started >= 3 * 0.4
    during = [t for t in ticks if started + 0.1 < t < finished - 0.1]
    assert len(during) >= 5, (f"the other thread ticked {len(during)} times ({len(ticks)} in all) "
                              f"during {finished - started:.2f} s of blocking reads")


def test_threads_sharing_a_controller_have_reads_in_flight_together():
    # Each completion is delayed: with one lock held across a blocking read, the
    # second thread could not even post its read while the first waits.
    with start_target("--fault", "delay-ms=300") as target:
        with connect(target) as controller:
            namespace = controller.namespace(1)
            expected = [pattern(4096, 30), pattern(4096, 31)]
            for index, data in enumerate(expected):
                with controller.register(data.copy()) as out:
                    namespace.write(out, slba=index * 8)
            seen, errors, most_in_flight, stop = [[], []], [], [0], threading.Event()

            def read(index):
                try:
                    with controller.allocate(4096) as block:
                        for _ in range(3):
                            namespace.read(block, slba=index * 8)
                            seen[index].append(bytes(memoryview(block)))
                except Exception as error:  # reported below, with the thread's data
                    errors.append(error)

            def watch():
                while not stop.is_set():
                    most_in_flight[0] = max(most_in_flight[0], controller.io.in_flight)
                    time.sleep(0.005)

            watcher = threading.Thread(target=watch)
            readers = [threading.Thread(target=read, args=(i,)) for i in range(2)]
            watcher.start()
            for reader in readers:
                reader.start()
            for reader in readers:
                reader.join(timeout=60)
            stop.set()
            watcher.join()
            assert not errors, errors
            assert [len(s) for s in seen] == [3, 3], "both threads finished their reads"
            for index in range(2):
                assert all(data == expected[index].tobytes() for data in seen[index])
            assert most_in_flight[0] == 2, "the two threads' reads were in flight at once"

            # A buffer a transfer of another thread is using cannot be closed under it.
            block = controller.allocate(4096)
            reader = threading.Thread(target=namespace.read, args=(block,), kwargs={"slba": 0})
            reader.start()
            deadline = time.monotonic() + 10
            while controller.io.in_flight == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            with pytest.raises(ValueError, match="in use"):
                block.close()
            reader.join()
            block.close()
            assert block.closed


def test_help_documents_the_api():
    assert "GIL" in nvmeof.__doc__
    assert "MDTS" in nvmeof.Namespace.read.__doc__
    assert "data_owner" in nvmeof.IoQueue.submit.__doc__
    assert "torch.frombuffer" in nvmeof.Buffer.__doc__
    assert "torch CPU tensor" in nvmeof.Controller.register.__doc__
    assert "DLPack" in nvmeof.Controller.register_gpu.__doc__ and "peermem" in nvmeof.Controller.register_gpu.__doc__


class FakeCudaArray:
    """The least a CUDA array library offers: __cuda_array_interface__ over
    device memory allocated by the (fake) driver."""

    def __init__(self, cuda, size):
        self.cuda, self.size = cuda, size
        pointer = ctypes.c_uint64()
        assert cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size)) == 0
        self.pointer = pointer.value
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (self.pointer, False),
                                         "strides": None, "version": 3}

    def upload(self, data):
        assert self.cuda.cuMemcpyHtoD_v2(ctypes.c_uint64(self.pointer), ctypes.c_void_p(data.ctypes.data), ctypes.c_size_t(data.nbytes)) == 0

    def download(self):
        out = numpy.zeros(self.size, dtype=numpy.uint8)
        assert self.cuda.cuMemcpyDtoH_v2(ctypes.c_void_p(out.ctypes.data), ctypes.c_uint64(self.pointer), ctypes.c_size_t(self.size)) == 0
        return out


def fake_cuda_with_current_context(path):
    cuda = ctypes.CDLL(path)
    device, context = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
    assert cuda.cuCtxSetCurrent(context) == 0
    return cuda


def test_register_gpu(target):
    fake_cuda = os.environ["NVMEOF_TEST_FAKE_CUDA"]
    with connect(target) as controller:
        namespace = controller.namespace(1)
        if not fake_cuda:
            # Built without CUDA support: register_gpu says so instead of failing obscurely.
            array = type("Array", (), {"__cuda_array_interface__": {
                "shape": (4096,), "typestr": "|u1", "data": (1 << 40, False), "version": 3}})()
            with pytest.raises(nvmeof.Error, match="CUDA"):
                controller.register_gpu(array)
            return
        cuda = fake_cuda_with_current_context(fake_cuda)
        source, sink = FakeCudaArray(cuda, 16384), FakeCudaArray(cuda, 16384)
        expected = pattern(16384, 7)
        source.upload(expected)
        calls = getattr(cuda, "fake_cuda_log", None)  # the fake driver's call log (not in a real one)
        if calls is not None:
            calls.restype = ctypes.c_char_p
            cuda.fake_cuda_clear_log()
        with controller.register_gpu(source) as out, controller.register_gpu(sink) as into:
            # Over NVMe/TCP the bytes go through a host copy of the region.
            paths = ("staging",) if TRANSPORT == "tcp" else ("dma-buf", "peermem")
            assert out.kind == "gpu" and out.registration_path in paths, out.registration_path
            assert out.obj is source and len(out) == 16384
            with pytest.raises(BufferError):
                memoryview(out)  # device memory has no host view
            namespace.write(out, slba=500)
            if calls is not None:
                # What the docstring promises: a write waits for the kernels of the owning context.
                assert "cuCtxSynchronize" in calls().decode(), calls().decode()
            namespace.read(into, slba=500)
        assert numpy.array_equal(sink.download(), expected)
        with controller.allocate(16384) as host:
            namespace.read(host, slba=500)
            assert bytes(memoryview(host)) == expected.tobytes()
        with pytest.raises(ValueError):
            controller.register_gpu(bytearray(16))  # no __cuda_array_interface__
        strided = FakeCudaArray(cuda, 4096)
        strided.__cuda_array_interface__ = dict(strided.__cuda_array_interface__, shape=(1024,), strides=(4,))
        with pytest.raises(ValueError):
            controller.register_gpu(strided)


# DLPack's ABI (dlpack.h v0.x), for a minimal producer like a torch CUDA tensor's.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DLDeleter)]
KDL_CPU, KDL_CUDA, KDL_CUDA_MANAGED = 1, 2, 13
_DLTENSOR_NAME = ctypes.create_string_buffer(b"dltensor")  # a capsule keeps the pointer, not a copy
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDlpackArray(FakeCudaArray):
    """Device memory of the fake driver offered only by DLPack (`__dlpack__`,
    `__dlpack_device__`), as uint8 of `shape`/`strides`; counts its deleter's calls."""

    def __init__(self, cuda, size, device_type=KDL_CUDA, shape=None, strides=None):
        if cuda is None:  # no driver: an address nothing backs
            self.cuda, self.size, self.pointer = None, size, 1 << 40
        else:
            super().__init__(cuda, size)
            del self.__cuda_array_interface__
        self.device_type, self.deleted, self._exports = device_type, 0, []
        self.shape = (ctypes.c_int64 * 1)(size) if shape is None else (ctypes.c_int64 * len(shape))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._deleter = DLDeleter(self._delete)

    def _delete(self, managed):
        self.deleted += 1

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, stream=None):
        managed = DLManagedTensor()
        managed.dl_tensor = DLTensor(self.pointer, DLDevice(self.device_type, 0), len(self.shape),
                                     DLDataType(1, 8, 1), self.shape, self.strides, 0)
        managed.deleter = self._deleter
        self._exports.append(managed)
        return _capsule_new(ctypes.addressof(managed), ctypes.cast(_DLTENSOR_NAME, ctypes.c_char_p), None)


def test_register_gpu_by_dlpack(target):
    fake_cuda = os.environ["NVMEOF_TEST_FAKE_CUDA"]
    with connect(target) as controller:
        namespace = controller.namespace(1)
        if not fake_cuda:
            # Built without CUDA support: register_gpu says so for a DLPack tensor too.
            array = FakeDlpackArray(None, 4096)
            with pytest.raises(nvmeof.Error, match="CUDA"):
                controller.register_gpu(array)
            assert array.deleted == 1, "a refused registration hands the tensor back"
            return
        cuda = fake_cuda_with_current_context(fake_cuda)
        source, sink = FakeDlpackArray(cuda, 16384), FakeDlpackArray(cuda, 16384)
        assert not hasattr(source, "__cuda_array_interface__")
        expected = pattern(16384, 8)
        source.upload(expected)
        with controller.register_gpu(source) as out, controller.register_gpu(sink) as into:
            paths = ("staging",) if TRANSPORT == "tcp" else ("dma-buf", "peermem")
            assert out.kind == "gpu" and out.registration_path in paths, out.registration_path
            assert out.obj is source and len(out) == 16384
            assert source.deleted == 0, "the tensor is in use while registered"
            namespace.write(out, slba=700)
            namespace.read(into, slba=700)
        assert (source.deleted, sink.deleted) == (1, 1), "closing hands the tensor back once"
        assert numpy.array_equal(sink.download(), expected)
        with controller.allocate(16384) as host:
            namespace.read(host, slba=700)
            assert bytes(memoryview(host)) == expected.tobytes()
        # A 2-D tensor with its row-major strides spelled out is C-contiguous.
        matrix = FakeDlpackArray(cuda, 8192, shape=(2, 4096), strides=(4096, 1))
        with controller.register_gpu(matrix) as into:
            namespace.read(into, slba=700)
        assert numpy.array_equal(matrix.download(), expected[:8192])
        for device_type in (KDL_CPU, KDL_CUDA_MANAGED):
            with pytest.raises(ValueError, match="not CUDA"):
                controller.register_gpu(FakeDlpackArray(cuda, 4096, device_type=device_type))
        with pytest.raises(ValueError, match="C-contiguous"):
            controller.register_gpu(FakeDlpackArray(cuda, 4096, shape=(1024,), strides=(4,)))
        with pytest.raises(ValueError, match="C-contiguous"):
            controller.register_gpu(FakeDlpackArray(cuda, 8192, shape=(2, 4096), strides=(1, 2)))
        with pytest.raises(ValueError, match="neither"):
            controller.register_gpu(bytearray(16))
