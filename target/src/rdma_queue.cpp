#include "rdma_queue.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

namespace nvmeof::target {
namespace {

// wr_id = kind << 32 | slot, so one CQ serves receives, READs and SENDs.
enum class WorkKind : std::uint64_t { receive = 1, read = 2, send = 3 };
constexpr unsigned kWorkKindShift = 32;
constexpr std::uint64_t kSlotMask = 0xFFFFFFFF;
constexpr int kPollBatch = 32;
// Each request has at most two send-queue WRs outstanding (WRITE + SEND, or
// one READ), and there are twice as many request slots as receive buffers: a
// slot stays busy until its SEND completes, which can trail the host's next
// command.
constexpr std::uint32_t kSlotsPerReceive = 2;
constexpr std::uint32_t kSendWrsPerSlot = 2;
constexpr std::size_t kMinDataBuffer = 4096;
constexpr std::uint32_t kReceiveAccess = IBV_ACCESS_LOCAL_WRITE;

std::uint64_t work_id(WorkKind kind, std::uint32_t slot) {
    return (static_cast<std::uint64_t>(kind) << kWorkKindShift) | slot;
}

// The numeric host of a CM address ("10.0.0.2", "fd00::1"), "" when it has none.
std::string numeric_host(const sockaddr* address) {
    if (address == nullptr) {
        return {};
    }
    const socklen_t length =
        address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    char host[NI_MAXHOST];
    if (getnameinfo(address, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) {
        return {};
    }
    return host;
}

}  // namespace

struct RdmaQueue::Request {
    std::uint32_t index = 0;
    wire::Sqe sqe{};
    DataPlan plan;
    Completion done;
    std::vector<std::uint8_t> buffer;
    verbs::MemoryRegion mr;
    Clock::time_point due{};
    std::uint64_t sequence = 0;  // started_ when it was started (reorder-io)
    // The work requests of the host data's RDMA READ and of the response,
    // kept here until the pass posts them.
    ibv_sge read_sge{};
    ibv_send_wr read_wr{};
    ibv_sge data_sge{};
    ibv_send_wr data_wr{};
    ibv_sge response_sge{};
    ibv_send_wr response_wr{};
};

RdmaQueue::RdmaQueue(rdma_cm_id* id, Device& device, std::uint16_t qid, std::uint16_t hsqsize,
                     const QueueSizes& sizes, QueueContext context)
    : ctx_(context), device_(device), sizes_(sizes) {
    nvme_.qid = qid;
    nvme_.sqsize = hsqsize;
    nvme_.local_address = numeric_host(rdma_get_local_addr(id));
    nvme_.in_capsule_capacity = sizes.receive_size - static_cast<std::uint32_t>(wire::kSqeSize);

    const auto max_wr = static_cast<std::uint32_t>(std::max(device.attr.max_qp_wr, 2));
    const std::uint32_t slots = std::clamp<std::uint32_t>(sizes.receive_count * kSlotsPerReceive, 1,
                                                          max_wr / kSendWrsPerSlot);
    const std::uint32_t cq_entries = sizes.receive_count + slots * kSendWrsPerSlot + 1;
    cq_ = verbs::create_cq(
        device.context,
        static_cast<int>(std::min<std::uint32_t>(
            cq_entries, static_cast<std::uint32_t>(std::max(device.attr.max_cqe, 1)))),
        device.channel.get());

    ibv_qp_init_attr attr{};
    attr.send_cq = cq_.get();
    attr.recv_cq = cq_.get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = slots * kSendWrsPerSlot;
    attr.cap.max_recv_wr = sizes.receive_count;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    if (rdma_create_qp(id, device.pd.get(), &attr) != 0) {
        verbs::throw_errno("rdma_create_qp");
    }
    try {
        receive_buffers_.resize(std::size_t{sizes.receive_count} * sizes.receive_size);
        receive_mr_ = verbs::register_memory(device.pd.get(), receive_buffers_.data(),
                                             receive_buffers_.size(), kReceiveAccess);
        responses_.resize(slots);
        response_mr_ =
            verbs::register_memory(device.pd.get(), responses_.data(),
                                   responses_.size() * sizeof(wire::Cqe), kReceiveAccess);
        for (std::uint32_t i = 0; i < slots; ++i) {
            auto req = std::make_unique<Request>();
            req->index = i;
            free_requests_.push_back(req.get());
            requests_.push_back(std::move(req));
        }
        std::reverse(free_requests_.begin(), free_requests_.end());
    } catch (...) {
        rdma_destroy_qp(id);  // before the CQ it uses; the id stays the caller's
        throw;
    }
    id_ = verbs::CmId(id);
    qp_ = id->qp;
    id_->context = this;
    for (std::uint32_t i = 0; i < sizes.receive_count; ++i) {
        post_receive(i);
    }
}

void drain_completion_channel(Device& device) {
    ibv_cq* cq = nullptr;
    void* cq_context = nullptr;
    while (ibv_get_cq_event(device.channel.get(), &cq, &cq_context) == 0) {
        ibv_ack_cq_events(cq, 1);
    }
}

RdmaQueue::~RdmaQueue() {
    // The QP goes first: the CQ and the memory regions it uses follow. An
    // event of this CQ may still sit in the channel; take it out while the CQ
    // exists (softverbs hands out the CQ pointer it carries).
    id_.destroy_qp();
    drain_completion_channel(device_);
}

std::string RdmaQueue::where() const {
    return "QID " + std::to_string(nvme_.qid) + " CNTLID " + std::to_string(nvme_.cntlid);
}

void RdmaQueue::post_receive(std::uint32_t index) {
    if (state_ == State::disconnecting || state_ == State::closed) {
        return;
    }
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(receive_buffers_.data() +
                                                std::size_t{index} * sizes_.receive_size);
    sge.length = sizes_.receive_size;
    sge.lkey = receive_mr_->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = work_id(WorkKind::receive, index);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qp_, &wr, &bad) != 0) {
        fail("ibv_post_recv failed");
    }
}

