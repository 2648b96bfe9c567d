#include "discovery_format.hpp"

#include <array>
#include <cstdio>
#include <string_view>

namespace nvmeof::cli {
namespace {

using wire::DiscoveryRecord;

// nvme-cli's names, indexed by the wire code; anything else is "unrecognized".
template <std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, unsigned code) {
    return code < N && !names[code].empty() ? names[code] : "unrecognized";
}

constexpr std::array<std::string_view, 4> kTransportNames{"", "rdma", "fc", "tcp"};
constexpr std::array<std::string_view, 5> kFamilyNames{"pci", "ipv4", "ipv6", "infiniband",
                                                       "fibre-channel"};
constexpr std::array<std::string_view, 4> kSubtypeNames{
    "", "discovery subsystem referral", "nvme subsystem", "current discovery subsystem"};
constexpr std::array<std::string_view, 3> kSecureChannelNames{"not specified", "required",
                                                              "not required"};
constexpr std::array<std::string_view, 6> kProviderNames{"",     "not specified", "infiniband",
                                                         "roce", "roce-v2",       "iwarp"};
constexpr std::array<std::string_view, 3> kQpTypeNames{"", "connected", "datagram"};
constexpr std::array<std::string_view, 2> kCmsNames{"", "rdma-cm"};
constexpr std::array<std::string_view, 3> kSecurityTypeNames{"none", "tls", "tls13"};
constexpr unsigned kLoopTransport = 254;

std::string transport_name(const DiscoveryRecord& r) {
    const auto code = static_cast<unsigned>(r.transport);
    return code == kLoopTransport ? "loop" : std::string(name_of(kTransportNames, code));
}

std::string family_name(const DiscoveryRecord& r) {
    // As nvme-cli: no family for a record without an address.
    return r.address.empty() ? ""
                             : std::string(name_of(kFamilyNames, static_cast<unsigned>(r.family)));
}

std::string provider_name(wire::RdmaProviderType type) {
    return std::string(name_of(kProviderNames, static_cast<unsigned>(type)));
}

std::string treq_name(std::uint8_t treq) {
    if ((treq & ~(wire::kTreqSecureChannelMask | wire::kTreqSqFlowControlDisable)) != 0) {
        return "unrecognized";
    }
    std::string name(name_of(kSecureChannelNames, treq & wire::kTreqSecureChannelMask));
    if (name != "unrecognized" && (treq & wire::kTreqSqFlowControlDisable) != 0) {
        name += ", sq flow control disable supported";
    }
    return name;
}

std::string eflags_name(std::uint16_t eflags) {
    constexpr std::uint16_t known = wire::kEflagsDuplicateInformation |
                                    wire::kEflagsExplicitPersistentConnections |
                                    wire::kEflagsNoCdcConnectivity;
    if (eflags == 0) {
        return "none";
    }
    if ((eflags & ~known) != 0) {
        return "unrecognized";
    }
    std::string name;
    auto add = [&](std::uint16_t bit, std::string_view text) {
        if ((eflags & bit) != 0) {
            name += name.empty() ? "" : ", ";
            name += text;
        }
    };
    add(wire::kEflagsExplicitPersistentConnections, "explicit discovery connections");
    add(wire::kEflagsDuplicateInformation, "duplicate discovery information");
    add(wire::kEflagsNoCdcConnectivity, "no cdc connectivity");
    return name;
}

std::string security_type_name(wire::TcpSecurityType type) {
    return std::string(name_of(kSecurityTypeNames, static_cast<unsigned>(type)));
}

std::string pkey_text(std::uint16_t pkey) {
    char text[8];
    std::snprintf(text, sizeof text, "0x%04x", unsigned{pkey});
    return text;
}

std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x",
                                  unsigned{static_cast<unsigned char>(c)});
                    out += escaped;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

}  // namespace

std::string format_discovery_log(const DiscoveryLog& log) {
    std::string out = "\nDiscovery Log Number of Records " + std::to_string(log.records.size()) +
                      ", Generation counter " + std::to_string(log.generation) + "\n";
    for (std::size_t i = 0; i < log.records.size(); ++i) {
        const DiscoveryRecord& r = log.records[i];
        out += "=====Discovery Log Entry " + std::to_string(i) + "======\n";
        out += "trtype:  " + transport_name(r) + "\n";
        out += "adrfam:  " + family_name(r) + "\n";
        out += "subtype: " + std::string(name_of(kSubtypeNames, static_cast<unsigned>(r.subtype))) +
               "\n";
        out += "treq:    " + treq_name(r.treq) + "\n";
        out += "portid:  " + std::to_string(r.port_id) + "\n";
        out += "trsvcid: " + r.service_id + "\n";
        out += "subnqn:  " + r.subsystem_nqn + "\n";
        out += "traddr:  " + r.address + "\n";
        out += "eflags:  " + eflags_name(r.eflags) + "\n";
        if (r.transport == wire::TransportType::rdma) {
            out += "rdma_prtype: " + provider_name(r.rdma.provider_type) + "\n";
            out += "rdma_qptype: " +
                   std::string(name_of(kQpTypeNames, static_cast<unsigned>(r.rdma.qp_type))) + "\n";
            out += "rdma_cms:    " +
                   std::string(name_of(kCmsNames, static_cast<unsigned>(r.rdma.cms))) + "\n";
            out += "rdma_pkey: " + pkey_text(r.rdma.pkey) + "\n";
        } else if (r.transport == wire::TransportType::tcp) {
            out += "sectype: " + security_type_name(r.tcp.security_type) + "\n";
        }
    }
    return out;
}

std::string format_discovery_log_json(const DiscoveryLog& log) {
    std::string out = "{\n  \"genctr\": " + std::to_string(log.generation) + ",\n  \"records\": [";
    for (std::size_t i = 0; i < log.records.size(); ++i) {
        const DiscoveryRecord& r = log.records[i];
        auto field = [&](std::string_view key, const std::string& value, bool quoted = true) {
            out += ",\n      " + json_string(key) + ": " + (quoted ? json_string(value) : value);
        };
        out += i == 0 ? "\n    {" : ",\n    {";
        out += "\n      \"trtype\": " + json_string(transport_name(r));
        field("adrfam", family_name(r));
        field("subtype", std::string(name_of(kSubtypeNames, static_cast<unsigned>(r.subtype))));
        field("treq", treq_name(r.treq));
        field("portid", std::to_string(r.port_id), false);
        field("trsvcid", r.service_id);
        field("subnqn", r.subsystem_nqn);
        field("traddr", r.address);
        field("eflags", eflags_name(r.eflags));
        if (r.transport == wire::TransportType::rdma) {
            field("rdma_prtype", provider_name(r.rdma.provider_type));
            field("rdma_qptype",
                  std::string(name_of(kQpTypeNames, static_cast<unsigned>(r.rdma.qp_type))));
            field("rdma_cms", std::string(name_of(kCmsNames, static_cast<unsigned>(r.rdma.cms))));
            field("rdma_pkey", std::to_string(r.rdma.pkey), false);
        } else if (r.transport == wire::TransportType::tcp) {
            field("sectype", security_type_name(r.tcp.security_type));
        }
        out += "\n    }";
    }
    out += log.records.empty() ? "]\n}\n" : "\n  ]\n}\n";
    return out;
}

}  // namespace nvmeof::cli
