"""NVMe, NVMe-oF and NVMe/RDMA wire layouts for the low-level queue API, with
the reference package's names: command builders that return 64-byte
capsules, the CM private data records, and decoders of completions and
Identify data.

    from nvmeof import protocol
    command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=1,
                                  buffer=buffer, lba_size=namespace.lba_size)
    request = controller.io.submit(command, data_owner=buffer)

The blocking Controller and Namespace calls do not use these (the C++ core
builds its own commands); they are for programs that talk to a queue directly.
"""
import struct
import uuid
from dataclasses import dataclass

from nvmeof._core import Command, status_name
from nvmeof.errors import NvmeError as NVMeStatusError

#: IANA service port for NVMe over Fabrics/RDMA.
NVME_RDMA_PORT = 4420
#: The admin queue's size (the Linux host's and target's NVME_AQ_DEPTH).
ADMIN_QUEUE_DEPTH = 32
#: Largest queue size the command builders accept (rdma_cm_request).
MAX_QUEUE_DEPTH = 1024
#: Largest byte count of one keyed SGL data block descriptor (24-bit length).
MAX_KEYED_SGL_LENGTH = (1 << 24) - 1
#: Largest block count of one Read or Write (NLB is 16 bits, 0's based).
MAX_BLOCKS_PER_COMMAND = 1 << 16

OPC_FLUSH = 0x00
OPC_WRITE = 0x01
OPC_READ = 0x02
OPC_COMPARE = 0x05
OPC_WRITE_ZEROES = 0x08
OPC_DATASET_MANAGEMENT = 0x09
OPC_IDENTIFY = 0x06
OPC_SET_FEATURES = 0x09
OPC_GET_FEATURES = 0x0A
OPC_KEEP_ALIVE = 0x18
OPC_FABRICS = 0x7F

FCTYPE_PROPERTY_SET = 0x00
FCTYPE_CONNECT = 0x01
FCTYPE_PROPERTY_GET = 0x04

#: Controller properties (register offsets).
REG_CAP = 0x00
REG_VS = 0x08
REG_CC = 0x14
REG_CSTS = 0x1C

CC_ENABLE = 1
CC_CSS_CSI = 6 << 4
CC_MPS_SHIFT = 7
CC_IOSQES = 6 << 16
CC_IOCQES = 4 << 20
CSTS_READY = 1
CSTS_FATAL = 1 << 1

FEAT_NUMBER_OF_QUEUES = 0x07
FEAT_KEEP_ALIVE_TIMER = 0x0F
#: Command flags: PSDT selecting SGLs for the data pointer.
PSDT_SGL = 1 << 6
#: SGL descriptor type: keyed data block, address + length + key.
KEYED_DATA_BLOCK = 0x40

# Byte offsets in a 64-byte submission queue entry.
_SQE_SIZE = 64
_CID = 2
_NSID = 4
_FCTYPE = 4
_SGL = 24
_CDW10 = 40
_CDW11 = 44
_CDW12 = 48
_CDW2 = 8
_CDW3 = 12
_CDW14 = 56
_PRINFO_SHIFT = 26  # CDW12 bits 29:26: PRACT (bit 3) and PRCHK (guard, apptag, reftag)


@dataclass(frozen=True)
class Completion:
    """A decoded 16-byte completion queue entry. `status_field` is the field as
    received (phase bit included); `status` drops the phase bit."""

    result: int
    sq_head: int
    sq_id: int
    command_id: int
    status_field: int

    @classmethod
    def from_bytes(cls, data):
        """Decodes the first 16 bytes of a completion queue entry."""
        if len(data) < 16:
            raise ValueError("an NVMe completion is 16 bytes, got %d" % len(data))
        return cls(*struct.unpack_from("<QHHHH", data))

    @property
    def status(self):
        return self.status_field >> 1

    @property
    def status_code(self):
        return self.status & 0xFF

    @property
    def status_type(self):
        return (self.status >> 8) & 0x7

    @property
    def do_not_retry(self):
        return bool(self.status & (1 << 14))

    @property
    def succeeded(self):
        return (self.status & 0x7FF) == 0

    ok = succeeded
    sct = status_type
    sc = status_code
    dnr = do_not_retry

    def raise_for_status(self):
        """Raises NVMeStatusError (nvmeof.NvmeError) unless the command succeeded."""
        if not self.succeeded:
            raise NVMeStatusError(self)


