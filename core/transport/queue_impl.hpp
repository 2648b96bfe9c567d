// QueueImpl: what the public queue handles (IoQueue, Request) point to, a
// controller's queue whatever its transport; nvmeof/queue.hpp declares it
// opaque.
//
// RDMA is the only transport: RdmaQueue derives from QueueImpl, which is empty,
// so a handle's pointer is the RdmaQueue's own address and the facade
// (core/host/io_queue.cpp) turns it back with a static_cast that costs
// nothing on the data path. A second transport makes this the interface both
// implement.
#pragma once

namespace nvmeof {

class QueueImpl {
  protected:
    QueueImpl() = default;
    ~QueueImpl() = default;
};

}  // namespace nvmeof
