// NVMe completion status: decoding, names, and the error type that carries it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::wire {

enum class StatusCodeType : std::uint8_t {
    generic = 0x0,
    command_specific = 0x1,
    media = 0x2,  // media and data integrity errors
    path = 0x3,
    vendor_specific = 0x7,
};

// SCT 0.
enum class GenericStatus : std::uint8_t {
    success = 0x00,
    invalid_opcode = 0x01,
    invalid_field = 0x02,
    command_id_conflict = 0x03,
    data_transfer_error = 0x04,
    aborted_power_loss = 0x05,
    internal_error = 0x06,
    aborted_by_request = 0x07,
    aborted_sq_deletion = 0x08,
    aborted_failed_fused = 0x09,
    aborted_missing_fused = 0x0A,
    invalid_namespace_or_format = 0x0B,
    command_sequence_error = 0x0C,
    invalid_sgl_segment_descriptor = 0x0D,
    invalid_number_of_sgl_descriptors = 0x0E,
    data_sgl_length_invalid = 0x0F,
    metadata_sgl_length_invalid = 0x10,
    sgl_descriptor_type_invalid = 0x11,
    invalid_use_of_cmb = 0x12,
    prp_offset_invalid = 0x13,
    atomic_write_unit_exceeded = 0x14,
    operation_denied = 0x15,
    sgl_offset_invalid = 0x16,
    host_identifier_inconsistent_format = 0x18,
    keep_alive_timer_expired = 0x19,
    keep_alive_timeout_invalid = 0x1A,
    aborted_preempt_and_abort = 0x1B,
    sanitize_failed = 0x1C,
    sanitize_in_progress = 0x1D,
    sgl_data_block_granularity_invalid = 0x1E,
    command_not_supported_for_queue_in_cmb = 0x1F,
    namespace_write_protected = 0x20,
    command_interrupted = 0x21,
    transient_transport_error = 0x22,
    lba_out_of_range = 0x80,
    capacity_exceeded = 0x81,
    namespace_not_ready = 0x82,
    reservation_conflict = 0x83,
    format_in_progress = 0x84,
};

// SCT 1 for Fabrics commands (the same numbers mean other things elsewhere).
enum class FabricsStatus : std::uint8_t {
    connect_incompatible_format = 0x80,
    connect_controller_busy = 0x81,
    connect_invalid_parameters = 0x82,
    connect_restart_discovery = 0x83,
    connect_invalid_host = 0x84,
    disconnect_invalid_queue_type = 0x85,
    discovery_restart = 0x90,
    authentication_required = 0x91,
};

// SCT 1 for admin commands this project uses (queue-related and features).
enum class AdminCommandStatus : std::uint8_t {
    completion_queue_invalid = 0x00,
    invalid_queue_identifier = 0x01,
    invalid_queue_size = 0x02,
    abort_command_limit_exceeded = 0x03,
    asynchronous_event_request_limit_exceeded = 0x05,
    invalid_log_page = 0x09,
    invalid_format = 0x0A,
    feature_identifier_not_saveable = 0x0D,
    feature_not_changeable = 0x0E,
    feature_not_namespace_specific = 0x0F,
};

// SCT 1 for NVM I/O commands.
enum class NvmCommandStatus : std::uint8_t {
    conflicting_attributes = 0x80,
    invalid_protection_information = 0x81,
    attempted_write_to_read_only_range = 0x82,
    command_size_limit_exceeded = 0x83,
};

// SCT 1 for the I/O commands of the Zoned Namespace command set (Read, Write,
// Write Zeroes, Zone Append, Zone Management Send and Receive of a zoned
// namespace: wire/zns.hpp). No number is shared with NvmCommandStatus.
enum class ZonedStatus : std::uint8_t {
    zone_boundary_error = 0xB8,
    zone_is_full = 0xB9,
    zone_is_read_only = 0xBA,
    zone_is_offline = 0xBB,
    zone_invalid_write = 0xBC,
    too_many_active_zones = 0xBD,
    too_many_open_zones = 0xBE,
    invalid_zone_state_transition = 0xBF,
};

// SCT 2.
enum class MediaStatus : std::uint8_t {
    write_fault = 0x80,
    unrecovered_read_error = 0x81,
    end_to_end_guard_check_error = 0x82,
    end_to_end_application_tag_check_error = 0x83,
    end_to_end_reference_tag_check_error = 0x84,
    compare_failure = 0x85,
    access_denied = 0x86,
    deallocated_or_unwritten_logical_block = 0x87,
    end_to_end_storage_tag_check_error = 0x88,
};

// SCT 3.
enum class PathStatus : std::uint8_t {
    internal_path_error = 0x00,
    asymmetric_access_persistent_loss = 0x01,
    asymmetric_access_inaccessible = 0x02,
    asymmetric_access_transition = 0x03,
    controller_pathing_error = 0x60,
    host_pathing_error = 0x70,
    command_aborted_by_host = 0x71,
};

// Bit layout of the 16-bit CQE status word (bit 0 is the phase tag, unused on
// fabrics and always sent as 0).
inline constexpr unsigned kStatusPhaseBit = 0;
inline constexpr unsigned kStatusCodeShift = 1;
inline constexpr std::uint16_t kStatusCodeMask = 0xFF;
inline constexpr unsigned kStatusCodeTypeShift = 9;
inline constexpr std::uint16_t kStatusCodeTypeMask = 0x7;
// SC and SCT in place: both zero is success.
inline constexpr std::uint16_t kStatusCodeAndTypeInPlace =
    (kStatusCodeMask << kStatusCodeShift) | (kStatusCodeTypeMask << kStatusCodeTypeShift);
