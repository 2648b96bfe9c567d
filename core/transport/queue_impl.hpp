// QueueImpl: what the public queue handles (IoQueue, Request) point to, a
// controller's queue whatever its transport; nvmeof/queue.hpp declares it
// opaque.
//
// It is the root of every queue: QueueImpl ← QueueCore (queue_core.hpp, the
// transport-neutral core) ← HostQueue (host_queue.hpp, what the host drives)
// ← RdmaQueue, TcpQueue. Its virtual destructor puts the one vtable pointer
// at the start of all of them, so a handle's pointer is every class's own
// address and the facade (transport/queue_dispatch.hpp) turns it back with
// casts that cost nothing on the data path.
#pragma once

namespace nvmeof {

class QueueImpl {
  protected:
    QueueImpl() = default;
    virtual ~QueueImpl() = default;
    QueueImpl(const QueueImpl&) = default;
    QueueImpl& operator=(const QueueImpl&) = default;
};

}  // namespace nvmeof
