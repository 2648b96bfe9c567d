// Admin commands besides Identify: Set/Get Features, Keep Alive, Get Log Page.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::wire {

enum class FeatureId : std::uint8_t {
    arbitration = 0x01,
    number_of_queues = 0x07,
    async_event_configuration = 0x0B,
    keep_alive_timer = 0x0F,
    host_behavior_support = 0x16,
    // I/O Command Set Profile: CDW11 bits 8:0 select the I/O command set
    // combination (Identify CNS 0x1C) by its index, where CC.CSS is 110b.
    io_command_set_profile = 0x19,
};
inline constexpr std::uint32_t kIoCommandSetIndexMask = 0x1FF;

inline constexpr std::uint32_t kFeatureIdMask = 0xFF;
inline constexpr unsigned kFeatureSaveBit = 31;
inline constexpr unsigned kNcqrShift = 16;
inline constexpr std::uint32_t kQueueCountMask = 0xFFFF;
inline constexpr std::uint32_t kMaxQueuesPerController = 0xFFFF;  // 0's-based 0xFFFF is invalid

enum class FeatureSelect : std::uint8_t {
    current = 0,
    default_value = 1,
    saved = 2,
    capabilities = 3
};
inline constexpr unsigned kFeatureSelectShift = 8;

Sqe set_features_command(FeatureId fid, std::uint32_t cdw11);
Sqe get_features_command(FeatureId fid, FeatureSelect select = FeatureSelect::current);
inline FeatureId feature_id(const Sqe& sqe) {
    return static_cast<FeatureId>(sqe.cdw10 & kFeatureIdMask);
}

// Number of Queues: counts are 1's based here and 0's based on the wire.
struct QueueCounts {
    std::uint32_t submission = 0;
    std::uint32_t completion = 0;
    // The I/O queue pairs usable: one SQ and one CQ each.
    std::uint32_t pairs() const { return submission < completion ? submission : completion; }
};

// Throws std::invalid_argument unless 1 ≤ count ≤ 65535.
std::uint32_t number_of_queues_value(QueueCounts requested);
// Decodes Set/Get Features FID 7 (CDW11 or the CQE DW0: NSQA | NCQA << 16).
QueueCounts parse_number_of_queues(std::uint32_t value);

// Host Behavior Support (FID 0x16): 512 bytes of data in both directions, the
// host saying which optional behaviours it has enabled. A controller setting
// CTRATT bit 15 (extended LBA formats) serves it: SPDK's host refuses such a
// controller unless it accepts LBAFEE, and Linux's sends it too.
struct HostBehaviorSupport {
    std::uint8_t acre;    // advanced command retry enable
    std::uint8_t etdas;   // extended telemetry data area 4 supported
    std::uint8_t lbafee;  // LBA format extension enable
    std::uint8_t hdisns;  // host dispersed namespace support
    std::uint16_t cdfe;   // copy descriptor formats enable
    std::uint8_t reserved6[506];
};
static_assert(sizeof(HostBehaviorSupport) == 512);
static_assert(offsetof(HostBehaviorSupport, lbafee) == 2);
static_assert(offsetof(HostBehaviorSupport, cdfe) == 4);
inline constexpr std::uint32_t kHostBehaviorSupportSize = sizeof(HostBehaviorSupport);
// Each of the one-byte enables above is a boolean: 0 or 1, anything else invalid.
inline constexpr std::uint8_t kHostBehaviorEnabled = 1;

// Set Features Host Behavior Support sending `data` (kHostBehaviorSupportSize
// bytes), and Get Features reading it back into `data`.
Sqe set_host_behavior_support_command(const SglDescriptor& data);
Sqe get_host_behavior_support_command(const SglDescriptor& data);

Sqe set_number_of_queues_command(QueueCounts requested);
Sqe set_keep_alive_timer_command(std::uint32_t kato_ms);
Sqe keep_alive_command();

enum class LogPageId : std::uint8_t {
    error_information = 0x01,
    smart_health = 0x02,
    firmware_slot = 0x03,
    commands_supported = 0x05,
    ana = 0x0C,  // asymmetric namespace access (wire/ana.hpp)
    discovery = 0x70,
};

inline constexpr std::uint32_t kLogPageIdMask = 0xFF;
inline constexpr unsigned kNumdlShift = 16;
inline constexpr std::uint32_t kNumdPartMask = 0xFFFF;
inline constexpr unsigned kNumduShift = 16;
inline constexpr std::uint32_t kDwordSize = 4;
inline constexpr unsigned kLogPageCsiShift = 24;  // CDW14 bits 31:24: the command set (CSI)

// Get Log Page reading `data.length()` bytes (a multiple of 4) at byte `offset`
// (a multiple of 4), of the command set `csi` where the page is one per
// command set (Commands Supported and Effects). Throws std::invalid_argument
// otherwise.
Sqe get_log_page_command(LogPageId lid, std::uint64_t offset, const SglDescriptor& data,
                         std::uint32_t nsid = 0, std::uint8_t csi = 0);

// The fields of a received Get Log Page command.
struct LogPageRequest {
    LogPageId lid;
    std::uint64_t offset;
    std::uint64_t length;  // bytes, from NUMD
    std::uint8_t csi = 0;
};
LogPageRequest parse_get_log_page(const Sqe& sqe);

// Commands Supported and Effects (log page 0x05), one per command set: for
// each admin opcode, and each I/O opcode of that command set, whether the
// controller supports it and what it may change.
inline constexpr std::size_t kEffectsEntries = 256;  // one per opcode
struct CommandsSupportedEffectsLog {
    std::uint32_t acs[kEffectsEntries];   // admin commands, by opcode
    std::uint32_t iocs[kEffectsEntries];  // I/O commands, by opcode
    std::uint8_t reserved2048[2048];
};
static_assert(sizeof(CommandsSupportedEffectsLog) == 4096);
static_assert(offsetof(CommandsSupportedEffectsLog, iocs) == 1024);
inline constexpr std::uint32_t kEffectsCommandSupported = 1u << 0;           // CSUPP
inline constexpr std::uint32_t kEffectsLogicalBlockContentChange = 1u << 1;  // LBCC

}  // namespace nvmeof::wire
