#include "tcp_queue.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <utility>

#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"

namespace nvmeof::target {
namespace {

using wire::TcpFatalError;
using wire::TcpPduFault;
using wire::TcpPduType;

constexpr std::size_t kReadChunk = 64 * 1024;
// One connection reads at most this much per pass, so a busy host cannot
// starve the others on the same loop.
constexpr std::size_t kReadBudget = 1024 * 1024;
constexpr std::size_t kTermReqHeaderCopy = wire::kTcpTermReqMaxLength - sizeof(wire::TcpTermReq);
constexpr auto kCloseGrace = std::chrono::seconds(1);

std::uint32_t load_u32(const std::uint8_t* p) {
    std::uint32_t value = 0;
    std::memcpy(&value, p, sizeof value);
    return value;
}

}  // namespace

TcpQueue::TcpQueue(int fd, std::size_t port_index, std::uint16_t local_port,
                   std::string local_address, QueueContext context)
    : fd_(fd), ctx_(context), local_port_(local_port) {
    nvme_.transport = Transport::tcp;
    nvme_.port_index = port_index;
    nvme_.local_address = std::move(local_address);
    // The queue ID comes with Connect; until then the largest capsule any
    // queue may carry is allowed (the admin queue's, or IOCCSZ's).
    nvme_.in_capsule_capacity =
        std::max(kTcpAdminInCapsuleBytes,
                 ctx_.config.limits.ioccsz * wire::kCapsuleUnit - std::uint32_t{wire::kSqeSize});
    receive_.role = wire::TcpRole::controller;
}

TcpQueue::~TcpQueue() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

std::string TcpQueue::where() const {
    return "TCP queue " + std::to_string(nvme_.qid);
}

void TcpQueue::close() {
    state_ = State::closed;
    if (fd_ >= 0) {
        if (reset_) {
            // SO_LINGER on with a time of 0: close() sends a RST, not a FIN.
            const linger abort{1, 0};
            setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
        }
        ::close(fd_);
        fd_ = -1;
    }
}

void TcpQueue::begin_close(const char* why) {
    if (state_ != State::live) {
        return;
    }
    if (why != nullptr) {
        std::fprintf(stderr, "nvmeof-target: %s: disconnecting: %s\n", where().c_str(), why);
    }
    state_ = State::closing;
    closing_since_ = Clock::now();
    flush();
}

bool TcpQueue::close_overdue(Clock::time_point now) const {
    return state_ == State::closing && now - closing_since_ > kCloseGrace;
}

std::size_t TcpQueue::on_readable() {
    std::size_t total = 0;
    while (state_ == State::live && !output_full() && total < kReadBudget) {
        if (in_start_ > 0) {
            in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(in_start_));
            in_start_ = 0;
        }
        const std::size_t old = in_.size();
        in_.resize(old + kReadChunk);
        const ssize_t n = ::recv(fd_, in_.data() + old, kReadChunk, MSG_DONTWAIT);
        if (n > 0) {
            in_.resize(old + static_cast<std::size_t>(n));
            total += static_cast<std::size_t>(n);
            pump();
            continue;
        }
        in_.resize(old);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        // The host went away; a PDU cut short is only worth a line.
        if (in_.size() > in_start_) {
            std::fprintf(stderr,
                         "nvmeof-target: %s: the host closed the connection %zu bytes into a "
                         "PDU\n",
                         where().c_str(), in_.size() - in_start_);
        } else if (n < 0) {
            std::fprintf(stderr, "nvmeof-target: %s: recv: %s\n", where().c_str(),
                         std::strerror(errno));
        }
        close();
    }
    return total;
}

int TcpQueue::pump() {
    int taken = 0;
    while (state_ == State::live && !output_full() && take_pdu()) {
        ++taken;
    }
    if (in_start_ == in_.size()) {
        in_.clear();
        in_start_ = 0;
    }
    return taken;
}

