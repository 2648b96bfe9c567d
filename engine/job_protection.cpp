// A job's per-I/O work on namespaces with metadata: the file's blocks in its
// layout (block_layout.hpp), each read's and write's protection, the host's
// PI with pi_act=0, and the data-only layout's staging through the bounce
// area. Plain namespaces never come here (job.cpp's common path), nor, on a
// one-queue controller, the aligned reads and writes of a layout the host does
// nothing to (FileLayout::common_path: the common path carries its protection).
#include <cstring>
#include <span>

#include "job.hpp"

namespace nvmeof::engine {
namespace {

// A write's data-only blocks into the bounce area as the command carries
// them: each block's data, then its metadata zeroed (the controller fills in
// the PI with pi_act=1; pi_act=0 generates it next).
void stage_write(const FileLayout& l, const std::byte* data, std::uint64_t blocks,
                 std::byte* bounce) {
    const std::uint32_t data_bytes = l.format.data_bytes;
    const std::uint32_t metadata_bytes = l.wire_block_bytes - data_bytes;
    for (std::uint64_t i = 0; i < blocks; ++i, data += data_bytes, bounce += l.wire_block_bytes) {
        std::memcpy(bounce, data, data_bytes);
        std::memset(bounce + data_bytes, 0, metadata_bytes);
    }
}

// A read's blocks out of the bounce area: the data of each, into fio's buffer.
void unstage_read(const FileLayout& l, const std::byte* bounce, std::uint64_t blocks,
                  std::byte* data) {
    const std::uint32_t data_bytes = l.format.data_bytes;
    for (std::uint64_t i = 0; i < blocks; ++i, data += data_bytes, bounce += l.wire_block_bytes) {
        std::memcpy(data, bounce, data_bytes);
    }
}

}  // namespace

std::byte* Job::bounce_of(const io_u* unit) const {
    return arena_base_ + bounce_offset_ +
           static_cast<std::uint64_t>(unit->index) * bounce_slot_bytes_;
}

bool Job::build_protected_transfer(io_u* unit, const FileSlot& file, ControllerSlot& controller,
                                   Transfer& transfer) {
    const FileLayout& l = *file.layout;
    if (unit->offset % l.block_bytes != 0 || unit->xfer_buflen % l.block_bytes != 0) {
        reject_unaligned(unit, l.block_bytes);
        return false;
    }
    transfer.slba = unit->offset / l.block_bytes;
    transfer.blocks = unit->xfer_buflen / l.block_bytes;
    if (transfer.op != Op::read && transfer.op != Op::write) {
        return true;  // deallocate: LBAs only
    }
    transfer.protection = l.protection;
    transfer.memory = &controller.arena;
    auto* buffer = static_cast<std::byte*>(unit->xfer_buf);
    std::byte* wire = buffer;
    if (l.staged()) {
        if (unit->index >= bounce_slots_) {  // fio numbers io_us 0..iodepth-1
            reject(unit, EIO, "io_u beyond the bounce area's slots");
            return false;
        }
        wire = bounce_of(unit);
        if (transfer.op == Op::write) {
            stage_write(l, buffer, transfer.blocks, wire);
        }
    }
    if (transfer.op == Op::write && l.generate) {
        pi_generate(l.format, std::span(wire, transfer.blocks * l.wire_block_bytes),
                    pi_tags(l.format, l.protection, transfer.slba));
    }
    transfer.offset = static_cast<std::uint64_t>(wire - arena_base_);
    return true;
}

void Job::finish_protected_read(io_u* unit, const FileSlot& file) {
    const FileLayout& l = *file.layout;
    const std::uint64_t slba = unit->offset / l.block_bytes;
    const std::uint64_t blocks = unit->xfer_buflen / l.block_bytes;
    auto* buffer = static_cast<std::byte*>(unit->xfer_buf);
    const std::byte* wire = l.staged() ? bounce_of(unit) : buffer;
    if (l.host_checks != 0) {
        const PiMismatch mismatch =
            pi_verify(l.format, std::span(wire, blocks * l.wire_block_bytes), l.host_checks,
                      pi_tags(l.format, l.protection, slba));
        if (mismatch) {
            complete_with_error(unit, EILSEQ, describe_mismatch(mismatch, slba));
            return;
        }
    }
    if (l.staged()) {
        unstage_read(l, wire, blocks, buffer);
    }
}

}  // namespace nvmeof::engine
