#include "nvmeof/wire/status.hpp"

#include <array>
#include <cstdio>
#include <utility>

namespace nvmeof::wire {
namespace {

using Entry = std::pair<std::uint8_t, std::string_view>;

constexpr std::array kGenericNames = {
    Entry{0x00, "Successful Completion"},
    Entry{0x01, "Invalid Command Opcode"},
    Entry{0x02, "Invalid Field in Command"},
    Entry{0x03, "Command ID Conflict"},
    Entry{0x04, "Data Transfer Error"},
    Entry{0x05, "Commands Aborted due to Power Loss Notification"},
    Entry{0x06, "Internal Error"},
    Entry{0x07, "Command Abort Requested"},
    Entry{0x08, "Command Aborted due to SQ Deletion"},
    Entry{0x09, "Command Aborted due to Failed Fused Command"},
    Entry{0x0A, "Command Aborted due to Missing Fused Command"},
    Entry{0x0B, "Invalid Namespace or Format"},
    Entry{0x0C, "Command Sequence Error"},
    Entry{0x0D, "Invalid SGL Segment Descriptor"},
    Entry{0x0E, "Invalid Number of SGL Descriptors"},
    Entry{0x0F, "Data SGL Length Invalid"},
    Entry{0x10, "Metadata SGL Length Invalid"},
    Entry{0x11, "SGL Descriptor Type Invalid"},
    Entry{0x12, "Invalid Use of Controller Memory Buffer"},
    Entry{0x13, "PRP Offset Invalid"},
    Entry{0x14, "Atomic Write Unit Exceeded"},
    Entry{0x15, "Operation Denied"},
    Entry{0x16, "SGL Offset Invalid"},
    Entry{0x18, "Host Identifier Inconsistent Format"},
    Entry{0x19, "Keep Alive Timer Expired"},
    Entry{0x1A, "Keep Alive Timeout Invalid"},
    Entry{0x1B, "Command Aborted due to Preempt and Abort"},
    Entry{0x1C, "Sanitize Failed"},
    Entry{0x1D, "Sanitize In Progress"},
    Entry{0x1E, "SGL Data Block Granularity Invalid"},
    Entry{0x1F, "Command Not Supported for Queue in CMB"},
    Entry{0x20, "Namespace is Write Protected"},
    Entry{0x21, "Command Interrupted"},
    Entry{0x22, "Transient Transport Error"},
    Entry{0x80, "LBA Out of Range"},
    Entry{0x81, "Capacity Exceeded"},
    Entry{0x82, "Namespace Not Ready"},
    Entry{0x83, "Reservation Conflict"},
    Entry{0x84, "Format In Progress"},
};

constexpr std::array kFabricsNames = {
    Entry{0x80, "Connect Incompatible Format"},
    Entry{0x81, "Connect Controller Busy"},
    Entry{0x82, "Connect Invalid Parameters"},
    Entry{0x83, "Connect Restart Discovery"},
    Entry{0x84, "Connect Invalid Host"},
    Entry{0x85, "Invalid Queue Type"},
    Entry{0x90, "Discover Restart"},
    Entry{0x91, "Authentication Required"},
};

constexpr std::array kAdminSpecificNames = {
    Entry{0x00, "Completion Queue Invalid"},
    Entry{0x01, "Invalid Queue Identifier"},
    Entry{0x02, "Invalid Queue Size"},
    Entry{0x03, "Abort Command Limit Exceeded"},
    Entry{0x05, "Asynchronous Event Request Limit Exceeded"},
    Entry{0x06, "Invalid Firmware Slot"},
    Entry{0x07, "Invalid Firmware Image"},
    Entry{0x08, "Invalid Interrupt Vector"},
    Entry{0x09, "Invalid Log Page"},
    Entry{0x0A, "Invalid Format"},
    Entry{0x0C, "Invalid Queue Deletion"},
    Entry{0x0D, "Feature Identifier Not Saveable"},
    Entry{0x0E, "Feature Not Changeable"},
    Entry{0x0F, "Feature Not Namespace Specific"},
};

constexpr std::array kIoSpecificNames = {
    Entry{0x80, "Conflicting Attributes"},
    Entry{0x81, "Invalid Protection Information"},
    Entry{0x82, "Attempted Write to Read Only Range"},
    Entry{0x83, "Command Size Limit Exceeded"},
    // The Zoned Namespace command set's, numbered apart from the NVM command set's.
    Entry{0xB8, "Zone Boundary Error"},
    Entry{0xB9, "Zone Is Full"},
    Entry{0xBA, "Zone Is Read Only"},
    Entry{0xBB, "Zone Is Offline"},
    Entry{0xBC, "Zone Invalid Write"},
    Entry{0xBD, "Too Many Active Zones"},
    Entry{0xBE, "Too Many Open Zones"},
    Entry{0xBF, "Invalid Zone State Transition"},
};

constexpr std::array kMediaNames = {
    Entry{0x80, "Write Fault"},
    Entry{0x81, "Unrecovered Read Error"},
    Entry{0x82, "End-to-end Guard Check Error"},
    Entry{0x83, "End-to-end Application Tag Check Error"},
    Entry{0x84, "End-to-end Reference Tag Check Error"},
    Entry{0x85, "Compare Failure"},
    Entry{0x86, "Access Denied"},
    Entry{0x87, "Deallocated or Unwritten Logical Block"},
    Entry{0x88, "End-to-end Storage Tag Check Error"},
};

constexpr std::array kPathNames = {
    Entry{0x00, "Internal Path Error"},
    Entry{0x01, "Asymmetric Access Persistent Loss"},
    Entry{0x02, "Asymmetric Access Inaccessible"},
    Entry{0x03, "Asymmetric Access Transition"},
    Entry{0x60, "Controller Pathing Error"},
    Entry{0x70, "Host Pathing Error"},
    Entry{0x71, "Command Aborted By Host"},
};

constexpr std::string_view kUnknown = "Unknown Status";

template <std::size_t N>
std::string_view lookup(const std::array<Entry, N>& table, std::uint8_t code) {
    for (const auto& [value, name] : table) {
        if (value == code) {
            return name;
        }
    }
    return kUnknown;
}

std::string_view command_specific_name(std::uint8_t code, StatusContext context) {
    if (context.opcode == kFabricsOpcode) {
        return lookup(kFabricsNames, code);
    }
    if (context.queue == QueueKind::io) {
        return lookup(kIoSpecificNames, code);
    }
    return lookup(kAdminSpecificNames, code);
}

}  // namespace

std::string_view status_name(Status status, StatusContext context) {
    switch (status.type()) {
        case StatusCodeType::generic:
            return lookup(kGenericNames, status.code());
        case StatusCodeType::command_specific:
            return command_specific_name(status.code(), context);
        case StatusCodeType::media:
            return lookup(kMediaNames, status.code());
        case StatusCodeType::path:
            return lookup(kPathNames, status.code());
        case StatusCodeType::vendor_specific:
            return "Vendor Specific Status";
    }
    return kUnknown;
}

std::string_view status_code_type_name(StatusCodeType type) {
    switch (type) {
        case StatusCodeType::generic:
            return "Generic Command Status";
        case StatusCodeType::command_specific:
            return "Command Specific Status";
        case StatusCodeType::media:
            return "Media and Data Integrity Errors";
        case StatusCodeType::path:
            return "Path Related Status";
        case StatusCodeType::vendor_specific:
            return "Vendor Specific";
    }
    return "Reserved Status Code Type";
}

std::string describe(Status status, StatusContext context) {
    char codes[48];
    std::snprintf(codes, sizeof codes, " (SCT 0x%x SC 0x%02x%s%s)",
                  static_cast<unsigned>(status.type()), static_cast<unsigned>(status.code()),
                  status.do_not_retry() ? ", DNR" : "", status.more() ? ", More" : "");
    std::string text(status_name(status, context));
    text += codes;
    return text;
}

NvmeError::NvmeError(Status status, std::string_view command, StatusContext context,
                     std::uint32_t result)
    : std::runtime_error(std::string(command) + " failed: " + describe(status, context)),
      status_(status),
      command_(command),
      result_(result),
      context_(context) {}

void raise_for_status(const Cqe& cqe, const Sqe& command, QueueKind queue) {
    const Status status = Status::from_cqe_field(cqe.status);
    if (!status.ok()) {
        throw NvmeError(status, command_name(command, queue), context_of(command, queue), cqe.dw0);
    }
}

}  // namespace nvmeof::wire
