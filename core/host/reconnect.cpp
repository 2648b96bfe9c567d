// The reconnect state machine of a controller (Options::ctrl_loss_tmo), after
// the kernel's nvme-fabrics error recovery: on a queue failure every queue is
// torn down (QP to error, drain, destroy: the queues' own teardown), and every
// reconnect_delay the whole association runs again on the next path until it
// succeeds or ctrl_loss_tmo passes. No thread: keep_connected() drives it, and a
// caller that finds its submissions refused busy keeps calling it.
//
//   live ──failure──▶ resetting ──▶ waiting ──delay──▶ reconnecting ──ok──▶ live
//                                     ▲                    │
//                                     └──── attempt failed ┘
//   waiting/reconnecting ──ctrl_loss_tmo, or limits no longer fit──▶ lost
//
// Transfers in flight at the failure are held by their queues and re-sent,
// whole and in submission order, with the same memory, once live again. Only
// transfers are held (read, write, flush, write zeroes, deallocate): each
// stores the same result when executed twice. Commands a caller built itself
// (compare, fused pairs, anything through IoQueue::submit(Sqe)) fail back.
#include <algorithm>
#include <cerrno>

#include "base/log.hpp"
#include "host/controller_impl.hpp"

namespace nvmeof {

// ControllerImpl is nvmeof's, as the public headers name it; what it is made
// of (the host's helpers, the transport's queues) is nvmeof::detail's.
using namespace detail;

namespace {

long long ms_between(std::chrono::steady_clock::time_point from,
                     std::chrono::steady_clock::time_point to) {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count());
}

}  // namespace

namespace detail {

const char* controller_state_name(ControllerState state) {
    switch (state) {
        case ControllerState::connecting:
            return "connecting";
        case ControllerState::live:
            return "live";
        case ControllerState::resetting:
            return "resetting";
        case ControllerState::waiting:
            return "waiting to reconnect";
        case ControllerState::reconnecting:
            return "reconnecting";
        case ControllerState::lost:
            return "lost";
        case ControllerState::closing:
            return "closing";
        case ControllerState::closed:
            return "closed";
    }
    return "?";
}

}  // namespace detail

bool ControllerImpl::reconnect_enabled() const noexcept {
    return options_.ctrl_loss_tmo.count() > 0 && !limits_.discovery;
}

std::string ControllerImpl::name() const {
    return options_.subsystem_nqn + " at " + peer_.target_text;
}

void ControllerImpl::transition(ControllerState to, const std::string& why) noexcept {
    log_error("controller %s: %s -> %s: %s", name().c_str(), controller_state_name(state_),
              controller_state_name(to), why.c_str());
    state_ = to;
    reconnect_stats_.reconnecting = reconnecting();
    reconnect_stats_.lost = to == ControllerState::lost;
}

std::string ControllerImpl::failure_text() const {
    const auto text = [](const HostQueue& queue) {
        return "qid " + std::to_string(queue.qid()) + " failed (" +
               std::string(transport_errc_name(queue.failure())) + ")";
    };
    if (admin_ && admin_->state() == QueueState::failed) {
        return text(*admin_);
    }
    for (const auto& queue : io_) {
        if (queue->state() == QueueState::failed) {
            return text(*queue);
        }
    }
    if (keep_alive_ && !keep_alive_->failure().empty()) {
        return keep_alive_->failure();
    }
    return "a queue failed";
}

void ControllerImpl::queue_failed(HostQueue& queue) noexcept {
    if (state_ != ControllerState::live || !reconnect_enabled()) {
        return;  // a reconnect attempt, a close or an outage under way sees it itself
    }
    // Only the state changes here: the failed queue is still on the caller's
    // stack. The teardown runs from the next service_reconnect().
    try {
        transition(ControllerState::resetting,
                   "qid " + std::to_string(queue.qid()) + " failed (" +
                       std::string(transport_errc_name(queue.failure())) + ")");
    } catch (...) {
        state_ = ControllerState::resetting;
        reconnect_stats_.reconnecting = true;
    }
}