bool TcpQueue::take_pdu() {
    const std::size_t available = in_.size() - in_start_;
    if (available < sizeof(wire::TcpCommonHeader)) {
        return false;
    }
    std::uint8_t* pdu = in_.data() + in_start_;
    wire::TcpCommonHeader ch{};
    std::memcpy(&ch, pdu, sizeof ch);
    const auto type = static_cast<TcpPduType>(ch.type);
    receive_.max_data_bytes = type == TcpPduType::capsule_cmd ? nvme_.in_capsule_capacity
                              : type == TcpPduType::h2c_data  ? ctx_.config.tcp.maxh2cdata
                                                              : 0;
    wire::TcpPduExpect expect;
    if (const TcpPduFault fault = wire::check_tcp_common_header(ch, receive_, expect)) {
        const std::size_t hlen = std::max<std::size_t>(ch.hlen, sizeof ch);
        terminate(fault, pdu, std::min(available, hlen));
        return false;
    }
    if (available < expect.plen) {
        return false;
    }
    if (expect.header_bytes > ch.hlen) {
        if (const TcpPduFault fault =
                wire::tcp_header_digest_fault(pdu, ch.hlen, load_u32(pdu + ch.hlen))) {
            terminate(fault, pdu, ch.hlen);
            return false;
        }
    }
    // Taken before it runs: nothing below reads more of in_ or resizes it.
    in_start_ += expect.plen;
    switch (type) {
        case TcpPduType::ic_req:
            on_ic_req(pdu);
            break;
        case TcpPduType::capsule_cmd:
            on_capsule(pdu, expect);
            break;
        case TcpPduType::h2c_data:
            on_h2c_data(pdu, expect);
            break;
        case TcpPduType::h2c_term_req:
            on_h2c_term_req(pdu);
            break;
        default:
            break;  // check_tcp_common_header admits no other type here
    }
    return state_ == State::live;
}

void TcpQueue::terminate(const TcpPduFault& fault, const std::uint8_t* header,
                         std::size_t header_bytes) {
    const std::size_t copy = std::min(header_bytes, kTermReqHeaderCopy);
    std::fprintf(
        stderr, "nvmeof-target: %s: %s: C2HTermReq FES 0x%x (%s), FEI %u; closing\n",
        where().c_str(), fault.why, static_cast<unsigned>(fault.fes),
        std::string(wire::tcp_fatal_error_name(static_cast<std::uint16_t>(fault.fes))).c_str(),
        fault.fei);
    const wire::TcpTermReq term = wire::tcp_term_req(TcpPduType::c2h_term_req, fault.fes, fault.fei,
                                                     static_cast<std::uint32_t>(copy));
    if (!muted_) {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(&term);
        out_.insert(out_.end(), bytes, bytes + sizeof term);
        out_.insert(out_.end(), header, header + copy);
        ++ctx_.stats.tcp_term_reqs;
    }
    begin_close(nullptr);
}

void TcpQueue::on_ic_req(const std::uint8_t* pdu) {
    wire::TcpIcReq req{};
    std::memcpy(&req, pdu, sizeof req);
    if (const TcpPduFault fault = wire::check_tcp_ic_req(req)) {
        terminate(fault, pdu, sizeof req);
        return;
    }
    // Whatever digests the host asks for, it gets: both are cheap with CRC-32C.
    wire::TcpDigests digests;
    digests.header = (req.dgst & wire::kTcpDigestHeaderEnable) != 0;
    digests.data = (req.dgst & wire::kTcpDigestDataEnable) != 0;
    hpda_ = req.hpda;
    // MAXR2T needs no bookkeeping: one R2T per command is within any value.
    const wire::TcpIcResp resp = wire::tcp_ic_resp(0, digests, ctx_.config.tcp.maxh2cdata);
    append_pdu(&resp, sizeof resp, {}, false);
    receive_.initialized = true;
    receive_.digests = digests;
    receive_.pda = 0;  // CPDA 0: data from the host needs no alignment
}

