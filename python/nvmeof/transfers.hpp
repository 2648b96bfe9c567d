// Namespace transfers from Python, blocking or asynchronous, spread over the
// controller's I/O queues (internal to the nvmeof._core extension).
//
// A transfer is cut into command-sized pieces (the controller's maximum
// transfer size) handed out round robin to the I/O queues, so one large read
// keeps every queue busy. Pieces that find no free slot wait in a backlog and
// go out as completions free slots. Whoever holds the controller's lock may
// make progress for everyone: a blocking caller polls for its own transfer
// and files what it finds for others; the progress thread does the same for
// asynchronous transfers while any is pending, and completes their futures.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "nvmeof/controller.hpp"
#include "nvmeof/namespace.hpp"
#include "nvmeof/queue.hpp"

namespace nvmeof_python {



// Every member is called with the controller's lock held; none takes the GIL.
class TransferBoard {
public:
    // A transfer that finished, whose Python future is still to be completed.
    struct Finished {
        PyObject* future = nullptr;  // a new reference, released with the GIL
        PyObject* buffer = nullptr;  // its Buffer, a new reference counted in use (may be null)
        nvmeof::CompletionStatus status;
    };

    // Files `transfer` of `ns` under a new token and submits what fits now.
    // `future`: an asynchronous transfer (the board owns the reference until
    // take_finished() hands it out); nullptr: its caller waits (finished()).
    std::uint64_t add(nvmeof::Controller& controller, const nvmeof::Namespace& ns,
                      const nvmeof::Transfer& transfer, PyObject* future, PyObject* buffer);
    // Submits waiting pieces, polls every I/O queue and files what finished.
    // True when anything moved.
    bool progress(nvmeof::Controller& controller);
    bool finished(std::uint64_t token) const;
    // The status of a finished blocking transfer; forgets it.
    nvmeof::CompletionStatus take(std::uint64_t token);
    // Forgets a blocking transfer its caller gave up on (it stays counted in
    // the queues until its pieces are polled).
    void abandon(std::uint64_t token);
    // Asynchronous transfers that finished since the last call.
    std::vector<Finished> take_finished();
    // Fails every transfer (the controller closed or gave up): their pieces
    // will never be polled.
    void fail_all(const nvmeof::CompletionStatus& status);
    std::size_t asynchronous_pending() const noexcept { return asynchronous_; }
    bool has_finished() const noexcept { return !finished_.empty(); }
    // Commands submitted per I/O queue so far (tests see the spread).
    const std::vector<std::uint64_t>& commands_per_queue() const noexcept { return per_queue_; }

private:
    struct Pending {
        Pending(const nvmeof::Namespace& of, const nvmeof::Transfer& transfer) : ns(of), rest(transfer) {}
        nvmeof::Namespace ns;
        nvmeof::Transfer rest;  // the part not submitted yet
        std::uint64_t piece_blocks = 0;  // 0: submitted whole (flush, and the like)
        std::uint32_t outstanding = 0;   // pieces submitted and not yet polled
        bool submitted = false;          // nothing left to submit
        std::optional<nvmeof::CompletionStatus> error;  // the first failure
        PyObject* future = nullptr;
        PyObject* buffer = nullptr;
        bool abandoned = false;
    };
    void submit_waiting(nvmeof::Controller& controller);
    // False when every queue is full (the piece stays waiting).
    bool submit_piece(nvmeof::Controller& controller, std::uint64_t token, Pending& pending);
    void note_done(std::uint64_t token, Pending& pending);
    void fail(Pending& pending, const nvmeof::CompletionStatus& status);

    std::unordered_map<std::uint64_t, Pending> pending_;
    std::deque<std::uint64_t> waiting_;  // tokens with pieces to submit, oldest first
    std::vector<Finished> finished_;
    std::vector<std::uint64_t> done_;    // finished blocking tokens
    std::vector<std::uint64_t> per_queue_;
    std::uint64_t next_token_ = 1;
    std::size_t next_queue_ = 0;
    std::size_t asynchronous_ = 0;
};

}  // namespace nvmeof_python
