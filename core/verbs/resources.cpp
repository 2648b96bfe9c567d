#include "verbs/resources.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "verbs/diagnostics.hpp"

namespace nvmeof::verbs {

void throw_error(int error, const std::string& what) {
    throw std::system_error(error, std::generic_category(), what);
}

void throw_errno(const std::string& what) {
    throw_error(errno, what);
}

EventChannel EventChannel::create() {
    EventChannel channel;
    channel.channel_.reset(rdma_create_event_channel());
    if (!channel.channel_) {
        throw_errno("rdma_create_event_channel");
    }
    const int flags = fcntl(channel.fd(), F_GETFL);
    if (flags < 0 || fcntl(channel.fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
        throw_errno("making the RDMA-CM event channel non-blocking");
    }
    return channel;
}

std::optional<CmEvent> EventChannel::wait(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        rdma_cm_event* event = nullptr;
        if (rdma_get_cm_event(channel_.get(), &event) == 0) {
            return CmEvent(event);
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            throw_errno("rdma_get_cm_event");
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return std::nullopt;
        }
        pollfd pfd{fd(), POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) {
            throw_errno("poll on the RDMA-CM event channel");
        }
    }
}

CmEvent EventChannel::expect(std::chrono::milliseconds timeout, const char* step) const {
    if (auto event = wait(timeout)) {
        return std::move(*event);
    }
    throw_error(ETIMEDOUT, std::string("timed out after ") + std::to_string(timeout.count()) +
                               " ms waiting for " + step);
}

CmId CmId::create(const EventChannel& channel, void* context) {
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(channel.get(), &id, context, RDMA_PS_TCP) != 0) {
        throw_errno("rdma_create_id");
    }
    return CmId(id);
}

CmId::CmId(CmId&& other) noexcept : id_(std::exchange(other.id_, nullptr)) {}

CmId& CmId::operator=(CmId&& other) noexcept {
    if (this != &other) {
        reset();
        id_ = std::exchange(other.id_, nullptr);
    }
    return *this;
}

CmId::~CmId() {
    reset();
}

void CmId::create_qp(ibv_pd* pd, ibv_qp_init_attr& attr) {
    if (rdma_create_qp(id_, pd, &attr) != 0) {
        throw_errno("rdma_create_qp");
    }
}

void CmId::destroy_qp() {
    if (id_ != nullptr && id_->qp != nullptr) {
        rdma_destroy_qp(id_);
    }
}

bool CmId::move_qp_to_error() const {
    if (qp() == nullptr) {
        return false;
    }
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    return ibv_modify_qp(qp(), &attr, IBV_QP_STATE) == 0;
}

rdma_cm_id* CmId::release() {
    return std::exchange(id_, nullptr);
}

void CmId::reset() {
    if (rdma_cm_id* id = std::exchange(id_, nullptr)) {
        if (id->qp != nullptr) {
            rdma_destroy_qp(id);
        }
        rdma_destroy_id(id);
    }
}

ProtectionDomain alloc_pd(ibv_context* context) {
    ProtectionDomain pd(ibv_alloc_pd(context));
    if (!pd) {
        throw_errno("ibv_alloc_pd");
    }
    return pd;
}

CompletionChannel create_comp_channel(ibv_context* context) {
    CompletionChannel channel(ibv_create_comp_channel(context));
    if (!channel) {
        throw_errno("ibv_create_comp_channel");
    }
    return channel;
}

CompletionQueue create_cq(ibv_context* context, int entries, ibv_comp_channel* channel) {
    CompletionQueue cq(ibv_create_cq(context, entries, nullptr, channel, 0));
    if (!cq) {
        throw_errno("ibv_create_cq with " + std::to_string(entries) + " entries");
    }
    return cq;
}

MemoryRegion register_memory(ibv_pd* pd, void* address, std::size_t length, int access) {
    MemoryRegion mr(ibv_reg_mr(pd, address, length, access));
    if (mr) {
        return mr;
    }
    const int error = errno;
    std::string what = "ibv_reg_mr of " + std::to_string(length) + " bytes";
    rlimit limit{};
    if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
        const MemlockState state{limit.rlim_cur, limit.rlim_cur == RLIM_INFINITY,
                                 locked_and_pinned_bytes()};
        if (const std::string why = memlock_explanation(error, length, state); !why.empty()) {
            what += " (" + why + ")";
        }
    }
    throw_error(error, what);
}

const char* cm_event_name(rdma_cm_event_type type) {
    return rdma_event_str(type);
}

}  // namespace nvmeof::verbs
