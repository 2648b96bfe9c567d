import uuid
from typing import Any, Optional, Union

from nvmeof import protection as protection
from nvmeof import protocol as protocol
from nvmeof import rdma as rdma
from nvmeof import zones as zones
from nvmeof._core import Buffer as Buffer, IoQueue as IoQueue, Namespace as Namespace
from nvmeof._core import Request as Request, Response as Response
from nvmeof._core import BlockFormat as BlockFormat, crc16_t10dif as crc16_t10dif
from nvmeof._core import crc32c as crc32c, crc64_nvme as crc64_nvme, pi_generate as pi_generate
from nvmeof._core import pi_verify as pi_verify
from nvmeof.errors import CommandTimeoutError as CommandTimeoutError, ConnectError as ConnectError
from nvmeof.errors import ConnectStatusError as ConnectStatusError
from nvmeof.errors import InvalidArgumentError as InvalidArgumentError
from nvmeof.errors import Error as Error, NvmeError as NvmeError, QueueFullError as QueueFullError
from nvmeof.errors import TransportError as TransportError, ProtectionError as ProtectionError
from nvmeof.protection import Prchk as Prchk
from nvmeof.futures import TransferFuture as TransferFuture
from nvmeof.protocol import NVME_RDMA_PORT as NVME_RDMA_PORT, Completion as Completion
from nvmeof.protocol import ControllerInfo as ControllerInfo, NamespaceInfo as NamespaceInfo
from nvmeof.protocol import NVMeStatusError as NVMeStatusError
from nvmeof.rdma import HostBuffer as HostBuffer, RDMAQueue as RDMAQueue
from nvmeof.zones import Zone as Zone, ZoneAction as ZoneAction, ZoneFilter as ZoneFilter
from nvmeof.zones import ZoneReport as ZoneReport, ZoneState as ZoneState, ZoneType as ZoneType

__version__: str

class Controller:
    host: str
    port: int
    transport: str
    source: Optional[str]
    subsystem_nqn: str
    host_id: uuid.UUID
    host_nqn: str
    keep_alive_ms: int
    timeout: float
    controller_id: int
    max_transfer_bytes: int
    def __init__(self, host: str, subsystem_nqn: str, *, port: int = 4420,
                 host_id: Union[uuid.UUID, str, None] = None, host_nqn: Optional[str] = None,
                 queue_depth: int = 128, keep_alive_ms: int = 0, timeout: float = 30.0,
                 source: Optional[str] = None, io_queues: int = 1,
                 ctrl_loss_tmo: Optional[float] = None, reconnect_delay: Optional[float] = None,
                 fast_io_fail_tmo: Optional[float] = None, ctrl_loss_tmo_ms: Optional[int] = None,
                 reconnect_delay_ms: Optional[int] = None,
                 fast_io_fail_tmo_ms: Optional[int] = None, transport: str = "rdma",
                 hdr_digest: bool = False, data_digest: bool = False) -> None: ...
    @classmethod
    def connect(cls, host: str, subsystem_nqn: str, **options: Any) -> Controller: ...
    @property
    def info(self) -> ControllerInfo: ...
    @property
    def capabilities(self) -> int: ...
    @property
    def controller_page_size(self) -> int: ...
    def identify_namespace(self, nsid: int) -> Namespace: ...
    def namespace(self, nsid: int) -> Namespace: ...
    def allocate(self, length: int) -> Buffer: ...
    def register(self, obj: Any) -> Buffer: ...
    def register_gpu(self, array: Any) -> Buffer: ...
    @property
    def io(self) -> Optional[IoQueue]: ...
    def io_queue(self, index: int) -> IoQueue: ...
    @property
    def io_queues(self) -> list[IoQueue]: ...
    @property
    def io_queue_count(self) -> int: ...
    @property
    def admin(self) -> Optional[IoQueue]: ...
    @property
    def is_open(self) -> bool: ...
    @property
    def limits(self) -> dict[str, Any]: ...
    @property
    def reconnect_stats(self) -> dict[str, Any]: ...
    @property
    def keep_alive_services(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> Controller: ...
    def __exit__(self, *args: Any) -> bool: ...
