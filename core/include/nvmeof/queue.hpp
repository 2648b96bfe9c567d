// An NVMe I/O (or admin) queue over one RDMA queue pair.
//
// Two ways to use it, on the same request pool:
// - non-blocking transfers for an event loop (the fio engine): submit() returns
//   queued / busy / invalid / failed and never throws, allocates or makes a
//   system call; poll(span) hands back finished transfers by user_data.
// - low-level commands, like the Python API: submit(sqe, owner) returns a
//   Request; make_progress() until request.done(); request.response().raise_for_status().
//
// Not thread-safe: one thread drives a controller and its queues.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "nvmeof/base/response.hpp"
#include "nvmeof/base/transfer.hpp"
#include "nvmeof/base/transport.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/memory.hpp"
#include "nvmeof/protection.hpp"
#include "nvmeof/wire/command.hpp"

namespace nvmeof {

class Namespace;

// A controller's queue, whatever its transport (opaque here).
class QueueImpl;

struct NamespaceInfo;
// A transfer's range rules, with the reason: its LBA range inside the
// namespace, and a data transfer's blocks inside its memory region from
// `offset` (a region not given is not checked here). Throws InvalidArgument
// naming what does not fit. The blocking
// calls (Namespace, Python) check with this; the data path's submit checks
// the same without building text and answers SubmitResult::invalid.
void check_transfer(const NamespaceInfo& ns, const Transfer& transfer);

// A low-level command in flight. Move-only; its command ID is freed when the
// request is done and the handle is gone.
class Request {
  public:
    Request() = default;
    Request(QueueImpl* queue, std::uint16_t cid) : queue_(queue), cid_(cid) {}
    Request(Request&& other) noexcept;
    Request& operator=(Request&& other) noexcept;
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;
    ~Request();

    bool done() const noexcept;
    const Response& response() const;  // throws Error unless done()
    std::uint16_t command_id() const noexcept { return cid_; }

  private:
    void release() noexcept;
    QueueImpl* queue_ = nullptr;
    std::uint16_t cid_ = 0;
};

// A thin handle to a queue owned by its Controller (valid while it is open).
class IoQueue {
  public:
    explicit IoQueue(QueueImpl* queue) : queue_(queue) {}

    SubmitResult submit(const Namespace& ns, const Transfer& transfer,
                        Post post = Post::now) noexcept;
    // Posts every deferred transfer in one chain (no-op when none).
    void commit() noexcept;
    std::size_t deferred() const noexcept;  // commands waiting for commit()
    // Finished transfers, at most out.size(); never blocks. Also enforces the
    // request deadlines: a request the target never answers fails (with the
    // whole queue, after its QP was moved to error and drained).
    std::size_t poll(std::span<Completion> out) noexcept;
    // The same, and `failed`: how many of those did not succeed (0: a caller
    // that only acts on errors need not look at their statuses).
    std::size_t poll(std::span<Completion> out, std::size_t& failed) noexcept;
    // Why the last submit() returned invalid or failed.
    const CompletionStatus& last_error() const noexcept;

    // Low level. Throws TransportError when no slot is free or the queue failed.
    // A command whose SGL is keyed (and not empty) names the memory it reaches
    // as `data_owner`: the SGL's rkey must be the owner's and its range inside
    // the owner's, else InvalidArgument and nothing is posted. Keep the owner
    // registered until the request is done.
    Request submit(const wire::Sqe& command, const MemoryRegion* data_owner = nullptr);
    // Handles what the queue has received (answers, send completions) and
    // enforces deadlines, handing nothing back: the low-level requests' progress.
    void make_progress() noexcept;

    std::uint16_t qid() const noexcept;
    std::size_t capacity() const noexcept;  // usable slots (queue size − 1)
    std::size_t free_slots() const noexcept;
    std::size_t in_flight() const noexcept;
    // Transfers that the next answer can finish (their last command is out), or
    // finished and not yet polled. While there are none, the next answer only
    // brings a split transfer closer: a caller waiting for completions gains
    // nothing by spinning for it.
    std::size_t near_completion() const noexcept;
    // Transfers held while the controller reconnects, re-sent once it is back
    // (they complete later, like those in flight).
    std::size_t held() const noexcept;
    // Transfers finished and not yet handed back: the next poll() returns
    // them without asking the transport (no system call over NVMe/TCP).
    std::size_t finished() const noexcept;
    bool failed() const noexcept;
    // How many commands a transfer is split into (0 for an empty one). Up to
    // free_slots() go out at once, the rest as slots free up.
    std::size_t pieces(const Namespace& ns, const Transfer& transfer) const noexcept;
    // PDUs, system calls and bytes copied so far (zeros over NVMe/RDMA);
    // off the data path, cheap enough to read once a second.
    TransportCounters transport_counters() const noexcept;

  private:
    QueueImpl* queue_;
};

}  // namespace nvmeof
