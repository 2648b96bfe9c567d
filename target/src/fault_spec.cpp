// --fault specs: NAME=VALUE, one fault each (docs/target-cli.md).
#include <limits>
#include <string>

#include "config.hpp"

namespace nvmeof::target {
namespace {

constexpr std::uint64_t kMaxRejectStatus = 0xFFFF;

}  // namespace

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
    } else if (name == "drop-after") {
        faults.drop_after = parse_number(value, what, max64);
    } else if (name == "delay-ms") {
        faults.delay_ms = static_cast<std::uint32_t>(parse_number(value, what, kMaxDelayMs));
    } else if (name == "stop-answering-after") {
        faults.stop_answering_after = parse_number(value, what, max64);
    } else if (name == "ignore-io") {
        faults.ignore_io = parse_number(value, what, max64);
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
    } else {
        throw UsageError(what + ": unknown fault " + quoted(name));
    }
}

}  // namespace nvmeof::target
