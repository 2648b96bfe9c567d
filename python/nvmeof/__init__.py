"""NVMe over Fabrics (RDMA) from Python, on the nvmeof C++ core, with the API of
the reference `nvmeof` package (rdma4py) and more: several I/O queues,
asynchronous transfers, keep-alive and reconnecting.

    import nvmeof
    with nvmeof.Controller.connect(target_ip, subsystem_nqn, source=initiator_ip) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(4096) as block:
            namespace.read(block, slba=0, blocks=1)
            payload = block.read()

Namespaces formatted with metadata and protection information are read and
written with pract/prchk/apptag/apptag_mask/reftag/storage_tag (see nvmeof.protection).
Zoned namespaces report their zones, take zone actions and appends (see nvmeof.zones).

Blocking calls release the GIL. Threads may share a controller: each call
into it is serialised, but a blocking read or write holds the controller only
to submit and to poll, so several threads' transfers are in flight together.
Diagnostics go to the `logging` logger "nvmeof".
"""

from nvmeof._version import __version__
from nvmeof._core import Buffer, IoQueue, Request, Response
from nvmeof.controller import Controller, Namespace
from nvmeof.errors import (CommandTimeoutError, ConnectError, ConnectStatusError, Error,
                           InvalidArgumentError, NvmeError, ProtectionError, QueueFullError,
                           TransportError)
from nvmeof.futures import TransferFuture
from nvmeof import protection, protocol, rdma, zones
from nvmeof.protection import (BlockFormat, Prchk, crc16_t10dif, crc32c, crc64_nvme,
                               pi_generate, pi_verify)
from nvmeof.protocol import (NVME_RDMA_PORT, Completion, ControllerInfo, NamespaceInfo,
                             NVMeStatusError)
from nvmeof.rdma import HostBuffer, RDMAQueue
from nvmeof.zones import Zone, ZoneAction, ZoneFilter, ZoneReport, ZoneState, ZoneType

__all__ = [
    "__version__", "BlockFormat", "Buffer", "CommandTimeoutError", "Completion", "ConnectError",
    "ConnectStatusError", "Controller", "ControllerInfo", "Error", "HostBuffer",
    "InvalidArgumentError", "IoQueue", "Namespace", "NamespaceInfo",
    "NvmeError", "NVMeStatusError", "NVME_RDMA_PORT", "Prchk", "ProtectionError",
    "QueueFullError", "RDMAQueue", "Request", "Response", "TransferFuture", "TransportError",
    "Zone", "ZoneAction", "ZoneFilter", "ZoneReport", "ZoneState", "ZoneType",
    "crc16_t10dif", "crc32c", "crc64_nvme", "pi_generate", "pi_verify", "protection", "protocol", "rdma",
    "zones",
]