inline constexpr unsigned kStatusRetryDelayShift = 12;
inline constexpr std::uint16_t kStatusRetryDelayMask = 0x3;
inline constexpr unsigned kStatusMoreBit = 14;
inline constexpr unsigned kStatusDoNotRetryBit = 15;

// A decoded completion status. Holds the CQE status word with the phase bit
// cleared; equality compares everything but the phase.
class Status {
  public:
    constexpr Status() = default;

    static constexpr Status from_cqe_field(std::uint16_t field) {
        return Status(static_cast<std::uint16_t>(field & ~(1u << kStatusPhaseBit)));
    }
    static constexpr Status make(StatusCodeType type, std::uint8_t code, bool dnr = false,
                                 bool more = false, std::uint8_t retry_delay = 0) {
        unsigned v = (static_cast<unsigned>(code) << kStatusCodeShift) |
                     (static_cast<unsigned>(type) << kStatusCodeTypeShift) |
                     ((retry_delay & kStatusRetryDelayMask) << kStatusRetryDelayShift) |
                     (more ? 1u << kStatusMoreBit : 0u) | (dnr ? 1u << kStatusDoNotRetryBit : 0u);
        return Status(static_cast<std::uint16_t>(v));
    }
    static constexpr Status generic(GenericStatus code, bool dnr = false) {
        return make(StatusCodeType::generic, static_cast<std::uint8_t>(code), dnr);
    }
    static constexpr Status fabrics(FabricsStatus code, bool dnr = false) {
        return make(StatusCodeType::command_specific, static_cast<std::uint8_t>(code), dnr);
    }
    static constexpr Status zoned(ZonedStatus code, bool dnr = false) {
        return make(StatusCodeType::command_specific, static_cast<std::uint8_t>(code), dnr);
    }
    static constexpr Status path(PathStatus code, bool dnr = false) {
        return make(StatusCodeType::path, static_cast<std::uint8_t>(code), dnr);
    }
    static constexpr Status success() { return Status(); }

    constexpr std::uint16_t cqe_field() const { return field_; }
    constexpr std::uint8_t code() const {
        return static_cast<std::uint8_t>((field_ >> kStatusCodeShift) & kStatusCodeMask);
    }
    constexpr StatusCodeType type() const {
        return static_cast<StatusCodeType>((field_ >> kStatusCodeTypeShift) & kStatusCodeTypeMask);
    }
    constexpr std::uint8_t retry_delay_index() const {
        return static_cast<std::uint8_t>((field_ >> kStatusRetryDelayShift) &
                                         kStatusRetryDelayMask);
    }
    constexpr bool more() const { return (field_ >> kStatusMoreBit) & 1u; }
    constexpr bool do_not_retry() const { return (field_ >> kStatusDoNotRetryBit) & 1u; }
    // Success means SCT 0 / SC 0; CRD, More and DNR do not change that.
    constexpr bool ok() const { return (field_ & kStatusCodeAndTypeInPlace) == 0; }

    constexpr bool is(GenericStatus s) const {
        return type() == StatusCodeType::generic && code() == static_cast<std::uint8_t>(s);
    }
    constexpr bool is(FabricsStatus s) const {
        return type() == StatusCodeType::command_specific && code() == static_cast<std::uint8_t>(s);
    }
    constexpr bool is(ZonedStatus s) const {
        return type() == StatusCodeType::command_specific && code() == static_cast<std::uint8_t>(s);
    }
    constexpr bool is(MediaStatus s) const {
        return type() == StatusCodeType::media && code() == static_cast<std::uint8_t>(s);
    }
    // A guard, application tag, reference tag or storage tag check of
    // end-to-end protection failed (the Linux host's EILSEQ, "protection error").
    constexpr bool is_end_to_end_check_error() const {
        return is(MediaStatus::end_to_end_guard_check_error) ||
               is(MediaStatus::end_to_end_application_tag_check_error) ||
               is(MediaStatus::end_to_end_reference_tag_check_error) ||
               is(MediaStatus::end_to_end_storage_tag_check_error);
    }

    friend constexpr bool operator==(Status a, Status b) { return a.field_ == b.field_; }

  private:
    constexpr explicit Status(std::uint16_t field) : field_(field) {}
    std::uint16_t field_ = 0;
};

// What a status code means depends on the command that produced it (SCT 1 is
// command specific), so names are looked up in that context.
struct StatusContext {
    std::uint8_t opcode = 0;
    QueueKind queue = QueueKind::admin;
};

inline StatusContext context_of(const Sqe& sqe, QueueKind queue) {
    return {sqe.opcode, queue};
}

// The specification's name for the status, e.g. "Invalid Field in Command";
// "Unknown Status" for codes the tables do not cover.
std::string_view status_name(Status status, StatusContext context = {});
std::string_view status_code_type_name(StatusCodeType type);

// "Invalid Field in Command (SCT 0x0 SC 0x02, DNR)".
std::string describe(Status status, StatusContext context = {});

// An NVMe command completed with an error status. Carries the status and the
// name of the command, like raise_for_status in the Python package this API
// follows.
class NvmeError : public std::runtime_error {
  public:
    NvmeError(Status status, std::string_view command, StatusContext context,
              std::uint32_t result = 0);

    Status status() const { return status_; }
    const std::string& command() const { return command_; }
    std::uint32_t result() const { return result_; }  // CQE DW0 (e.g. Connect IPO/IATTR)
    // What the status means depends on (status_name(status(), context())).
    StatusContext context() const { return context_; }

  private:
    Status status_;
    std::string command_;
    std::uint32_t result_;
    StatusContext context_;
};

// Throws NvmeError unless cqe's status is success.
void raise_for_status(const Cqe& cqe, const Sqe& command, QueueKind queue);

}  // namespace nvmeof::wire
