// Reads a fuzz input front to back. Past the end every read yields zeros, so a
// short input is a valid input with its tail missing, never an early exit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace nvmeof::fuzz {

class ByteReader {
  public:
    ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

    bool empty() const { return offset_ >= size_; }
    std::size_t remaining() const { return empty() ? 0 : size_ - offset_; }

    // Copies up to `out.size()` bytes, zero-filling what the input lacks.
    void fill(std::span<std::uint8_t> out) {
        const std::size_t n = std::min(out.size(), remaining());
        if (n > 0) {
            std::memcpy(out.data(), data_ + offset_, n);
        }
        std::fill(out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), std::uint8_t{0});
        offset_ += n;
    }
    template <typename T>
    T take() {
        T value{};
        fill(std::span(reinterpret_cast<std::uint8_t*>(&value), sizeof(T)));
        return value;
    }
    std::vector<std::uint8_t> take_bytes(std::size_t n) {
        std::vector<std::uint8_t> out(std::min(n, remaining()));
        fill(out);
        return out;
    }
    std::span<const std::uint8_t> rest() {
        const std::span<const std::uint8_t> out(data_ + std::min(offset_, size_), remaining());
        offset_ = size_;
        return out;
    }

  private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t offset_ = 0;
};

// The sanitizers' summary line; it reaches libFuzzer's log even when the
// target's own stderr is closed (-close_fd_mask=2). Absent without sanitizers.
extern "C" void __sanitizer_report_error_summary(const char* summary) __attribute__((weak));

// A broken invariant of the code under test: a finding, reported as a crash so
// libFuzzer keeps the input and the replay test fails.
[[noreturn]] inline void finding(const char* what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    if (__sanitizer_report_error_summary != nullptr) {
        const std::string summary = std::string("fuzz finding: ") + what;
        __sanitizer_report_error_summary(summary.c_str());
    }
    std::abort();
}
inline void require(bool condition, const char* what) {
    if (!condition) {
        finding(what);
    }
}

}  // namespace nvmeof::fuzz
