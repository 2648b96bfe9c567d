"""Controller and Namespace: the reference package's high-level API on the C++ core."""
import uuid
from typing import Optional, Union

from nvmeof import _core
from nvmeof import protocol as _p

_IDENTIFY_BYTES = 4096


def _milliseconds(name, seconds, milliseconds, default_ms):
    """One reconnect timer, given in seconds (nvme-cli's unit) or milliseconds."""
    if seconds is None:
        return int(milliseconds)
    if milliseconds != default_ms:
        raise ValueError("give %s or %s_ms, not both" % (name, name))
    if seconds < 0:
        raise ValueError("%s must not be negative" % name)
    return int(round(seconds * 1000))


_CONNECT_DOC = """Connects to `subsystem_nqn` at `host` (an IPv4/IPv6 address; several
paths as "10.0.0.2,10.0.0.3").

transport: "rdma" (NVMe/RDMA, the default) or "tcp" (NVMe/TCP), nvme-cli's
names, any case. port: the target's port (4420, RDMA-CM's or TCP's).
hdr_digest: over TCP, ask for the PDU header digest (CRC-32C, nvme-cli's
--hdr-digest; False). data_digest: over TCP, ask for the data digest
(--data-digest; False). Neither has an effect over RDMA. host_id: host UUID (uuid.UUID or text; default a random one). host_nqn:
default derived from the host ID (nqn.2014-08.org.nvmexpress:uuid:<id>).
queue_depth: I/O queue size asked for (128; negotiated down). keep_alive_ms:
KATO (0 = off); when set, a thread of the core sends the Keep Alives, so an
idle program stays connected. timeout: seconds for the whole connect, then
per command (30.0). source: local address: over RDMA it picks the RDMA
device, over TCP the sockets bind to it. io_queues: I/O queues (1); the
commands of a transfer are spread over them.

Reconnecting, as the kernel's host does: ctrl_loss_tmo_ms: after a queue
failure, keep reconnecting for this long (0 = off: a failure fails what is in
flight), re-sending the transfers in flight; a blocking call waits the outage
out. reconnect_delay_ms: between attempts (10000). fast_io_fail_tmo_ms: after
this long in an outage, transfers fail (0 = off). ctrl_loss_tmo,
reconnect_delay, fast_io_fail_tmo: the same in seconds (nvme-cli's unit).

Raises ConnectError (.cause, .step) or ValueError (a transport other than
"rdma" or "tcp" among them). The GIL is released while connecting; Ctrl-C
interrupts it within about 50 ms (on the main thread).
"""