def _text(data, start, length):
    return bytes(data[start:start + length]).decode("ascii", "replace").rstrip(" \x00")


@dataclass(frozen=True)
class ControllerInfo:
    """The Identify Controller fields an initiator uses."""

    serial: str
    model: str
    firmware: str
    mdts: int
    controller_id: int
    version: int
    max_commands: int
    namespace_count: int
    sgls: int
    ioccsz: int
    iorcsz: int
    icdoff: int

    @classmethod
    def from_bytes(cls, data):
        """Decodes a 4096-byte Identify Controller data structure."""
        if len(data) < 4096:
            raise ValueError("Identify Controller data is 4096 bytes, got %d" % len(data))
        return cls(
            serial=_text(data, 4, 20),
            model=_text(data, 24, 40),
            firmware=_text(data, 64, 8),
            mdts=data[77],
            controller_id=struct.unpack_from("<H", data, 78)[0],
            version=struct.unpack_from("<I", data, 80)[0],
            max_commands=struct.unpack_from("<H", data, 514)[0],
            namespace_count=struct.unpack_from("<I", data, 516)[0],
            sgls=struct.unpack_from("<I", data, 536)[0],
            ioccsz=struct.unpack_from("<I", data, 1792)[0],
            iorcsz=struct.unpack_from("<I", data, 1796)[0],
            icdoff=struct.unpack_from("<H", data, 1800)[0],
        )


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace's size and its formatted LBA format."""

    nsid: int
    size_lbas: int
    capacity_lbas: int
    used_lbas: int
    lba_size: int
    metadata_size: int
    # Beyond the reference package: how the metadata sits (FLBAS bit 4: after
    # each block's data, the only way fabrics carry it) and the protection
    # information in it (DPS bits 2:0 and bit 3).
    extended_lba: bool = False
    pi_type: int = 0
    pi_first: bool = False

    @classmethod
    def from_bytes(cls, nsid, data):
        """Decodes a 4096-byte Identify Namespace data structure of `nsid`."""
        if len(data) < 4096:
            raise ValueError("Identify Namespace data is 4096 bytes, got %d" % len(data))
        nlbaf, flbas = data[25], data[26]
        index = (flbas & 0x0F) | ((flbas >> 5) & 0x3) << 4
        if index > nlbaf:
            raise ValueError("Identify Namespace: LBA format %d of %d" % (index, nlbaf + 1))
        metadata_size, lbads = struct.unpack_from("<HB", data, 128 + 4 * index)
        if lbads < 9 or lbads > 31:
            raise ValueError("Identify Namespace: unsupported LBA data size 2**%d" % lbads)
        size, capacity, used = struct.unpack_from("<QQQ", data, 0)
        dps = data[29]
        return cls(nsid=int(nsid), size_lbas=size, capacity_lbas=capacity, used_lbas=used,
                   lba_size=1 << lbads, metadata_size=metadata_size,
                   extended_lba=bool(flbas & 0x10), pi_type=dps & 0x7, pi_first=bool(dps & 0x8))


def _command(opcode, nsid=0):
    command = bytearray(_SQE_SIZE)
    struct.pack_into("<BBHI", command, 0, opcode, PSDT_SGL, 0, nsid)
    command[_SGL + 15] = KEYED_DATA_BLOCK
    return command


def set_keyed_sgl(command, buffer, length=None, offset=0):
    """Points `command` (a bytearray) at [offset, offset + length) of a registered
    buffer (anything with `addr`, `length` and `rkey`: nvmeof.Buffer)."""
    offset = int(offset)
    total = int(buffer.length)
    if offset < 0 or offset > total:
        raise ValueError("data offset %d is outside the %d-byte buffer" % (offset, total))
    length = total - offset if length is None else int(length)
    if length <= 0 or length > total - offset:
        raise ValueError("data range [%d, +%d) is outside the %d-byte buffer" % (offset, length, total))
    if length > MAX_KEYED_SGL_LENGTH:
        raise ValueError("one keyed SGL holds at most 2**24 - 1 bytes, not %d" % length)
    command[1] |= PSDT_SGL
    struct.pack_into("<Q", command, _SGL, int(buffer.addr) + offset)
    command[_SGL + 8:_SGL + 11] = length.to_bytes(3, "little")
    struct.pack_into("<I", command, _SGL + 11, int(buffer.rkey))
    command[_SGL + 15] = KEYED_DATA_BLOCK