bool TcpQueue::data_digest_ok(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) const {
    const std::uint8_t* data = pdu + expect.pdo;
    return wire::tcp_digest(data, expect.data_bytes) == load_u32(data + expect.data_bytes);
}

void TcpQueue::on_h2c_term_req(const std::uint8_t* pdu) {
    wire::TcpTermReq term{};
    std::memcpy(&term, pdu, sizeof term);
    std::fprintf(
        stderr,
        "nvmeof-target: %s: the host ended the connection: H2CTermReq FES 0x%x (%s), FEI %u\n",
        where().c_str(), static_cast<unsigned>(term.fes),
        std::string(wire::tcp_fatal_error_name(term.fes)).c_str(), term.fei());
    close();
}

void TcpQueue::on_capsule(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) {
    auto cmd = std::make_unique<Command>();
    std::memcpy(&cmd->sqe, pdu + sizeof(wire::TcpCommonHeader), sizeof cmd->sqe);
    std::span<std::uint8_t> in_capsule;
    if (expect.data_bytes > 0) {
        in_capsule = std::span(const_cast<std::uint8_t*>(pdu) + expect.pdo, expect.data_bytes);
    }
    const bool digest_error = expect.data_digest && !data_digest_ok(pdu, expect);
    const std::uint16_t cid = cmd->sqe.command_id;
    if (!swallow_capsule(ctx_, nvme_, cmd->sqe.opcode, cid)) {
        // Numbered as swallow_capsule numbers I/O commands (ignore-io).
        if (nvme_.qid != 0 && cmd->sqe.opcode != wire::kFabricsOpcode) {
            pick_fault(*cmd, ctx_.faults.io_commands);
        }
        start(std::move(cmd), in_capsule, digest_error);
    }
    check_reset_after(cid);
}

void TcpQueue::start(std::unique_ptr<Command> cmd, std::span<std::uint8_t> in_capsule,
                     bool data_digest_error) {
    const wire::Sqe& sqe = cmd->sqe;
    ++in_flight_;
    auto& max = nvme_.qid == 0 ? ctx_.stats.max_inflight_admin : ctx_.stats.max_inflight_io;
    max = std::max<std::uint64_t>(max, in_flight_);
    // Over TCP the queue ID is the Connect command's (RDMA has it from the CM).
    if (!nvme_.connected && sqe.opcode == wire::kFabricsOpcode &&
        static_cast<wire::FabricsType>(wire::as_fabrics(sqe).fctype) ==
            wire::FabricsType::connect) {
        nvme_.qid = wire::as_connect(sqe).qid;
    }
    if (nvme_.qid != 0) {
        ++ctx_.stats.io_queue_commands[nvme_.qid];
    }
    if (data_digest_error) {
        // Not fatal (SPDK's answer): the command fails and may be retried.
        std::fprintf(stderr,
                     "nvmeof-target: %s: CID %u: DDGST does not match the in-capsule data: "
                     "Transient Transport Error\n",
                     where().c_str(), unsigned{sqe.command_id});
        finish(std::move(cmd), Completion{wire::Status::generic(
                                   wire::GenericStatus::transient_transport_error, false)});
        return;
    }
    cmd->plan = ctx_.core.plan(nvme_, sqe, in_capsule.size());
    const DataPlan& plan = cmd->plan;
    if (plan.hold) {
        held_async_events_.push_back(std::move(cmd));  // answered when an event occurs
        return;
    }
    if (!plan.status.ok()) {
        const Completion refused{plan.status};
        finish(std::move(cmd), refused);
        return;
    }
    const bool to_controller = plan.direction == wire::DataDirection::host_to_controller;
    if (plan.source == DataSource::in_capsule) {
        run(std::move(cmd), in_capsule.subspan(plan.in_capsule_offset, plan.length));
        return;
    }
    try {
        cmd->buffer.resize(plan.length);
    } catch (const std::bad_alloc&) {
        finish(std::move(cmd),
               Completion{wire::Status::generic(wire::GenericStatus::internal_error, true)});
        return;
    }
    if (plan.source == DataSource::transport && to_controller) {
        if (const auto delay = ctx_.config.faults.tcp.r2t_delay_ms) {
            if (!ctx_.faults.r2t_delay_logged) {
                ctx_.faults.r2t_delay_logged = true;
                std::fprintf(stderr,
                             "nvmeof-target: fault: r2t-delay-ms=%u: every R2T goes out %u ms "
                             "after its command\n",
                             *delay, *delay);
            }
            ++ctx_.stats.faults_injected;
            ++ctx_.stats.tcp_faults;
            cmd->due = Clock::now() + std::chrono::milliseconds(*delay);
            delayed_r2ts_.push_back(std::move(cmd));
            return;
        }
        send_r2t(std::move(cmd));
        return;
    }
    const std::span<std::uint8_t> data(cmd->buffer.data(), plan.length);
    run(std::move(cmd), data);
}

