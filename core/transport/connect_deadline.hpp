// The one deadline of a whole Controller::connect (Options::timeout): address
// and route resolution, each CM connect, each Fabrics Connect, property and
// Identify command and the CSTS.RDY wait all get only the time left, so a slow
// target fails the connect within the timeout instead of within the sum of
// per-step timeouts. The step that runs out is named with the total. A first
// connect may also be cancelled by its caller (Controller::connect's
// `cancelled`): the waits ask it now and then.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail {

class ConnectDeadline {
  public:
    using Clock = std::chrono::steady_clock;
    // The longest a cancel goes unnoticed: how often the waits ask the hook.
    static constexpr std::chrono::milliseconds kCancelPoll{50};

    ConnectDeadline() = default;
    explicit ConnectDeadline(std::chrono::milliseconds total, std::function<bool()> cancelled = {})
        : start_(Clock::now()), at_(start_ + total), total_(total) {
        if (cancelled) {
            cancel_ = std::make_shared<Cancel>();
            cancel_->ask = std::move(cancelled);
        }
    }
    // A whole new deadline from now (the next path of a connect), cancelled
    // together with this one.
    ConnectDeadline renewed(std::chrono::milliseconds total) const {
        ConnectDeadline next(total);
        next.cancel_ = cancel_;
        return next;
    }

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
    // Whether the caller cancelled. The hook is asked at most every kCancelPoll
    // (it may be costly: the Python binding takes the GIL); a yes is kept, and
    // copies (the queues') share it.
    bool cancelled() const {
        if (!cancel_ || cancel_->seen || !cancel_->ask) {
            return cancel_ && cancel_->seen;
        }
        const auto now = Clock::now();
        if (now >= cancel_->next_ask) {
            cancel_->next_ask = now + kCancelPoll;
            cancel_->seen = cancel_->ask();
        }
        return cancel_->seen;
    }
    // Once cancelled, without asking again (close() skips waiting on the target).
    bool was_cancelled() const noexcept { return cancel_ && cancel_->seen; }
    // The hook belongs to the connect call that passed it: once that is over,
    // nothing may ask it any more.
    void forget_cancel() noexcept {
        if (cancel_) {
            cancel_->ask = nullptr;
        }
    }
    // The longest one wait may block: the time left, cut to kCancelPoll while
    // the connect can be cancelled.
    std::chrono::milliseconds next_wait() const {
        return cancel_ && cancel_->ask ? std::min(left(), kCancelPoll) : left();
    }
    // Throws ConnectError(cancelled) naming `step` when the caller cancelled.
    void check_cancelled(const std::string& step) const {
        if (cancelled()) {
            ConnectError::Details d;
            d.sys_errno = ECANCELED;
            throw ConnectError(ConnectFailure::cancelled, step, "the caller cancelled the connect",
                               d);
        }
    }
    // Throws ConnectError(cancelled), or ConnectError(timeout) when no time is
    // left, naming `step`.
    void check(const std::string& step) const {
        check_cancelled(step);
        if (left().count() <= 0) {
            ConnectError::Details d;
            d.sys_errno = ETIMEDOUT;
            throw ConnectError(ConnectFailure::timeout, step, ran_out(), d);
        }
    }

  private:
    struct Cancel {
        std::function<bool()> ask;
        Clock::time_point next_ask{};
        bool seen = false;
    };

    Clock::time_point start_{};
    Clock::time_point at_ = Clock::time_point::max();
    std::chrono::milliseconds total_{0};
    std::shared_ptr<Cancel> cancel_;  // none: not cancellable (a reconnect)
};

}  // namespace nvmeof::detail
