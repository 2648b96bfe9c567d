// Leveled logging (nvmeof/base/log.hpp says where lines go). Debug lines only when
// NVMEOF_DEBUG is set (read per call, no static state); datapath code never
// logs on success. errno is kept.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "nvmeof/base/log.hpp"

namespace nvmeof::detail {

// The line without its "nvmeof: " prefix, to the installed sink or stderr.
void emit_log_line(LogLevel level, const char* line) noexcept;

template <typename... Args>
void log_at(LogLevel level, const char* format, Args... args) {
    const int saved = errno;
    char line[1024];
    if constexpr (sizeof...(Args) == 0) {
        std::snprintf(line, sizeof line, "%s", format);
    } else {
        std::snprintf(line, sizeof line, format, args...);
    }
    emit_log_line(level, line);
    errno = saved;
}

template <typename... Args>
void log_error(const char* format, Args... args) {
    log_at(LogLevel::error, format, args...);
}

template <typename... Args>
void log_debug(const char* format, Args... args) {
    if (std::getenv("NVMEOF_DEBUG") != nullptr) {
        log_at(LogLevel::debug, format, args...);
    }
}

}  // namespace nvmeof::detail
