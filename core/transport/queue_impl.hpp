// QueueImpl: what the public queue handles (IoQueue, Request) point to, a
// controller's queue whatever its transport; nvmeof/queue.hpp declares it
// opaque.
//
// QueueImpl is empty and the transport-neutral QueueCore (queue_core.hpp)
// its one base: RDMA is the only backend so far (RdmaQueue derives from
// QueueCore), so a handle's pointer is the RdmaQueue's own address and the
// facade (core/host/io_queue.cpp) turns it back with a static_cast that costs
// nothing on the data path. A second transport makes the facade choose its
// backend here.
#pragma once

namespace nvmeof {

class QueueImpl {
  protected:
    QueueImpl() = default;
    ~QueueImpl() = default;
};

}  // namespace nvmeof
