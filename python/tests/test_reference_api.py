"""The reference `nvmeof` package's documented API (rdma4py: its README, docs
index and examples) on ours, against nvmeof-target over softverbs; and what
ours adds to it: background keep-alive, several I/O queues, asynchronous
transfers, diagnostics through `logging`."""
import asyncio
import concurrent.futures
import json
import logging
import os
import re
import signal
import socket
import subprocess
import textwrap
import time

import numpy
import pytest

import nvmeof
from nvmeof import protocol

from conftest import SOFTVERBS_RUN, rdma_only, start_target

LOOPBACK = "127.0.0.1"

# The reference's examples verbatim; each runs with the documentation's
# addresses and NQN replaced by the test target's (DOC_TARGET, DOC_NQN, DOC_SOURCE).
DOC_TARGET, DOC_NQN, DOC_SOURCE = "192.0.2.20", "nqn.2026-07.io.example:storage", "192.0.2.21"

README_HOST_MEMORY = '''\
import nvmeof

with nvmeof.Controller.connect(
    "192.0.2.20",
    "nqn.2026-07.io.example:storage",
    source="192.0.2.21",
) as controller:
    namespace = controller.namespace(1)
    with controller.allocate(128 * 4096) as buffer:
        namespace.read(buffer, slba=0, blocks=128)
        payload = buffer.read()
'''

INDEX_SNIPPET = '''\
import nvmeof

with nvmeof.Controller.connect(
    target_ip, subsystem_nqn, source=initiator_ip
) as controller:
    namespace = controller.namespace(1)
    with controller.allocate(4096) as block:
        namespace.read(block, slba=0, blocks=1)
'''

INDEX_ASYNC_COMMANDS = '''\
from nvmeof import protocol

command = protocol.rw_command(
    protocol.OPC_READ,
    namespace.nsid,
    slba=0,
    blocks=1,
    buffer=buffer,
    lba_size=namespace.lba_size,
)
request = controller.io.submit(command, data_owner=buffer)
while not request.done:
    controller.io.poll()
request.response.raise_for_status()
'''

EXAMPLES_ASYNC_SUBMISSION = '''\
from nvmeof import protocol

command = protocol.rw_command(
    protocol.OPC_READ,
    namespace.nsid,
    slba=0,
    blocks=1,
    buffer=mr,
    lba_size=namespace.lba_size,
)
request = controller.io.submit(command, data_owner=mr)

while not request.done:
    controller.io.poll()

request.response.raise_for_status()
'''