void RdmaQueue::established() {
    if (state_ != State::accepting) {
        return;
    }
    state_ = State::live;
    // Commands that arrived before ESTABLISHED (nvmet queues them the same way).
    auto early = std::move(early_receives_);
    for (const auto& [index, bytes] : early) {
        handle_receive(index, bytes);
    }
    post_pass();
}

void RdmaQueue::begin_disconnect(const char* why) {
    if (state_ == State::disconnecting || state_ == State::closed) {
        return;
    }
    std::fprintf(stderr, "nvmeof-target: %s: disconnecting: %s\n", where().c_str(), why);
    state_ = State::disconnecting;
    rdma_disconnect(id_.get());
}

void RdmaQueue::fail(const char* what) {
    begin_disconnect(what);
}

int RdmaQueue::poll() {
    if (state_ == State::closed) {
        return 0;
    }
    ibv_wc wc[kPollBatch];
    const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
    if (n < 0) {
        fail("ibv_poll_cq failed");
        return 0;
    }
    for (int i = 0; i < n; ++i) {
        const auto kind = static_cast<WorkKind>(wc[i].wr_id >> kWorkKindShift);
        const auto slot = static_cast<std::uint32_t>(wc[i].wr_id & kSlotMask);
        if (wc[i].status != IBV_WC_SUCCESS) {
            // Flushed work requests only mean the QP left RTS (the peer went
            // away); the DISCONNECTED event follows.
            if (wc[i].status != IBV_WC_WR_FLUSH_ERR &&
                (state_ == State::live || state_ == State::accepting)) {
                std::fprintf(stderr, "nvmeof-target: %s: work completion error: %s\n",
                             where().c_str(), ibv_wc_status_str(wc[i].status));
            }
            fail("the QP failed");
            continue;
        }
        switch (kind) {
            case WorkKind::receive:
                handle_receive(slot, wc[i].byte_len);
                break;
            case WorkKind::read:
                on_read_done(*requests_[slot]);
                break;
            case WorkKind::send:
                on_send_done(*requests_[slot]);
                break;
        }
    }
    post_pass();
    return n;
}

void RdmaQueue::arm_cq() {
    ibv_req_notify_cq(cq_.get(), 0);
}

RdmaQueue::Request* RdmaQueue::take_request() {
    if (free_requests_.empty()) {
        return nullptr;
    }
    Request* req = free_requests_.back();
    free_requests_.pop_back();
    return req;
}

