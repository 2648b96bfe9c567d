// The transfer board (transfers.hpp).
#include "transfers.hpp"

#include <algorithm>
#include <array>

#include "nvmeof/wire.hpp"

namespace nvmeof_python {

namespace {

// A read, write or compare is cut at one command's worth so its pieces can go to
// different queues; the other operations go whole to one queue, which splits
// them itself where it has to. A command's worth counts the bytes per block
// that travel: data, and the metadata unless PRACT strips PI that is all of it.
std::uint64_t piece_blocks_for(const nvmeof::Controller& controller, const nvmeof::Namespace& ns,
                               nvmeof::Op op, std::uint32_t block_bytes) {
    if (!nvmeof::carries_data(op) || op == nvmeof::Op::zone_append ||
        (ns.info().zoned && op == nvmeof::Op::write)) {
        return 0;  // whole to one queue
    }
    const std::uint64_t per_command = controller.limits().max_transfer_bytes / block_bytes;
    return std::clamp<std::uint64_t>(per_command, 1, nvmeof::wire::kMaxBlocksPerCommand);
}

}  // namespace

void TransferBoard::add(nvmeof::Controller& controller, const nvmeof::Namespace& ns,
                        const nvmeof::Transfer& transfer, PyObject* future, PyObject* buffer) {
    nvmeof::check_supported(controller.limits(), transfer.op);  // before the board owns anything
    const std::uint64_t token = next_token_++;
    Pending pending{ns, transfer};
    pending.block_bytes = ns.info().buffer_block_bytes(transfer.protection);
    pending.piece_blocks = piece_blocks_for(controller, ns, transfer.op, pending.block_bytes);
    pending.future = future;
    pending.buffer = buffer;
    pending_.emplace(token, std::move(pending));
    ++asynchronous_;
    waiting_.push_back(token);
    submit_waiting(controller);
}

bool TransferBoard::progress(nvmeof::Controller& controller) {
    bool moved = false;
    std::array<nvmeof::Completion, 32> out;
    const std::size_t queues = controller.io_queue_count();
    for (std::size_t index = 0; index < queues; ++index) {
        auto queue = controller.io(index);
        std::size_t count = 0;
        do {
            count = queue.poll(out);
            moved = moved || count != 0;
            for (std::size_t i = 0; i < count; ++i) {
                const auto found = pending_.find(out[i].user_data);
                if (found == pending_.end()) {
                    continue;  // a transfer failed back by fail_all() before its pieces came home
                }
                Pending& pending = found->second;
                --pending.outstanding;
                if (!out[i].status.ok() && !pending.error) {
                    pending.error = out[i].status;
                }
                pending.append_lba = out[i].append_lba;  // read only for a Zone Append
                if (pending.submitted && pending.outstanding == 0) {
                    note_done(found->first, pending);
                }
            }
        } while (count == out.size());
    }
    if (!waiting_.empty()) {
        const std::size_t before = waiting_.size();
        submit_waiting(controller);
        moved = moved || waiting_.size() != before;
    }
    return moved;
}

void TransferBoard::submit_waiting(nvmeof::Controller& controller) {
    while (!waiting_.empty()) {
        const std::uint64_t token = waiting_.front();
        const auto found = pending_.find(token);
        if (found == pending_.end() || found->second.submitted) {
            waiting_.pop_front();
            continue;
        }
        if (!submit_piece(controller, token, found->second)) {
            return;  // every queue is full: the rest goes out as slots free up
        }
        if (found->second.submitted) {
            waiting_.pop_front();
            if (found->second.outstanding == 0) {
                note_done(token, found->second);  // failed before any piece went out
            }
        }
    }
}

bool TransferBoard::submit_piece(nvmeof::Controller& controller, std::uint64_t token,
                                 Pending& pending) {
    const std::size_t queues = controller.io_queue_count();
    nvmeof::Transfer piece = pending.rest;
    piece.user_data = token;
    if (pending.piece_blocks != 0) {
        piece.blocks = std::min(pending.rest.blocks, pending.piece_blocks);
    }
    for (std::size_t tried = 0; tried < queues; ++tried) {
        const std::size_t index = next_queue_++ % queues;
        auto queue = controller.io(index);
        const nvmeof::SubmitResult result = queue.submit(pending.ns, piece);
        if (result == nvmeof::SubmitResult::busy) {
            continue;
        }
        if (result != nvmeof::SubmitResult::queued) {
            fail(pending, queue.last_error());
            return true;
        }
        ++pending.outstanding;
        if (pending.piece_blocks == 0) {
            pending.submitted = true;
        } else {
            pending.rest.slba += piece.blocks;
            pending.rest.offset += piece.blocks * pending.block_bytes;
            pending.rest.blocks -= piece.blocks;
            // An explicit reference tag counts on with the blocks (from the
            // LBA, each piece's comes from its own slba).
            pending.rest.protection = nvmeof::protection_after(
                pending.ns.format(), pending.rest.protection, piece.blocks);
            pending.submitted = pending.rest.blocks == 0;
        }
        return true;
    }
    return false;
}

void TransferBoard::fail(Pending& pending, const nvmeof::CompletionStatus& status) {
    if (!pending.error) {
        pending.error = status;
    }
    pending.submitted = true;  // what is in flight still comes home; nothing more goes out
}

void TransferBoard::note_done(std::uint64_t token, Pending& pending) {
    finished_.push_back({pending.future, pending.buffer,
                         pending.error.value_or(nvmeof::CompletionStatus{}), pending.rest.op,
                         pending.append_lba});
    --asynchronous_;
    pending_.erase(token);
}

std::vector<TransferBoard::Finished> TransferBoard::take_finished() {
    std::vector<Finished> finished;
    finished.swap(finished_);
    return finished;
}

void TransferBoard::fail_all(const nvmeof::CompletionStatus& status) {
    waiting_.clear();
    for (auto it = pending_.begin(); it != pending_.end();) {
        Pending& pending = it->second;
        if (!pending.error) {
            pending.error = status;
        }
        finished_.push_back({pending.future, pending.buffer, *pending.error, pending.rest.op, 0});
        --asynchronous_;
        it = pending_.erase(it);
    }
}

}  // namespace nvmeof_python
