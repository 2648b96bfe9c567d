// Fuzz target: NVMe/RDMA CM private data (request on the target; reply and
// reject on the host), at every length a peer may send (0 to 255 bytes; the
// parsers see a pointer and a length, and must not read past that length).
// Input: a selector byte, then the private data.
#include <cstring>
#include <memory>
#include <string>

#include "fuzz_bytes.hpp"
#include "nvmeof/wire/rdma_cm.hpp"

namespace wire = nvmeof::wire;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

namespace {

// The private data in an allocation of exactly its length, so ASan sees any
// read past it.
std::unique_ptr<std::uint8_t[]> exact_copy(std::span<const std::uint8_t> bytes) {
    auto copy = std::make_unique<std::uint8_t[]>(bytes.size());
    if (!bytes.empty()) {
        std::memcpy(copy.get(), bytes.data(), bytes.size());
    }
    return copy;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    const auto selector = in.take<std::uint8_t>();
    const std::span<const std::uint8_t> rest = in.rest();
    const std::span<const std::uint8_t> bytes = rest.first(std::min<std::size_t>(rest.size(), 255));
    const auto copy = exact_copy(bytes);
    const void* pdata = bytes.empty() && (selector & 0x80) != 0 ? nullptr : copy.get();
    switch (selector % 3) {
        case 0: {
            const auto request = wire::parse_rdma_cm_request(pdata, bytes.size());
            require(request.has_value() ==
                        (pdata != nullptr && bytes.size() >= sizeof(wire::RdmaCmRequest)),
                    "a CM request parsed from too few bytes, or refused with enough");
            break;
        }
        case 1: {
            const auto reply = wire::parse_rdma_cm_reply(pdata, bytes.size());
            require(reply.has_value() ==
                        (pdata != nullptr && bytes.size() >= sizeof(wire::RdmaCmReply)),
                    "a CM reply parsed from too few bytes, or refused with enough");
            break;
        }
        default: {
            const auto reject = wire::parse_rdma_cm_reject(pdata, bytes.size());
            require(reject.has_value() ==
                        (pdata != nullptr && bytes.size() >= sizeof(wire::RdmaCmReject)),
                    "a CM reject parsed from too few bytes, or refused with enough");
            if (reject) {
                require(!wire::reject_status_name(reject->status).empty(),
                        "a reject status without a name");
            }
            break;
        }
    }
    return 0;
}
