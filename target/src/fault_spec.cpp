// --fault specs: NAME=VALUE, one fault each (docs/target-cli.md).
#include <limits>
#include <string>

#include "config.hpp"

namespace nvmeof::target {
namespace {

constexpr std::uint64_t kMaxRejectStatus = 0xFFFF;

using TcpAction = FaultConfig::Tcp::Action;

// The NVMe/TCP command faults: their name, and the word after N (none: "").
struct TcpActionName {
    TcpAction action;
    std::string_view name;
    std::string_view argument;
};
constexpr TcpActionName kTcpActions[] = {
    {TcpAction::reset_mid_transfer, "reset-mid-transfer", ""},
    {TcpAction::short_stall, "short-pdu", "stall"},
    {TcpAction::short_close, "short-pdu", "close"},
    {TcpAction::corrupt_type, "corrupt-pdu", "type"},
    {TcpAction::corrupt_hlen, "corrupt-pdu", "hlen"},
    {TcpAction::corrupt_hdgst, "corrupt-pdu", "hdgst"},
    {TcpAction::corrupt_ddgst, "corrupt-pdu", "ddgst"},
};

const TcpActionName& name_of(TcpAction action) {
    for (const auto& entry : kTcpActions) {
        if (entry.action == action) {
            return entry;
        }
    }
    return kTcpActions[0];
}

// reset-mid-transfer=N, short-pdu=N[:stall|close], corrupt-pdu=N:FIELD.
void parse_tcp_command_fault(std::string_view name, std::string_view value, const std::string& what,
                             FaultConfig::Tcp& tcp) {
    auto [nth_text, argument] = split_once(value, ':');
    if (name == "short-pdu" && argument.empty()) {
        argument = "stall";
    }
    const TcpActionName* found = nullptr;
    std::string choices;
    for (const auto& entry : kTcpActions) {
        if (entry.name != name) {
            continue;
        }
        choices += (choices.empty() ? "" : ", ") + std::string(entry.argument);
        if (entry.argument == argument) {
            found = &entry;
        }
    }
    if (found == nullptr) {
        throw UsageError(what + (name == "reset-mid-transfer"
                                     ? ": expected N"
                                     : ": expected N:WHAT, WHAT one of " + choices));
    }
    const std::uint64_t nth =
        parse_number(nth_text, what, std::numeric_limits<std::uint64_t>::max());
    if (nth == 0) {
        throw UsageError(what + ": N is 1-based");
    }
    for (const auto& other : tcp.commands) {
        if (other.nth == nth) {
            throw UsageError(what + ": I/O command " + std::to_string(nth) + " already has " +
                             tcp_fault_spec(other));
        }
    }
    tcp.commands.push_back({nth, found->action});
}

}  // namespace

std::string tcp_fault_spec(const FaultConfig::Tcp::CommandFault& fault) {
    const TcpActionName& entry = name_of(fault.action);
    std::string spec = std::string(entry.name) + "=" + std::to_string(fault.nth);
    if (!entry.argument.empty()) {
        spec += ":" + std::string(entry.argument);
    }
    return spec;
}

std::string_view tcp_fault_name(const FaultConfig::Tcp& faults) {
    if (!faults.reset_after.empty()) {
        return "reset-after";
    }
    if (!faults.commands.empty()) {
        return name_of(faults.commands.front().action).name;
    }
    return faults.r2t_delay_ms ? "r2t-delay-ms" : "";
}

void parse_fault(std::string_view spec, FaultConfig& faults) {
    const std::string what = "--fault " + std::string(spec);
    const auto [name, value] = split_once(spec, '=');
    if (value.empty()) {
        throw UsageError(what + ": expected NAME=VALUE");
    }
    const auto max64 = std::numeric_limits<std::uint64_t>::max();
    if (name == "reject-connect") {
        faults.reject_connect =
            static_cast<std::uint16_t>(parse_number(value, what, kMaxRejectStatus));
    } else if (name == "connect-status") {
        faults.connect_status = parse_status(value, what);
    } else if (name == "fail-io") {
        const auto [nth, status] = split_once(value, ':');
        FailIoFault fault{parse_number(nth, what, max64), parse_status(status, what)};
        if (fault.nth == 0) {
            throw UsageError(what + ": N is 1-based");
        }
        faults.fail_io.push_back(fault);
    } else if (name == "fail-lba") {
        const auto [range, status] = split_once(value, ':');
        const auto [first, last] = split_once(range, '-');
        if (last.empty()) {
            throw UsageError(what + ": expected FIRST-LAST:SCT/SC");
        }
        FailLbaFault fault{parse_number(first, what, max64), parse_number(last, what, max64),
                           parse_status(status, what)};
        if (fault.first > fault.last) {
            throw UsageError(what + ": FIRST is above LAST");
        }
        faults.fail_lba.push_back(fault);
    } else if (name == "corrupt-guard" || name == "corrupt-apptag" || name == "corrupt-reftag" ||
               name == "corrupt-storage-tag") {
        const wire::PiCheck field = name == "corrupt-guard"    ? wire::PiCheck::guard
                                    : name == "corrupt-apptag" ? wire::PiCheck::apptag
                                    : name == "corrupt-reftag" ? wire::PiCheck::reftag
                                                               : wire::PiCheck::storage_tag;
        faults.corrupt_pi.push_back({field, parse_number(value, what, max64)});
    } else if (name == "skip-pi-checks") {
        faults.skip_pi_checks.push_back(parse_number(value, what, max64));
    } else if (name == "zone-offline" || name == "zone-read-only" || name == "zone-full") {
        const ZoneFault::Kind kind = name == "zone-offline"     ? ZoneFault::Kind::offline
                                     : name == "zone-read-only" ? ZoneFault::Kind::read_only
                                                                : ZoneFault::Kind::full;
        faults.zone_faults.push_back({kind, parse_number(value, what, max64)});
    } else if (name == "drop-after") {
        faults.drop_after = parse_number(value, what, max64);
    } else if (name == "delay-ms") {
        faults.delay_ms = static_cast<std::uint32_t>(parse_number(value, what, kMaxDelayMs));
    } else if (name == "stop-answering-after") {
        faults.stop_answering_after = parse_number(value, what, max64);
    } else if (name == "ignore-io") {
        faults.ignore_io = parse_number(value, what, max64);
    } else if (name == "drop-after-run") {
        const std::uint64_t nth = parse_number(value, what, max64);
        if (nth == 0) {
            throw UsageError(what + ": N is 1-based");
        }
        faults.drop_after_run = nth;
    } else if (name == "reorder-io") {
        const std::uint64_t every = parse_number(value, what, max64);
        if (every == 0) {
            throw UsageError(what + ": N is 1 or more (every Nth I/O command of a queue)");
        }
        faults.reorder_io = every;
    } else if (name == "outage-after") {
        const auto [after, ms] = split_once(value, ':');
        if (ms.empty()) {
            throw UsageError(what + ": expected N:MS");
        }
        faults.outages.push_back({parse_number(after, what, max64),
                                  static_cast<std::uint32_t>(parse_number(ms, what, kMaxDelayMs))});
    } else if (name == "port-down-after") {
        const auto [after, index] = split_once(value, ':');
        if (index.empty()) {
            throw UsageError(what + ": expected N:INDEX");
        }
        faults.ports_down.push_back(
            {parse_number(after, what, max64),
             static_cast<std::size_t>(parse_number(index, what, kMaxPorts - 1))});
    } else if (name == "ana-change-after") {
        const auto [after, rest] = split_once(value, ':');
        if (rest.empty()) {
            throw UsageError(what + ": expected N:INDEX:STATE");
        }
        const auto [index, state] = parse_port_ana_state(rest, what);
        faults.ana_changes.push_back({parse_number(after, what, max64), index, state});
    } else if (name == "reset-after") {
        const std::uint64_t nth = parse_number(value, what, max64);
        if (nth == 0) {
            throw UsageError(what + ": N is 1-based");
        }
        faults.tcp.reset_after.push_back(nth);
    } else if (name == "reset-mid-transfer" || name == "short-pdu" || name == "corrupt-pdu") {
        parse_tcp_command_fault(name, value, what, faults.tcp);
    } else if (name == "r2t-delay-ms") {
        faults.tcp.r2t_delay_ms =
            static_cast<std::uint32_t>(parse_number(value, what, kMaxDelayMs));
    } else {
        throw UsageError(what + ": unknown fault " + quoted(name));
    }
}

}  // namespace nvmeof::target