void RdmaQueue::handle_receive(std::uint32_t index, std::uint32_t byte_len) {
    if (state_ == State::accepting) {
        early_receives_.emplace_back(index, byte_len);
        return;
    }
    if (state_ != State::live) {
        return;
    }
    const std::uint8_t* capsule =
        receive_buffers_.data() + std::size_t{index} * sizes_.receive_size;
    if (byte_len < wire::kSqeSize) {
        fail("capsule shorter than a command");
        return;
    }
    std::uint16_t cid = 0;
    std::memcpy(&cid, capsule + offsetof(wire::Sqe, command_id), sizeof cid);
    if (swallow_capsule(ctx_, nvme_, capsule[0], cid)) {
        post_receive(index);
        return;
    }
    if (hold_for_reorder(capsule, byte_len)) {
        post_receive(index);
        return;
    }
    Request* req = take_request();
    if (req == nullptr) {
        waiting_capsules_.emplace_back(capsule, capsule + byte_len);
        post_receive(index);
        return;
    }
    start_command(*req, capsule, byte_len, index);
}

bool RdmaQueue::ensure_buffer(Request& req, std::size_t bytes) {
    if (req.buffer.size() >= bytes) {
        return true;
    }
    req.mr.reset();
    req.buffer.assign(std::max(bytes, kMinDataBuffer), 0);
    try {
        req.mr = verbs::register_memory(device_.pd.get(), req.buffer.data(), req.buffer.size(),
                                        IBV_ACCESS_LOCAL_WRITE);
    } catch (const std::system_error& e) {
        std::fprintf(stderr, "nvmeof-target: %s: %s\n", where().c_str(), e.what());
        req.buffer.clear();
        return false;
    }
    return true;
}

void RdmaQueue::start_command(Request& req, const std::uint8_t* capsule, std::uint32_t byte_len,
                              std::uint32_t receive_index) {
    constexpr std::uint32_t kNoReceive = 0xFFFFFFFF;
    auto release_receive = [&] {
        if (receive_index != kNoReceive) {
            post_receive(receive_index);
            receive_index = kNoReceive;
        }
    };
    std::memcpy(&req.sqe, capsule, sizeof req.sqe);
    req.sequence = ++started_;
    ++in_flight_;
    auto& max = nvme_.qid == 0 ? ctx_.stats.max_inflight_admin : ctx_.stats.max_inflight_io;
    max = std::max<std::uint64_t>(max, in_flight_);
    if (nvme_.qid != 0) {
        ++ctx_.stats.io_queue_commands[nvme_.qid];
    }

    const std::uint32_t in_capsule_bytes = byte_len - static_cast<std::uint32_t>(wire::kSqeSize);
    req.plan = ctx_.core.plan(nvme_, req.sqe, in_capsule_bytes);
    const DataPlan& plan = req.plan;
    if (plan.hold) {
        release_receive();
        held_async_events_.push_back(&req);  // answered when an event occurs
        return;
    }
    if (!plan.status.ok()) {
        release_receive();
        finish(req, Completion{plan.status});
        return;
    }
    if (plan.source == DataSource::keyed &&
        plan.direction == wire::DataDirection::host_to_controller) {
        release_receive();
        if (!ensure_buffer(req, plan.length)) {
            finish(req,
                   Completion{wire::Status::generic(wire::GenericStatus::internal_error, true)});
            return;
        }
        post_read(req);
        return;
    }
    std::span<std::uint8_t> data;
    if (plan.source == DataSource::in_capsule) {
        // Executed straight from the receive buffer, which is reposted after.
        auto* bytes = const_cast<std::uint8_t*>(capsule) + wire::kSqeSize + plan.in_capsule_offset;
        data = std::span(bytes, plan.length);
    } else {
        if (!ensure_buffer(req, plan.length)) {
            release_receive();
            finish(req,
                   Completion{wire::Status::generic(wire::GenericStatus::internal_error, true)});
            return;
        }
        data = std::span(req.buffer.data(), plan.length);
    }
    const Completion done = ctx_.core.execute(nvme_, req.sqe, plan, data);
    release_receive();
    finish(req, done);
}