bool ControllerImpl::service_reconnect(Clock::time_point now, std::string* why) noexcept {
    if (state_ == ControllerState::resetting ||
        (state_ == ControllerState::live && target_lost())) {
        std::string cause;
        try {
            cause = failure_text();
        } catch (...) {
        }
        begin_outage(now, cause);
    }
    if (state_ == ControllerState::waiting) {
        if (now >= lost_at_) {
            give_up("ctrl_loss_tmo of " + std::to_string(options_.ctrl_loss_tmo.count()) +
                    " ms passed without a reconnect");
        } else {
            if (!fast_failed_ && now >= fast_fail_at_) {
                fast_failed_ = true;
                std::size_t failed = 0;
                for (auto& queue : io_) {
                    queue->set_outage_policy(OutagePolicy::fail_fast);
                    failed += queue->fail_held(TransportErrc::path_failed, ENOLINK);
                }
                reconnect_stats_.transfers_failed += failed;
                log_error(
                    "controller %s: fast_io_fail_tmo of %lld ms passed: %zu held I/Os and "
                    "every new one fail with ENOLINK until reconnected",
                    name().c_str(), static_cast<long long>(options_.fast_io_fail_tmo.count()),
                    failed);
            }
            if (now >= next_attempt_) {
                attempt_reconnect(now);
            }
        }
    }
    if (state_ == ControllerState::lost) {
        if (why != nullptr) {
            try {
                *why =
                    "the controller was given up after its outage: " + reconnect_stats_.lost_reason;
            } catch (...) {
            }
        }
        return false;
    }
    return true;
}

void ControllerImpl::begin_outage(Clock::time_point now, const std::string& why,
                                  std::optional<std::chrono::milliseconds> delay) noexcept {
    outage_start_ = now;
    lost_at_ = now + options_.ctrl_loss_tmo;
    fast_fail_at_ = options_.fast_io_fail_tmo.count() > 0 ? now + options_.fast_io_fail_tmo
                                                          : Clock::time_point::max();
    fast_failed_ = false;
    if (state_ != ControllerState::resetting) {  // queue_failed() may have said so already
        transition(ControllerState::resetting, why);
    }
    tear_down_queues();
    const std::chrono::milliseconds first_delay = delay.value_or(options_.reconnect_delay);
    next_attempt_ = now + first_delay;
    std::size_t held = 0;
    for (const auto& queue : io_) {
        held += queue->held();
    }
    transition(ControllerState::waiting,
               std::to_string(held) + " I/Os held; next attempt in " +
                   std::to_string(first_delay.count()) + " ms, giving up after " +
                   std::to_string(options_.ctrl_loss_tmo.count()) + " ms");
}

void ControllerImpl::tear_down_queues() noexcept {
    keep_alive_.reset();  // its request's command ID belongs to the admin queue
    async_event_.reset();
    // Nothing waits on the target: it failed, or this attempt did.
    for (auto& queue : io_) {
        queue->disconnect(false);  // in-flight transfers are held (OutagePolicy::hold)
    }
    if (admin_) {
        admin_->disconnect(false);
    }
    for (auto& queue : io_) {
        queue->release();
    }
    if (admin_) {
        admin_->release();
    }
    take_wakeups();  // events of CQs now gone
}

void ControllerImpl::attempt_reconnect(Clock::time_point now) noexcept {
    path_ = (path_ + 1) % paths_.size();  // the next path first: this one just failed
    peer_ = paths_[path_];
    transition(ControllerState::reconnecting,
               "attempt " + std::to_string(reconnect_stats_.failed_attempts + 1) + " on " +
                   peer_.target_text + ", " + std::to_string(ms_between(outage_start_, now)) +
                   " ms into the outage");
    try {
        reassociate(now);
    } catch (const NoLongerFits& e) {
        tear_down_queues();
        give_up(e.what());
        return;
    } catch (const std::exception& e) {
        ++reconnect_stats_.failed_attempts;
        tear_down_queues();
        const auto after = Clock::now();
        if (after >= lost_at_) {
            give_up(std::string("ctrl_loss_tmo passed; last attempt: ") + e.what());
            return;
        }
        next_attempt_ = after + options_.reconnect_delay;
        transition(ControllerState::waiting, std::string(e.what()) + "; next attempt in " +
                                                 std::to_string(options_.reconnect_delay.count()) +
                                                 " ms");
    }
}

void ControllerImpl::reopen_admin_queue(const ConnectDeadline& deadline) {
    deadline_ = deadline;
    admin_->reopen(peer_, deadline_, 0);
    transport_->check_same_device(*admin_, "address resolution");
}