def free_tcp_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def run_python(code, env):
    result = subprocess.run([SOFTVERBS_RUN, "/usr/bin/python3", "-c", code], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@rdma_only
def test_the_reference_documentation_examples_run_unchanged():
    # They connect to port 4420: softverbs maps it to a free TCP port.
    offset = {"SOFTVERBS_PORT_OFFSET": str(free_tcp_port() - 4420)}
    env = dict(os.environ, **offset)
    with start_target(port=4420, env=offset, namespace="ram:16M:4096") as target:
        stamp = numpy.random.default_rng(31).integers(0, 256, 128 * 4096, dtype=numpy.uint8)
        setup = (f"import nvmeof, numpy\nc = nvmeof.Controller({LOOPBACK!r}, {target.nqn!r})\n"
                 "ns = c.namespace(1)\n"
                 "b = c.register(numpy.random.default_rng(31).integers(0, 256, 128 * 4096, dtype=numpy.uint8))\n"
                 "ns.write(b, slba=0)\nb.close(); c.close()\nprint('{}')\n")
        run_python(setup, env)
        readme = (README_HOST_MEMORY.replace(DOC_TARGET, LOOPBACK).replace(DOC_NQN, target.nqn)
                  .replace(DOC_SOURCE, LOOPBACK))
        seen = run_python(readme + "import json\nprint(json.dumps({'payload': payload.hex()}))\n", env)
        assert bytes.fromhex(seen["payload"]) == stamp.tobytes()

        variables = f"target_ip, subsystem_nqn, initiator_ip = {LOOPBACK!r}, {target.nqn!r}, {LOOPBACK!r}\n"
        seen = run_python(variables + INDEX_SNIPPET +
                          "        import json; print(json.dumps({'block': bytes(memoryview(block)).hex()}))\n", env)
        assert bytes.fromhex(seen["block"]) == stamp.tobytes()[:4096]

        for snippet, name in ((INDEX_ASYNC_COMMANDS, "buffer"), (EXAMPLES_ASYNC_SUBMISSION, "mr")):
            program = (variables + "import json, nvmeof\n"
                       "with nvmeof.Controller.connect(target_ip, subsystem_nqn, source=initiator_ip) as controller:\n"
                       "    namespace = controller.namespace(1)\n"
                       f"    with controller.allocate(namespace.lba_size) as {name}:\n"
                       + textwrap.indent(snippet, " " * 8) +
                       f"        print(json.dumps({{'read': {name}.read().hex(), 'ok': request.response.succeeded}}))\n")
            seen = run_python(program, env)
            assert seen["ok"] and bytes.fromhex(seen["read"]) == stamp.tobytes()[:4096]


# Every public name of the reference package, by module.
REFERENCE_NAMES = {
    nvmeof: ["__version__", "Completion", "Controller", "ControllerInfo", "HostBuffer", "Namespace",
             "NamespaceInfo", "NVMeStatusError", "NVME_RDMA_PORT", "QueueFullError", "RDMAQueue", "Request"],
    nvmeof.rdma: ["HostBuffer", "QueueFullError", "RDMAQueue", "Request"],
    protocol: ["NVME_RDMA_PORT", "ADMIN_QUEUE_DEPTH", "MAX_QUEUE_DEPTH", "MAX_KEYED_SGL_LENGTH", "OPC_FLUSH",
               "OPC_WRITE", "OPC_READ", "OPC_IDENTIFY", "OPC_SET_FEATURES", "OPC_FABRICS", "FCTYPE_PROPERTY_SET",
               "FCTYPE_CONNECT", "FCTYPE_PROPERTY_GET", "REG_CAP", "REG_VS", "REG_CC", "REG_CSTS", "CC_ENABLE",
               "CC_CSS_CSI", "CC_MPS_SHIFT", "CC_IOSQES", "CC_IOCQES", "CSTS_READY", "CSTS_FATAL",
               "FEAT_NUMBER_OF_QUEUES", "PSDT_SGL", "KEYED_DATA_BLOCK", "NVMeStatusError", "Completion",
               "ControllerInfo", "NamespaceInfo", "set_keyed_sgl", "rdma_cm_request", "parse_rdma_cm_response",
               "connect_data", "fabrics_connect", "property_get", "property_set", "identify", "set_features",
               "rw_command"],
}


def test_every_public_name_of_the_reference_exists():
    missing = [f"{module.__name__}.{name}" for module, names in REFERENCE_NAMES.items()
               for name in names if not hasattr(module, name)]
    assert not missing, missing
    assert re.fullmatch(r"\d+\.\d+\.\d+", nvmeof.__version__)
    assert issubclass(nvmeof.NVMeStatusError, OSError) and issubclass(nvmeof.QueueFullError, RuntimeError)


def test_the_reference_controller_namespace_and_buffer_api(target):
    with nvmeof.Controller(target.address, target.nqn, port=target.port, keep_alive_ms=0) as controller:
        assert controller.controller_id == controller.info.controller_id
        # SGLS bit 2: keyed SGL data blocks, which NVMe/RDMA moves data by (not NVMe/TCP).
        keyed = controller.info.sgls & (1 << 2)
        assert controller.info.namespace_count >= 1 and (keyed or target.transport == "tcp")
        assert controller.info.model and controller.capabilities & 0xFFFF
        assert controller.controller_page_size == 4096
        assert controller.max_transfer_bytes > 0 and str(controller.host_id) in controller.host_nqn
        namespace = controller.identify_namespace(1)
        assert namespace.controller is controller
        assert namespace.info.nsid == 1 and namespace.info.lba_size == namespace.lba_size
        assert namespace.info.size_lbas == namespace.size_lbas and namespace.info.metadata_size == 0
        with controller.allocate(2 * namespace.lba_size) as buffer:
            # NVMe/TCP registers without keys (the queue moves the bytes): rkey 0.
            assert buffer.length == 2 * namespace.lba_size and buffer.lkey is not None
            assert buffer.rkey or target.transport == "tcp"
            assert not buffer.closed
            buffer.write(b"\xA5" * namespace.lba_size, offset=namespace.lba_size)
            namespace.write(buffer, slba=10)
            buffer.write(bytes(2 * namespace.lba_size))
            namespace.read(buffer, slba=10)
            assert buffer.read(namespace.lba_size, offset=namespace.lba_size) == b"\xA5" * namespace.lba_size
            with pytest.raises(ValueError):
                buffer.read(1, offset=buffer.length)
            # A keyed SGL built by hand, as the reference's protocol module does.
            command = bytearray(protocol.rw_command(protocol.OPC_READ, 1, 10, 1, buffer, lba_size=namespace.lba_size))
            protocol.set_keyed_sgl(command, buffer, namespace.lba_size, namespace.lba_size)
            completion = controller.io.execute(bytes(command), data_owner=buffer)
            assert completion.succeeded and completion.status == 0
            # Beyond the namespace: an NVMe status, raised as NVMeStatusError (an OSError).
            beyond = protocol.rw_command(protocol.OPC_READ, 1, namespace.size_lbas, 1, buffer,
                                         lba_size=namespace.lba_size)
            with pytest.raises(nvmeof.NVMeStatusError) as raised:
                controller.io.execute(beyond, data_owner=buffer)
            assert raised.value.errno == 5 and raised.value.completion.status_code == 0x80
        assert buffer.closed
        # Property Get through the admin queue: the CAP the controller reported.
        assert controller.admin.execute(protocol.property_get(protocol.REG_CAP, 8)).result == controller.capabilities


def test_poll_returns_the_requests_it_saw_finish_and_a_full_queue_says_so():
    with start_target("--fault", "delay-ms=200") as target:
        with nvmeof.Controller(target.address, target.nqn, port=target.port, queue_depth=4) as controller:
            namespace = controller.namespace(1)
            queue = controller.io
            assert queue.depth == 4 and queue.outstanding == 0 and not queue.closed
            with controller.allocate(3 * namespace.lba_size) as buffer:
                requests = [queue.submit(protocol.rw_command(protocol.OPC_READ, 1, i, 1, buffer,
                                                             lba_size=namespace.lba_size,
                                                             buffer_offset=i * namespace.lba_size),
                                         data_owner=buffer) for i in range(3)]
                assert queue.outstanding == 3 and all(r.response is None for r in requests)
                with pytest.raises(nvmeof.QueueFullError):
                    queue.submit(protocol.rw_command(protocol.OPC_READ, 1, 0, 1, buffer,
                                                     lba_size=namespace.lba_size), data_owner=buffer)
                seen = []
                deadline = time.monotonic() + 10
                while len(seen) < 3 and time.monotonic() < deadline:
                    seen += queue.poll(max_entries=2)
                assert sorted(id(r) for r in seen) == sorted(id(r) for r in requests)
                assert all(r.done and r.response.succeeded for r in requests)
                assert queue.poll() == []
        assert queue.closed


def test_an_idle_controller_with_keep_alive_stays_connected_past_three_timeouts():
    with start_target("--kas", "1") as target:  # a 100 ms keep-alive granularity
        with nvmeof.Controller(target.address, target.nqn, port=target.port, keep_alive_ms=1000) as controller:
            namespace = controller.namespace(1)
            with controller.allocate(namespace.lba_size) as block:
                time.sleep(3.5)  # idle: nothing from Python for 3.5 x KATO
                assert controller.is_open
                namespace.read(block, slba=0)
            assert controller.keep_alive_services > 0
        log = target.stop()
        assert "keep-alive timeout" not in log, log
        assert target.stats()["commands"]["keep_alive"] >= 5


def test_an_idle_controller_without_keep_alive_thread_is_dropped():
    # The control: the same target drops a controller that stays silent (KATO
    # asked for through the low level, nothing sending Keep Alives).
    with start_target("--kas", "1") as target:
        with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
            namespace = controller.namespace(1)
            controller.admin.execute(protocol.set_features(0x0F, 1000))  # Keep Alive Timer: 1 s
            time.sleep(2.5)
            with controller.allocate(namespace.lba_size) as block:
                with pytest.raises(nvmeof.Error):
                    namespace.read(block, slba=0)
        assert "keep-alive timeout" in target.stop()


def test_a_large_read_spreads_its_commands_over_every_io_queue():
    size = 64 << 20
    with start_target(namespace="ram:80M:4096") as target:
        with nvmeof.Controller(target.address, target.nqn, port=target.port, io_queues=4) as controller:
            assert controller.io_queue_count == 4 and len(controller.io_queues) == 4
            assert [q.qid for q in controller.io_queues] == [1, 2, 3, 4]
            namespace = controller.namespace(1)
            data = numpy.random.default_rng(7).integers(0, 256, size, dtype=numpy.uint8)
            with controller.register(data) as out:
                namespace.write(out, slba=0)
            sink = numpy.zeros(size, dtype=numpy.uint8)
            with controller.register(sink) as into:
                namespace.read(into, slba=0)
            assert numpy.array_equal(sink, data)
            commands = 2 * size // controller.max_transfer_bytes
            # And asynchronously: 16 reads of 4 MiB from one thread.
            sink[:] = 0
            with controller.register(sink) as into:
                piece = 4 << 20
                futures = [namespace.read_async(into, slba=i * piece // namespace.lba_size,
                                                blocks=piece // namespace.lba_size, buffer_offset=i * piece)
                           for i in range(size // piece)]
                assert all(f.result(timeout=60) is None for f in futures)
            assert numpy.array_equal(sink, data)
            commands += size // controller.max_transfer_bytes
        target.stop()
        seen = target.stats()["io_queue_commands"]
        # Each queue's count includes its Fabrics Connect.
        assert sorted(seen) == ["1", "2", "3", "4"] and sum(seen.values()) == commands + 4, seen
        assert all(count >= commands // 4 - 2 for count in seen.values()), seen


def test_asynchronous_reads_keep_32_commands_in_flight_from_one_thread():
    with start_target("--fault", "delay-ms=50") as target:
        with nvmeof.Controller(target.address, target.nqn, port=target.port, queue_depth=64) as controller:
            namespace = controller.namespace(1)
            block = namespace.lba_size
            data = numpy.random.default_rng(9).integers(0, 256, 48 * block, dtype=numpy.uint8)
            with controller.register(data) as out:
                namespace.write(out, slba=0)
            sink = numpy.zeros(48 * block, dtype=numpy.uint8)
            with controller.register(sink) as into:
                futures = [namespace.read_async(into, slba=i, blocks=1, buffer_offset=i * block) for i in range(48)]
                assert all(isinstance(f, concurrent.futures.Future) for f in futures)
                with pytest.raises(ValueError, match="in use"):
                    into.close()  # the transfers still hold it
                done, not_done = concurrent.futures.wait(futures, timeout=30)
                assert not not_done and all(f.result() is None for f in futures)
            assert numpy.array_equal(sink, data)
        target.stop()
        assert target.stats()["max_inflight"]["io"] >= 32, target.stats()["max_inflight"]


def test_asynchronous_transfers_are_awaitable_and_fail_with_the_controller():
    with start_target("--fault", "delay-ms=300") as target:
        controller = nvmeof.Controller(target.address, target.nqn, port=target.port, io_queues=2)
        namespace = controller.namespace(1)
        buffer = controller.allocate(8 * namespace.lba_size)

        async def both():
            return await asyncio.gather(namespace.write_async(buffer, slba=0, blocks=4),
                                        namespace.read_async(buffer, slba=8, blocks=4,
                                                             buffer_offset=4 * namespace.lba_size))

        assert asyncio.run(both()) == [None, None]
        pending = namespace.read_async(buffer, slba=0)
        controller.close()  # before its answer
        with pytest.raises(nvmeof.TransportError) as raised:
            pending.result(timeout=10)
        assert raised.value.code == "closed"
        buffer.close()  # the failed transfer let it go
        with pytest.raises(ValueError, match="closed"):
            namespace.read_async(buffer, slba=0)


def test_diagnostics_go_to_the_nvmeof_logger(caplog):
    caplog.set_level(logging.DEBUG, logger="nvmeof")
    with start_target() as target:
        controller = nvmeof.Controller(target.address, target.nqn, port=target.port, timeout=2.0)
        namespace = controller.namespace(1)
        block = controller.allocate(namespace.lba_size)
        target.proc.send_signal(signal.SIGKILL)
        target.proc.wait()
        with pytest.raises(nvmeof.Error):
            namespace.read(block, slba=0)
        nvmeof._core.flush_log()
        controller.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "nvmeof"]
    assert any("failed" in line for line in lines), lines
