// Fuzz target: the Identify data the host reads and what it derives from it.
// Input: a selector byte (which page), CAP.MPSMIN and a queue depth, then the
// 4096-byte page (zero-filled when short).
#include <array>
#include <cstdint>
#include <string>

#include "fuzz_bytes.hpp"
#include "host/negotiation.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/wire/identify.hpp"
#include "transport/transfer_split.hpp"

namespace wire = nvmeof::wire;
namespace detail = nvmeof::detail;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

namespace {

void controller_page(const wire::IdentifyController& id, std::uint64_t min_page_size,
                     std::uint32_t queue_depth) {
    // What ControllerImpl::identify_controller derives (connect limits, names).
    const std::string model(id.model());
    const std::string serial(id.serial());
    const std::string firmware(id.firmware());
    const std::string subnqn(id.subsystem_nqn());
    require(model.size() <= sizeof id.mn && serial.size() <= sizeof id.sn &&
                firmware.size() <= sizeof id.fr && subnqn.size() <= sizeof id.subnqn,
            "a text field longer than its bytes");
    const std::uint64_t mdts = detail::mdts_bytes(id.mdts, min_page_size);
    const std::uint64_t max_transfer = detail::max_transfer_bytes(mdts);
    require(mdts == 0 || max_transfer <= mdts, "max transfer above MDTS");
    for (const std::uint32_t lba_size : {512u, 4096u}) {
        (void)detail::max_blocks_per_command(max_transfer, lba_size);
    }
    try {
        const auto decision = detail::negotiate_queue_size({queue_depth, 128, id.maxcmd, 0, 0});
        require(decision.size >= detail::kMinQueueSize && decision.size <= queue_depth,
                "a negotiated queue size outside [2, asked]");
    } catch (const nvmeof::ConnectError&) {
    }
}

void namespace_page(const wire::IdentifyNamespace& ns, const wire::IdentifyNvmNamespace* nvm) {
    try {
        const wire::NamespaceGeometry g = wire::namespace_geometry(ns, nvm);
        const wire::BlockFormat& f = g.format;
        require(f.pi_bytes() <= f.metadata_bytes, "PI larger than the metadata");
        require(
            f.pi_type == wire::PiType::none || f.pi_offset() + f.pi_bytes() <= f.extended_bytes(),
            "PI outside its block");
        require(f.transfer_block_bytes(true) >= f.data_bytes &&
                    f.transfer_block_bytes(false) == f.extended_bytes(),
                "a block size in a buffer below its data or above data and metadata");
        require(g.lba_size >= 512 && (g.lba_size & (g.lba_size - 1)) == 0,
                "an LBA size that is not a power of two of at least 512");
        // Namespace::size_bytes() multiplies these: a size past 2^64 bytes
        // would wrap to a small one.
        require(g.size_blocks <= UINT64_MAX / g.lba_size,
                "a namespace size that overflows 64 bits");
    } catch (const std::runtime_error&) {
        // a page naming an unusable format is refused with a message
    }
}

void descriptor_page(std::span<const std::uint8_t, wire::kIdentifyDataSize> page) {
    try {
        std::size_t total = 0;
        for (const auto& d : wire::parse_namespace_descriptors(page)) {
            total += sizeof(wire::NamespaceIdDescriptorHeader) + d.id.size();
        }
        require(total <= page.size(), "descriptors longer than the page");
    } catch (const std::runtime_error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    const auto selector = in.take<std::uint8_t>();
    const std::uint64_t min_page_size = std::uint64_t{4096} << (in.take<std::uint8_t>() & 0xF);
    const std::uint32_t queue_depth = 2u + in.take<std::uint16_t>();
    std::array<std::uint8_t, wire::kIdentifyDataSize> page{};
    in.fill(page);
    switch (selector % 4) {
        case 0: {
            wire::IdentifyController id{};
            std::memcpy(&id, page.data(), sizeof id);
            controller_page(id, min_page_size, queue_depth);
            break;
        }
        case 1: {
            // The same bytes serve as the NVM command set's page too (ELBAF):
            // every combination of DPS, LBA format and guard type is reached.
            wire::IdentifyNamespace ns{};
            std::memcpy(&ns, page.data(), sizeof ns);
            wire::IdentifyNvmNamespace nvm{};
            std::memcpy(&nvm, page.data(), sizeof nvm);
            namespace_page(ns, (selector & 0x80) != 0 ? &nvm : nullptr);
            break;
        }
        case 2:
            descriptor_page(page);
            break;
        default: {
            wire::ActiveNamespaceList list{};
            std::memcpy(&list, page.data(), sizeof list);
            for (const std::uint32_t nsid : wire::parse_active_namespaces(list)) {
                require(nsid != 0, "NSID 0 in the active namespace list");
            }
            break;
        }
    }
    return 0;
}
