// Asymmetric namespace access on the host side, after the kernel's native
// multipath (drivers/nvme/host/multipath.c): a controller that reports ANA
// (Identify CMIC bit 3) tells, per path, whether the namespaces can be reached
// through it. The controller
//   - at the first connect, probes Options::target's paths in order and keeps
//     the first optimized one, else the first non-optimized one;
//   - with reconnect (ctrl_loss_tmo), keeps one Asynchronous Event Request on
//     the admin queue; an ANA change notice re-reads the log page, and when the
//     path in use became inaccessible, lost or changing, moves to the next path
//     at once through the reconnect machinery (transfers held, then replayed);
//   - on a reconnect, refuses a path whose state is not usable (the attempt
//     fails and the next one tries the next path).
// A path that turned non-optimized is kept: which other path is optimized is
// known only by connecting to it, and the kernel too keeps using a
// non-optimized path when it has no optimized one at hand.
#include <cstring>

#include "base/log.hpp"
#include "host/controller_impl.hpp"
#include "nvmeof/wire/ana.hpp"

namespace nvmeof {

// ControllerImpl is nvmeof's, as the public headers name it; what it is made
// of (the host's helpers, the transport's queues) is nvmeof::detail's.
using namespace detail;

namespace {

// Worse states rank higher: the path's state is the worst of its groups'.
int ana_rank(wire::AnaState state) {
    switch (state) {
        case wire::AnaState::optimized:
            return 0;
        case wire::AnaState::non_optimized:
            return 1;
        case wire::AnaState::change:
            return 2;
        case wire::AnaState::inaccessible:
            return 3;
        case wire::AnaState::persistent_loss:
            return 4;
    }
    return 4;
}

}  // namespace

bool ControllerImpl::ana_in_use() const noexcept {
    return ana_reporting_ && !limits_.discovery && (paths_.size() > 1 || reconnect_enabled());
}

wire::AnaState ControllerImpl::read_ana_state() {
    const std::string step = "Get Log Page (ANA)";
    const std::size_t length =
        wire::kIdentifyDataSize;  // the scratch page; one group fits many times
    execute_ok(*admin_,
               wire::ana_log_page_command(
                   0, wire::keyed_data_block(scratch(kScratchIdentifyOffset, length)), false),
               step);
    wire::AnaLog log;
    try {
        log = wire::parse_ana_log(std::span(
            reinterpret_cast<const std::uint8_t*>(scratch_.get() + kScratchIdentifyOffset),
            length));
    } catch (const std::runtime_error& e) {
        throw ConnectError(ConnectFailure::unsupported_controller, step, e.what());
    }
    // The groups of the namespaces in use; before any is identified, every group.
    wire::AnaState worst = wire::AnaState::optimized;
    bool found = false;
    for (const wire::AnaGroup& group : log.groups) {
        bool ours = namespaces_.empty();
        for (const NamespaceInfo& ns : namespaces_) {
            for (const std::uint32_t nsid : group.nsids) {
                ours = ours || nsid == ns.nsid;
            }
        }
        if (ours) {
            found = true;
            if (ana_rank(group.state) > ana_rank(worst)) {
                worst = group.state;
            }
        }
    }
    if (!found) {
        // No group lists our namespaces: nothing restricts this path.
        worst = wire::AnaState::optimized;
    }
    ana_change_count_ = log.change_count;
    ana_state_ = worst;
    return worst;
}

std::string ControllerImpl::ana_text() const {
    return peer_.target_text + " is ANA " + std::string(wire::ana_state_name(ana_state_));
}

void ControllerImpl::connect_preferred_path() {
    std::optional<std::size_t> fallback;  // the first usable, non-optimized path
    std::exception_ptr last_error;
    const std::size_t first = path_;
    for (std::size_t tried = 0; tried < paths_.size(); ++tried) {
        const std::size_t index = (first + tried) % paths_.size();
        try {
            if (tried > 0) {
                move_admin_queue_to(index);
            }
            associate();
            if (!ana_in_use()) {
                return;
            }
            const wire::AnaState state = read_ana_state();
            if (state == wire::AnaState::optimized) {
                return;
            }
            if (wire::ana_state_usable(state) && !fallback) {
                fallback = index;
            }
            log_error("controller %s: %s; trying the next path for an optimized one",
                      name().c_str(), ana_text().c_str());
        } catch (const ConnectError& e) {
            if (paths_.size() == 1 || e.cause() == ConnectFailure::invalid_options ||
                e.cause() == ConnectFailure::cancelled) {
                throw;
            }
            log_error("controller %s: path %s failed: %s; trying the next path", name().c_str(),
                      peer_.target_text.c_str(), e.what());
            last_error = std::current_exception();
        }
        tear_down_queues();
    }
    if (fallback) {
        move_admin_queue_to(*fallback);
        associate();
        read_ana_state();
        log_error("controller %s: no optimized path; staying on the first usable one: %s",
                  name().c_str(), ana_text().c_str());
        return;
    }
    if (last_error) {
        std::rethrow_exception(last_error);
    }
    throw ConnectError(ConnectFailure::unsupported_controller, "Get Log Page (ANA)",
                       "no path of " + options_.target +
                           " can reach the namespaces: each is ANA inaccessible, lost or changing");
}

void ControllerImpl::move_admin_queue_to(std::size_t index) {
    path_ = index;
    peer_ = paths_[index];
    reopen_admin_queue(deadline_.renewed(options_.timeout));  // each path gets a whole connect
}

void ControllerImpl::check_path_usable() {
    if (!ana_in_use()) {
        return;
    }
    if (!wire::ana_state_usable(read_ana_state())) {
        throw ConnectError(ConnectFailure::unsupported_controller, "Get Log Page (ANA)",
                           ana_text() + ", so it cannot reach the namespaces");
    }
}

void ControllerImpl::arm_async_event() noexcept {
    if (!ana_in_use() || !reconnect_enabled() || async_event_ || !admin_ || admin_->failed()) {
        return;
    }
    try {
        async_event_.emplace(
            admin_.get(),
            admin_->submit_command(wire::async_event_request_command(), HostQueue::Deadline::none));
    } catch (const std::exception& e) {
        log_error("controller %s: cannot send an Asynchronous Event Request: %s", name().c_str(),
                  e.what());
    }
}

void ControllerImpl::service_async_event(Clock::time_point now) noexcept {
    if (!async_event_ || state_ != ControllerState::live) {
        return;
    }
    admin_->poll_cq();
    if (!async_event_->done()) {
        return;
    }
    const Response response = async_event_->response();
    async_event_.reset();
    if (!response.status.ok()) {
        if (!admin_->failed()) {
            log_error("controller %s: Asynchronous Event Request failed: %s; no more ANA notices",
                      name().c_str(), describe(response.status).c_str());
        }
        return;  // a failed admin queue starts an outage; the reconnect arms a new one
    }
    const wire::AsyncEvent event = wire::parse_async_event(response.cqe.dw0);
    arm_async_event();
    if (!event.is_ana_change()) {
        return;
    }
    const wire::AnaState before = ana_state_;
    try {
        read_ana_state();
    } catch (const std::exception& e) {
        log_error("controller %s: ANA change notice, but the log page could not be read: %s",
                  name().c_str(), e.what());
        return;
    }
    if (ana_state_ == before) {
        return;
    }
    if (wire::ana_state_usable(ana_state_) || paths_.size() < 2) {
        // Still usable, or nowhere else to go: I/O failing with a path status
        // starts an outage, and the reconnect waits for the path to return.
        log_error("controller %s: ANA change: %s (was %s)", name().c_str(), ana_text().c_str(),
                  std::string(wire::ana_state_name(before)).c_str());
        return;
    }
    ++reconnect_stats_.ana_moves;
    begin_outage(now,
                 "ANA change: " + ana_text() + " (was " +
                     std::string(wire::ana_state_name(before)) + "), moving to the next path",
                 std::chrono::milliseconds{0});
}

}  // namespace nvmeof
