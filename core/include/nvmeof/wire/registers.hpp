// Controller properties (registers) reached through Property Get/Set: CAP, VS,
// CC, CSTS as typed views with named fields.
#pragma once

#include <cstdint>

#include "nvmeof/wire/fabrics.hpp"

namespace nvmeof::wire {

enum class Property : std::uint32_t {
    cap = 0x00,   // 8 bytes
    vs = 0x08,    // 4
    cc = 0x14,    // 4
    csts = 0x1C,  // 4
    nssr = 0x20,  // 4
    crto = 0x68,  // 4
};

// nvmet serves CAP only as an 8-byte Get and everything else only as 4 bytes.
constexpr PropertySize property_size(Property p) {
    return p == Property::cap ? PropertySize::eight_bytes : PropertySize::four_bytes;
}

// A register field: its `width` bits at `shift`, read out of a register's raw
// value (bits) or placed into one (place).
namespace field {
constexpr std::uint64_t bits(std::uint64_t raw, unsigned shift, unsigned width) {
    return (raw >> shift) & ((std::uint64_t{1} << width) - 1);
}
constexpr std::uint64_t place(std::uint64_t value, unsigned shift, unsigned width) {
    return (value & ((std::uint64_t{1} << width) - 1)) << shift;
}
}  // namespace field

// CAP: controller capabilities.
struct Capabilities {
    static constexpr unsigned kMqesShift = 0, kMqesWidth = 16;
    static constexpr unsigned kCqrShift = 16;
    static constexpr unsigned kTimeoutShift = 24, kTimeoutWidth = 8;
    static constexpr unsigned kDstrdShift = 32, kDstrdWidth = 4;
    static constexpr unsigned kNssrsShift = 36;
    static constexpr unsigned kCssShift = 37, kCssWidth = 8;
    static constexpr unsigned kCssNvmBit = 0;            // CAP bit 37
    static constexpr unsigned kCssIoCommandSetsBit = 6;  // CAP bit 43
    static constexpr unsigned kCssAdminOnlyBit = 7;      // CAP bit 44
    static constexpr unsigned kMpsminShift = 48, kMpsWidth = 4;
    static constexpr unsigned kMpsmaxShift = 52;
    static constexpr unsigned kCrwmsShift = 59;
    static constexpr unsigned kTimeoutUnitMs = 500;
    static constexpr unsigned kPageShiftBase = 12;  // page size = 2^(12 + MPS)

    std::uint64_t raw = 0;

    // Largest queue size, 0's based.
    constexpr std::uint16_t mqes() const {
        return static_cast<std::uint16_t>(field::bits(raw, kMqesShift, kMqesWidth));
    }
    constexpr std::uint32_t max_queue_entries() const { return mqes() + 1u; }
    constexpr bool contiguous_queues_required() const { return field::bits(raw, kCqrShift, 1); }
    // Worst-case time for CSTS.RDY to follow CC.EN, in 500 ms units.
    constexpr std::uint8_t timeout() const {
        return static_cast<std::uint8_t>(field::bits(raw, kTimeoutShift, kTimeoutWidth));
    }
    constexpr std::uint32_t timeout_ms() const { return timeout() * kTimeoutUnitMs; }
    constexpr std::uint8_t command_sets() const {
        return static_cast<std::uint8_t>(field::bits(raw, kCssShift, kCssWidth));
    }
    constexpr bool supports_nvm_command_set() const { return (command_sets() >> kCssNvmBit) & 1; }
    constexpr bool supports_io_command_sets() const {
        return (command_sets() >> kCssIoCommandSetsBit) & 1;
    }
    constexpr std::uint8_t mpsmin() const {
        return static_cast<std::uint8_t>(field::bits(raw, kMpsminShift, kMpsWidth));
    }
    constexpr std::uint8_t mpsmax() const {
        return static_cast<std::uint8_t>(field::bits(raw, kMpsmaxShift, kMpsWidth));
    }
    constexpr std::uint64_t min_page_size() const {
        return std::uint64_t{1} << (kPageShiftBase + mpsmin());
    }
    constexpr bool ready_with_media_support() const { return field::bits(raw, kCrwmsShift, 1); }

