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

namespace {

// One line of the engine's: on stderr in machine-readable modes (stdout is
// fio's report alone), else through fio's own logger for that kind of line.
void say(ssize_t (*fio_logger)(const char*, ...), const char* format, va_list args) {
    const std::string text = format_text(format, args);
    if (machine_readable_output()) {
        to_stderr(text);
    } else {
        fio_logger("%s", text.c_str());
    }
}

}  // namespace

void say_info(const char* format, ...) {
    va_list args;
    va_start(args, format);
    say(log_info, format, args);
    va_end(args);
}

void say_note(const char* format, ...) {
    va_list args;
    va_start(args, format);
    say(log_err, format, args);
    va_end(args);
}

}  // namespace nvmeof::engine
