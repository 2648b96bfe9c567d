#include "nvmeof/wire/identify.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace nvmeof::wire {

inline constexpr std::uint32_t kMaxLbaDataShift = 31;

Sqe identify_command(IdentifyCns cns, std::uint32_t nsid, const SglDescriptor& data) {
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(AdminOpcode::identify), nsid);
    sqe.dptr = data;
    sqe.cdw10 = static_cast<std::uint32_t>(cns);
    return sqe;
}

Sqe identify_command_set_namespace(std::uint32_t nsid, std::uint8_t csi,
                                   const SglDescriptor& data) {
    Sqe sqe = identify_command(IdentifyCns::io_command_set_namespace, nsid, data);
    sqe.cdw11 = std::uint32_t{csi} << kIdentifyCsiShift;
    return sqe;
}

Sqe identify_command_set_controller(std::uint8_t csi, const SglDescriptor& data) {
    Sqe sqe = identify_command(IdentifyCns::io_command_set_controller, 0, data);
    sqe.cdw11 = std::uint32_t{csi} << kIdentifyCsiShift;
    return sqe;
}

Sqe identify_command_set_combinations(std::uint16_t cntlid, const SglDescriptor& data) {
    Sqe sqe = identify_command(IdentifyCns::io_command_set_combinations, 0, data);
    sqe.cdw10 |= std::uint32_t{cntlid} << kIdentifyCntidShift;
    return sqe;
}

namespace {

BlockFormat block_format(const IdentifyNamespace& ns, const IdentifyNvmNamespace* nvm,
                         unsigned index) {
    const LbaFormat& lbaf = ns.lbaf[index];
    BlockFormat f;
    f.data_bytes = 1u << lbaf.lbads;
    f.metadata_bytes = lbaf.ms;
    if (f.metadata_bytes != 0 && (ns.flbas & kFlbasExtendedMetadata) == 0) {
        throw std::runtime_error(
            "the LBA format keeps " + std::to_string(lbaf.ms) +
            " metadata bytes per block in a separate buffer, which NVMe over Fabrics cannot "
            "carry (it transfers metadata only as an extended LBA; reformat with FLBAS bit 4)");
    }
    const unsigned type = ns.dps & kDpsPiTypeMask;
    if (type > static_cast<unsigned>(PiType::type3)) {
        throw std::runtime_error("Identify Namespace reports reserved PI type " +
                                 std::to_string(type));
    }
    f.pi_type = static_cast<PiType>(type);
    f.pi_first = (ns.dps & kDpsPiFirst) != 0;
    if (nvm != nullptr) {
        const std::uint32_t elbaf = nvm->elbaf[index];
        const auto pif = (elbaf >> kElbafPiFormatShift) & kElbafPiFormatMask;
        if (pif > static_cast<unsigned>(PiGuard::crc64)) {
            throw std::runtime_error(
                "the LBA format reports reserved protection information format "
                "(PIF " +
                std::to_string(pif) + ")");
        }
        const unsigned sts = elbaf & kElbafStorageTagMask;
        if (f.pi_type != PiType::none && !storage_tag_bits_valid(static_cast<PiGuard>(pif), sts)) {
            throw std::runtime_error("the LBA format reports a " + std::to_string(sts) +
                                     "-bit storage tag, outside what its protection information "
                                     "format (PIF " +
                                     std::to_string(pif) + ") allows");
        }
        if (f.pi_type != PiType::none) {
            f.storage_tag_bits = static_cast<std::uint8_t>(sts);
        }
        f.guard = static_cast<PiGuard>(pif);
    }
    if (f.pi_bytes() > f.metadata_bytes) {
        throw std::runtime_error("Identify Namespace reports PI type " + std::to_string(type) +
                                 " in " + std::to_string(f.metadata_bytes) +
                                 " metadata bytes, fewer than its " + std::to_string(f.pi_bytes()) +
                                 "-byte tuple");
    }
    return f;
}

}  // namespace

NamespaceGeometry namespace_geometry(const IdentifyNamespace& ns, const IdentifyNvmNamespace* nvm) {
    const unsigned index = ns.format_index();
    if (index > ns.nlbaf || index >= kMaxLbaFormats) {
        throw std::runtime_error("Identify Namespace selects LBA format " + std::to_string(index) +
                                 " but reports only " + std::to_string(ns.nlbaf + 1u));
    }
    const LbaFormat& format = ns.lbaf[index];
    if (format.lbads < kMinLbaDataShift || format.lbads > kMaxLbaDataShift) {
        throw std::runtime_error("Identify Namespace reports an unusable LBA data size 2^" +
                                 std::to_string(format.lbads));
    }
    // The host uses sizes in bytes (NSZE × LBA size): a size that does not fit
    // 64 bits would wrap to a small one, so it is refused.
    if (ns.nsze > (std::numeric_limits<std::uint64_t>::max() >> format.lbads)) {
        throw std::runtime_error("Identify Namespace reports NSZE " + std::to_string(ns.nsze) +
                                 " blocks of 2^" + std::to_string(format.lbads) +
                                 " bytes, more than 2^64 bytes");
    }
    NamespaceGeometry g;
    g.size_blocks = ns.nsze;
    g.capacity_blocks = ns.ncap;
    g.lba_size = 1u << format.lbads;
    g.format = block_format(ns, nvm, index);
    if (nvm != nullptr) {
        g.storage_tag_mask = nvm->lbstm;
    }
    return g;
}

std::vector<std::uint32_t> parse_active_namespaces(const ActiveNamespaceList& list) {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t nsid : list.nsid) {
        if (nsid == 0) {
            break;
        }
        ids.push_back(nsid);
    }
    return ids;
}

std::vector<NamespaceIdDescriptor> parse_namespace_descriptors(
    std::span<const std::uint8_t, kIdentifyDataSize> page) {
    std::vector<NamespaceIdDescriptor> out;
    std::size_t offset = 0;
    while (offset + sizeof(NamespaceIdDescriptorHeader) <= page.size()) {
        NamespaceIdDescriptorHeader header;
        std::memcpy(&header, page.data() + offset, sizeof header);
        if (header.nidt == 0) {
            break;
        }
        const std::size_t body = offset + sizeof header;
        if (body + header.nidl > page.size()) {
            throw std::runtime_error("namespace identification descriptor runs past the page");
        }
        out.push_back({static_cast<NamespaceIdType>(header.nidt),
                       std::vector<std::uint8_t>(
                           page.begin() + static_cast<std::ptrdiff_t>(body),
                           page.begin() + static_cast<std::ptrdiff_t>(body + header.nidl))});
        offset = body + header.nidl;
    }
    return out;
}

std::size_t append_namespace_descriptor(std::span<std::uint8_t, kIdentifyDataSize> page,
                                        std::size_t offset, NamespaceIdType type,
                                        std::span<const std::uint8_t> id) {
    const std::size_t end = offset + sizeof(NamespaceIdDescriptorHeader) + id.size();
    if (end > page.size() || id.size() > 0xFF) {
        return 0;
    }
    NamespaceIdDescriptorHeader header{static_cast<std::uint8_t>(type),
                                       static_cast<std::uint8_t>(id.size()), 0};
    std::memcpy(page.data() + offset, &header, sizeof header);
    std::memcpy(page.data() + offset + sizeof header, id.data(), id.size());
    return end;
}

}  // namespace nvmeof::wire
