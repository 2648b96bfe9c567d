// RdmaQueue setup and teardown: CM address/route/connect, verbs resources,
// and the retiring of SENDs before a deregistration.
#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/log.hpp"
#include "nvmeof/wire/rdma_cm.hpp"
#include "transport/queue_resources.hpp"
#include "transport/rdma_queue.hpp"
#include "verbs/diagnostics.hpp"

namespace nvmeof::detail {
namespace {

constexpr int kIbRejectInvalidServiceId = 8;  // IB CM: nothing listens on that service ID
constexpr std::chrono::milliseconds kCmOperationTimeout{3000};  // resolve addr/route, as Linux
constexpr std::chrono::milliseconds kDisconnectWait{1000};
constexpr std::uint8_t kRetryCount = 7;
constexpr std::uint8_t kRnrRetryInfinite = 7;
constexpr int kMaxResponderResources = 255;  // rdma_conn_param fields are 8 bits

// Each CM operation gets what is left of the connect deadline, at most what
// Linux gives one (a lost resolution is retried by the caller's next step).
// The RC transport gives up on an unacknowledged request after about
// retry_count x 4.096 us x 2^timeout (IB local ACK timeout), then fails the QP.
// A request timeout longer than that window would be cut short by the
// transport (a target stalled for 20 s dropped at ~8 s), so the ACK timeout is
// raised until the window covers the request timeout. The field has 5 bits
// (at most about 2.4 hours with 7 retries), and an RNIC may clamp it further.
constexpr std::int64_t kAckTimeoutUnitNs = 4096;
constexpr std::uint8_t kMaxAckTimeout = 31;

std::uint8_t ack_timeout_for(std::chrono::milliseconds request_timeout) {
    const std::int64_t wanted_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(request_timeout).count();
    std::uint8_t timeout = 1;
    while (timeout < kMaxAckTimeout && kRetryCount * (kAckTimeoutUnitNs << timeout) < wanted_ns) {
        ++timeout;
    }
    return timeout;
}

int cm_timeout_ms(const ConnectDeadline& deadline) {
    return static_cast<int>(
        std::clamp(deadline.left(), std::chrono::milliseconds{1}, kCmOperationTimeout).count());
}

std::string errno_text(int error) {
    return std::strerror(error);
}

ConnectError::Details with_errno(int error) {
    ConnectError::Details d;
    d.sys_errno = error;
    return d;
}

// The first RDMA-CM call: where a machine without any RDMA device fails.
verbs::EventChannel open_cm_channel() {
    try {
        return verbs::EventChannel::create();
    } catch (const std::system_error& e) {
        const int error = e.code().value();
        throw ConnectError(ConnectFailure::device_error,
                           "opening RDMA-CM (rdma_create_event_channel)",
                           verbs::cm_unavailable_text(error), with_errno(error));
    }
}

std::string cm_status_text(int status) {
    return "CM status " + std::to_string(status) + ": " +
           std::string(verbs::cm_reject_reason_name(status));
}

}  // namespace

RdmaQueue::RdmaQueue(const QueueConfig& config, const PeerAddress& peer)
    : HostQueue(config, Transport::rdma), channel_(open_cm_channel()) {
    resolve(peer);
}

void RdmaQueue::reopen(const PeerAddress& peer, const ConnectDeadline& deadline,
                       std::uint16_t cntlid) {
    disconnect(false);
    release_verbs();
    id_.reset();  // before its event channel
    channel_ = open_cm_channel();
    config_.connect_deadline = deadline;
    config_.cntlid = cntlid;
    reset_for_reopen();
    receives_outstanding_ = 0;  // the new QP's are posted at connect
    resolve(peer);
}

void RdmaQueue::resolve(const PeerAddress& peer) {
    try {
        id_ = verbs::CmId::create(channel_, this);
    } catch (const std::system_error& e) {
        throw ConnectError(ConnectFailure::device_error, "rdma_create_id",
                           verbs::cm_unavailable_text(e.code().value()),
                           with_errno(e.code().value()));
    }
    auto* source = const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&peer.source));
    auto* target = const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&peer.target));
    if (peer.has_source && rdma_bind_addr(id_.get(), source) != 0) {
        const int error = errno;
        throw ConnectError(
            ConnectFailure::bad_source_address, "binding the source address",
            address_text(source) + " is not a local RDMA address: " + errno_text(error),
            with_errno(error));
    }
    const int resolve_ms = cm_timeout_ms(config_.connect_deadline);
    if (rdma_resolve_addr(id_.get(), nullptr, target, resolve_ms) != 0) {
        const int error = errno;
        throw ConnectError(
            peer.has_source ? ConnectFailure::bad_source_address
                            : ConnectFailure::address_unreachable,
            "address resolution",
            peer.target_text + ": " +
                (error == ENODEV ? "no RDMA device serves the route to it" : errno_text(error)),
            with_errno(error));
    }
    const verbs::CmEvent event = expect_event("address resolution");
    if (event->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
        ConnectError::Details d;
        d.cm_status = event->status;
        throw ConnectError(ConnectFailure::address_unreachable, "address resolution",
                           peer.target_text + ": " + verbs::cm_event_name(event->event) +
                               " (status " + std::to_string(event->status) + ")",
                           d);
    }
    if (id_->verbs == nullptr) {
        throw ConnectError(ConnectFailure::device_error, "address resolution",
                           "no RDMA device serves the route to " + peer.target_text);
    }
    state_ = QueueState::resolved;
    log_debug("qid %u: address resolved (%s)", unsigned{config_.qid}, queue_state_name(state_));
}

