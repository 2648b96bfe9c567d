"""The reference `nvmeof` package's error handling (rdma4py) on ours: what its
users write around connect and I/O (`except OSError`, `except ValueError`,
`except NVMeStatusError`, errno checks) catches our errors for each of the
reference's own bad-input cases, and our richer classes stay as subclasses.
Against nvmeof-target over softverbs."""
import errno
import signal
import socket

import pytest

import nvmeof
from nvmeof import protocol

from conftest import TRANSPORT, start_target

LOOPBACK = "127.0.0.1"
# The target's default CAP.MQES (0's based) is 127: 128 entries.
TARGET_QUEUE_LIMIT = 128


def free_tcp_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def connect_as_the_reference_does(address, nqn, **options):
    """A reference user's connect: an OSError is a failed connect, its errno why."""
    try:
        nvmeof.Controller.connect(address, nqn, **options).close()
    except OSError as error:
        return error
    raise AssertionError("the connect did not fail")


def names_in_one_line(error, argument):
    text = str(error)
    return "\n" not in text and argument in text


def test_nothing_listening_is_an_oserror_with_econnrefused():
    error = connect_as_the_reference_does(LOOPBACK, "nqn.2026-12.io.nvmeof:python",
                                          port=free_tcp_port(), timeout=5.0)
    assert error.errno == errno.ECONNREFUSED, (error.errno, str(error))
    assert isinstance(error, nvmeof.ConnectError) and isinstance(error, nvmeof.Error)
    step = "TCP connect" if TRANSPORT == "tcp" else "RDMA-CM connect"
    assert error.cause == "no_listener" and error.step == step
    assert "nothing listens" in str(error)


def test_a_wrong_nqn_is_the_references_nvme_status_error_with_eio(target):
    nqn = "nqn.2026-12.io.nvmeof:nobody"
    error = connect_as_the_reference_does(target.address, nqn, port=target.port, timeout=10.0)
    assert error.errno == errno.EIO, (error.errno, str(error))
    try:
        nvmeof.Controller.connect(target.address, nqn, port=target.port, timeout=10.0)
    except nvmeof.NVMeStatusError as status_error:  # the reference's class for it
        # Connect Invalid Parameters (SCT 1, SC 0x82), as the reference decodes it.
        assert (status_error.completion.status_type, status_error.completion.status_code) == (1, 0x82)
        assert isinstance(status_error, nvmeof.ConnectError)
        assert status_error.cause == "connect_status" and status_error.step.startswith("Fabrics Connect")
        assert status_error.name == "Connect Invalid Parameters", status_error.name


def test_a_target_killed_during_io_is_an_oserror_with_econnreset():
    with start_target("--fault", "delay-ms=500") as target:
        controller = nvmeof.Controller.connect(target.address, target.nqn, port=target.port,
                                               timeout=5.0)
        namespace = controller.namespace(1)
        block = controller.allocate(namespace.lba_size)
        in_flight = namespace.read_async(block, slba=0)
        target.proc.send_signal(signal.SIGKILL)
        target.proc.wait()
        caught = []
        for io in (lambda: in_flight.result(timeout=10), lambda: namespace.read(block, slba=0)):
            try:
                io()
            except OSError as error:  # the reference's CompletionError is an OSError
                caught.append(error)
        assert len(caught) == 2
        # The transfer in flight: the connection was lost under it.
        assert caught[0].errno == errno.ECONNRESET, (caught[0].errno, str(caught[0]))
        assert isinstance(caught[0], nvmeof.TransportError) and caught[0].code == "disconnected"
        # The next one: the controller failed and is not reconnected.
        assert caught[1].errno == errno.ENOTCONN, (caught[1].errno, str(caught[1]))
        assert isinstance(caught[1], nvmeof.TransportError) and caught[1].code == "disconnected"
        controller.close()
        with pytest.raises(OSError) as closed:
            namespace.read(block, slba=0)
        assert closed.value.errno == errno.ESHUTDOWN and closed.value.code == "closed"


