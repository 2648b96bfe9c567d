#include "host/process_guard.hpp"

#include <unistd.h>

#include <atomic>

#include "nvmeof/errors.hpp"

namespace nvmeof::detail {
namespace {

std::atomic<pid_t> rdma_user{0};

}  // namespace

void claim_rdma_for_this_process() {
    const pid_t self = getpid();
    pid_t expected = 0;
    if (rdma_user.compare_exchange_strong(expected, self) || expected == self) {
        return;
    }
    throw ConnectError(
        ConnectFailure::forked_after_use, "start",
        "process " + std::to_string(self) + " was forked from process " + std::to_string(expected) +
            ", which had already used RDMA; rdma-core keeps that device state per process and "
            "the kernel refuses it in a child. Connect only in processes that did not inherit "
            "it: use threads, or do the parent's RDMA work in a short-lived child (as the fio "
            "engine does for its setup probe)");
}

}  // namespace nvmeof::detail