def rdma_cm_request(qid, depth, controller_id=0):
    """The 32-byte NVMe/RDMA CM request private data of queue `qid` of `depth`
    entries (the admin queue, qid 0, always names controller ID 0)."""
    qid, depth = int(qid), int(depth)
    if not 0 <= qid <= 0xFFFF:
        raise ValueError("qid must fit in 16 bits")
    if not 2 <= depth <= MAX_QUEUE_DEPTH:
        raise ValueError("queue depth must be between 2 and %d" % MAX_QUEUE_DEPTH)
    cntlid = int(controller_id) if qid else 0
    if not 0 <= cntlid <= 0xFFFF:
        raise ValueError("controller_id must fit in 16 bits")
    return struct.pack("<HHHHH22x", 0, qid, depth, depth - 1, cntlid)


def parse_rdma_cm_response(data):
    """The receive queue size (CRQSIZE) of an NVMe/RDMA CM accept's private data."""
    if len(data) < 4:
        raise ValueError("NVMe/RDMA CM response is shorter than 4 bytes")
    recfmt, crqsize = struct.unpack_from("<HH", data)
    if recfmt != 0:
        raise ValueError("unsupported NVMe/RDMA CM record format %d" % recfmt)
    if crqsize == 0:
        raise ValueError("NVMe/RDMA target returned a zero receive queue size")
    return crqsize


def connect_data(host_id, subsystem_nqn, host_nqn, controller_id):
    """The 1024-byte Fabrics Connect data: host ID (UUID), controller ID, NQNs."""
    host_uuid = host_id if isinstance(host_id, uuid.UUID) else uuid.UUID(str(host_id))
    data = bytearray(1024)
    data[:16] = host_uuid.bytes
    struct.pack_into("<H", data, 16, int(controller_id))
    for offset, value, name in ((256, subsystem_nqn, "subsystem NQN"), (512, host_nqn, "host NQN")):
        encoded = value.encode("utf-8")
        if not 11 <= len(encoded) <= 223 or b"\x00" in encoded:
            raise ValueError("%s must be 11 to 223 non-NUL UTF-8 bytes" % name)
        data[offset:offset + len(encoded)] = encoded
    return bytes(data)


def fabrics_connect(qid, depth, data_buffer, kato_ms=0):
    """Fabrics Connect of queue `qid` (`depth` entries), its data in `data_buffer`."""
    if not 0 <= kato_ms <= 0xFFFFFFFF:
        raise ValueError("kato_ms must fit in 32 bits")
    command = _command(OPC_FABRICS)
    command[_FCTYPE] = FCTYPE_CONNECT
    set_keyed_sgl(command, data_buffer, 1024)
    struct.pack_into("<HHHBBI", command, _CDW10, 0, qid, depth - 1, 0, 0, kato_ms)
    return bytes(command)


def _property_size_attribute(size):
    if size not in (4, 8):
        raise ValueError("a property is 4 or 8 bytes, not %r" % (size,))
    return 1 if size == 8 else 0


def property_get(offset, size):
    """Fabrics Property Get of the 4- or 8-byte property at `offset`."""
    command = _command(OPC_FABRICS)
    command[_FCTYPE] = FCTYPE_PROPERTY_GET
    command[_CDW10] = _property_size_attribute(size)
    struct.pack_into("<I", command, _CDW11, int(offset))
    return bytes(command)


def property_set(offset, value, size=4):
    """Fabrics Property Set of the property at `offset` to `value`."""
    command = _command(OPC_FABRICS)
    command[_FCTYPE] = FCTYPE_PROPERTY_SET
    command[_CDW10] = _property_size_attribute(size)
    struct.pack_into("<IQ", command, _CDW11, int(offset), int(value))
    return bytes(command)


