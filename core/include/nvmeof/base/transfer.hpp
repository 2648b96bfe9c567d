// One logical transfer and its outcome: what a program hands IoQueue::submit
// and gets back from poll().
//
// The base layer's: the transport takes and answers these as they are (no
// copy on the data path). Programs include nvmeof/queue.hpp.
#pragma once

#include <cstdint>

#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/memory.hpp"
#include "nvmeof/base/protection.hpp"

namespace nvmeof {

// compare: the controller compares the blocks with the buffer's (Compare,
// Identify ONCS bit 0); its data travels host to controller as a write's.
// zone_append: a zoned namespace's Zone Append to the zone starting at slba;
// the controller picks where in the zone (Completion::append_lba). Never cut
// at MDTS: above one command's worth, or the namespace's Zone Append limit,
// it is refused (invalid, EINVAL).
// A new Op goes last, its opcode into the transport's kOpcodeOf table.
enum class Op : std::uint8_t { read, write, flush, write_zeroes, deallocate, compare, zone_append };

// The operations whose blocks travel through a memory region: read, write,
// compare and zone_append; and of those, the ones that send them.
constexpr bool carries_data(Op op) noexcept {
    // Two compares where the data path tests it: the dataless ones lie between.
    static_assert(Op::write < Op::flush && Op::deallocate < Op::compare &&
                  Op::compare < Op::zone_append);
    return op <= Op::write || op >= Op::compare;
}
constexpr bool sends_data(Op op) noexcept {
    return op == Op::write || op == Op::compare || op == Op::zone_append;
}

// One logical transfer. Above the controller's maximum transfer size (MDTS) or
// 65,536 blocks it is split into several commands (pieces); it completes once,
// when every piece has, with the first error of any piece. Pieces that find no
// free slot (a transfer may need more than the whole queue holds) wait in the
// queue and are posted, in order, as poll() frees slots. On a zoned namespace
// a split write or Write Zeroes has one piece in flight at a time, the next
// sent once the one before it succeeded (none after an error).
struct Transfer {
    Op op = Op::read;
    std::uint64_t slba = 0;
    std::uint64_t blocks = 0;              // ignored for flush
    const MemoryRegion* memory = nullptr;  // read/write/compare only
    std::uint64_t offset = 0;              // byte offset into memory
    std::uint64_t user_data = 0;           // handed back in Completion
    Protection protection{};               // PRACT, PRCHK and tags (PI namespaces)
};

// The range rules of a transfer, in one place: its LBA range lies inside the
// namespace (flush has none), and a data transfer's blocks of `block_bytes`
// (data, and the metadata that travels) from `offset` lie inside its memory
// region. check_transfer() (nvmeof/queue.hpp)
// says which failed in words; the data path's submit asks the same questions
// and answers SubmitResult::invalid.
constexpr bool lba_range_fits(Op op, std::uint64_t slba, std::uint64_t blocks,
                              std::uint64_t size_lbas) noexcept {
    return op == Op::flush || (blocks != 0 && slba < size_lbas && blocks <= size_lbas - slba);
}
// The first test keeps the product of the third from overflowing.
constexpr bool buffer_range_fits(std::uint64_t blocks, std::uint32_t block_bytes,
                                 std::uint64_t offset, std::uint64_t region_bytes) noexcept {
    return blocks <= region_bytes / block_bytes && offset <= region_bytes &&
           blocks * block_bytes <= region_bytes - offset;
}

enum class SubmitResult : std::uint8_t {
    queued,   // accepted: posted, or partly waiting for slots that poll() frees
    busy,     // no free slot for the transfer (or the queue is reconnecting); nothing was posted
    invalid,  // refused (range, buffer, memory handle); see last_error()
    failed,   // the queue has failed or is closed; see last_error()
};

// When a transfer's send work requests are posted: at once, or with the next
// commit() (fio's queue/commit split: one post for a whole batch).
enum class Post : std::uint8_t { now, deferred };

struct Completion {
    std::uint64_t user_data = 0;
    CompletionStatus status;
    // Op::zone_append that succeeded: the first LBA the controller wrote the
    // blocks at (its CQE's DW0 and DW1). Not written for other operations
    // (the common path's completions store nothing more than they did).
    std::uint64_t append_lba = 0;
};

}  // namespace nvmeof
