#include "discovered_targets.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>

namespace nvmeof::engine {
namespace {

std::string record_transport_name(TransportType transport) {
    switch (transport) {
        case TransportType::rdma:
            return "RDMA";
        case TransportType::fibre_channel:
            return "FC";
        case TransportType::tcp:
            return "TCP";
        case TransportType::loop:
            return "loop";
    }
    return std::to_string(static_cast<unsigned>(transport));
}

std::optional<std::uint16_t> port_of(const std::string& service_id) {
    unsigned value = 0;
    const auto [end, error] =
        std::from_chars(service_id.data(), service_id.data() + service_id.size(), value);
    if (service_id.empty() || error != std::errc() ||
        end != service_id.data() + service_id.size() || value == 0 || value > 0xFFFF) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
}

// A value that can stand in a "key=value ..." filename: present, no spaces.
bool fits_a_filename(const std::string& value) {
    return !value.empty() && std::none_of(value.begin(), value.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c)) ||
               std::iscntrl(static_cast<unsigned char>(c));
    });
}

bool is_wildcard(const std::string& address) {
    return address.empty() || address == "0.0.0.0" || address == "::";
}

// The log's code for the transport a job speaks.
TransportType record_type(Transport transport) {
    return transport == Transport::tcp ? TransportType::tcp : TransportType::rdma;
}

// Why a record is not used by a job over `job`, or "" when it is.
std::string why_skipped(const DiscoveryRecord& r, Transport job,
                        const std::vector<TargetSpec>& taken) {
    if (r.subtype == SubsystemType::referral) {
        return "a referral to another discovery service, not followed";
    }
    if (r.subtype == SubsystemType::current_discovery) {
        return "a discovery subsystem, not an NVM subsystem";
    }
    if (r.subsystem_nqn == kDiscoveryNqn) {
        return "the discovery NQN, not an NVM subsystem";
    }
    if (r.subtype != SubsystemType::nvm) {
        return "subtype " + std::to_string(static_cast<unsigned>(r.subtype)) +
               " is not an NVM subsystem";
    }
    if (r.transport != record_type(job)) {
        return "trtype " + record_transport_name(r.transport) + ", this job's trtype is " +
               record_transport_name(record_type(job));
    }
    if (r.family != AddressFamily::ipv4 && r.family != AddressFamily::ipv6) {
        return "adrfam " + std::to_string(static_cast<unsigned>(r.family)) + " is not IPv4 or IPv6";
    }
    if (!port_of(r.service_id)) {
        return "trsvcid \"" + r.service_id + "\" is not a port number";
    }
    if (!fits_a_filename(r.subsystem_nqn) ||
        (!is_wildcard(r.address) && !fits_a_filename(r.address))) {
        return "an empty or blank-containing subsystem NQN or address";
    }
    if (std::any_of(taken.begin(), taken.end(),
                    [&](const TargetSpec& t) { return t.subsystem_nqn == r.subsystem_nqn; })) {
        return "another path to a subsystem already used";
    }
    return "";
}

}  // namespace

std::string service_name(const TargetSpec& spec) {
    const bool ipv6 = spec.address.find(':') != std::string::npos;
    return (ipv6 ? "[" + spec.address + "]" : spec.address) + ":" + std::to_string(spec.port);
}

DiscoveredTargets targets_from_discovery(const TargetSpec& discovery,
                                         const std::vector<DiscoveryRecord>& records) {
    DiscoveredTargets out;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const DiscoveryRecord& r = records[i];
        if (const std::string why = why_skipped(r, discovery.transport, out.targets);
            !why.empty()) {
            out.skipped += (out.skipped.empty() ? "" : "; ") + std::string("entry ") +
                           std::to_string(i) + " (" +
                           (r.subsystem_nqn.empty() ? "no NQN" : r.subsystem_nqn) + "): " + why;
            continue;
        }
        TargetSpec target = discovery;
        target.address = is_wildcard(r.address) ? discovery.address : r.address;
        target.port = *port_of(r.service_id);
        target.subsystem_nqn = r.subsystem_nqn;
        out.targets.push_back(std::move(target));
    }
    if (out.targets.empty()) {
        throw SpecError("the discovery service at " + service_name(discovery) +
                        " lists no NVM subsystem over " +
                        record_transport_name(record_type(discovery.transport)) +
                        " that this host may use (" + std::to_string(records.size()) +
                        " log entries" + (out.skipped.empty() ? "" : ": " + out.skipped) +
                        "); give subnqn=NQN, or check the target's subsystems and allowed hosts");
    }
    return out;
}

std::string encode(const DiscoveredTargets& discovered) {
    std::string text = discovered.skipped + '\n';
    for (const TargetSpec& target : discovered.targets) {
        text += canonical_filename(target) + '\n';
    }
    return text;
}

DiscoveredTargets decode_discovered(const std::string& text) {
    DiscoveredTargets out;
    std::istringstream lines(text);
    std::getline(lines, out.skipped);
    for (std::string line; std::getline(lines, line);) {
        if (auto spec = parse_filename_spec(line)) {
            out.targets.push_back(std::move(*spec));
        }
    }
    return out;
}

}  // namespace nvmeof::engine