def identify(data_buffer, *, nsid=0, controller=False):
    """Identify Controller (controller=True) or Identify Namespace `nsid`, its
    4096 bytes into `data_buffer`."""
    command = _command(OPC_IDENTIFY, nsid)
    set_keyed_sgl(command, data_buffer, 4096)
    command[_CDW10] = 1 if controller else 0
    return bytes(command)


def set_features(feature_id, value):
    """Set Features `feature_id` with `value` in command dword 11."""
    command = _command(OPC_SET_FEATURES)
    struct.pack_into("<II", command, _CDW10, int(feature_id), int(value))
    return bytes(command)


def rw_command(opcode, nsid, slba, blocks, buffer, *, lba_size, buffer_offset=0, offset=None,
               prinfo=0, reftag=0, apptag=0, apptag_mask=0xFFFF):
    """One Read, Write or Compare of `blocks` blocks at `slba`, its data at
    `buffer_offset` of the registered `buffer` (`offset` is an older name of
    it); `lba_size` is the bytes per block in the buffer (data and the metadata
    that travels). On a namespace with protection information: `prinfo` (PRACT
    0x8 | nvmeof.Prchk bits), the initial reference tag (up to 48 bits: CDW14
    and CDW3), the application tag and its mask (CDW15)."""
    if opcode not in (OPC_READ, OPC_WRITE, OPC_COMPARE):
        raise ValueError("rw_command: opcode %r is not OPC_READ, OPC_WRITE or OPC_COMPARE" % (opcode,))
    for name, value, bits in (("prinfo", prinfo, 4), ("reftag", reftag, 48), ("apptag", apptag, 16),
                              ("apptag_mask", apptag_mask, 16)):
        if not 0 <= int(value) < 1 << bits:
            raise ValueError("%s %r does not fit its %d bits" % (name, value, bits))
    slba, blocks, lba_size = int(slba), int(blocks), int(lba_size)
    if not 0 <= slba < 1 << 64:
        raise ValueError("starting LBA %d is outside 64 bits" % slba)
    if not 1 <= blocks <= MAX_BLOCKS_PER_COMMAND:
        raise ValueError("one command holds 1 to 65536 blocks, not %d" % blocks)
    if lba_size <= 0:
        raise ValueError("lba_size must be positive")
    command = _command(opcode, nsid)
    set_keyed_sgl(command, buffer, blocks * lba_size, buffer_offset if offset is None else offset)
    struct.pack_into("<QI", command, _CDW10, slba, (blocks - 1) | int(prinfo) << _PRINFO_SHIFT)
    if prinfo or reftag or apptag:
        struct.pack_into("<I", command, _CDW3, int(reftag) >> 32)
        struct.pack_into("<II", command, _CDW14, int(reftag) & 0xFFFFFFFF,
                         int(apptag) | int(apptag_mask) << 16)
    return bytes(command)


__all__ = [
    "ADMIN_QUEUE_DEPTH", "CC_CSS_CSI", "CC_ENABLE", "CC_IOCQES", "CC_IOSQES", "CC_MPS_SHIFT",
    "CSTS_FATAL", "CSTS_READY", "Command", "Completion", "ControllerInfo",
    "FCTYPE_CONNECT", "FCTYPE_PROPERTY_GET", "FCTYPE_PROPERTY_SET", "FEAT_KEEP_ALIVE_TIMER",
    "FEAT_NUMBER_OF_QUEUES", "KEYED_DATA_BLOCK", "MAX_BLOCKS_PER_COMMAND", "MAX_KEYED_SGL_LENGTH",
    "MAX_QUEUE_DEPTH", "NVMeStatusError", "NVME_RDMA_PORT", "NamespaceInfo", "OPC_DATASET_MANAGEMENT",
    "OPC_COMPARE", "OPC_FABRICS", "OPC_FLUSH", "OPC_GET_FEATURES", "OPC_IDENTIFY", "OPC_KEEP_ALIVE", "OPC_READ",
    "OPC_SET_FEATURES", "OPC_WRITE", "OPC_WRITE_ZEROES", "PSDT_SGL", "REG_CAP", "REG_CC", "REG_CSTS",
    "REG_VS", "connect_data", "fabrics_connect", "identify", "parse_rdma_cm_response",
    "property_get", "property_set", "rdma_cm_request", "rw_command", "set_features",
    "set_keyed_sgl", "status_name",
]
