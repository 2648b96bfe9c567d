"""Zoned namespaces from Python against nvmeof-target's zoned RAM namespaces:
the namespace's zone facts, report_zones (whole, filtered, paged through a
small page) and report_zones_into (partial or not), each zone action,
append and append_async returning where the blocks went, and the zone
statuses raised as NvmeError with their names and errnos."""
import errno

import pytest

import nvmeof
from nvmeof import ZoneAction, ZoneFilter, ZoneState, ZoneType

from conftest import rdma_only, start_target

# 64 MiB of 4 KiB blocks, zones of 1 MiB (256 blocks) holding 768 KiB (192),
# at most 4 open and 6 active.
ZONED = "ram:64M:4096:zoned=1M,cap=768K,max_open=4,max_active=6"
ZONE, CAPACITY, ZONES = 256, 192, 64


def connect(target, **options):
    return nvmeof.Controller.connect(target.address, target.nqn, port=target.port, **options)


@pytest.fixture(scope="module")
def zoned_target():
    with start_target("--fault", f"zone-read-only={60 * ZONE}", "--fault",
                      f"zone-offline={61 * ZONE}", namespace=ZONED) as target:
        yield target


@pytest.fixture
def zoned(zoned_target):
    """A connected zoned namespace, every zone reset first."""
    with connect(zoned_target) as controller:
        namespace = controller.namespace(1)
        namespace.reset_zone(select_all=True)
        yield controller, namespace


def test_zone_facts(zoned):
    controller, namespace = zoned
    assert controller.limits["io_command_sets"] is True
    assert namespace.zoned and namespace.csi == 2
    assert namespace.zone_size == ZONE
    assert namespace.zone_count == ZONES
    assert (namespace.max_open_zones, namespace.max_active_zones) == (4, 6)
    assert namespace.zone_append_max_bytes == controller.max_transfer_bytes


def test_a_namespace_that_is_not_zoned(fresh_target_factory):
    with fresh_target_factory() as target, connect(target) as controller:
        namespace = controller.namespace(1)
        assert not namespace.zoned and namespace.zone_size == 0
        assert controller.limits["io_command_sets"] is False
        with pytest.raises(ValueError, match="not zoned"):
            namespace.report_zones()
        with pytest.raises(ValueError, match="not zoned"):
            namespace.reset_zone(select_all=True)
        with controller.allocate(4096) as data, pytest.raises(ValueError, match="not zoned"):
            namespace.append(data, 0)


def test_reports(zoned):
    controller, namespace = zoned
    with controller.allocate(CAPACITY * 4096) as data:
        namespace.write(data, ZONE, 8)
        namespace.write(data, 2 * ZONE, 16)
        namespace.write(data, 3 * ZONE)  # the whole capacity: full, six commands in order
    namespace.open_zone(5 * ZONE)
    zones = namespace.report_zones()
    assert len(zones) == ZONES
    assert [z.start for z in zones] == [i * ZONE for i in range(ZONES)]
    assert all(z.capacity == CAPACITY and z.type == ZoneType.SEQUENTIAL_WRITE_REQUIRED
               for z in zones)
    assert zones[0].state == ZoneState.EMPTY and zones[0].write_pointer == 0
    assert zones[1].state == ZoneState.IMPLICITLY_OPENED and zones[1].write_pointer == ZONE + 8
    assert zones[3].state == ZoneState.FULL and zones[3].write_pointer is None and zones[3].is_full
    assert zones[5].state == ZoneState.EXPLICITLY_OPENED
    assert zones[60].state == ZoneState.READ_ONLY and zones[61].state == ZoneState.OFFLINE
    opened = namespace.report_zones(filter=ZoneFilter.IMPLICITLY_OPENED)
    assert [z.start for z in opened] == [ZONE, 2 * ZONE]
    assert [z.start for z in namespace.report_zones(10 * ZONE + 3, 2)] == [10 * ZONE, 11 * ZONE]
    with controller.allocate(128) as page:  # one descriptor a page: 64 commands
        assert namespace.report_zones(page=page) == zones
    with controller.allocate(4096) as buffer:
        report = namespace.report_zones_into(buffer, 2 * ZONE, nbytes=64 + 2 * 64)
        assert report.matching == ZONES - 2 and len(report.zones) == 2
        assert report.zones[1].start == 3 * ZONE
        report = namespace.report_zones_into(buffer, 2 * ZONE, partial=True, nbytes=64 + 2 * 64)
        assert report.matching == 2
        report = namespace.report_zones_into(buffer, filter=ZoneFilter.FULL)
        assert report.matching == 1 and report.zones[0].start == 3 * ZONE
        with pytest.raises(ValueError, match="ZDES 0"):
            namespace.report_zones_into(buffer, extended=True)
    with pytest.raises(ValueError, match="filter"):
        namespace.report_zones(filter=9)


def test_actions(zoned):
    controller, namespace = zoned

    def state(index):
        return namespace.report_zones(index * ZONE, 1)[0].state

    namespace.open_zone(0)
    assert state(0) == ZoneState.EXPLICITLY_OPENED
    namespace.close_zone(0)
    assert state(0) == ZoneState.CLOSED
    namespace.finish_zone(0)
    assert state(0) == ZoneState.FULL
    namespace.zone_action(ZoneAction.RESET, 0)
    assert state(0) == ZoneState.EMPTY
    for index in (1, 2):
        namespace.open_zone(index * ZONE)
    namespace.finish_zone(select_all=True)
    assert [z.start for z in namespace.report_zones(filter=ZoneFilter.FULL)] == [ZONE, 2 * ZONE]
    namespace.reset_zone(select_all=True)
    assert namespace.report_zones(filter=ZoneFilter.FULL) == []
    with pytest.raises(ValueError, match="ZoneAction"):
        namespace.zone_action(7, 0)


