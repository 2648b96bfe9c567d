// The fields of an I/O command that every transport writes the same way: the
// opcode of each Op, the starting LBA, PRINFO and the protection tags, and
// the fields of a read, write or compare command other than its data
// pointer (which the transport sets: a keyed SGL or in-capsule data over
// RDMA). Inline, for the per-I/O path.
#pragma once

#include <cstdint>
#include <iterator>

#include "nvmeof/base/namespace_ref.hpp"
#include "nvmeof/base/response.hpp"
#include "nvmeof/base/transfer.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/io.hpp"

namespace nvmeof::detail {

// Each Op's NVMe opcode, by its value: the data path builds every data
// command's SQE with it, and a failed transfer's status names it.
inline constexpr wire::IoOpcode kOpcodeOf[] = {
    wire::IoOpcode::read,
    wire::IoOpcode::write,
    wire::IoOpcode::flush,
    wire::IoOpcode::write_zeroes,
    wire::IoOpcode::dataset_management,
    wire::IoOpcode::compare,
    wire::IoOpcode::zone_append,
};
static_assert(std::size(kOpcodeOf) == static_cast<std::size_t>(Op::zone_append) + 1,
              "an opcode for every Op (zone_append is the last)");

inline wire::IoOpcode opcode_of(Op op) noexcept {
    return kOpcodeOf[static_cast<std::size_t>(op)];
}

// A one-command transfer's PRINFO and tag words as its SQE carries them,
// worked out before the command is filled so that each word is stored once;
// all zero on a plain namespace.
struct CommandProtection {
    std::uint32_t cdw12_bits = 0;
    wire::CommandTagWords words{};
    std::uint32_t cdw15 = 0;
};

inline void set_slba(wire::Sqe& sqe, std::uint64_t slba) {
    sqe.cdw10 = static_cast<std::uint32_t>(slba);
    sqe.cdw11 = static_cast<std::uint32_t>(slba >> wire::kSlbaHighShift);
}

// The storage tag's part of a command's storage and reference space; none
// without a storage tag (the space is the reference tag alone).
inline wire::CommandTagWords storage_words(const NamespaceRef& ns, const Protection& p) noexcept {
    return ns.format.storage_tag_bits == 0 ? wire::CommandTagWords{}
                                           : wire::command_tag_words(ns.format, p.storage_tag, 0);
}

// A one-command transfer's PRINFO and tag words (all zero where the namespace
// has no PI: the controller ignores PRINFO there, and so does the host).
inline CommandProtection command_protection(const NamespaceRef& ns, const Transfer& t) noexcept {
    if (!ns.pi) [[unlikely]] {
        return {};
    }
    const Protection& p = t.protection;
    return {wire::prinfo_cdw12_bits(p.prinfo),
            wire::with_reftag(storage_words(ns, p), initial_reftag(p, t.slba) & ns.reftag_mask),
            wire::apptag_cdw15(p.apptag, p.apptag_mask)};
}

// A read, write or compare command's SQE in place, every field written but
// the data pointer (dptr), which the transport sets next; with its PRINFO
// and tag words (none: all zero).
[[gnu::always_inline]] inline void fill_data_command(wire::Sqe& sqe, std::uint16_t cid, Op op,
                                                     std::uint32_t nsid, std::uint64_t slba,
                                                     std::uint64_t blocks,
                                                     const CommandProtection& protection) noexcept {
    sqe.opcode = static_cast<std::uint8_t>(opcode_of(op));
    sqe.flags = wire::kCommandFlagsSgl;
    sqe.command_id = cid;
    sqe.nsid = nsid;
    sqe.cdw2 = protection.words.cdw2;
    sqe.cdw3 = protection.words.cdw3;
    sqe.metadata_pointer = 0;
    set_slba(sqe, slba);
    sqe.cdw12 = static_cast<std::uint32_t>(blocks - 1) | protection.cdw12_bits;
    sqe.cdw13 = 0;
    sqe.cdw14 = protection.words.cdw14;
    sqe.cdw15 = protection.cdw15;
}

// A general-path piece that moves no data through a memory region, the whole
// SQE with the wire builders (their checks hold: 1..kMaxBlocksPerCommand
// blocks, one range): Flush, Write Zeroes, or Deallocate, whose one range is
// written to `range` and described by `range_buffer` (the transport's way of
// naming that memory). Off the common path.
inline wire::Sqe dataless_command(Op op, std::uint32_t nsid, std::uint64_t slba,
                                  std::uint64_t blocks, wire::DsmRange& range,
                                  const wire::RemoteBuffer& range_buffer) {
    switch (op) {
        case Op::deallocate:
            range = wire::DsmRange{0, static_cast<std::uint32_t>(blocks), slba};
            return wire::dataset_management_command(nsid, 1, wire::kDsmAttributeDeallocate,
                                                    range_buffer);
        case Op::write_zeroes:
            return wire::write_zeroes_command(nsid, slba, static_cast<std::uint32_t>(blocks));
        case Op::flush:
        case Op::read:  // not here: the transport's set_data
        case Op::write:
        case Op::compare:
        case Op::zone_append:
            break;
    }
    return wire::flush_command(nsid);
}

}  // namespace nvmeof::detail
