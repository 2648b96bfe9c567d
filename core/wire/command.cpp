#include "nvmeof/wire/command.hpp"

#include "nvmeof/wire/fabrics.hpp"

namespace nvmeof::wire {
namespace {

std::string_view fabrics_name(std::uint8_t fctype) {
    switch (static_cast<FabricsType>(fctype)) {
        case FabricsType::property_set:
            return "Property Set";
        case FabricsType::connect:
            return "Fabrics Connect";
        case FabricsType::property_get:
            return "Property Get";
        case FabricsType::authentication_send:
            return "Authentication Send";
        case FabricsType::authentication_receive:
            return "Authentication Receive";
        case FabricsType::disconnect:
            return "Fabrics Disconnect";
    }
    return "Fabrics (unknown type)";
}

std::string_view admin_name(std::uint8_t opcode) {
    switch (static_cast<AdminOpcode>(opcode)) {
        case AdminOpcode::get_log_page:
            return "Get Log Page";
        case AdminOpcode::identify:
            return "Identify";
        case AdminOpcode::abort:
            return "Abort";
        case AdminOpcode::set_features:
            return "Set Features";
        case AdminOpcode::get_features:
            return "Get Features";
        case AdminOpcode::async_event_request:
            return "Asynchronous Event Request";
        case AdminOpcode::keep_alive:
            return "Keep Alive";
        case AdminOpcode::fabrics:
            return "Fabrics";
    }
    return "Unknown Admin Command";
}

std::string_view io_name(std::uint8_t opcode) {
    switch (static_cast<IoOpcode>(opcode)) {
        case IoOpcode::flush:
            return "Flush";
        case IoOpcode::write:
            return "Write";
        case IoOpcode::read:
            return "Read";
        case IoOpcode::write_uncorrectable:
            return "Write Uncorrectable";
        case IoOpcode::compare:
            return "Compare";
        case IoOpcode::write_zeroes:
            return "Write Zeroes";
        case IoOpcode::dataset_management:
            return "Dataset Management";
        case IoOpcode::zone_management_send:
            return "Zone Management Send";
        case IoOpcode::zone_management_receive:
            return "Zone Management Receive";
        case IoOpcode::zone_append:
            return "Zone Append";
    }
    return "Unknown I/O Command";
}

}  // namespace

std::string_view command_name(std::uint8_t opcode, QueueKind queue, std::uint8_t fctype) {
    // Fabrics commands are valid on either queue (Connect creates I/O queues).
    if (opcode == kFabricsOpcode) {
        return fabrics_name(fctype);
    }
    return queue == QueueKind::admin ? admin_name(opcode) : io_name(opcode);
}

std::string_view command_name(const Sqe& sqe, QueueKind queue) {
    return command_name(sqe.opcode, queue, as_fabrics(sqe).fctype);
}

}  // namespace nvmeof::wire
