// RAII owners for the rdma-core objects the initiator and the target use.
// Creation failures throw std::system_error carrying errno and what was being
// created; destruction never throws.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <system_error>

#include "verbs/unique_handle.hpp"

namespace nvmeof::verbs {

// Throws std::system_error(errno) with "what: strerror".
[[noreturn]] void throw_errno(const std::string& what);
[[noreturn]] void throw_error(int error, const std::string& what);

struct EventChannelDeleter {
    void operator()(rdma_event_channel* c) const { rdma_destroy_event_channel(c); }
};
struct ProtectionDomainDeleter {
    void operator()(ibv_pd* pd) const { ibv_dealloc_pd(pd); }
};
struct CompletionQueueDeleter {
    void operator()(ibv_cq* cq) const { ibv_destroy_cq(cq); }
};
struct CompletionChannelDeleter {
    void operator()(ibv_comp_channel* c) const { ibv_destroy_comp_channel(c); }
};
struct MemoryRegionDeleter {
    void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
};
struct CmEventDeleter {
    void operator()(rdma_cm_event* e) const { rdma_ack_cm_event(e); }
};

using ProtectionDomain = UniqueHandle<ibv_pd, ProtectionDomainDeleter>;
using CompletionQueue = UniqueHandle<ibv_cq, CompletionQueueDeleter>;
using CompletionChannel = UniqueHandle<ibv_comp_channel, CompletionChannelDeleter>;
using MemoryRegion = UniqueHandle<ibv_mr, MemoryRegionDeleter>;
// A received CM event, acknowledged when this goes out of scope. rdma_destroy_id
// waits for every event of the id to be acknowledged, so never keep one longer
// than the id.
using CmEvent = UniqueHandle<rdma_cm_event, CmEventDeleter>;

// An event channel whose fd is non-blocking, so waits can carry deadlines.
class EventChannel {
  public:
    static EventChannel create();

    rdma_event_channel* get() const { return channel_.get(); }
    int fd() const { return channel_->fd; }

    // The next event, or nullopt if none arrives before `timeout`.
    std::optional<CmEvent> wait(std::chrono::milliseconds timeout) const;
    // Like wait(), but throws std::system_error(ETIMEDOUT) naming `step`.
    CmEvent expect(std::chrono::milliseconds timeout, const char* step) const;

  private:
    UniqueHandle<rdma_event_channel, EventChannelDeleter> channel_;
};

// An rdma_cm_id and, once created, its QP. Destroys the QP before the id.
class CmId {
  public:
    CmId() = default;
    explicit CmId(rdma_cm_id* id) : id_(id) {}
    static CmId create(const EventChannel& channel, void* context = nullptr);
    CmId(CmId&& other) noexcept;
    CmId& operator=(CmId&& other) noexcept;
    CmId(const CmId&) = delete;
    CmId& operator=(const CmId&) = delete;
    ~CmId();

    rdma_cm_id* get() const { return id_; }
    rdma_cm_id* operator->() const { return id_; }
    explicit operator bool() const { return id_ != nullptr; }
    ibv_qp* qp() const { return id_ != nullptr ? id_->qp : nullptr; }

    // rdma_create_qp on this id; the QP lives until destroy_qp() or the id dies.
    void create_qp(ibv_pd* pd, ibv_qp_init_attr& attr);
    void destroy_qp();
    // Moves the QP to the error state so every posted work request completes
    // (with IBV_WC_WR_FLUSH_ERR); returns false if the QP could not be moved.
    bool move_qp_to_error() const;

    rdma_cm_id* release();
    void reset();

  private:
    rdma_cm_id* id_ = nullptr;
};

ProtectionDomain alloc_pd(ibv_context* context);
CompletionChannel create_comp_channel(ibv_context* context);
CompletionQueue create_cq(ibv_context* context, int entries, ibv_comp_channel* channel = nullptr);
// Registers [address, address + length). A failure caused by the locked-memory
// limit says so, and how to raise it.
MemoryRegion register_memory(ibv_pd* pd, void* address, std::size_t length, int access);

// Human-readable name of a CM event type ("ESTABLISHED").
const char* cm_event_name(rdma_cm_event_type type);

}  // namespace nvmeof::verbs
