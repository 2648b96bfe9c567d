// What the data path reads of a namespace on every submission, worked out
// once when the Namespace is made (Namespace::ref()).
//
// The base layer's: IoQueue::submit hands it to the transport as it is.
// Programs include nvmeof/namespace.hpp.
#pragma once

#include <cstdint>

#include "nvmeof/base/protection.hpp"

namespace nvmeof {

// Everything about a namespace that the data path needs for a transfer.
struct NamespaceRef {
    std::uint32_t nsid = 0;
    std::uint32_t lba_shift = 0;  // log2 of the block's data size (a power of two)
    std::uint64_t size_lbas = 0;
    // Blocks with metadata (format.metadata_bytes non-zero): submit sends
    // every transfer to submit_with_metadata, which sizes them by the fields
    // below, sets PRINFO and tags, and builds one that fits one command as the
    // plain common path does.
    BlockFormat format{};
    std::uint64_t reftag_mask = 0;  // format.reftag_mask(), kept ready for PRINFO and tags
    // Worked out once from `format`, so that a transfer tests nothing the
    // namespace cannot have: bytes per block in a transfer's buffer
    // (format.transfer_block_bytes) without and with PRACT, and whether PRINFO
    // and tags apply (the format has PI).
    std::uint32_t block_bytes_by_pract[2] = {};
    bool pi = false;
    // A zoned namespace: a write or Write Zeroes cut into several commands
    // sends each only once the one before it completed (a zone takes writes
    // at its write pointer alone). Tested on the general path only: a
    // transfer in one command needs no order.
    bool ordered_writes = false;
    // The largest Zone Append in bytes of the buffer; 0: none (a namespace
    // that is not zoned, or a controller without Zone Append).
    std::uint64_t zone_append_max_bytes = 0;
    std::uint32_t buffer_block_bytes(const Protection& p) const noexcept {
        return block_bytes_by_pract[p.pract() ? 1 : 0];
    }
};

}  // namespace nvmeof