def test_a_namespace_the_subsystem_lacks_is_a_value_error(target):
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        assert controller.info.namespace_count == 1
        for nsid in (0, 2):
            with pytest.raises(ValueError) as raised:
                controller.namespace(nsid)
            assert isinstance(raised.value, nvmeof.Error)
            assert names_in_one_line(raised.value, str(nsid)), str(raised.value)
        with pytest.raises(ValueError, match="nsid") as raised:
            controller.namespace(-1)
        assert names_in_one_line(raised.value, "nsid")


@pytest.mark.parametrize("call, argument", [
    (lambda c, ns, b: ns.read(b, slba=-1), "slba"),
    (lambda c, ns, b: ns.read(b, slba=0, blocks=-1), "blocks"),
    (lambda c, ns, b: ns.write(b, slba=-1, blocks=1), "slba"),
    (lambda c, ns, b: ns.read_async(b, slba=0, blocks=-1), "blocks"),
    (lambda c, ns, b: ns.read(b, slba=0, buffer_offset=-1), "buffer_offset"),
    (lambda c, ns, b: ns.write_zeroes(slba=-1, blocks=1), "slba"),
    (lambda c, ns, b: ns.deallocate(slba=0, blocks=-1), "blocks"),
    (lambda c, ns, b: c.allocate(-1), "length"),
    (lambda c, ns, b: b.read(-1), "length"),
    (lambda c, ns, b: b.write(b"x", offset=-1), "offset"),
    (lambda c, ns, b: c.io_queue(-1), "index"),
])
def test_negative_numbers_are_value_errors_naming_the_argument(target, call, argument):
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(namespace.lba_size) as block:
            try:
                call(controller, namespace, block)
            except ValueError as error:  # not pybind11's TypeError with the whole signature
                assert not isinstance(error, TypeError)
                assert names_in_one_line(error, argument), str(error)
                assert str(error).startswith(argument + " must be"), str(error)
            else:
                raise AssertionError("no ValueError")


@pytest.mark.parametrize("call, argument", [
    (lambda c, ns, b: ns.read(b, slba=2**64), "slba"),
    (lambda c, ns, b: ns.read(b, slba=ns.size_lbas), None),   # beyond the namespace
    (lambda c, ns, b: ns.read(b, slba=0, blocks=2), None),    # beyond the buffer
    (lambda c, ns, b: ns.read(b, slba=0, blocks=0), None),
    (lambda c, ns, b: ns.read(b, slba=0, blocks=2**64), "blocks"),
    (lambda c, ns, b: c.namespace(2**32), "nsid"),
    (lambda c, ns, b: c.allocate(2**64), "length"),
    (lambda c, ns, b: b.read(1, offset=b.length), None),
])
def test_out_of_range_numbers_are_value_errors(target, call, argument):
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(namespace.lba_size) as block:
            with pytest.raises(ValueError) as raised:
                call(controller, namespace, block)
            assert "\n" not in str(raised.value)
            if argument is not None:
                assert str(raised.value).startswith(argument + " must be"), str(raised.value)


@pytest.mark.parametrize("option, value", [("queue_depth", 2**16), ("queue_depth", -1),
                                           ("queue_depth", 1), ("port", -1), ("port", 2**16),
                                           ("io_queues", -1), ("keep_alive_ms", -1)])
def test_out_of_range_connect_options_are_value_errors(option, value):
    with pytest.raises(ValueError, match=option) as raised:
        nvmeof.Controller.connect(LOOPBACK, "nqn.2026-12.io.nvmeof:python", **{option: value})
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("options, argument", [
    ({"port": 0}, "port=0: "),
    ({"io_queues": 0}, "io_queues=0: "),
    ({"io_queues": 65535}, "io_queues=65535: "),
    ({"reconnect_delay_ms": 0}, "reconnect_delay_ms=0: "),
    ({"fast_io_fail_tmo_ms": 500}, "fast_io_fail_tmo_ms=500: "),
    ({"ctrl_loss_tmo_ms": 1000, "fast_io_fail_tmo_ms": 1000}, "fast_io_fail_tmo_ms=1000: "),
    ({"host_nqn": "myhost"}, 'host_nqn="myhost": '),
])
def test_connect_options_the_core_refuses_are_value_errors_naming_the_argument(options, argument):
    # The core's option rules, by this package's argument names: a ValueError
    # before anything connects, not a ConnectError (an OSError).
    with pytest.raises(ValueError) as raised:
        nvmeof.Controller.connect(LOOPBACK, "nqn.2026-12.io.nvmeof:python", **options)
    assert not isinstance(raised.value, OSError)
    assert str(raised.value).startswith(argument) and "\n" not in str(raised.value), str(raised.value)


