#include "host/keep_alive.hpp"

#include <algorithm>
#include <exception>

#include "nvmeof/errors.hpp"
#include "nvmeof/wire/admin.hpp"

namespace nvmeof::detail {
namespace {

// Linux and SPDK send a Keep Alive every half timeout: one may be lost or
// slow without the target's timer running out.
constexpr int kSendsPerTimeout = 2;
constexpr std::chrono::milliseconds kShortestPeriod{1};

}  // namespace

KeepAlive::KeepAlive(HostQueue& admin, std::chrono::milliseconds timeout, Clock::time_point now)
    : admin_(admin),
      timeout_(timeout),
      period_(std::max(timeout / kSendsPerTimeout, kShortestPeriod)),
      next_send_(now + period_),
      last_contact_(now) {}

bool KeepAlive::fail(std::string why) noexcept {
    try {
        failure_ = std::move(why);
    } catch (...) {
        failure_ = "keep-alive failed";
    }
    return false;
}

bool KeepAlive::service(Clock::time_point now) noexcept {
    if (!failure_.empty()) {
        return false;
    }
    admin_.poll_cq();
    if (in_flight_) {
        if (in_flight_->done()) {
            const CompletionStatus status = in_flight_->response().status;
            in_flight_.reset();
            if (!status.ok()) {
                return fail("Keep Alive failed: " + describe(status));
            }
            last_contact_ = now;
        } else if (now - sent_at_ >= timeout_) {
            return fail("Keep Alive unanswered for " + std::to_string(timeout_.count()) +
                        " ms, the whole keep-alive timeout");
        }
    }
    if (admin_.failed()) {
        const auto silent =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - last_contact_);
        if (silent >= timeout_) {
            return fail("the admin queue failed after " + std::to_string(silent.count()) +
                        " ms without a Keep Alive answered (timeout " +
                        std::to_string(timeout_.count()) +
                        " ms): probably the target dropping a host that went silent; call "
                        "keep_connected() more often");
        }
        return fail("the admin queue failed, so keep-alive stopped");
    }
    if (!in_flight_ && now >= next_send_) {
        try {
            in_flight_.emplace(&admin_, admin_.submit_command(wire::keep_alive_command()));
        } catch (const std::exception& e) {
            return fail(std::string("cannot send Keep Alive: ") + e.what());
        }
        sent_at_ = now;
        next_send_ = now + period_;
    }
    return true;
}

}  // namespace nvmeof::detail