void RdmaQueue::post_read(Request& req) {
    if (reads_in_flight_ >= sizes_.read_depth) {
        queued_reads_.push_back(&req);
        return;
    }
    req.read_sge.addr = reinterpret_cast<std::uintptr_t>(req.buffer.data());
    req.read_sge.length = req.plan.length;
    req.read_sge.lkey = req.mr->lkey;
    ibv_send_wr& wr = req.read_wr;
    wr = ibv_send_wr{};
    wr.wr_id = work_id(WorkKind::read, req.index);
    wr.sg_list = &req.read_sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = req.plan.remote_address;
    wr.wr.rdma.rkey = req.plan.rkey;
    // Posted with the pass's responses: a burst of write commands costs one
    // system call, not one per command (1 MiB writes split in 8 commands
    // made 3,100 sendmsg calls per GiB, 8 per I/O, 2026-12-04).
    append_to_pass(wr, wr);
    ++reads_in_flight_;
    ++ctx_.stats.rdma_read_ops;
}

void RdmaQueue::start_queued_reads() {
    while (!queued_reads_.empty() && reads_in_flight_ < sizes_.read_depth) {
        Request* req = queued_reads_.front();
        queued_reads_.pop_front();
        post_read(*req);
    }
}

void RdmaQueue::on_read_done(Request& req) {
    --reads_in_flight_;
    const Completion done =
        ctx_.core.execute(nvme_, req.sqe, req.plan, std::span(req.buffer.data(), req.plan.length));
    finish(req, done);
    start_queued_reads();
}

bool RdmaQueue::hold_for_reorder(const std::uint8_t* capsule, std::uint32_t byte_len) {
    const auto every = ctx_.config.faults.reorder_io;
    if (!every || nvme_.qid == 0 || capsule[0] == wire::kFabricsOpcode) {
        return false;
    }
    if (++io_received_ % *every != 0 || reordered_) {
        return false;  // not its turn, or one is held already
    }
    if (!ctx_.faults.reorder_logged) {
        ctx_.faults.reorder_logged = true;
        std::fprintf(stderr,
                     "nvmeof-target: fault: reorder-io=%llu: each I/O command of a queue "
                     "numbered a multiple of %llu runs after one that arrived later\n",
                     static_cast<unsigned long long>(*every),
                     static_cast<unsigned long long>(*every));
    }
    ++ctx_.stats.faults_injected;
    reordered_ = HeldCapsule{std::vector<std::uint8_t>(capsule, capsule + byte_len), started_,
                             Clock::now() + std::chrono::milliseconds(kReorderHoldMs)};
    return true;
}

void RdmaQueue::release_reordered() {
    if (!reordered_ || state_ != State::live) {
        return;
    }
    std::vector<std::uint8_t> capsule = std::move(reordered_->bytes);
    reordered_.reset();
    Request* req = take_request();
    if (req == nullptr) {
        waiting_capsules_.push_back(std::move(capsule));
        return;
    }
    start_command(*req, capsule.data(), static_cast<std::uint32_t>(capsule.size()), 0xFFFFFFFF);
}

void RdmaQueue::finish(Request& req, const Completion& done) {
    if (withhold_answer(ctx_, nvme_, req.sqe.command_id)) [[unlikely]] {
        --in_flight_;  // never answered: the server drops every connection (drop-after-run)
        return;
    }
    if (reordered_ && req.sequence > reordered_->after) {
        release_reordered();  // a command that came after the held one has run
    }
    req.done = done;
    responses_[req.index] = ctx_.core.make_cqe(nvme_, req.sqe, done);
    if (const auto delay = ctx_.config.faults.delay_ms) {
        if (!ctx_.faults.delay_logged) {
            ctx_.faults.delay_logged = true;
            std::fprintf(stderr, "nvmeof-target: fault: delay-ms=%u: delaying every completion\n",
                         *delay);
        }
        ++ctx_.stats.faults_injected;
        req.due = Clock::now() + std::chrono::milliseconds(*delay);
        delayed_.push_back(&req);
        return;
    }
    post_response(req);
}

