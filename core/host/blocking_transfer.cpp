// The blocking calls' one loop (Namespace::read/write/flush/..., and the
// Python package's blocking transfers through Namespace::run): the transfer
// is cut into commands of at most MDTS, handed round robin to the I/O queues
// as they have room (a write on a zoned namespace and a Zone Append go
// whole to one queue), and waited for, keep-alive and reconnecting driven
// meanwhile. Its commands use the queues' internal records, which a caller
// polling the same queues (fio, another thread's poll(span)) never takes.
#include <thread>
#include <vector>

#include "host/controller_impl.hpp"
#include "transport/transfer_split.hpp"

namespace nvmeof {

// ControllerImpl is nvmeof's, as the public headers name it; what it is made
// of (the host's helpers, the transport's queues) is nvmeof::detail's.
using namespace detail;

namespace {

// A piece of the transfer in flight: its queue and its transfer ID there.
struct PieceInFlight {
    HostQueue* queue;
    std::uint32_t tid;
};

}  // namespace

void detail::pause_between_polls(const BetweenPolls& between_polls, std::chrono::microseconds nap) {
    if (between_polls) {
        between_polls();  // the caller's other threads run here
    } else if (nap.count() != 0) {
        std::this_thread::sleep_for(nap);
    } else {
        std::this_thread::yield();
    }
}

void ControllerImpl::wait_out_outage(const BetweenPolls& between_polls) {
    while (reconnecting()) {  // a blocking caller waits out the outage (or its end)
        keep_connected(nullptr);
        pause_between_polls(between_polls, std::chrono::milliseconds(1));
    }
    require_open("I/O");
}

bool ControllerImpl::run_transfer(const NamespaceInfo& ns, const Transfer& t,
                                  const BetweenPolls& between_polls, std::uint64_t* append_lba) {
    const auto pause = [&](std::chrono::microseconds nap) {
        pause_between_polls(between_polls, nap);
    };
    wait_out_outage(between_polls);
    check_transfer(ns, t);
    check_supported(limits_, t.op);
    const bool has_data = carries_data(t.op);
    if (has_data &&
        (t.memory == nullptr || !t.memory->valid() || t.memory->record()->owner != this)) {
        throw InvalidArgument("namespace " + std::to_string(ns.nsid) +
                              ": the memory region is not registered with this controller "
                              "(closed, reset or moved from)");
    }
    const NamespaceRef ref = namespace_ref(ns);
    const std::uint32_t block_bytes = ns.buffer_block_bytes(t.protection);
    // A read, write or compare is cut at one command's worth, so its pieces can go to
    // different queues; the other operations go whole to one queue, which
    // splits them where it has to. So do a Zone Append (never split) and a
    // write on a zoned namespace: its queue sends the pieces in order, where
    // queues side by side would race them to the zone's write pointer.
    const bool whole = !has_data || t.op == Op::zone_append || (ns.zoned && t.op == Op::write);
    const std::uint64_t per_piece =
        whole ? t.blocks : max_blocks_per_command(limits_.max_transfer_bytes, block_bytes);
    std::vector<PieceInFlight> in_flight;
    CompletionStatus first_error;
    std::uint64_t submitted = 0;
    bool all_submitted = false;
    std::size_t next_queue = 0;
    for (;;) {
        while (!all_submitted) {
            Transfer piece = t;
            piece.slba = t.slba + submitted;
            piece.offset = t.offset + submitted * block_bytes;
            piece.blocks = std::min(per_piece, t.blocks - submitted);
            piece.protection = protection_after(ns.format, t.protection, submitted);
            bool placed = false;
            for (std::size_t tried = 0; tried < io_.size() && !placed; ++tried) {
                HostQueue& queue = *io_[next_queue++ % io_.size()];
                std::uint32_t tid = 0;
                const SubmitResult result = queue.submit_transfer(ref, piece, true, &tid);
                if (result == SubmitResult::busy) {
                    continue;
                }
                placed = true;
                if (result != SubmitResult::queued) {
                    if (first_error.ok()) {
                        first_error = queue.last_error();
                    }
                    all_submitted = true;  // what is in flight still comes home
                    break;
                }
                in_flight.push_back({&queue, tid});
                submitted += piece.blocks;
                all_submitted = submitted >= t.blocks;
            }
            if (!placed) {
                break;  // every queue is full: wait for room
            }
        }
        for (auto& queue : io_) {
            queue->poll_cq();
        }
        std::erase_if(in_flight, [&](const PieceInFlight& piece) {
            if (!piece.queue->transfer_finished(piece.tid)) {
                return false;
            }
            const CompletionStatus status = piece.queue->take_transfer(piece.tid, append_lba);
            if (!status.ok() && first_error.ok()) {
                first_error = status;
            }
            return true;
        });
        if (all_submitted && in_flight.empty()) {
            break;
        }
        keep_connected(
            nullptr);  // a long transfer must not starve the target's timer; or a reconnect
        pause(std::chrono::microseconds(0));
        if (!open() && !reconnecting()) {
            require_open("I/O");  // closed meanwhile (by another thread, in between_polls)
        }
    }
    if (t.op == Op::compare && first_error.miscompare()) {
        return false;  // the blocks differ: Compare's answer, not an error
    }
    raise_for_status(first_error);
    return true;
}

}  // namespace nvmeof
