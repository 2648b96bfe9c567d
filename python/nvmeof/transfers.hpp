// Asynchronous namespace transfers from Python (read_async, write_async,
// compare_async), spread over the controller's I/O queues (internal to the
// nvmeof._core extension; blocking calls run the core's own loop,
// Namespace::run).
//
// A transfer is cut into command-sized pieces (the controller's maximum
// transfer size, counting the metadata that travels with each block; an
// explicit reference tag advanced piece by piece) handed out round robin to
// the I/O queues, as the core's blocking loop does, so one large read keeps
// every queue busy. A write on a zoned namespace and a Zone Append go whole
// to one queue, as the blocking loop sends them (its pieces in order there). Pieces that find no
// free slot wait in a backlog and go out as completions free slots. The progress thread polls while
// any transfer is pending and completes their futures; the pieces travel on the queues' public
// transfers (poll(span), by user_data), which the blocking loop's internal records never take.
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
        nvmeof::Op op = nvmeof::Op::read;  // a Compare's future has a result: True or False
        std::uint64_t append_lba = 0;      // a Zone Append's result: the LBA written
    };

    // Files `transfer` of `ns` and submits what fits now. The board owns the
    // `future` and `buffer` references until take_finished() hands them out.
    // Throws InvalidArgument, owning nothing, for an operation the controller
    // does not support (nvmeof::check_supported).
    void add(nvmeof::Controller& controller, const nvmeof::Namespace& ns,
             const nvmeof::Transfer& transfer, PyObject* future, PyObject* buffer);
    // Submits waiting pieces, polls every I/O queue and files what finished.
    // True when anything moved.
    bool progress(nvmeof::Controller& controller);
    // Asynchronous transfers that finished since the last call.
    std::vector<Finished> take_finished();
    // Fails every transfer (the controller closed or gave up): their pieces
    // will never be polled.
    void fail_all(const nvmeof::CompletionStatus& status);
    std::size_t asynchronous_pending() const noexcept { return asynchronous_; }
    bool has_finished() const noexcept { return !finished_.empty(); }

  private:
    struct Pending {
        Pending(const nvmeof::Namespace& of, const nvmeof::Transfer& transfer)
            : ns(of), rest(transfer) {}
        nvmeof::Namespace ns;
        nvmeof::Transfer rest;           // the part not submitted yet
        std::uint64_t piece_blocks = 0;  // 0: submitted whole (flush, and the like)
        std::uint32_t block_bytes = 0;   // of the buffer, per block (data and metadata that travel)
        std::uint32_t outstanding = 0;   // pieces submitted and not yet polled
        bool submitted = false;          // nothing left to submit
        std::optional<nvmeof::CompletionStatus> error;  // the first failure
        std::uint64_t append_lba = 0;                   // a Zone Append's, once done
        PyObject* future = nullptr;
        PyObject* buffer = nullptr;
    };
    void submit_waiting(nvmeof::Controller& controller);
    // False when every queue is full (the piece stays waiting).
    bool submit_piece(nvmeof::Controller& controller, std::uint64_t token, Pending& pending);
    void note_done(std::uint64_t token, Pending& pending);
    void fail(Pending& pending, const nvmeof::CompletionStatus& status);

    std::unordered_map<std::uint64_t, Pending> pending_;
    std::deque<std::uint64_t> waiting_;  // tokens with pieces to submit, oldest first
    std::vector<Finished> finished_;
    std::uint64_t next_token_ = 1;
    std::size_t next_queue_ = 0;
    std::size_t asynchronous_ = 0;
};

}  // namespace nvmeof_python
