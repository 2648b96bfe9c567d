#include "nvmeof/wire/zns.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/io.hpp"

namespace nvmeof::wire {
namespace {

void set_slba(Sqe& sqe, std::uint64_t slba) {
    sqe.cdw10 = static_cast<std::uint32_t>(slba);
    sqe.cdw11 = static_cast<std::uint32_t>(slba >> kSlbaHighShift);
}

}  // namespace

ZoneDescriptor zone_descriptor(std::uint8_t type, ZoneState state, std::uint64_t zslba,
                               std::uint64_t zcap, std::uint64_t wp, std::uint8_t attributes) {
    ZoneDescriptor d{};
    d.zt = type & kZoneTypeMask;
    d.zs = static_cast<std::uint8_t>(static_cast<std::uint8_t>(state) << kZoneStateShift);
    d.za = attributes;
    d.zcap = zcap;
    d.zslba = zslba;
    d.wp = wp;
    return d;
}

Sqe zone_management_send_command(std::uint32_t nsid, std::uint64_t slba, ZoneSendAction action,
                                 bool select_all) {
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(IoOpcode::zone_management_send), nsid);
    set_slba(sqe, slba);
    sqe.cdw13 = static_cast<std::uint32_t>(action) | (select_all ? 1u << kZoneSelectAllBit : 0u);
    return sqe;
}

ZoneSendRequest parse_zone_management_send(const Sqe& sqe) {
    return ZoneSendRequest{command_slba(sqe),
                           static_cast<ZoneSendAction>(sqe.cdw13 & kZoneActionMask),
                           ((sqe.cdw13 >> kZoneSelectAllBit) & 1u) != 0};
}

Sqe zone_management_receive_command(std::uint32_t nsid, std::uint64_t slba,
                                    ZoneReceiveAction action, ZoneReportFilter filter, bool partial,
                                    const SglDescriptor& data) {
    const std::uint64_t length = data.length();
    if (length < sizeof(ZoneReportHeader) || length % kDwordSize != 0) {
        throw std::invalid_argument(
            "Zone Management Receive takes whole dwords, at least the 64-byte report header");
    }
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(IoOpcode::zone_management_receive), nsid);
    sqe.dptr = data;
    set_slba(sqe, slba);
    sqe.cdw12 = static_cast<std::uint32_t>(length / kDwordSize - 1);  // NUMD, 0's based
    sqe.cdw13 = static_cast<std::uint32_t>(action) |
                (static_cast<std::uint32_t>(filter) << kZoneReportFilterShift) |
                (partial ? 1u << kZonePartialReportBit : 0u);
    return sqe;
}

ZoneReceiveRequest parse_zone_management_receive(const Sqe& sqe) {
    ZoneReceiveRequest request;
    request.slba = command_slba(sqe);
    request.action = static_cast<ZoneReceiveAction>(sqe.cdw13 & kZoneActionMask);
    request.filter =
        static_cast<std::uint8_t>((sqe.cdw13 >> kZoneReportFilterShift) & kZoneReportFilterMask);
    request.partial = ((sqe.cdw13 >> kZonePartialReportBit) & 1u) != 0;
    request.length = (std::uint64_t{sqe.cdw12} + 1) * kDwordSize;
    return request;
}

ZoneReport parse_zone_report(std::span<const std::uint8_t> data) {
    if (data.size() < sizeof(ZoneReportHeader)) {
        throw std::runtime_error("a zone report of " + std::to_string(data.size()) +
                                 " bytes is shorter than its 64-byte header");
    }
    ZoneReportHeader header{};
    std::memcpy(&header, data.data(), sizeof header);
    ZoneReport report;
    report.nr_zones = header.nr_zones;
    const std::size_t room = (data.size() - sizeof header) / sizeof(ZoneDescriptor);
    const auto count =
        static_cast<std::size_t>(std::min<std::uint64_t>(header.nr_zones, std::uint64_t{room}));
    report.zones.resize(count);
    std::memcpy(report.zones.data(), data.data() + sizeof header, count * sizeof(ZoneDescriptor));
    return report;
}

Sqe zone_append_command(std::uint32_t nsid, std::uint64_t zslba, std::uint32_t blocks,
                        const RemoteBuffer& buffer, std::uint32_t lba_size) {
    // A Zone Append's fields are a Write's: ZSLBA where the SLBA is, NLB, the data.
    Sqe sqe = rw_command(IoOpcode::write, nsid, zslba, blocks, buffer, lba_size);
    sqe.opcode = static_cast<std::uint8_t>(IoOpcode::zone_append);
    return sqe;
}

}  // namespace nvmeof::wire