RdmaQueue::~RdmaQueue() {
    disconnect();
    release_verbs();
}

verbs::CmEvent RdmaQueue::expect_event(const char* step) {
    const std::string what = std::string(step) + " (qid " + std::to_string(config_.qid) + ")";
    const ConnectDeadline& deadline = config_.connect_deadline;
    try {
        for (;;) {
            deadline.check(what);  // cancelled, or the time is up
            if (auto event = channel_.wait(deadline.next_wait())) {
                return std::move(*event);
            }
        }
    } catch (const std::system_error& e) {
        throw ConnectError(ConnectFailure::device_error, step, e.what(),
                           with_errno(e.code().value()));
    }
}

void RdmaQueue::create_resources(ibv_pd* pd, ibv_comp_channel* completion_channel) {
    const std::uint32_t size = config_.size;
    // The core's command IDs: size − 1 in the pool, then the set-up
    // command's (QueueCore::size_for), each with an SQE buffer and a SEND.
    const std::uint32_t commands = size;
    try {
        cq_ = verbs::create_cq(id_->verbs, static_cast<int>(cq_entry_count(size)),
                               completion_channel);
        ibv_qp_init_attr attr{};
        attr.send_cq = cq_.get();
        attr.recv_cq = cq_.get();
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_wr = send_wr_count(size);
        attr.cap.max_recv_wr = recv_wr_count(size);
        attr.cap.max_send_sge = in_capsule_limit_ > 0 ? CommandSend::kMaxSges : 1;
        attr.cap.max_recv_sge = 1;
        id_.create_qp(pd, attr);
        qp_ = id_.qp();

        if (!sqes_) {  // a reopened queue keeps its rings (same size)
            sqes_ = std::make_unique<wire::Sqe[]>(commands);
            receive_buffers_ = std::make_unique<wire::Cqe[]>(size);
            dsm_ranges_ = std::make_unique<wire::DsmRange[]>(commands);
        }
        sqes_mr_ = verbs::register_memory(pd, sqes_.get(), commands * sizeof(wire::Sqe),
                                          IBV_ACCESS_LOCAL_WRITE);
        receive_buffers_mr_ = verbs::register_memory(
            pd, receive_buffers_.get(), size * sizeof(wire::Cqe), IBV_ACCESS_LOCAL_WRITE);
        dsm_mr_ = verbs::register_memory(pd, dsm_ranges_.get(), commands * sizeof(wire::DsmRange),
                                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    } catch (const std::system_error& e) {
        throw ConnectError(ConnectFailure::device_error, "creating queue resources",
                           "qid " + std::to_string(config_.qid) + ": " + e.what(),
                           with_errno(e.code().value()));
    }

    const bool first = sends_.empty();
    if (first) {
        sends_ = std::vector<CommandSend>(commands);
    }
    for (std::uint32_t i = 0; i < commands; ++i) {
        CommandSend& s = sends_[i];
        s.sge[0].addr = reinterpret_cast<std::uint64_t>(&sqes_[i]);
        s.sge[0].length = sizeof(wire::Sqe);
        s.sge[0].lkey = sqes_mr_->lkey;
        s.wr.wr_id = i;
        s.wr.sg_list = s.sge;
        if (first) {
            s.wr.num_sge = 1;  // a reopened queue keeps held commands as built
        }
        s.wr.opcode = IBV_WR_SEND;
        s.wr.send_flags = 0;  // prepare_send() signals one SEND per kSendsPerSignal
    }
    // A new QP: its send queue is empty; one entry stays free for drain()'s marker.
    send_queue_capacity_ = send_wr_count(size) - 1;
    send_position_ = 0;
    sends_retired_ = 0;
    recv_wrs_ = std::vector<ibv_recv_wr>(size);
    receive_count_ = size;
    recv_sges_ = std::vector<ibv_sge>(size);
    for (std::uint32_t i = 0; i < size; ++i) {
        recv_sges_[i].addr = reinterpret_cast<std::uint64_t>(&receive_buffers_[i]);
        recv_sges_[i].length = sizeof(wire::Cqe);
        recv_sges_[i].lkey = receive_buffers_mr_->lkey;
        recv_wrs_[i].wr_id = kRecvTag | i;
        recv_wrs_[i].sg_list = &recv_sges_[i];
        recv_wrs_[i].num_sge = 1;
    }
    if (!sized()) {
        size_for(static_cast<std::uint16_t>(size - 1));
    }
    // Reopened: held transfers, held requests and finished ones stay.
}

void RdmaQueue::post_all_receives() {
    // One chain: every receive buffer in ring order.
    for (std::size_t i = 0; i < recv_wrs_.size(); ++i) {
        recv_wrs_[i].next = i + 1 < recv_wrs_.size() ? &recv_wrs_[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qp_, recv_wrs_.data(), &bad) != 0) {
        const int error = errno;
        throw ConnectError(ConnectFailure::device_error, "posting receive buffers",
                           "ibv_post_recv: " + errno_text(error), with_errno(error));
    }
    receives_outstanding_ = static_cast<std::uint32_t>(recv_wrs_.size());
}

void RdmaQueue::connect(ibv_pd* pd, const ibv_device_attr& device, std::uint64_t max_transfer_bytes,
                        ibv_comp_channel* completion_channel) {
    max_transfer_bytes_ = max_transfer_bytes;
    create_resources(pd, completion_channel);
    if (rdma_resolve_route(id_.get(), cm_timeout_ms(config_.connect_deadline)) != 0) {
        const int error = errno;
        throw ConnectError(ConnectFailure::address_unreachable, "route resolution",
                           "rdma_resolve_route: " + errno_text(error), with_errno(error));
    }
    {
        const verbs::CmEvent event = expect_event("route resolution");
        if (event->event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
            ConnectError::Details d;
            d.cm_status = event->status;
            throw ConnectError(ConnectFailure::address_unreachable, "route resolution",
                               verbs::cm_event_name(event->event), d);
        }
    }
    // Receives go up before the REQ, so no response can ever find none posted.
    post_all_receives();
    connect_cm(device);
}

void RdmaQueue::connect_cm(const ibv_device_attr& device) {
    const wire::RdmaCmRequest request =
        wire::rdma_cm_request(config_.qid, config_.size, config_.cntlid);
    rdma_conn_param param{};
    param.private_data = &request;
    param.private_data_len = sizeof request;
    // The target RDMA-READs host memory (writes, Connect data): it needs responder
    // resources; the host itself never reads remotely (traps 4 and §1.7).
    param.responder_resources =
        static_cast<std::uint8_t>(std::clamp(device.max_qp_rd_atom, 1, kMaxResponderResources));
    param.initiator_depth = 0;
    param.flow_control = 1;
    param.retry_count = kRetryCount;
    param.rnr_retry_count = kRnrRetryInfinite;
    std::uint8_t ack_timeout = ack_timeout_for(config_.request_timeout);
    if (rdma_set_option(id_.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout,
                        sizeof ack_timeout) != 0) {
        log_debug(
            "qid %u: cannot set the ACK timeout (%s); the transport's retry window stays the "
            "device's default and may end requests before their timeout",
            unsigned{config_.qid}, errno_text(errno).c_str());
    }
    if (rdma_connect(id_.get(), &param) != 0) {
        const int error = errno;
        throw ConnectError(ConnectFailure::device_error, "RDMA-CM connect",
                           "rdma_connect: " + errno_text(error), with_errno(error));
    }
    const verbs::CmEvent event = expect_event("RDMA-CM connect");
    const std::string queue = "qid " + std::to_string(config_.qid);
    ConnectError::Details d;
    d.cm_status = event->status;
    switch (event->event) {
        case RDMA_CM_EVENT_ESTABLISHED: {
            const auto reply = wire::parse_rdma_cm_reply(event->param.conn.private_data,
                                                         event->param.conn.private_data_len);
            crqsize_ = reply ? reply->crqsize : config_.size;
            if (crqsize_ < config_.size) {
                throw ConnectError(ConnectFailure::negotiation, "RDMA-CM connect",
                                   queue + ": the target's CRQSIZE " + std::to_string(crqsize_) +
                                       " is smaller than the queue size " +
                                       std::to_string(config_.size) + " asked for");
            }
            state_ = QueueState::connected;
            log_debug("qid %u: connected, CRQSIZE %u", unsigned{config_.qid}, unsigned{crqsize_});
            return;
        }
        case RDMA_CM_EVENT_REJECTED: {
            const std::string target = address_text(rdma_get_peer_addr(id_.get()));
            if (event->status == kIbRejectInvalidServiceId) {
                throw ConnectError(ConnectFailure::no_listener, "RDMA-CM connect",
                                   queue + ": nothing listens on " + target + " (REJECTED, " +
                                       cm_status_text(event->status) + ")",
                                   d);
            }
            // IB and RoCE pad a reject's private data with zeroes: a reject
            // from the CM itself (or a target sending none) reads as status 0,
            // which no NVMe/RDMA reject uses.
            const auto reject = wire::parse_rdma_cm_reject(event->param.conn.private_data,
                                                           event->param.conn.private_data_len);
            if (reject && reject->recfmt == wire::kRdmaCmRecordFormat && reject->status != 0) {
                d.reject_status = reject->status;
                throw ConnectError(ConnectFailure::rejected, "RDMA-CM connect",
                                   queue + ": " + target +
                                       " rejected it with NVMe/RDMA reject status " +
                                       std::to_string(reject->status) + " (" +
                                       std::string(wire::reject_status_name(reject->status)) + ")",
                                   d);
            }
            throw ConnectError(ConnectFailure::rejected, "RDMA-CM connect",
                               queue + ": rejected by the target's RDMA-CM at " + target +
                                   " with no NVMe/RDMA reject data (" +
                                   cm_status_text(event->status) + ")",
                               d);
        }
        case RDMA_CM_EVENT_UNREACHABLE:
            throw ConnectError(ConnectFailure::address_unreachable, "RDMA-CM connect",
                               queue + ": the target is unreachable (UNREACHABLE)", d);
        default:
            throw ConnectError(ConnectFailure::device_error, "RDMA-CM connect",
                               queue + ": " + verbs::cm_event_name(event->event) + " (status " +
                                   std::to_string(event->status) + ")",
                               d);
    }
}

std::string RdmaQueue::local_address() const {
    return address_text(rdma_get_local_addr(id_.get()));
}

void RdmaQueue::disconnect(bool wait_for_peer) noexcept {
    if (state_ == QueueState::closed || !id_) {
        return;
    }
    const bool was_connected = state_ == QueueState::connected || state_ == QueueState::live;
    if (state_ == QueueState::live) {
        take_answers_in();
    }
    if (was_connected && rdma_disconnect(id_.get()) == 0 && wait_for_peer) {
        // Best effort: wait briefly for DISCONNECTED so the target sees an orderly close.
        try {
            const auto deadline =
                std::chrono::steady_clock::now() + std::min(config_.timeout, kDisconnectWait);
            for (;;) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now());
                if (left.count() <= 0)
                    break;
                auto event = channel_.wait(left);
                if (!event || (*event)->event == RDMA_CM_EVENT_DISCONNECTED ||
                    (*event)->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
                    break;
                }
            }
        } catch (...) {
        }
    }
    fail(TransportErrc::closed, ESHUTDOWN, "queue closed");
    state_ = QueueState::closed;
    log_debug("qid %u: %s", unsigned{config_.qid}, queue_state_name(state_));
}

