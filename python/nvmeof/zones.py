"""Zoned namespaces (the NVMe Zoned Namespace command set): zones as
Namespace.report_zones() describes them, and the names of their states,
types, report filters and actions."""
import enum
from dataclasses import dataclass
from typing import List, Optional


class ZoneState(enum.IntEnum):
    """A zone's state (ZS)."""
    EMPTY = 0x1
    IMPLICITLY_OPENED = 0x2
    EXPLICITLY_OPENED = 0x3
    CLOSED = 0x4
    READ_ONLY = 0xD
    FULL = 0xE
    OFFLINE = 0xF


class ZoneType(enum.IntEnum):
    """A zone's type (ZT): the ZNS specification defines sequential write
    required zones; a conventional zone is ZBC's type 1, as some targets report
    zones written anywhere."""
    CONVENTIONAL = 0x1
    SEQUENTIAL_WRITE_REQUIRED = 0x2


class ZoneFilter(enum.IntEnum):
    """Which zones a report lists (ZRASF)."""
    ALL = 0x0
    EMPTY = 0x1
    IMPLICITLY_OPENED = 0x2
    EXPLICITLY_OPENED = 0x3
    CLOSED = 0x4
    FULL = 0x5
    READ_ONLY = 0x6
    OFFLINE = 0x7


class ZoneAction(enum.IntEnum):
    """Zone Management Send actions (ZSA)."""
    CLOSE = 0x1
    FINISH = 0x2
    OPEN = 0x3
    RESET = 0x4
    OFFLINE = 0x5


def _enum_or_int(kind, value):
    try:
        return kind(value)
    except ValueError:
        return value  # a value the specification reserves: as reported


@dataclass(frozen=True)
class Zone:
    """One zone of a report. ``write_pointer`` is None where the zone has none
    (full, read only, offline, conventional)."""
    start: int
    capacity: int
    write_pointer: Optional[int]
    state: ZoneState
    type: ZoneType
    attributes: int = 0

    @property
    def finished_by_controller(self) -> bool:
        """ZA bit 0 (ZFC)."""
        return bool(self.attributes & 0x01)

    @property
    def finish_recommended(self) -> bool:
        """ZA bit 1 (FZR)."""
        return bool(self.attributes & 0x02)

    @property
    def reset_recommended(self) -> bool:
        """ZA bit 2 (RZR)."""
        return bool(self.attributes & 0x04)

    @property
    def is_full(self) -> bool:
        return self.state == ZoneState.FULL

    @classmethod
    def _from_core(cls, start, capacity, write_pointer, state, type_, attributes):
        return cls(start, capacity, None if write_pointer == (1 << 64) - 1 else write_pointer,
                   _enum_or_int(ZoneState, state), _enum_or_int(ZoneType, type_), attributes)


@dataclass(frozen=True)
class ZoneReport:
    """One Zone Management Receive (Namespace.report_zones_into): ``matching``
    is the report header's count (every zone from the start LBA on that the
    filter lists, or with partial=True the ones returned), ``zones`` the
    descriptors the buffer held."""
    matching: int
    zones: List[Zone]
