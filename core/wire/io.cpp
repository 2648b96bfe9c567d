#include "nvmeof/wire/io.hpp"

#include <stdexcept>

namespace nvmeof::wire {
namespace {

std::uint32_t zero_based_blocks(std::uint32_t blocks) {
    if (blocks == 0 || blocks > kMaxBlocksPerCommand) {
        throw std::invalid_argument("one NVMe command carries 1 to 65536 blocks");
    }
    return blocks - 1;
}

void set_slba(Sqe& sqe, std::uint64_t slba) {
    sqe.cdw10 = static_cast<std::uint32_t>(slba);
    sqe.cdw11 = static_cast<std::uint32_t>(slba >> kSlbaHighShift);
}

}  // namespace

Sqe rw_command(IoOpcode opcode, std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
               const RemoteBuffer& buffer, std::uint32_t lba_size) {
    if (opcode != IoOpcode::read && opcode != IoOpcode::write) {
        throw std::invalid_argument("rw_command takes only Read or Write");
    }
    const std::uint32_t nlb = zero_based_blocks(blocks);
    if (lba_size == 0) {
        throw std::invalid_argument("LBA size must be positive");
    }
    const std::uint64_t length = std::uint64_t{blocks} * lba_size;
    if (length > kMaxKeyedSglLength) {
        throw std::invalid_argument("one keyed SGL descriptor carries at most 16 MiB - 1 bytes");
    }
    if (length > buffer.length) {
        throw std::invalid_argument("transfer is longer than the registered buffer");
    }
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(opcode), nsid);
    sqe.dptr = keyed_data_block(buffer.address, static_cast<std::uint32_t>(length), buffer.rkey);
    set_slba(sqe, slba);
    sqe.cdw12 = nlb;
    return sqe;
}

Sqe flush_command(std::uint32_t nsid) {
    return make_sqe(static_cast<std::uint8_t>(IoOpcode::flush), nsid);
}

Sqe write_zeroes_command(std::uint32_t nsid, std::uint64_t slba, std::uint32_t blocks,
                         bool deallocate) {
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(IoOpcode::write_zeroes), nsid);
    set_slba(sqe, slba);
    sqe.cdw12 = zero_based_blocks(blocks) | (deallocate ? 1u << kWriteZeroesDeallocateBit : 0u);
    return sqe;
}

Sqe dataset_management_command(std::uint32_t nsid, std::uint32_t ranges, std::uint32_t attributes,
                               const RemoteBuffer& buffer) {
    if (ranges == 0 || ranges > kDsmMaxRanges) {
        throw std::invalid_argument("Dataset Management carries 1 to 256 ranges");
    }
    const std::uint64_t length = std::uint64_t{ranges} * sizeof(DsmRange);
    if (length > buffer.length) {
        throw std::invalid_argument("range list is longer than the registered buffer");
    }
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(IoOpcode::dataset_management), nsid);
    sqe.dptr = keyed_data_block(buffer.address, static_cast<std::uint32_t>(length), buffer.rkey);
    sqe.cdw10 = ranges - 1;
    sqe.cdw11 = attributes;
    return sqe;
}

}  // namespace nvmeof::wire
