// One NVMe queue on one RC QP: receive buffers, request slots, and the data
// path (RDMA READ before host→controller commands, RDMA WRITE + SEND chained
// after controller→host ones).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "core.hpp"
#include "queue_context.hpp"
#include "verbs/resources.hpp"

namespace nvmeof::target {

// Per-device verbs objects shared by every queue on that device.
struct Device {
    ibv_context* context = nullptr;
    verbs::ProtectionDomain pd;
    verbs::CompletionChannel channel;  // every CQ reports here, so the loop can sleep
    ibv_device_attr attr{};
};

// Gets and acknowledges every pending completion-channel event (the loop
// polls all CQs anyway).
void drain_completion_channel(Device& device);

struct QueueSizes {
    std::uint32_t receive_count = 0;  // command buffers posted (HSQSIZE + 1)
    std::uint32_t receive_size = 0;   // bytes each (64 admin, IOCCSZ × 16 I/O)
    std::uint32_t read_depth = 1;     // RDMA READs in flight at most
};

class RdmaQueue {
  public:
    enum class State : std::uint8_t { accepting, live, disconnecting, closed };

    // Creates the CQ and QP on `id`, registers buffers and posts the receives,
    // then owns `id`. Throws std::system_error, leaving `id` to the caller.
    RdmaQueue(rdma_cm_id* id, Device& device, std::uint16_t qid, std::uint16_t hsqsize,
              const QueueSizes& sizes, QueueContext context);
    ~RdmaQueue();
    RdmaQueue(const RdmaQueue&) = delete;
    RdmaQueue& operator=(const RdmaQueue&) = delete;

    rdma_cm_id* id() const { return id_.get(); }
    QueueState& nvme() { return nvme_; }
    State state() const { return state_; }
    ibv_cq* cq() const { return cq_.get(); }

    void established();
    // rdma_disconnect once; the DISCONNECTED event then closes the queue.
    void begin_disconnect(const char* why);
    // The connection is gone: stop using the QP.
    void close() { state_ = State::closed; }

    // Polls the CQ and runs what completed; returns the completions handled.
    int poll();
    // Posts responses whose delay (delay-ms fault) has passed, and runs a
    // command the reorder-io fault held past kReorderHoldMs; returns the
    // earliest still pending, or time_point::max().
    Clock::time_point flush_delayed(Clock::time_point now);
    void arm_cq();
    // Admin queue: completes held Asynchronous Event Requests with the events
    // the core has for its controller; returns how many.
    int deliver_async_events();

  private:
    struct Request;

    void post_receive(std::uint32_t index);
    void handle_receive(std::uint32_t index, std::uint32_t byte_len);
    void start_command(Request& req, const std::uint8_t* capsule, std::uint32_t byte_len,
                       std::uint32_t receive_index);
    void post_read(Request& req);
    void start_queued_reads();
    void on_read_done(Request& req);
    void finish(Request& req, const Completion& done);
    // Appends req's response (RDMA WRITE of its data, if any, and the SEND)
    // to the list post_pass() hands to the QP.
    void post_response(Request& req);
    // Appends the chain first..last to this pass's list.
    void append_to_pass(ibv_send_wr& first, ibv_send_wr& last);
    // Posts the work requests of this pass (RDMA READs of host data, and
    // responses) in one ibv_post_send list: one system call for a batch of
    // commands, as for one command.
    void post_pass();
    void on_send_done(Request& req);
    bool ensure_buffer(Request& req, std::size_t bytes);
    // reorder-io: true when this I/O capsule is the Nth and is held back
    // (copied; its receive buffer goes back up).
    bool hold_for_reorder(const std::uint8_t* capsule, std::uint32_t byte_len);
    // Runs the held capsule (a request slot, or behind the waiting capsules).
    void release_reordered();
    Request* take_request();
    void fail(const char* what);
    std::string where() const;

    QueueContext ctx_;
    Device& device_;
    verbs::CmId id_;
    ibv_qp* qp_ = nullptr;  // id_'s QP, set once created
    verbs::CompletionQueue cq_;
    QueueState nvme_;
    QueueSizes sizes_;
    State state_ = State::accepting;

    std::vector<std::uint8_t> receive_buffers_;
    verbs::MemoryRegion receive_mr_;
    std::vector<wire::Cqe> responses_;
    verbs::MemoryRegion response_mr_;
    std::vector<std::unique_ptr<Request>> requests_;
    std::vector<Request*> free_requests_;

    std::vector<std::pair<std::uint32_t, std::uint32_t>> early_receives_;  // (index, bytes)
    std::deque<std::vector<std::uint8_t>> waiting_capsules_;  // no free request slot yet
    std::deque<Request*> queued_reads_;
    std::uint32_t reads_in_flight_ = 0;
    std::deque<Request*> delayed_;
    // reorder-io: the capsule held back, run once a command started after it
    // has finished (a request's `sequence` above `after`), or at `due`.
    struct HeldCapsule {
        std::vector<std::uint8_t> bytes;
        std::uint64_t after = 0;
        Clock::time_point due{};
    };
    std::optional<HeldCapsule> reordered_;
    std::uint64_t io_received_ = 0;            // I/O capsules received (reorder-io's count)
    std::uint64_t started_ = 0;                // commands started: each request's sequence
    std::uint32_t in_flight_ = 0;              // received and not yet answered
    std::vector<Request*> held_async_events_;  // Asynchronous Event Requests not yet answered
    ibv_send_wr* pass_head_ = nullptr;         // READs and responses of this pass, not yet posted
    ibv_send_wr* pass_tail_ = nullptr;
};

}  // namespace nvmeof::target
