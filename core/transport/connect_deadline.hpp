// The one deadline of a whole Controller::connect (Options::timeout): address
// and route resolution, each CM connect, each Fabrics Connect, property and
// Identify command and the CSTS.RDY wait all get only the time left, so a slow
// target fails the connect within the timeout instead of within the sum of
// per-step timeouts. The step that runs out is named with the total.
#pragma once

#include <cerrno>
#include <chrono>
#include <string>

#include "nvmeof/errors.hpp"

namespace nvmeof::detail {

class ConnectDeadline {
public:
    using Clock = std::chrono::steady_clock;

    ConnectDeadline() = default;
    explicit ConnectDeadline(std::chrono::milliseconds total)
        : start_(Clock::now()), at_(start_ + total), total_(total) {}

    std::chrono::milliseconds total() const { return total_; }
    Clock::time_point at() const { return at_; }
    // Time left, rounded up to whole milliseconds; 0 once the deadline passed.
    std::chrono::milliseconds left() const {
        const auto now = Clock::now();
        if (now >= at_) {
            return std::chrono::milliseconds{0};
        }
        return std::chrono::ceil<std::chrono::milliseconds>(at_ - now);
    }
    // "the connect deadline of 3000 ms (every step together) ran out after 3001 ms"
    std::string ran_out() const {
        const auto spent =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
        return "the connect deadline of " + std::to_string(total_.count()) +
               " ms (every step together) ran out after " + std::to_string(spent.count()) + " ms";
    }
    // Throws ConnectError(timeout) naming `step` when no time is left.
    void check(const std::string& step) const {
        if (left().count() <= 0) {
            ConnectError::Details d;
            d.sys_errno = ETIMEDOUT;
            throw ConnectError(ConnectFailure::timeout, step, ran_out(), d);
        }
    }

private:
    Clock::time_point start_{};
    Clock::time_point at_ = Clock::time_point::max();
    std::chrono::milliseconds total_{0};
};

}  // namespace nvmeof::detail
