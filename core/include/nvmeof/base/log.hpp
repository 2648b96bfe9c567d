// Where the library's diagnostics go: one line per event (a queue failed, a
// reconnect, an ANA move), to stderr unless a program installs a sink, as the
// Python package does to hand them to its `logging` logger. Debug lines exist
// only when NVMEOF_DEBUG is set.
//
// The base layer's: every layer logs, through base/log.hpp inside the
// library. Programs include nvmeof/log.hpp.
#pragma once

#include <string_view>

namespace nvmeof {

enum class LogLevel { error, debug };

// Called on the thread that logs, possibly with a controller's lock held and
// from the data path's failure handling: it must not call into the library
// and should return quickly (queue the line, do not block on a lock the
// logging thread's caller may hold).
using LogSink = void (*)(LogLevel level, std::string_view line, void* context);

// Installs `sink` (nullptr: back to stderr) for the whole process.
void set_log_sink(LogSink sink, void* context) noexcept;

}  // namespace nvmeof
