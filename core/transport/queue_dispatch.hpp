// What the public handles (IoQueue, Request; core/host/io_queue.cpp) call
// their queue through: a QueueImpl is a HostQueue (host_queue.hpp), reached
// through its transport's final type (RdmaQueue, TcpQueue), so that every
// per-I/O call is direct, as when RDMA was the only transport: one test of
// the tag.
#pragma once

#include "transport/host_queue.hpp"
#include "transport/queue_impl.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/tcp_queue.hpp"

namespace nvmeof::detail {

// f(queue) with `queue` the final RdmaQueue or TcpQueue.
template <class F>
[[gnu::always_inline]] inline decltype(auto) on_queue(QueueImpl* impl, F&& f) {
    // References: a pointer cast would test for null.
    auto& queue = static_cast<HostQueue&>(*impl);
    if (queue.transport() == Transport::rdma) [[likely]] {
        return f(static_cast<RdmaQueue&>(queue));
    }
    return f(static_cast<TcpQueue&>(queue));
}

}  // namespace nvmeof::detail
