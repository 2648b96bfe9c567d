// Submission and completion queue entries, opcodes, and command names.
#pragma once

#include <cstdint>
#include <string_view>

#include "nvmeof/wire/common.hpp"
#include "nvmeof/wire/sgl.hpp"

namespace nvmeof::wire {

enum class AdminOpcode : std::uint8_t {
    get_log_page = 0x02,
    identify = 0x06,
    abort = 0x08,
    set_features = 0x09,
    get_features = 0x0A,
    async_event_request = 0x0C,
    keep_alive = 0x18,
    fabrics = 0x7F,
};

enum class IoOpcode : std::uint8_t {
    flush = 0x00,
    write = 0x01,
    read = 0x02,
    write_uncorrectable = 0x04,
    compare = 0x05,
    write_zeroes = 0x08,
    dataset_management = 0x09,
    // The Zoned Namespace command set's own (wire/zns.hpp).
    zone_management_send = 0x79,
    zone_management_receive = 0x7A,
    zone_append = 0x7D,
};

inline constexpr std::uint8_t kFabricsOpcode = static_cast<std::uint8_t>(AdminOpcode::fabrics);

// Fabrics command types (SQE byte 4 when the opcode is 0x7F).
enum class FabricsType : std::uint8_t {
    property_set = 0x00,
    connect = 0x01,
    property_get = 0x04,
    authentication_send = 0x05,
    authentication_receive = 0x06,
    disconnect = 0x08,
};

// Bits 1:0 of an opcode (or of FCTYPE for Fabrics commands) give the direction.
enum class DataDirection : std::uint8_t {
    none = 0,
    host_to_controller = 1,
    controller_to_host = 2,
    bidirectional = 3,
};
inline constexpr std::uint8_t kDirectionMask = 0x3;

constexpr DataDirection direction_of(std::uint8_t opcode_or_fctype) {
    return static_cast<DataDirection>(opcode_or_fctype & kDirectionMask);
}

// SQE byte 1. PSDT (bits 7:6) = 01b selects SGLs with MPTR as a plain buffer,
// which every fabrics capsule must use (nvmet refuses anything else, even on
// Connect); FUSE (bits 1:0) stays 0.
inline constexpr unsigned kPsdtShift = 6;
inline constexpr std::uint8_t kPsdtMask = 0x3 << kPsdtShift;
inline constexpr std::uint8_t kFuseMask = 0x3;
inline constexpr std::uint8_t kPsdtSglMptrContiguous = 0x1;
inline constexpr std::uint8_t kCommandFlagsSgl = kPsdtSglMptrContiguous << kPsdtShift;  // 0x40

// Submission queue entry (64 bytes).
struct Sqe {
    std::uint8_t opcode;
    std::uint8_t flags;
    std::uint16_t command_id;
    std::uint32_t nsid;
    std::uint32_t cdw2;
    std::uint32_t cdw3;
    std::uint64_t metadata_pointer;
    SglDescriptor dptr;  // "SGL1"
    std::uint32_t cdw10;
    std::uint32_t cdw11;
    std::uint32_t cdw12;
    std::uint32_t cdw13;
    std::uint32_t cdw14;
    std::uint32_t cdw15;
};
static_assert(sizeof(Sqe) == kSqeSize);
static_assert(offsetof(Sqe, opcode) == 0);
static_assert(offsetof(Sqe, flags) == 1);
static_assert(offsetof(Sqe, command_id) == 2);
static_assert(offsetof(Sqe, nsid) == 4);
static_assert(offsetof(Sqe, cdw2) == 8);
static_assert(offsetof(Sqe, cdw3) == 12);
static_assert(offsetof(Sqe, metadata_pointer) == 16);
static_assert(offsetof(Sqe, dptr) == 24);
static_assert(offsetof(Sqe, cdw10) == 40);
static_assert(offsetof(Sqe, cdw11) == 44);
static_assert(offsetof(Sqe, cdw12) == 48);
static_assert(offsetof(Sqe, cdw13) == 52);
static_assert(offsetof(Sqe, cdw14) == 56);
static_assert(offsetof(Sqe, cdw15) == 60);
static_assert(std::is_trivially_copyable_v<Sqe>);

// A fresh SQE with PSDT = SGL and a zero-length keyed descriptor: the base every
// builder starts from, so no capsule can leave with byte 1 ≠ 0x40 or an all-zero
// DPTR.
inline Sqe make_sqe(std::uint8_t opcode, std::uint32_t nsid = 0) {
    Sqe sqe{};
    sqe.opcode = opcode;
    sqe.flags = kCommandFlagsSgl;
    sqe.nsid = nsid;
    sqe.dptr = zero_length_keyed();
    return sqe;
}

// Completion queue entry (16 bytes).
struct Cqe {
    std::uint32_t dw0;  // command-specific result (CNTLID, property value, features)
    std::uint32_t dw1;  // upper half of an 8-byte property value
    std::uint16_t sq_head;
    std::uint16_t sq_id;
    std::uint16_t command_id;
    std::uint16_t status;  // phase bit 0, then the status field; see status.hpp

    std::uint64_t result64() const {
        return static_cast<std::uint64_t>(dw0) | (static_cast<std::uint64_t>(dw1) << 32);
    }
};
static_assert(sizeof(Cqe) == kCqeSize);
static_assert(offsetof(Cqe, dw0) == 0);
static_assert(offsetof(Cqe, dw1) == 4);
static_assert(offsetof(Cqe, sq_head) == 8);
static_assert(offsetof(Cqe, sq_id) == 10);
static_assert(offsetof(Cqe, command_id) == 12);
static_assert(offsetof(Cqe, status) == 14);
static_assert(std::is_trivially_copyable_v<Cqe>);

enum class QueueKind : std::uint8_t { admin, io };

// Human-readable command name ("Identify", "Fabrics Connect", "Read"), for errors
// and logs. Admin and I/O opcodes overlap, so the queue kind is needed.
std::string_view command_name(std::uint8_t opcode, QueueKind queue, std::uint8_t fctype = 0);
std::string_view command_name(const Sqe& sqe, QueueKind queue);

}  // namespace nvmeof::wire