int RdmaQueue::deliver_async_events() {
    int delivered = 0;
    while (state_ == State::live && !held_async_events_.empty() && nvme_.connected) {
        const std::optional<std::uint32_t> event = ctx_.core.take_async_event(nvme_.cntlid);
        if (!event) {
            break;
        }
        Request* req = held_async_events_.front();
        held_async_events_.erase(held_async_events_.begin());
        Completion done;
        done.dw0 = *event;
        finish(*req, done);
        ++delivered;
    }
    post_pass();
    return delivered;
}

Clock::time_point RdmaQueue::flush_delayed(Clock::time_point now) {
    if (reordered_ && reordered_->due <= now) {
        release_reordered();  // nothing came after it in time
    }
    while (!delayed_.empty() && delayed_.front()->due <= now) {
        Request* req = delayed_.front();
        delayed_.pop_front();
        post_response(*req);
    }
    post_pass();
    const Clock::time_point held = reordered_ ? reordered_->due : Clock::time_point::max();
    return std::min(held, delayed_.empty() ? Clock::time_point::max() : delayed_.front()->due);
}

void RdmaQueue::post_response(Request& req) {
    --in_flight_;
    if (state_ != State::live) {
        return;  // the slot is gone with the queue
    }
    req.response_sge.addr = reinterpret_cast<std::uintptr_t>(&responses_[req.index]);
    req.response_sge.length = sizeof(wire::Cqe);
    req.response_sge.lkey = response_mr_->lkey;
    ibv_send_wr& send = req.response_wr;
    send = ibv_send_wr{};
    send.wr_id = work_id(WorkKind::send, req.index);
    send.sg_list = &req.response_sge;
    send.num_sge = 1;
    send.opcode = IBV_WR_SEND;
    send.send_flags = IBV_SEND_SIGNALED;

    // Controller→host data: RDMA WRITE chained before the SEND; RC ordering
    // places the data before the response (nvmet does the same).
    ibv_send_wr* first = &send;
    const DataPlan& plan = req.plan;
    if (req.done.status.ok() && req.done.data_length > 0 && plan.source == DataSource::keyed &&
        plan.direction == wire::DataDirection::controller_to_host) {
        req.data_sge.addr = reinterpret_cast<std::uintptr_t>(req.buffer.data());
        req.data_sge.length = std::min(req.done.data_length, plan.length);
        req.data_sge.lkey = req.mr->lkey;
        ibv_send_wr& write = req.data_wr;
        write = ibv_send_wr{};
        write.wr_id = work_id(WorkKind::send, req.index);
        write.sg_list = &req.data_sge;
        write.num_sge = 1;
        write.opcode = IBV_WR_RDMA_WRITE;
        write.wr.rdma.remote_addr = plan.remote_address;
        write.wr.rdma.rkey = plan.rkey;
        write.next = &send;
        first = &write;
        ++ctx_.stats.rdma_write_ops;
    }
    append_to_pass(*first, send);
}

void RdmaQueue::append_to_pass(ibv_send_wr& first, ibv_send_wr& last) {
    last.next = nullptr;
    if (pass_tail_ != nullptr) {
        pass_tail_->next = &first;
    } else {
        pass_head_ = &first;
    }
    pass_tail_ = &last;
}

void RdmaQueue::post_pass() {
    ibv_send_wr* list = std::exchange(pass_head_, nullptr);
    pass_tail_ = nullptr;
    if (list == nullptr || state_ != State::live) {
        return;
    }
    ibv_send_wr* bad = nullptr;
    ++ctx_.stats.post_send_calls;
    if (ibv_post_send(qp_, list, &bad) != 0) {
        fail(bad != nullptr && bad->opcode == IBV_WR_RDMA_READ ? "posting an RDMA READ failed"
                                                               : "posting the response failed");
    }
}

void RdmaQueue::on_send_done(Request& req) {
    free_requests_.push_back(&req);
    while (!waiting_capsules_.empty() && !free_requests_.empty() && state_ == State::live) {
        std::vector<std::uint8_t> capsule = std::move(waiting_capsules_.front());
        waiting_capsules_.pop_front();
        start_command(*take_request(), capsule.data(), static_cast<std::uint32_t>(capsule.size()),
                      0xFFFFFFFF);
    }
}

}  // namespace nvmeof::target
