// The rules of nvmeof/option_rules.hpp: each written here once, for connect()
// and for every front end that checks before it connects.
#include "nvmeof/option_rules.hpp"

#include <cctype>

#include "host/negotiation.hpp"
#include "host/option_text.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/fabrics.hpp"

namespace nvmeof {
namespace {

constexpr std::uint64_t kMaxIoQueues = wire::kMaxQueuesPerController - 1;

[[noreturn]] void refuse(std::string_view name, std::uint64_t value, const std::string& why) {
    throw InvalidOption(name, std::to_string(value), why);
}

[[noreturn]] void refuse(std::string_view name, std::chrono::milliseconds value,
                         const std::string& why) {
    throw InvalidOption(name, std::to_string(value.count()), why);
}

// "nqn.yyyy-mm." and a naming authority after it.
bool has_date_form(std::string_view nqn) {
    constexpr std::string_view kShape = "nqn.dddd-dd.";
    if (nqn.size() <= kShape.size()) {
        return false;
    }
    for (std::size_t i = 0; i < kShape.size(); ++i) {
        const bool ok = kShape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(nqn[i])) != 0
                                         : nqn[i] == kShape[i];
        if (!ok) {
            return false;
        }
    }
    return true;
}

// The uuid form, "nqn.2014-08.org.nvmexpress:uuid:" and a UUID; otherwise
// the date form. (The uuid form's prefix has the date form's shape too, so
// what follows it must be a UUID, not any name.)
bool well_formed(std::string_view nqn) {
    const std::string_view prefix = wire::kUuidNqnPrefix;
    wire::HostId id{};
    return nqn.starts_with(prefix) ? parse_uuid(nqn.substr(prefix.size()), id) : has_date_form(nqn);
}

}  // namespace

namespace detail {

std::string quoted(std::string_view text) {
    constexpr std::size_t kShownBytes = 64;
    return "\"" + std::string(text.substr(0, kShownBytes)) +
           (text.size() > kShownBytes ? "..." : "") + "\"";
}

}  // namespace detail

InvalidOption::InvalidOption(std::string_view option, std::string_view value,
                             std::string_view reason)
    : InvalidArgument(std::string(option) + (value.empty() ? "" : "=" + std::string(value)) + ": " +
                      std::string(reason)),
      option_(option),
      reason_(reason) {}

void check_port(std::uint64_t port, std::string_view name) {
    if (port == 0 || port > 0xFFFF) {
        refuse(name, port, "a port must be from 1 to 65535");
    }
}

void check_subsystem_nqn(std::string_view nqn, std::string_view name) {
    if (!wire::nqn_fits(nqn)) {
        throw InvalidOption(
            name, detail::quoted(nqn),
            "an NQN is 1 to " + std::to_string(wire::kMaxNqnLength) + " bytes, with no NUL");
    }
}

void check_host_nqn(std::string_view nqn, std::string_view name) {
    if (!wire::nqn_fits(nqn) || !well_formed(nqn)) {
        throw InvalidOption(name, detail::quoted(nqn),
                            "not an NVMe Qualified Name: expected \"nqn.yyyy-mm.domain:name\" or "
                            "\"" +
                                std::string(wire::kUuidNqnPrefix) + "<UUID>\", at most " +
                                std::to_string(wire::kMaxNqnLength) + " bytes");
    }
}

void check_host_id(std::string_view id, std::string_view name) {
    wire::HostId parsed{};
    if (!parse_uuid(id, parsed)) {
        throw InvalidOption(name, detail::quoted(id),
                            "not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, hex digits)");
    }
}

void check_nsid(std::uint64_t nsid, std::string_view name) {
    if (nsid == 0 || nsid >= wire::kBroadcastNsid) {
        refuse(name, nsid,
               "a namespace ID is from 1 to " + std::to_string(wire::kBroadcastNsid - 1) +
                   " (0 names no namespace, 0xffffffff every one)");
    }
}

