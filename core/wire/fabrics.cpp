#include "nvmeof/wire/fabrics.hpp"

#include <bit>
#include <stdexcept>

namespace nvmeof::wire {
namespace {

template <typename Command>
Command fabrics_base(FabricsType type) {
    Command cmd{};
    cmd.opcode = kFabricsOpcode;
    cmd.flags = kCommandFlagsSgl;
    cmd.fctype = static_cast<std::uint8_t>(type);
    cmd.sgl1 = zero_length_keyed();
    return cmd;
}

}  // namespace

FabricsCommand as_fabrics(const Sqe& sqe) {
    return std::bit_cast<FabricsCommand>(sqe);
}
ConnectCommand as_connect(const Sqe& sqe) {
    return std::bit_cast<ConnectCommand>(sqe);
}
PropertyGetCommand as_property_get(const Sqe& sqe) {
    return std::bit_cast<PropertyGetCommand>(sqe);
}
PropertySetCommand as_property_set(const Sqe& sqe) {
    return std::bit_cast<PropertySetCommand>(sqe);
}

Sqe connect_command(std::uint16_t qid, std::uint16_t queue_size, std::uint32_t kato_ms,
                    const SglDescriptor& data) {
    if (queue_size < 2) {
        throw std::invalid_argument("Connect queue size must be at least 2");
    }
    auto cmd = fabrics_base<ConnectCommand>(FabricsType::connect);
    cmd.sgl1 = data;
    cmd.recfmt = 0;
    cmd.qid = qid;
    cmd.sqsize = static_cast<std::uint16_t>(queue_size - 1);
    cmd.kato = kato_ms;
    return std::bit_cast<Sqe>(cmd);
}

bool nqn_fits(std::string_view nqn) {
    return !nqn.empty() && nqn.size() <= kMaxNqnLength && nqn.find('\0') == std::string_view::npos;
}

void validate_nqn(std::string_view nqn, std::string_view what) {
    if (!nqn_fits(nqn)) {
        throw std::invalid_argument(std::string(what) + " must be 1 to " +
                                    std::to_string(kMaxNqnLength) + " bytes with no NUL, got \"" +
                                    std::string(nqn) + "\"");
    }
}

ConnectData connect_data(const HostId& host_id, std::string_view subnqn, std::string_view hostnqn,
                         std::uint16_t cntlid) {
    validate_nqn(subnqn, "subsystem NQN");
    validate_nqn(hostnqn, "host NQN");
    ConnectData data{};
    data.host_id = host_id;
    data.cntlid = cntlid;
    copy_to_field(data.subnqn, sizeof data.subnqn, subnqn);
    copy_to_field(data.hostnqn, sizeof data.hostnqn, hostnqn);
    return data;
}

ConnectResult parse_connect_result(std::uint32_t dw0) {
    const std::uint32_t auth_bits = (1u << kAuthreqAtrBit) | (1u << kAuthreqAscrBit);
    return ConnectResult{static_cast<std::uint16_t>(dw0 & kConnectCntlidMask),
                         (dw0 & auth_bits) != 0, (dw0 & (1u << kAuthreqAscrBit)) != 0};
}

ConnectInvalidParameter parse_connect_invalid_parameter(std::uint32_t dw0) {
    const std::uint32_t iattr = (dw0 >> kConnectIattrShift) & kConnectIattrMask;
    return ConnectInvalidParameter{(iattr & kConnectIattrDataBit) != 0,
                                   static_cast<std::uint16_t>(dw0 & kConnectCntlidMask)};
}

std::uint32_t connect_invalid_parameter_result(bool in_data, std::uint16_t offset) {
    return (in_data ? kConnectIattrDataBit << kConnectIattrShift : 0u) | offset;
}

std::string connect_parameter_name(ConnectInvalidParameter p) {
    if (p.in_data) {
        switch (p.offset) {
            case offsetof(ConnectData, host_id):
                return "HOSTID";
            case offsetof(ConnectData, cntlid):
                return "CNTLID";
            case offsetof(ConnectData, subnqn):
                return "SUBNQN";
            case offsetof(ConnectData, hostnqn):
                return "HOSTNQN";
            default:
                return "Connect data byte " + std::to_string(p.offset);
        }
    }
    switch (p.offset) {
        case offsetof(ConnectCommand, recfmt):
            return "RECFMT";
        case offsetof(ConnectCommand, qid):
            return "QID";
        case offsetof(ConnectCommand, sqsize):
            return "SQSIZE";
        case offsetof(ConnectCommand, cattr):
            return "CATTR";
        case offsetof(ConnectCommand, kato):
            return "KATO";
        default:
            return "Connect command byte " + std::to_string(p.offset);
    }
}

Sqe property_get_command(std::uint32_t offset, PropertySize size) {
    auto cmd = fabrics_base<PropertyGetCommand>(FabricsType::property_get);
    cmd.attrib = static_cast<std::uint8_t>(size);
    cmd.offset = offset;
    return std::bit_cast<Sqe>(cmd);
}

Sqe property_set_command(std::uint32_t offset, std::uint64_t value, PropertySize size) {
    auto cmd = fabrics_base<PropertySetCommand>(FabricsType::property_set);
    cmd.attrib = static_cast<std::uint8_t>(size);
    cmd.offset = offset;
    cmd.value = value;
    return std::bit_cast<Sqe>(cmd);
}

}  // namespace nvmeof::wire