    struct Fields {
        std::uint16_t mqes = 0;
        bool contiguous_queues_required = false;
        std::uint8_t timeout = 0;  // 500 ms units
        std::uint8_t command_sets = 1u << kCssNvmBit;
        std::uint8_t mpsmin = 0;
        std::uint8_t mpsmax = 0;
    };
    static constexpr Capabilities make(const Fields& f) {
        return Capabilities{field::place(f.mqes, kMqesShift, kMqesWidth) |
                            field::place(f.contiguous_queues_required, kCqrShift, 1) |
                            field::place(f.timeout, kTimeoutShift, kTimeoutWidth) |
                            field::place(f.command_sets, kCssShift, kCssWidth) |
                            field::place(f.mpsmin, kMpsminShift, kMpsWidth) |
                            field::place(f.mpsmax, kMpsmaxShift, kMpsWidth)};
    }
};

// VS: version, also the Identify VER encoding.
struct Version {
    static constexpr unsigned kMajorShift = 16, kMinorShift = 8;
    std::uint32_t raw = 0;
    constexpr std::uint16_t major() const { return static_cast<std::uint16_t>(raw >> kMajorShift); }
    constexpr std::uint8_t minor() const { return static_cast<std::uint8_t>(raw >> kMinorShift); }
    constexpr std::uint8_t tertiary() const { return static_cast<std::uint8_t>(raw); }
    static constexpr Version make(std::uint16_t major, std::uint8_t minor,
                                  std::uint8_t tertiary = 0) {
        return Version{(static_cast<std::uint32_t>(major) << kMajorShift) |
                       (static_cast<std::uint32_t>(minor) << kMinorShift) | tertiary};
    }
};

enum class CommandSetSelected : std::uint8_t {
    nvm = 0b000,
    io_command_sets = 0b110,
    admin_only = 0b111
};
enum class ShutdownNotification : std::uint8_t { none = 0b00, normal = 0b01, abrupt = 0b10 };
inline constexpr std::uint8_t kSqEntrySizeShift = 6;  // log2(64): IOSQES
inline constexpr std::uint8_t kCqEntrySizeShift = 4;  // log2(16): IOCQES
static_assert((1u << kSqEntrySizeShift) == kSqeSize && (1u << kCqEntrySizeShift) == kCqeSize);

// CC: controller configuration.
struct ControllerConfig {
    static constexpr unsigned kEnableShift = 0;
    static constexpr unsigned kCssShift = 4, kCssWidth = 3;
    static constexpr unsigned kMpsShift = 7, kMpsWidth = 4;
    static constexpr unsigned kAmsShift = 11, kAmsWidth = 3;
    static constexpr unsigned kShnShift = 14, kShnWidth = 2;
    static constexpr unsigned kIosqesShift = 16, kIosqesWidth = 4;
    static constexpr unsigned kIocqesShift = 20, kIocqesWidth = 4;

    std::uint32_t raw = 0;

    constexpr bool enabled() const { return field::bits(raw, kEnableShift, 1); }
    constexpr CommandSetSelected command_set() const {
        return static_cast<CommandSetSelected>(field::bits(raw, kCssShift, kCssWidth));
    }
    constexpr std::uint8_t mps() const {
        return static_cast<std::uint8_t>(field::bits(raw, kMpsShift, kMpsWidth));
    }
    constexpr std::uint8_t arbitration() const {
        return static_cast<std::uint8_t>(field::bits(raw, kAmsShift, kAmsWidth));
    }
    constexpr ShutdownNotification shutdown() const {
        return static_cast<ShutdownNotification>(field::bits(raw, kShnShift, kShnWidth));
    }
    constexpr std::uint8_t iosqes() const {
        return static_cast<std::uint8_t>(field::bits(raw, kIosqesShift, kIosqesWidth));
    }
    constexpr std::uint8_t iocqes() const {
        return static_cast<std::uint8_t>(field::bits(raw, kIocqesShift, kIocqesWidth));
    }

    struct Fields {
        bool enable = false;
        CommandSetSelected command_set = CommandSetSelected::nvm;
        std::uint8_t mps = 0;
        ShutdownNotification shutdown = ShutdownNotification::none;
        std::uint8_t iosqes = kSqEntrySizeShift;
        std::uint8_t iocqes = kCqEntrySizeShift;
    };
    static constexpr ControllerConfig make(const Fields& f) {
        return ControllerConfig{static_cast<std::uint32_t>(
            field::place(f.enable, kEnableShift, 1) |
            field::place(static_cast<std::uint8_t>(f.command_set), kCssShift, kCssWidth) |
            field::place(f.mps, kMpsShift, kMpsWidth) |
            field::place(static_cast<std::uint8_t>(f.shutdown), kShnShift, kShnWidth) |
            field::place(f.iosqes, kIosqesShift, kIosqesWidth) |
            field::place(f.iocqes, kIocqesShift, kIocqesWidth))};
    }
};

enum class ShutdownStatus : std::uint8_t { normal = 0b00, in_progress = 0b01, complete = 0b10 };

// CSTS: controller status.
struct ControllerStatus {
    static constexpr unsigned kReadyShift = 0;
    static constexpr unsigned kFatalShift = 1;
    static constexpr unsigned kShstShift = 2, kShstWidth = 2;
    static constexpr unsigned kNssroShift = 4;
    static constexpr unsigned kPausedShift = 5;

    std::uint32_t raw = 0;

    constexpr bool ready() const { return field::bits(raw, kReadyShift, 1); }
    constexpr bool fatal() const { return field::bits(raw, kFatalShift, 1); }
    constexpr ShutdownStatus shutdown_status() const {
        return static_cast<ShutdownStatus>(field::bits(raw, kShstShift, kShstWidth));
    }

    struct Fields {
        bool ready = false;
        bool fatal = false;
        ShutdownStatus shutdown_status = ShutdownStatus::normal;
    };
    static constexpr ControllerStatus make(const Fields& f) {
        return ControllerStatus{static_cast<std::uint32_t>(
            field::place(f.ready, kReadyShift, 1) | field::place(f.fatal, kFatalShift, 1) |
            field::place(static_cast<std::uint8_t>(f.shutdown_status), kShstShift, kShstWidth))};
    }
};

inline Sqe property_get_command(Property p) {
    return property_get_command(static_cast<std::uint32_t>(p), property_size(p));
}
inline Sqe property_set_command(Property p, std::uint64_t value) {
    return property_set_command(static_cast<std::uint32_t>(p), value, property_size(p));
}

}  // namespace nvmeof::wire
