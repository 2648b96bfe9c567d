#include "option_rules.hpp"

#include "target_spec.hpp"

namespace nvmeof::engine {
namespace {

[[noreturn]] void refuse(std::string_view option, unsigned int value, std::string_view why) {
    throw SpecError(std::string(option) + "=" + std::to_string(value) + ": " + std::string(why));
}

}  // namespace

void check_numeric_options(const NumericOptions& o) {
    if (o.queue_size != 0 && (o.queue_size < kMinQueueSize || o.queue_size > kMaxQueueSize)) {
        refuse("queue_size", o.queue_size,
               "I/O queue entries must be from " + std::to_string(kMinQueueSize) + " to " +
                   std::to_string(kMaxQueueSize) + " (0 or unset: derived from iodepth)");
    }
    if (o.nr_io_queues < 1 || o.nr_io_queues > kMaxIoQueues) {
        refuse("nr_io_queues", o.nr_io_queues,
               "I/O queues per job must be from 1 to " + std::to_string(kMaxIoQueues));
    }
    if (o.keep_alive_ms != 0 && o.keep_alive_ms < kMinKeepAliveMs) {
        refuse("keep_alive_ms", o.keep_alive_ms,
               "a keep-alive timeout is at least " + std::to_string(kMinKeepAliveMs) +
                   " ms (it is in milliseconds; 0 turns keep-alive off)");
    }
    if (o.connect_timeout_ms == 0) {
        refuse("connect_timeout_ms", 0, "the deadline must be at least 1 ms (default 30000)");
    }
    if (o.io_timeout_ms == 0) {
        refuse("io_timeout_ms", 0,
               "the deadline must be at least 1 ms; there is no \"no timeout\" (default 30000)");
    }
    if (o.reconnect_delay_ms == 0) {
        refuse("reconnect_delay_ms", 0,
               "the delay between reconnect attempts must be at least 1 ms (default 10000)");
    }
    if (o.fast_io_fail_tmo_ms != 0 && o.ctrl_loss_tmo_ms == 0) {
        refuse("fast_io_fail_tmo_ms", o.fast_io_fail_tmo_ms,
               "has no effect without reconnecting: set ctrl_loss_tmo_ms too");
    }
    if (o.fast_io_fail_tmo_ms != 0 && o.fast_io_fail_tmo_ms >= o.ctrl_loss_tmo_ms) {
        refuse("fast_io_fail_tmo_ms", o.fast_io_fail_tmo_ms,
               "must be below ctrl_loss_tmo_ms=" + std::to_string(o.ctrl_loss_tmo_ms) +
                   " (after that everything fails anyway)");
    }
}

std::string ignored_option_names(std::uint64_t given) {
    std::string names;
    for (std::size_t i = 0; i < kSpdkIgnoredOptions.size(); ++i) {
        if ((given >> i) & 1u) {
            names += (names.empty() ? "" : ", ") + std::string(kSpdkIgnoredOptions[i]);
        }
    }
    return names;
}

}  // namespace nvmeof::engine
