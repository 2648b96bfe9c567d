// The rules connection options follow, each written once. Controller::connect()
// checks an Options with validate(); the front ends (the fio engine, the
// Python package, the tools) call the same checks before they connect, so a
// bad value is refused up front, in one line that names the option by the
// front end's own name:
//
//   nvmeof::check_io_queues(job.nr_io_queues, "nr_io_queues");
//       // InvalidOption "nr_io_queues=0: I/O queues must be from 1 to 65534"
//   nvmeof::validate(options, {.target = "host"});   // Python's names
//
// The per-field checks take values wider than the Options fields, so a front
// end checks what its user wrote before narrowing it (a queue_size of 70000 is
// refused, not truncated into a 16-bit field).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvmeof/errors.hpp"
#include "nvmeof/options.hpp"

namespace nvmeof {

// A refused option. what() is one line: "<option>=<value>: <reason>", or
// "<option>: <reason>" where no value is shown (a secret). The checks below
// quote a text value and cut one longer than 64 bytes short.
class InvalidOption : public InvalidArgument {
  public:
    InvalidOption(std::string_view option, std::string_view value, std::string_view reason);
    const std::string& option() const noexcept { return option_; }  // the name it was given by
    const std::string& reason() const noexcept { return reason_; }

  private:
    std::string option_;
    std::string reason_;
};

// The names a front end's users know the Options fields by, for its messages
// (fio's nr_io_queues is io_queues, Python's host is target). A rule that
// involves two fields names both. Default: the field names.
struct OptionNames {
    std::string_view target = "target";
    std::string_view subsystem_nqn = "subsystem_nqn";
    std::string_view port = "port";
    std::string_view host_nqn = "host_nqn";
    std::string_view host_id = "host_id";
    std::string_view queue_depth = "queue_depth";
    std::string_view io_queues = "io_queues";
    std::string_view timeout = "timeout";
    std::string_view io_timeout = "io_timeout";
    std::string_view ctrl_loss_tmo = "ctrl_loss_tmo";
    std::string_view reconnect_delay = "reconnect_delay";
    std::string_view fast_io_fail_tmo = "fast_io_fail_tmo";
    std::string_view dhchap_secret = "dhchap_secret";
    std::string_view dhchap_ctrl_secret = "dhchap_ctrl_secret";
};

// Every rule below over one Options, in field order; throws InvalidOption for
// the first field that breaks one. Not checked here, since only the connect
// knows: keep_alive_ms against the controller's granularity (Identify KAS),
// and whether the addresses resolve.
void validate(const Options& options, const OptionNames& names = {});

// One path of Options::target, as split_target reads it.
struct TargetPath {
    std::string host;                   // the address, without brackets
    std::optional<std::uint16_t> port;  // its own port; none: Options::port
};
// Options::target: one address or several paths to the same subsystem joined
// by ',', each "ADDR" (IPv4, IPv6 or a name), "IPv4:PORT", "[IPv6]" or
// "[IPv6]:PORT". Throws InvalidOption for an empty list or path, a bracket out
// of place, or a port outside 1 to 65535.
std::vector<TargetPath> split_target(std::string_view target, std::string_view name = "target");
void check_target(std::string_view target, std::string_view name = "target");

// A transport port (RDMA-CM's port space is TCP's): 1 to 65535; 0 names no
// listener.
void check_port(std::uint64_t port, std::string_view name = "port");

// An NQN as the Connect data carries it: 1 to 223 bytes, no NUL. A subsystem
// NQN is the target's name for it, matched byte for byte, so nothing more is
// asked of it.
void check_subsystem_nqn(std::string_view nqn, std::string_view name = "subsystem_nqn");

// A host NQN the caller chose: an NVMe Qualified Name, "nqn.yyyy-mm.<domain>..."
// or "nqn.2014-08.org.nvmexpress:uuid:<UUID>", at most 223 bytes. Stricter
// than the subsystem's: this host's own name, where a slip ("myhost") would
// otherwise show up only as a target's refusal. (The default from
// /etc/nvme/hostnqn is taken as it is, as the kernel takes it.)
void check_host_nqn(std::string_view nqn, std::string_view name = "host_nqn");

// A host ID: a UUID as text, 8-4-4-4-12 hex digits, either case.
void check_host_id(std::string_view id, std::string_view name = "host_id");

// A namespace ID that names one namespace: 1 to 0xFFFFFFFE (0 names none,
// 0xFFFFFFFF all of them).
void check_nsid(std::uint64_t nsid, std::string_view name = "nsid");

// I/O queue entries asked for: 2 (one entry always stays free) to 65535 (the
// Connect's SQSIZE is 16 bits, 0's based). More than the controller allows is
// no error: it is negotiated down.
void check_queue_depth(std::uint64_t entries, std::string_view name = "queue_depth");

// I/O queues asked for: 1 to 65534 (Set Features Number of Queues is 0's based
// and reserves 0xFFFF). More than the controller grants is no error.
void check_io_queues(std::uint64_t count, std::string_view name = "io_queues");

// The connect deadline (then each admin request's): at least 1 ms.
void check_timeout(std::chrono::milliseconds timeout, std::string_view name = "timeout");
// Each I/O request's deadline: not negative (0: the same as timeout).
void check_io_timeout(std::chrono::milliseconds io_timeout, std::string_view name = "io_timeout");

// The reconnect timers together (the kernel's nvme-fabrics rules): ctrl_loss_tmo
// not negative (0: no reconnecting); reconnect_delay at least 1 ms; and
// fast_io_fail_tmo 0 (off), or set only with ctrl_loss_tmo and below it.
void check_reconnect_timers(std::chrono::milliseconds ctrl_loss_tmo,
                            std::chrono::milliseconds reconnect_delay,
                            std::chrono::milliseconds fast_io_fail_tmo,
                            const OptionNames& names = {});

// A dhchap_secret / dhchap_ctrl_secret value (the text, or "@file" holding it)
// as connect() would read it. InvalidOption "<option>: <what is wrong>", never
// showing the secret.
void validate_dhchap_secret(const std::string& value, std::string_view option);
// Both secrets, each when set; a controller secret needs the host's too (the
// host always authenticates first).
void check_dhchap_secrets(const std::string& secret, const std::string& ctrl_secret,
                          const OptionNames& names = {});

}  // namespace nvmeof
