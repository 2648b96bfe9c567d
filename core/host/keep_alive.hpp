// Keep-alive for a controller whose Connect set KATO (internal).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "nvmeof/queue.hpp"
#include "transport/rdma_queue.hpp"

namespace nvmeof::detail {

// A Keep Alive command on the admin queue every half timeout, sent and reaped
// without blocking from service(), which the controller's owner calls
// regularly. There is no thread, as in SPDK's host (process_admin_completions).
class KeepAlive {
  public:
    using Clock = std::chrono::steady_clock;

    KeepAlive(HostQueue& admin, std::chrono::milliseconds timeout, Clock::time_point now);

    // False once a Keep Alive failed or stayed unanswered for a whole timeout,
    // or the admin queue failed; failure() then says why. Allocates only then.
    bool service(Clock::time_point now) noexcept;
    const std::string& failure() const noexcept { return failure_; }
    // When service() next has something to do (send the next Keep Alive).
    Clock::time_point next_due() const noexcept { return next_send_; }

  private:
    bool fail(std::string why) noexcept;

    HostQueue& admin_;
    std::chrono::milliseconds timeout_;
    std::chrono::milliseconds period_;
    Clock::time_point next_send_;
    Clock::time_point sent_at_;
    Clock::time_point last_contact_;    // connect, or the last Keep Alive answered
    std::optional<Request> in_flight_;  // the Keep Alive sent and not yet answered
    std::string failure_;
};

}  // namespace nvmeof::detail