void check_queue_depth(std::uint64_t entries, std::string_view name) {
    if (entries < detail::kMinQueueSize || entries > detail::kMaxQueueSize) {
        refuse(name, entries,
               "I/O queue entries must be from " + std::to_string(detail::kMinQueueSize) + " to " +
                   std::to_string(detail::kMaxQueueSize));
    }
}

void check_io_queues(std::uint64_t count, std::string_view name) {
    if (count < 1 || count > kMaxIoQueues) {
        refuse(name, count, "I/O queues must be from 1 to " + std::to_string(kMaxIoQueues));
    }
}

void check_timeout(std::chrono::milliseconds timeout, std::string_view name) {
    if (timeout.count() < 1) {
        refuse(name, timeout, "the deadline must be at least 1 ms");
    }
}

void check_io_timeout(std::chrono::milliseconds io_timeout, std::string_view name) {
    if (io_timeout.count() < 0) {
        refuse(name, io_timeout, "must not be negative (0: the same as the connect timeout)");
    }
}

void check_reconnect_timers(std::chrono::milliseconds ctrl_loss_tmo,
                            std::chrono::milliseconds reconnect_delay,
                            std::chrono::milliseconds fast_io_fail_tmo, const OptionNames& names) {
    if (ctrl_loss_tmo.count() < 0) {
        refuse(names.ctrl_loss_tmo, ctrl_loss_tmo, "must not be negative (0: no reconnecting)");
    }
    // As the kernel's: a delay of 0 is refused whether or not reconnecting is on.
    if (reconnect_delay.count() < 1) {
        refuse(names.reconnect_delay, reconnect_delay,
               "the delay between reconnect attempts must be at least 1 ms");
    }
    if (fast_io_fail_tmo.count() < 0) {
        refuse(names.fast_io_fail_tmo, fast_io_fail_tmo, "must not be negative (0: off)");
    }
    if (fast_io_fail_tmo.count() > 0 && ctrl_loss_tmo.count() == 0) {
        refuse(
            names.fast_io_fail_tmo, fast_io_fail_tmo,
            "has no effect without reconnecting: set " + std::string(names.ctrl_loss_tmo) + " too");
    }
    if (fast_io_fail_tmo.count() > 0 && fast_io_fail_tmo >= ctrl_loss_tmo) {
        refuse(names.fast_io_fail_tmo, fast_io_fail_tmo,
               "must be below " + std::string(names.ctrl_loss_tmo) + "=" +
                   std::to_string(ctrl_loss_tmo.count()) + " (after that everything fails anyway)");
    }
}

void check_dhchap_secrets(const std::string& secret, const std::string& ctrl_secret,
                          const OptionNames& names) {
    if (!secret.empty()) {
        validate_dhchap_secret(secret, names.dhchap_secret);
    }
    if (!ctrl_secret.empty()) {
        if (secret.empty()) {
            throw InvalidOption(names.dhchap_ctrl_secret, "",
                                "needs " + std::string(names.dhchap_secret) +
                                    " too (the host always authenticates first)");
        }
        validate_dhchap_secret(ctrl_secret, names.dhchap_ctrl_secret);
    }
}

void validate(const Options& o, const OptionNames& names) {
    check_target(o.target, names.target);
    check_subsystem_nqn(o.subsystem_nqn, names.subsystem_nqn);
    check_port(o.port, names.port);
    // Empty: the default identity, which resolve_host_identity reads and checks.
    if (!o.host_nqn.empty()) {
        check_host_nqn(o.host_nqn, names.host_nqn);
    }
    if (!o.host_id.empty()) {
        check_host_id(o.host_id, names.host_id);
    }
    check_queue_depth(o.queue_depth, names.queue_depth);
    check_io_queues(o.io_queues, names.io_queues);
    check_timeout(o.timeout, names.timeout);
    check_io_timeout(o.io_timeout, names.io_timeout);
    check_reconnect_timers(o.ctrl_loss_tmo, o.reconnect_delay, o.fast_io_fail_tmo, names);
    check_dhchap_secrets(o.dhchap_secret, o.dhchap_ctrl_secret, names);
}

}  // namespace nvmeof
