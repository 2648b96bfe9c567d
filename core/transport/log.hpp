// Leveled logging to stderr. Debug lines only when NVMEOF_DEBUG is set (read per
// call, no static state); datapath code never logs on success. errno is kept.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace nvmeof::detail {

template <typename... Args>
void log_error(const char* format, Args... args) {
    const int saved = errno;
    std::fprintf(stderr, "nvmeof: ");
    std::fprintf(stderr, format, args...);
    std::fputc('\n', stderr);
    errno = saved;
}

template <typename... Args>
void log_debug(const char* format, Args... args) {
    if (std::getenv("NVMEOF_DEBUG") != nullptr) {
        log_error(format, args...);
    }
}

}  // namespace nvmeof::detail