@pytest.mark.parametrize("host", ["", "127.0.0.1,", "127.0.0.1:0", "[::1"])
def test_a_malformed_host_is_a_value_error_naming_host(host):
    with pytest.raises(ValueError) as raised:
        nvmeof.Controller.connect(host, "nqn.2026-12.io.nvmeof:python")
    assert str(raised.value).startswith('host="'), str(raised.value)


def test_a_queue_depth_above_the_controllers_limit_is_negotiated_down(target):
    # As the reference: min(queue_depth, CAP.MQES + 1, MAXCMD), no error.
    with nvmeof.Controller(target.address, target.nqn, port=target.port,
                           queue_depth=2 * TARGET_QUEUE_LIMIT) as controller:
        assert controller.io.depth == TARGET_QUEUE_LIMIT
        assert (controller.capabilities & 0xFFFF) + 1 == TARGET_QUEUE_LIMIT
        assert controller.limits["queue_size"] == TARGET_QUEUE_LIMIT
        assert controller.limits["queue_size_limit"] == "CAP.MQES"
        namespace = controller.namespace(1)
        with controller.allocate(namespace.lba_size) as block:
            namespace.read(block, slba=0)


def test_close_then_io_is_none_and_the_queue_closes_as_the_references(target):
    controller = nvmeof.Controller(target.address, target.nqn, port=target.port)
    queue = controller.io
    controller.close()
    assert controller.io is None and controller.admin is None  # as the reference's close()
    assert queue.closed and queue.poll() == []
    controller.close()  # idempotent
    # RDMAQueue.close(): the queue's controller closes with it.
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        queue = controller.io
        assert not queue.closed
        queue.close()
        queue.close()  # idempotent, as the reference's
        assert queue.closed and not controller.is_open and controller.io is None
        with pytest.raises(OSError) as raised:
            queue.submit(protocol.property_get(protocol.REG_CAP, 8))
        assert raised.value.errno == errno.ESHUTDOWN
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        with controller.io as queue:  # a context manager, as the reference's
            assert not queue.closed
        assert queue.closed and controller.io is None


def test_a_response_prints_its_fields_as_the_references_completion(target):
    with nvmeof.Controller(target.address, target.nqn, port=target.port) as controller:
        response = controller.admin.execute(protocol.property_get(protocol.REG_CAP, 8))
        fields = (response.result, response.sq_head, response.sq_id, response.command_id,
                  response.status_field)
        reference = repr(protocol.Completion(*fields))  # the reference's dataclass repr
        assert reference.startswith("Completion(result=")
        assert repr(response) == reference.replace("Completion(", "Response(", 1)
        assert str(response) == repr(response)
        assert response.result == controller.capabilities and response.result > 0


def test_the_classes_keep_ours_as_subclasses_of_the_references():
    assert issubclass(nvmeof.ConnectError, OSError) and issubclass(nvmeof.ConnectError, nvmeof.Error)
    assert issubclass(nvmeof.TransportError, OSError)
    assert issubclass(nvmeof.CommandTimeoutError, TimeoutError)
    assert issubclass(nvmeof.QueueFullError, RuntimeError) and issubclass(nvmeof.QueueFullError, OSError)
    assert issubclass(nvmeof.ConnectStatusError, nvmeof.NVMeStatusError)
    assert issubclass(nvmeof.ConnectStatusError, nvmeof.ConnectError)
    assert issubclass(nvmeof.InvalidArgumentError, ValueError)
    assert issubclass(nvmeof.InvalidArgumentError, nvmeof.Error)
    full = nvmeof.QueueFullError()
    assert full.errno == errno.EBUSY and full.code == "busy"