void RdmaQueue::retire_sends() noexcept {
    if (state_ != QueueState::live || in_capsule_limit_ == 0) {
        // A queue down was drained; without in-capsule data no SEND reads the caller's memory.
        return;
    }
    commit();  // anything deferred goes first: the filler must come after it
    if (sends_in_queue() == 0) {
        return;
    }
    // Fill the signalling interval with zero-length RDMA WRITEs (no memory, no
    // rkey checked, nothing for the target's receive queue), the last one
    // signalled: its completion retires the interval, as a signalled SEND's does.
    const std::uint32_t fillers =
        (kSendsPerSignal - (send_position_ & (kSendsPerSignal - 1))) & (kSendsPerSignal - 1);
    const auto deadline = Clock::now() + std::min(config_.timeout, kMaxDrainWait);
    while (fillers != 0 && send_room() < fillers && state_ == QueueState::live) {
        if (poll_cq() == 0 && Clock::now() >= deadline) {
            fail(TransportErrc::timeout, ETIMEDOUT,
                 "send queue did not empty before a deregistration");
            return;
        }
    }
    if (fillers != 0 && state_ == QueueState::live) {
        std::array<ibv_send_wr, kSendsPerSignal> writes{};
        for (std::uint32_t i = 0; i < fillers; ++i) {
            writes[i].wr_id = kRetireMarker;
            writes[i].opcode = IBV_WR_RDMA_WRITE;
            writes[i].next = i + 1 < fillers ? &writes[i + 1] : nullptr;
        }
        writes[fillers - 1].send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        if (ibv_post_send(qp_, writes.data(), &bad) != 0) {
            fail(TransportErrc::queue_error, errno != 0 ? errno : EIO,
                 "ibv_post_send of the retiring writes failed");
            return;
        }
        send_position_ += fillers;
    }
    while (sends_in_queue() != 0 && state_ == QueueState::live) {
        if (poll_cq() == 0 && Clock::now() >= deadline) {
            fail(TransportErrc::timeout, ETIMEDOUT, "SENDs not retired before a deregistration");
            return;
        }
    }
}

void RdmaQueue::release_verbs() noexcept {
    id_.destroy_qp();
    qp_ = nullptr;
    sqes_mr_.reset();
    receive_buffers_mr_.reset();
    dsm_mr_.reset();
    cq_.reset();
}

}  // namespace nvmeof::detail
