// How fio's buffer holds a namespace's blocks, per file: on a namespace with
// metadata (and protection information) fio's block sizes pick one of two
// layouts, and the protection options say what each read and write asks of
// the controller and what the host does itself. Pure logic, no fio headers,
// so it is unit-tested on its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nvmeof/protection.hpp"
#include "option_rules.hpp"

namespace nvmeof::engine {

enum class BufferLayout : std::uint8_t {
    // No metadata travels (none on the namespace, or PRACT with metadata that
    // is all PI): fio's buffer is the data, block for block.
    plain,
    // fio's buffer is the command's: each block's data followed by its
    // metadata (SPDK's plugin's layout; bs a multiple of data + metadata).
    interleaved,
    // fio's buffer holds the data only (bs a multiple of the data size); each
    // I/O is staged through the engine's own registered bounce area, where
    // the metadata is added on the way out and dropped on the way in.
    data_only,
};

std::string_view layout_name(BufferLayout layout);  // "plain", "interleaved", "data-only"

struct FileLayout {
    BufferLayout layout = BufferLayout::plain;
    BlockFormat format{};
    std::uint32_t block_bytes = 0;       // per block in fio's buffer: file size and offsets
    std::uint32_t wire_block_bytes = 0;  // per block in the command's buffer
    Protection protection{};             // of every read and write
    bool generate = false;               // the host writes the PI (pi_act=0)
    std::uint8_t host_checks = 0;        // PRCHK bits the host checks on reads (pi_act=0)
    bool pi_options_apply = false;       // the namespace has PI: pi_act and pi_chk mean something

    bool staged() const { return layout == BufferLayout::data_only; }
    // Work for the host on each read's completion.
    bool finishes_reads() const { return staged() || host_checks != 0; }
    // The host touches the bytes of an I/O (not possible in GPU memory).
    bool host_work() const { return staged() || generate || host_checks != 0; }
    // fio's buffer is the command's, block for block of the data size, and the
    // host does nothing to it (PRACT with metadata that is all PI): a read or
    // write is the plain one with this layout's protection, and takes the
    // engine's common path as a plain namespace's does.
    bool common_path() const { return layout == BufferLayout::plain && !host_work(); }
    // Bounce bytes one I/O of `max_bs` bytes of fio's buffer needs (0: none).
    std::uint64_t bounce_bytes(std::uint64_t max_bs) const {
        return staged() ? max_bs / block_bytes * wire_block_bytes : 0;
    }
};

// The layout of a namespace of `format` for the job's block sizes (every
// minimum and maximum, of each direction): interleaved when each is a multiple
// of data + metadata, else data-only when each is a multiple of the data size.
// Throws SpecError naming the block size, both sizes and `where` (the
// namespace) when one fits neither, or the data size on a plain namespace.
FileLayout choose_layout(const BlockFormat& format, const ProtectionOptions& options,
                         std::span<const std::uint64_t> block_sizes, std::string_view where);

// "512+8, PI type 1 (guard 16, at the end)", "4096" for a plain format.
std::string format_name(const BlockFormat& format);
// For the start-up line: format, layout and what the host and controller do.
std::string describe_layout(const FileLayout& layout);

// The one line of a PI mismatch the host found in a read from `first_lba`,
// in the words of the controller's status for the same check.
std::string describe_mismatch(const PiMismatch& mismatch, std::uint64_t first_lba);

}  // namespace nvmeof::engine
