// The log sink (nvmeof/base/log.hpp).
#include "base/log.hpp"

#include <atomic>

namespace nvmeof {

namespace {

// The one piece of process-wide state: where diagnostics go. Both fields are
// read together; a sink is installed with its context published first.
std::atomic<LogSink> installed_sink{nullptr};
std::atomic<void*> installed_context{nullptr};

}  // namespace

void set_log_sink(LogSink sink, void* context) noexcept {
    installed_sink.store(nullptr, std::memory_order_release);
    installed_context.store(context, std::memory_order_release);
    installed_sink.store(sink, std::memory_order_release);
}

namespace detail {

void emit_log_line(LogLevel level, const char* line) noexcept {
    const LogSink sink = installed_sink.load(std::memory_order_acquire);
    if (sink != nullptr) {
        sink(level, line, installed_context.load(std::memory_order_acquire));
        return;
    }
    std::fprintf(stderr, "nvmeof: %s\n", line);
}

}  // namespace detail
}  // namespace nvmeof
