// TcpQueue's data path: the core's per-I/O steps (queue_core_datapath.hpp)
// instantiated with the transport operations in line
// (tcp_queue_command.hpp), and the poll that continues the output and feeds
// what was received to the core (tcp_queue.hpp describes it). No allocation,
// no blocking and no exception per request; one sendmsg per commit, one
// recvmsg per poll (none while no command is out).
#include "transport/queue_core_datapath.hpp"
#include "transport/tcp_queue.hpp"
#include "transport/tcp_queue_command.hpp"

namespace nvmeof::detail {

SubmitResult TcpQueue::submit(const NamespaceRef& ns, const Transfer& t, Post post) noexcept {
    // One test sends a namespace with metadata to its own path, so that
    // neither path asks the other's questions.
    return ns.format.metadata_bytes != 0 ? submit_with_metadata(ns, t, post, nullptr)
                                         : submit_one(*this, ns, t, nullptr, post);
}

SubmitResult TcpQueue::submit_transfer(const NamespaceRef& ns, const Transfer& t, bool internal,
                                       std::uint32_t* tid, Post post) noexcept {
    // The core marks a transfer internal by the tid it writes back.
    std::uint32_t* const internal_tid = internal ? tid : nullptr;
    if (ns.format.metadata_bytes != 0) {
        return submit_with_metadata(ns, t, post, internal_tid);
    }
    return submit_one(*this, ns, t, internal_tid, post);
}

SubmitResult TcpQueue::submit_with_metadata(const NamespaceRef& ns, const Transfer& t, Post post,
                                            std::uint32_t* tid) noexcept {
    // The blocks' metadata travels with their data (or not, with PRACT) as
    // the namespace's format says: the bytes are the core's to count.
    return QueueCore::submit_with_metadata(*this, ns, t, post, tid);
}

std::uint16_t TcpQueue::submit_command(const wire::Sqe& command, Deadline deadline) {
    return QueueCore::submit_command(*this, command, deadline);
}

std::size_t TcpQueue::take_completions(std::span<Completion> out, std::size_t& failed) noexcept {
    return QueueCore::take_completions(*this, out, failed);
}

int TcpQueue::poll_cq() noexcept {
    if (!socket_ || failed()) {
        return 0;
    }
    // One clock read per poll at most: for the deadlines of what was built
    // since the last one, and for checking deadlines.
    const Clock::time_point now = stamp_if_due(*this);
    if (output_pending()) {
        push_output();  // what an earlier send left, and H2CData not yet sent
    }
    // What the last poll's budget left first; then one recvmsg, if the budget
    // allows, nothing whole is waiting and a command is out (with none, only a
    // close or a C2HTermReq can come: the idle wait's arm_if_quiet looks for
    // those, and the next command's poll finds them).
    int n = take_pdus(kPollBatch);
    if (!failed() && !rx_ready_ && in_flight() != 0) {
        receive();
        n += take_pdus(kPollBatch - n);
    }
    if (!failed() && h2c_waiting_ != 0) {
        push_output();  // R2Ts just received: their data goes now
    }
    after_poll(*this, n, now);
    return n;
}

bool TcpQueue::arm_if_quiet() noexcept {
    // The socket needs no arming: it reports readable by itself. A poll takes
    // what is already there, so nothing that arrived is slept through.
    if (!socket_ || failed() || has_finished()) {
        return false;
    }
    while (poll_cq() == kPollBatch) {
    }
    if (in_flight() == 0 && !failed() && !rx_ready_) {
        // poll_cq() made no recvmsg: a connection the controller closed (or a
        // C2HTermReq) is noticed here rather than waking the wait at once.
        receive();
        take_pdus(kPollBatch);
    }
    // Output still to send cannot wait for the socket to turn readable (the
    // controller may be waiting for it): the caller keeps polling.
    return !has_finished() && !failed() && !rx_ready_ && !output_pending();
}

}  // namespace nvmeof::detail