void ControllerImpl::reassociate(Clock::time_point now) {
    const Limits before = limits_;
    const std::vector<NamespaceInfo> namespaces = namespaces_;
    // The attempt may not outlive ctrl_loss_tmo, nor take longer than a connect.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(lost_at_ - now);
    reopen_admin_queue(
        ConnectDeadline(std::max(std::chrono::milliseconds{1}, std::min(options_.timeout, left))));
    associate();
    check_still_fits(before, namespaces);
    check_path_usable();
    limits_.source_address = admin_->local_address();
    limits_.target_address = peer_.target_text;
    if (options_.keep_alive_ms != 0) {
        keep_alive_.emplace(*admin_, std::chrono::milliseconds(options_.keep_alive_ms),
                            Clock::now());
    }
    // Live before the replay: the queues post again from here.
    const auto back = Clock::now();
    const auto outage = std::chrono::duration_cast<std::chrono::milliseconds>(back - outage_start_);
    std::size_t retried = 0;
    for (auto& queue : io_) {
        queue->set_outage_policy(OutagePolicy::hold);
        retried += queue->replay_held();
    }
    arm_async_event();
    ++reconnect_stats_.reconnects;
    reconnect_stats_.transfers_retried += retried;
    reconnect_stats_.outages.push_back(outage);
    reconnect_stats_.path = peer_.target_text;
    transition(ControllerState::live, "reconnected after an outage of " +
                                          std::to_string(outage.count()) + " ms (CNTLID " +
                                          std::to_string(limits_.cntlid) + "), " +
                                          std::to_string(retried) + " I/Os re-sent");
}

void ControllerImpl::check_still_fits(const Limits& before,
                                      const std::vector<NamespaceInfo>& namespaces) {
    if (limits_.max_transfer_bytes < before.max_transfer_bytes) {
        throw NoLongerFits("the reconnected controller's largest transfer is " +
                           std::to_string(limits_.max_transfer_bytes) +
                           " bytes (MDTS), below the " + std::to_string(before.max_transfer_bytes) +
                           " in use");
    }
    for (const NamespaceInfo& known : namespaces) {
        NamespaceInfo now;
        try {
            now = read_namespace(known.nsid);
        } catch (const ConnectError&) {
            throw;  // the target failed again: another attempt may do
        } catch (const std::exception& e) {
            throw NoLongerFits("after the reconnect, " + std::string(e.what()));
        }
        if (now.size_lbas != known.size_lbas || now.lba_size != known.lba_size) {
            throw NoLongerFits("after the reconnect, namespace " + std::to_string(known.nsid) +
                               " has " + std::to_string(now.size_lbas) + " blocks of " +
                               std::to_string(now.lba_size) + " bytes, not " +
                               std::to_string(known.size_lbas) + " of " +
                               std::to_string(known.lba_size));
        }
        if (now.zoned != known.zoned) {
            throw NoLongerFits("after the reconnect, namespace " + std::to_string(known.nsid) +
                               (now.zoned ? " is zoned" : " is no longer zoned"));
        }
        if (now.zones.zone_blocks != known.zones.zone_blocks ||
            now.zones.zone_append_max_bytes < known.zones.zone_append_max_bytes) {
            throw NoLongerFits("after the reconnect, namespace " + std::to_string(known.nsid) +
                               " has another zone size or a smaller Zone Append limit");
        }
        const BlockFormat& a = now.format;
        const BlockFormat& b = known.format;
        if (a.metadata_bytes != b.metadata_bytes || a.pi_type != b.pi_type || a.guard != b.guard ||
            a.pi_first != b.pi_first) {
            throw NoLongerFits("after the reconnect, namespace " + std::to_string(known.nsid) +
                               " has another metadata or protection information format");
        }
    }
}

void ControllerImpl::give_up(const std::string& why) noexcept {
    std::size_t failed = 0;
    for (auto& queue : io_) {
        queue->set_outage_policy(OutagePolicy::lost);
        failed += queue->fail_held(TransportErrc::controller_lost, ENODEV);
    }
    reconnect_stats_.transfers_failed += failed;
    try {
        reconnect_stats_.lost_reason = why;
    } catch (...) {
    }
    transition(ControllerState::lost, why + "; " + std::to_string(failed) +
                                          " held I/Os and every new one fail with ENODEV");
}

}  // namespace nvmeof
