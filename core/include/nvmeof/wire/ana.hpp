// Asymmetric Namespace Access (ANA): the Identify fields that announce it, the
// ANA log page (Get Log Page 0x0C) and the Asynchronous Event Request that
// reports a change (NVMe base spec 2.0, §8.1.3 and §5.16.1.12).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/command.hpp"

namespace nvmeof::wire {

enum class AnaState : std::uint8_t {
    optimized = 0x1,
    non_optimized = 0x2,
    inaccessible = 0x3,
    persistent_loss = 0x4,
    change = 0xF,
};
std::string_view ana_state_name(AnaState state);  // "optimized", "non-optimized", ...
// The inverse of ana_state_name; false for anything else.
bool parse_ana_state(std::string_view text, AnaState& state);
// Whether I/O may go through a path in this state (optimized or non-optimized).
inline bool ana_state_usable(AnaState state) {
    return state == AnaState::optimized || state == AnaState::non_optimized;
}

// Identify Controller: CMIC, OAES and ANACAP bits.
inline constexpr std::uint8_t kCmicMultipleControllers = 1u << 1;
inline constexpr std::uint8_t kCmicAnaReporting = 1u << 3;
inline constexpr std::uint32_t kOaesAnaChangeNotice = 1u << 11;
inline constexpr std::uint8_t kAnacapOptimized = 1u << 0;
inline constexpr std::uint8_t kAnacapNonOptimized = 1u << 1;
inline constexpr std::uint8_t kAnacapInaccessible = 1u << 2;
inline constexpr std::uint8_t kAnacapPersistentLoss = 1u << 3;
inline constexpr std::uint8_t kAnacapChange = 1u << 4;
inline constexpr std::uint8_t kAnacapGroupIdNoChange = 1u << 6;

// Get Log Page CDW10 LSP bit 0 for the ANA log: Return Groups Only (no NSID lists).
inline constexpr std::uint32_t kAnaLogReturnGroupsOnly = 1u << 8;

// The log page: this header, then `groups` descriptors, each followed by its
// `nsid_count` NSIDs (4 bytes each).
struct AnaLogHeader {
    std::uint64_t change_count;
    std::uint16_t groups;
    std::uint8_t reserved10[6];
};
static_assert(sizeof(AnaLogHeader) == 16);
static_assert(offsetof(AnaLogHeader, change_count) == 0);
static_assert(offsetof(AnaLogHeader, groups) == 8);

struct AnaGroupDescriptor {
    std::uint32_t group_id;
    std::uint32_t nsid_count;
    std::uint64_t change_count;
    std::uint8_t state;  // AnaState, bits 3:0
    std::uint8_t reserved17[15];
};
static_assert(sizeof(AnaGroupDescriptor) == 32);
static_assert(offsetof(AnaGroupDescriptor, group_id) == 0);
static_assert(offsetof(AnaGroupDescriptor, nsid_count) == 4);
static_assert(offsetof(AnaGroupDescriptor, change_count) == 8);
static_assert(offsetof(AnaGroupDescriptor, state) == 16);
inline constexpr std::uint8_t kAnaStateMask = 0x0F;

struct AnaGroup {
    std::uint32_t id = 0;
    std::uint64_t change_count = 0;
    AnaState state = AnaState::optimized;
    std::vector<std::uint32_t> nsids;  // empty when read with Return Groups Only
};
struct AnaLog {
    std::uint64_t change_count = 0;
    std::vector<AnaGroup> groups;
    // The group holding `nsid`, or nullptr.
    const AnaGroup* group_of(std::uint32_t nsid) const;
};

// Get Log Page 0x0C of data.length() bytes at `offset`.
Sqe ana_log_page_command(std::uint64_t offset, const SglDescriptor& data, bool groups_only);
inline bool ana_log_groups_only(const Sqe& sqe) {
    return (sqe.cdw10 & kAnaLogReturnGroupsOnly) != 0;
}
// Bytes of a log page holding these groups (their NSIDs too unless groups_only).
std::size_t ana_log_size(std::span<const AnaGroup> groups, bool groups_only);
std::vector<std::uint8_t> ana_log(std::uint64_t change_count, std::span<const AnaGroup> groups,
                                  bool groups_only);
// Throws std::runtime_error naming the cause when a descriptor or NSID list
// runs past `page`, or a state is not one of AnaState.
AnaLog parse_ana_log(std::span<const std::uint8_t> page);

// Asynchronous Event Request (admin 0x0C): held by the controller until an
// event, then completed with the event in DW0.
enum class AsyncEventType : std::uint8_t {
    error = 0x0,
    smart_health = 0x1,
    notice = 0x2,
    io_command_set = 0x6,
    vendor_specific = 0x7,
};
inline constexpr std::uint8_t kAsyncNoticeAnaChange = 0x03;
inline constexpr std::uint32_t kAsyncEventTypeMask = 0x7;
inline constexpr unsigned kAsyncEventInfoShift = 8;
inline constexpr unsigned kAsyncEventLogPageShift = 16;
inline constexpr std::uint32_t kAsyncEventByteMask = 0xFF;

struct AsyncEvent {
    AsyncEventType type = AsyncEventType::error;
    std::uint8_t info = 0;
    std::uint8_t log_page = 0;
    bool is_ana_change() const;
};
Sqe async_event_request_command();
std::uint32_t async_event_result(const AsyncEvent& event);
AsyncEvent parse_async_event(std::uint32_t dw0);
// The notice a controller sends when an ANA group's state changed.
AsyncEvent ana_change_event();

}  // namespace nvmeof::wire
