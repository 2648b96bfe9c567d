// Keep-alive (and reconnecting) driven by a thread of its own, for callers that
// may sit idle longer than the keep-alive timeout: an interactive program, a
// Python interpreter between calls. An event loop that polls regularly calls
// Controller::keep_connected() itself and needs no thread (the fio engine does).
//
//   std::mutex lock;  // held by the caller around each of its own calls into ctrl
//   nvmeof::KeepAliveThread keeper(ctrl, lock);
//
// The controller is not thread-safe: the thread takes `lock` around every call
// it makes, so the caller's submissions and polls, under the same lock, never
// overlap with it. It never holds the lock while it sleeps.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace nvmeof {

class Controller;

class KeepAliveThread {
  public:
    // Starts calling controller.keep_connected() (which sends a Keep Alive every half
    // timeout and, with ctrl_loss_tmo, runs reconnect attempts) every `tick`, or
    // as often as the controller's keep-alive timeout needs if that is shorter.
    // Both must outlive this object.
    KeepAliveThread(Controller& controller, std::mutex& controller_lock,
                    std::chrono::milliseconds tick = std::chrono::milliseconds(100));
    KeepAliveThread(const KeepAliveThread&) = delete;
    KeepAliveThread& operator=(const KeepAliveThread&) = delete;
    // Stops the thread; waits at most for one keep_connected() call in progress.
    ~KeepAliveThread();

    // keep_connected() calls made so far (for tests and diagnostics).
    unsigned long long services() const;

  private:
    void run();

    Controller& controller_;
    std::mutex& controller_lock_;
    std::chrono::milliseconds tick_;
    mutable std::mutex mutex_;  // guards stop_ and services_
    std::condition_variable wake_;
    bool stop_ = false;
    unsigned long long services_ = 0;
    std::thread thread_;  // last: started once every member above exists
};

}  // namespace nvmeof
