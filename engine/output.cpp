#include "output.hpp"

#include <cstdarg>
#include <cstdio>
#include <string>

#include "fio_headers.hpp"

namespace nvmeof::engine {
namespace {

std::string format_text(const char* format, va_list args) {
    va_list copy;
    va_copy(copy, args);
    const int length = std::vsnprintf(nullptr, 0, format, copy);
    va_end(copy);
    if (length <= 0) {
        return {};
    }
    std::string text(static_cast<std::size_t>(length) + 1, '\0');
    std::vsnprintf(text.data(), text.size(), format, args);
    text.pop_back();
    return text;
}

// One fwrite, so lines from concurrent jobs do not interleave mid-line.
void to_stderr(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
}

}  // namespace

bool machine_readable_output() {
    return (output_format & (FIO_OUTPUT_JSON | FIO_OUTPUT_JSON_PLUS | FIO_OUTPUT_TERSE)) != 0;
}

void say_info(const char* format, ...) {
    va_list args;
    va_start(args, format);
    const std::string text = format_text(format, args);
    va_end(args);
    if (machine_readable_output()) {
        to_stderr(text);
    } else {
        log_info("%s", text.c_str());
    }
}

void say_note(const char* format, ...) {
    va_list args;
    va_start(args, format);
    const std::string text = format_text(format, args);
    va_end(args);
    if (machine_readable_output()) {
        to_stderr(text);
    } else {
        log_err("%s", text.c_str());
    }
}

}  // namespace nvmeof::engine
