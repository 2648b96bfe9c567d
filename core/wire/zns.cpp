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

ZoneReport parse_zone_report(std::span<const std::uint8_t> data, std::uint32_t extension_bytes) {
    if (data.size() < sizeof(ZoneReportHeader)) {
        throw std::runtime_error("a zone report of " + std::to_string(data.size()) +
                                 " bytes is shorter than its 64-byte header");
    }
    ZoneReportHeader header{};
    std::memcpy(&header, data.data(), sizeof header);
    ZoneReport report;
    report.nr_zones = header.nr_zones;
    const std::size_t stride = sizeof(ZoneDescriptor) + extension_bytes;
    const std::size_t room = (data.size() - sizeof header) / stride;
    const auto count =
        static_cast<std::size_t>(std::min<std::uint64_t>(header.nr_zones, std::uint64_t{room}));
    report.zones.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
        std::memcpy(&report.zones[i], data.data() + sizeof header + i * stride,
                    sizeof(ZoneDescriptor));
    }
    return report;
}

ZonedGeometry zoned_geometry(const IdentifyZonedNamespace& zns, std::uint8_t format_index) {
    if (format_index >= kMaxLbaFormats) {
        throw std::runtime_error("LBA format " + std::to_string(format_index) +
                                 " has no zone format extension (LBAFE)");
    }
    const ZonedLbaFormatExtension& format = zns.lbafe[format_index];
    if (format.zsze == 0) {
        throw std::runtime_error("the zone size (ZSZE of LBA format " +
                                 std::to_string(format_index) + ") is 0");
    }
    // MOR and MAR are 0's based, all ones for no limit.
    const auto limit = [](std::uint32_t reported) {
        return reported == kNoZoneResourceLimit ? 0u : reported + 1;
    };
    ZonedGeometry geometry;
    geometry.zone_blocks = format.zsze;
    geometry.max_open = limit(zns.mor);
    geometry.max_active = limit(zns.mar);
    geometry.descriptor_extension_bytes = std::uint32_t{format.zdes} * kZoneDescriptorExtensionUnit;
    geometry.zoc = zns.zoc;
    geometry.ozcs = zns.ozcs;
    return geometry;
}

std::uint64_t zone_append_size_limit(std::uint8_t zasl, std::uint64_t min_page_size) {
    if (zasl == 0) {
        return 0;
    }
    constexpr unsigned kLargestShift = 40;  // beyond anything one command carries
    return zasl >= kLargestShift ? std::uint64_t{1} << 52
                                 : (std::uint64_t{1} << zasl) * min_page_size;
}

std::optional<std::uint8_t> namespace_csi(std::span<const std::uint8_t, kIdentifyDataSize> page) {
    for (const NamespaceIdDescriptor& d : parse_namespace_descriptors(page)) {
        if (d.type == NamespaceIdType::csi && d.id.size() == 1) {
            return d.id[0];
        }
    }
    return std::nullopt;
}

Sqe zone_append_command(std::uint32_t nsid, std::uint64_t zslba, std::uint32_t blocks,
                        const RemoteBuffer& buffer, std::uint32_t lba_size) {
    // A Zone Append's fields are a Write's: ZSLBA where the SLBA is, NLB, the data.
    Sqe sqe = rw_command(IoOpcode::write, nsid, zslba, blocks, buffer, lba_size);
    sqe.opcode = static_cast<std::uint8_t>(IoOpcode::zone_append);
    return sqe;
}

}  // namespace nvmeof::wire