def test_append_returns_the_lba_written(zoned):
    controller, namespace = zoned
    with controller.allocate(64 * 4096) as data:
        data.write(bytes(range(256)) * (len(data) // 256))
        assert namespace.append(data, 4 * ZONE, 8) == 4 * ZONE
        assert namespace.append(data, 4 * ZONE, 8, buffer_offset=8 * 4096) == 4 * ZONE + 8
        futures = [namespace.append_async(data, 4 * ZONE, 4, buffer_offset=i * 4 * 4096)
                   for i in range(8)]
        lbas = sorted(f.result(30) for f in futures)
        assert lbas == [4 * ZONE + 16 + 4 * i for i in range(8)]
        with controller.allocate(48 * 4096) as back:
            namespace.read(back, 4 * ZONE, 16)
            assert back.read()[:16 * 4096] == data.read()[:16 * 4096]
        assert namespace.report_zones(4 * ZONE, 1)[0].write_pointer == 4 * ZONE + 48
        limit = namespace.zone_append_max_bytes // 4096
        with controller.allocate((limit + 1) * 4096) as big:
            with pytest.raises(ValueError, match="Zone Append size limit"):
                namespace.append(big, 7 * ZONE)
            with pytest.raises(ValueError, match="Zone Append size limit"):
                namespace.append_async(big, 7 * ZONE)
        with pytest.raises(ValueError, match="does not start a zone"):
            namespace.append(data, 7 * ZONE + 1, 1)


@pytest.mark.parametrize("name, code, call", [
    ("Zone Boundary Error", errno.EIO, lambda ns, data: ns.write(data, 10 * ZONE + CAPACITY - 4, 8)),
    ("Zone Is Full", errno.EIO, lambda ns, data: (ns.finish_zone(11 * ZONE), ns.write(data, 11 * ZONE, 1))),
    ("Zone Is Read Only", errno.EIO, lambda ns, data: ns.write(data, 60 * ZONE, 1)),
    ("Zone Is Offline", errno.EIO, lambda ns, data: ns.read(data, 61 * ZONE, 1)),
    ("Zone Invalid Write", errno.EIO, lambda ns, data: ns.write(data, 12 * ZONE + 1, 1)),
    ("Invalid Zone State Transition", errno.EIO, lambda ns, data: ns.close_zone(13 * ZONE)),
])
def test_zone_errors(zoned, name, code, call):
    controller, namespace = zoned
    with controller.allocate(8 * 4096) as data:
        if name == "Zone Boundary Error":
            with controller.allocate((CAPACITY - 4) * 4096) as fill:
                namespace.write(fill, 10 * ZONE)
        with pytest.raises(nvmeof.NvmeError) as raised:
            call(namespace, data)
    assert raised.value.name == name
    assert name in str(raised.value)
    assert raised.value.errno == code


def test_zone_resource_errors(zoned):
    controller, namespace = zoned
    for index in range(20, 24):
        namespace.open_zone(index * ZONE)
    with pytest.raises(nvmeof.NvmeError) as raised:
        namespace.open_zone(24 * ZONE)
    assert raised.value.name == "Too Many Open Zones"
    assert raised.value.errno == errno.ETOOMANYREFS
    namespace.close_zone(select_all=True)  # still active
    namespace.open_zone(24 * ZONE)
    namespace.open_zone(25 * ZONE)
    with pytest.raises(nvmeof.NvmeError) as raised:
        namespace.open_zone(26 * ZONE)
    assert raised.value.name == "Too Many Active Zones"
    assert raised.value.errno == errno.EOVERFLOW
    # The asynchronous path raises the same from its future.
    with controller.allocate(4096) as data:
        with pytest.raises(nvmeof.NvmeError) as raised:
            namespace.write_async(data, 27 * ZONE, 1).result(30)
        assert raised.value.errno == errno.EOVERFLOW
        with pytest.raises(nvmeof.NvmeError) as raised:
            namespace.append_async(data, 27 * ZONE, 1).result(30)
        assert raised.value.name == "Too Many Active Zones"


# The target's reorder-io fault holds commands over NVMe/RDMA only.
@rdma_only
def test_split_writes_in_order_under_a_reordering_target(fresh_target_factory):
    # Every third command of a queue runs after the next one; whole zones of
    # eight commands each, four at once, arrive in order all the same.
    with fresh_target_factory("--fault", "reorder-io=3", namespace="ram:64M:4096:zoned=1M") as target, \
            connect(target, io_queues=2) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(4 * ZONE * 4096) as data:
            data.write(bytes(range(251)) * (len(data) // 251) + bytes(len(data) % 251))
            futures = [namespace.write_async(data, i * ZONE, ZONE, buffer_offset=i * ZONE * 4096)
                       for i in range(4)]
            for future in futures:
                assert future.result(30) is None
            namespace.write(data, 4 * ZONE, ZONE)
            assert all(z.state == ZoneState.FULL for z in namespace.report_zones(0, 5))
            with controller.allocate(4 * ZONE * 4096) as back:
                namespace.read(back, 0, 4 * ZONE)
                assert back.read() == data.read()
