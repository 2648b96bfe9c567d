// The background keep-alive (nvmeof/keep_alive_thread.hpp).
#include "nvmeof/keep_alive_thread.hpp"

#include <algorithm>

#include "nvmeof/controller.hpp"

namespace nvmeof {

namespace {

// Several calls per keep-alive period: keep_connected() itself decides when a
// Keep Alive is due, so a late tick costs margin, never a command.
constexpr unsigned kTicksPerTimeout = 8;
constexpr std::chrono::milliseconds kShortestTick{10};

std::chrono::milliseconds tick_for(const Controller& controller, std::chrono::milliseconds tick) {
    const auto kato = std::chrono::milliseconds(controller.limits().keep_alive_ms);
    if (kato.count() > 0) {
        tick = std::min(tick, kato / kTicksPerTimeout);
    }
    return std::max(tick, kShortestTick);
}

}  // namespace

KeepAliveThread::KeepAliveThread(Controller& controller, std::mutex& controller_lock,
                                 std::chrono::milliseconds tick)
    : controller_(controller),
      controller_lock_(controller_lock),
      tick_(tick_for(controller, tick)),
      thread_([this] { run(); }) {}

KeepAliveThread::~KeepAliveThread() {
    {
        std::lock_guard guard(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

unsigned long long KeepAliveThread::services() const {
    std::lock_guard guard(mutex_);
    return services_;
}

void KeepAliveThread::run() {
    std::unique_lock guard(mutex_);
    while (!wake_.wait_for(guard, tick_, [this] { return stop_; })) {
        guard.unlock();
        {
            std::lock_guard controller_guard(controller_lock_);
            // A false return (failed, given up, closed) is the caller's to see
            // on its next call; the thread keeps ticking so that a reconnect
            // configured later, or a close, needs nothing from it.
            controller_.keep_connected();
        }
        guard.lock();
        ++services_;
    }
}

}  // namespace nvmeof