void TcpQueue::on_h2c_data(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) {
    wire::TcpDataHeader header{};
    std::memcpy(&header, pdu, sizeof header);
    if (const TcpPduFault fault = wire::check_tcp_data_header(header, expect)) {
        terminate(fault, pdu, sizeof header);
        return;
    }
    const auto it = awaiting_data_.find(header.ttag);
    if (it == awaiting_data_.end()) {
        terminate(
            TcpPduFault{TcpFatalError::invalid_header_field, offsetof(wire::TcpDataHeader, ttag),
                        "H2CData TTAG names no R2T in progress"},
            pdu, sizeof header);
        return;
    }
    Command& cmd = *it->second;
    if (header.cccid != cmd.sqe.command_id) {
        terminate(
            TcpPduFault{TcpFatalError::invalid_header_field, offsetof(wire::TcpDataHeader, cccid),
                        "H2CData CCCID is not the command its R2T asked data of"},
            pdu, sizeof header);
        return;
    }
    // The one R2T asked for all of the command's data, [0, length).
    const std::uint32_t length = cmd.plan.length;
    if (const TcpPduFault fault =
            wire::check_tcp_h2c_data_in_r2t(header, wire::TcpR2tWindow{0, length, cmd.received})) {
        terminate(fault, pdu, sizeof header);
        return;
    }
    if (expect.data_digest && !data_digest_ok(pdu, expect) && !cmd.data_digest_error) {
        cmd.data_digest_error = true;
        std::fprintf(stderr,
                     "nvmeof-target: %s: CID %u: DDGST does not match H2CData at offset %u: "
                     "Transient Transport Error\n",
                     where().c_str(), unsigned{cmd.sqe.command_id}, header.datao);
    }
    std::memcpy(cmd.buffer.data() + header.datao, pdu + expect.pdo, header.datal);
    cmd.received += header.datal;
    ++ctx_.stats.tcp_h2c_data_pdus;
    if (cmd.received < length) {
        return;
    }
    std::unique_ptr<Command> owned = std::move(it->second);
    awaiting_data_.erase(it);
    if (owned->data_digest_error) {
        finish(std::move(owned), Completion{wire::Status::generic(
                                     wire::GenericStatus::transient_transport_error, false)});
        return;
    }
    const std::span<std::uint8_t> data(owned->buffer.data(), length);
    run(std::move(owned), data);
}

void TcpQueue::run(std::unique_ptr<Command> cmd, std::span<std::uint8_t> data) {
    const Completion done = ctx_.core.execute(nvme_, cmd->sqe, cmd->plan, data);
    if (nvme_.connected && nvme_.qid != 0) {
        // An I/O queue's capsules are IOCCSZ's size once it is known to be one.
        nvme_.in_capsule_capacity =
            ctx_.config.limits.ioccsz * wire::kCapsuleUnit - std::uint32_t{wire::kSqeSize};
    }
    finish(std::move(cmd), done);
}

}  // namespace nvmeof::target