class Controller:
    """A connected NVMe-oF controller, over RDMA or TCP: admin queue, I/O queues, memory.
    ``Controller(host, subsystem_nqn, **options)`` and ``Controller.connect``
    take the same options (see connect)."""

    def __init__(self, host: str, subsystem_nqn: str, *, port: int = _p.NVME_RDMA_PORT,
                 host_id: Optional[Union[uuid.UUID, str]] = None, host_nqn: Optional[str] = None,
                 queue_depth: int = 128, keep_alive_ms: int = 0, timeout: float = 30.0,
                 source: Optional[str] = None, io_queues: int = 1, ctrl_loss_tmo_ms: int = 0,
                 reconnect_delay_ms: int = 10000, fast_io_fail_tmo_ms: int = 0,
                 ctrl_loss_tmo: Optional[float] = None, reconnect_delay: Optional[float] = None,
                 fast_io_fail_tmo: Optional[float] = None, transport: str = "rdma",
                 hdr_digest: bool = False, data_digest: bool = False):
        self.host = host
        self.port = int(port)
        self.source = source
        self.subsystem_nqn = subsystem_nqn
        self.host_id = uuid.UUID(str(host_id)) if host_id else uuid.uuid4()
        self.keep_alive_ms = int(keep_alive_ms)
        self.timeout = float(timeout)
        self._info = None
        self._capabilities = None
        self._core = _core.Controller.connect(
            host, subsystem_nqn, port=self.port, host_id=str(self.host_id), host_nqn=host_nqn,
            queue_depth=int(queue_depth), keep_alive_ms=self.keep_alive_ms, timeout=self.timeout,
            source=source, io_queues=int(io_queues),
            ctrl_loss_tmo_ms=_milliseconds("ctrl_loss_tmo", ctrl_loss_tmo, ctrl_loss_tmo_ms, 0),
            reconnect_delay_ms=_milliseconds("reconnect_delay", reconnect_delay,
                                             reconnect_delay_ms, 10000),
            fast_io_fail_tmo_ms=_milliseconds("fast_io_fail_tmo", fast_io_fail_tmo,
                                              fast_io_fail_tmo_ms, 0),
            transport=transport, hdr_digest=bool(hdr_digest), data_digest=bool(data_digest))
        self.transport = transport.lower()  # the core took it: "rdma" or "tcp", any case
        limits = self._core.limits
        self.host_nqn = limits["host_nqn"]
        self.controller_id = limits["cntlid"]
        self.max_transfer_bytes = limits["max_transfer_bytes"]

    __init__.__doc__ = _CONNECT_DOC

    @classmethod
    def connect(cls, host: str, subsystem_nqn: str, *, port: int = _p.NVME_RDMA_PORT,
                host_id: Optional[Union[uuid.UUID, str]] = None, host_nqn: Optional[str] = None,
                queue_depth: int = 128, keep_alive_ms: int = 0, timeout: float = 30.0,
                source: Optional[str] = None, io_queues: int = 1, ctrl_loss_tmo_ms: int = 0,
                reconnect_delay_ms: int = 10000, fast_io_fail_tmo_ms: int = 0,
                ctrl_loss_tmo: Optional[float] = None, reconnect_delay: Optional[float] = None,
                fast_io_fail_tmo: Optional[float] = None, transport: str = "rdma",
                hdr_digest: bool = False, data_digest: bool = False) -> "Controller":
        return cls(host, subsystem_nqn, port=port, host_id=host_id, host_nqn=host_nqn,
                   queue_depth=queue_depth, keep_alive_ms=keep_alive_ms, timeout=timeout,
                   source=source, io_queues=io_queues, ctrl_loss_tmo_ms=ctrl_loss_tmo_ms,
                   reconnect_delay_ms=reconnect_delay_ms, fast_io_fail_tmo_ms=fast_io_fail_tmo_ms,
                   ctrl_loss_tmo=ctrl_loss_tmo, reconnect_delay=reconnect_delay,
                   fast_io_fail_tmo=fast_io_fail_tmo, transport=transport, hdr_digest=hdr_digest,
                   data_digest=data_digest)

    connect.__func__.__doc__ = _CONNECT_DOC

    # --- identity, from the controller itself ------------------------------

    def _identify(self, **which):
        with self._core.allocate(_IDENTIFY_BYTES) as data:
            self._core.admin.execute(_p.identify(data, **which), data_owner=data, timeout=self.timeout)
            return data.read()

    @property
    def info(self):
        """Identify Controller (a protocol.ControllerInfo), read once."""
        if self._info is None:
            self._info = _p.ControllerInfo.from_bytes(self._identify(controller=True))
        return self._info

    @property
    def capabilities(self):
        """The CAP property (a 64-bit integer), read once."""
        if self._capabilities is None:
            self._capabilities = self._core.admin.execute(_p.property_get(_p.REG_CAP, 8),
                                                          timeout=self.timeout).result
        return self._capabilities

    @property
    def controller_page_size(self):
        """The memory page size in use: 2 ** (12 + CAP.MPSMIN)."""
        return 1 << (12 + ((self.capabilities >> 48) & 0xF))

    # --- namespaces and memory ----------------------------------------------

    def identify_namespace(self, nsid):
        """Namespace `nsid` (Identify Namespace): its read/write/flush and
        read_async/write_async, `info` (a protocol.NamespaceInfo) and
        `controller`. NvmeError when the controller refuses the NSID; ValueError
        for 0."""
        namespace = self._core.namespace(int(nsid))
        namespace.controller = self
        namespace.info = _p.NamespaceInfo.from_bytes(namespace.nsid, self._identify(nsid=namespace.nsid))
        return namespace

    namespace = identify_namespace

    def allocate(self, length):
        """Page-aligned, zero-filled, registered host memory of `length` bytes (a Buffer)."""
        return self._core.allocate(int(length))

    def register(self, obj):
        """Registers host memory in place: a writable C-contiguous buffer (numpy
        array, bytearray) or a C-contiguous CPU tensor by DLPack (torch CPU tensor;
        one that requires grad is refused: detach() it). The object stays alive
        (and a bytearray unresizable) while registered; do not resize_() a
        registered tensor. ValueError for anything else."""
        return self._core.register(obj)

    def register_gpu(self, array):
        """Registers CUDA device memory: an object with __cuda_array_interface__ or a
        DLPack tensor on a CUDA device, its context current on this thread. A
        write from it first waits for the work queued in that context; a read
        into it is flushed before it returns. Buffer.registration_path says how
        it was registered ("dma-buf" or "peermem"; over NVMe/TCP "staging": the
        bytes go through a page-locked host copy of the region, copied with
        cuMemcpy around each I/O)."""
        return self._core.register_gpu(array)

    # --- queues ---------------------------------------------------------------

    @property
    def io(self):
        """I/O queue 0 (an RDMAQueue), for low-level submit()/poll()/execute();
        None once close() was called, as the reference package answers."""
        if self._core.closed:
            return None
        return self._core.io_queue(0)

    def io_queue(self, index):
        """I/O queue `index` (0 to io_queue_count - 1)."""
        return self._core.io_queue(int(index))

    @property
    def io_queues(self):
        """Every I/O queue."""
        return [self._core.io_queue(i) for i in range(self._core.io_queue_count)]

    @property
    def io_queue_count(self):
        return self._core.io_queue_count

    @property
    def admin(self):
        """The admin queue; None once close() was called, as the reference package answers."""
        if self._core.closed:
            return None
        return self._core.admin

    # --- state ---------------------------------------------------------------

    @property
    def is_open(self):
        """False once closed, given up after an outage, or failed with no reconnect."""
        return self._core.is_open

    @property
    def limits(self):
        """What was negotiated (queue size, MDTS, addresses, identity) as a dict."""
        return self._core.limits

    @property
    def reconnect_stats(self):
        """What reconnecting has done: reconnects, outages_ms, transfers_retried/failed,
        path, reconnecting, lost, lost_reason, as a dict."""
        return self._core.reconnect_stats

    @property
    def keep_alive_services(self):
        """How often the background keep-alive has run (0 without keep_alive_ms)."""
        return self._core.keep_alive_services

    def close(self):
        """Shuts the controller down: I/O queues, CC.SHN, admin queue; deregisters
        its buffers and fails transfers still pending. Idempotent."""
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "open" if self.is_open else "closed"
        return "<nvmeof.Controller %s %s:%d %s>" % (self.subsystem_nqn, self.host, self.port, state)


# The C++ class, under the name the package documents.
Namespace = _core.Namespace
