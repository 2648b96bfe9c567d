// Memory regions: ibv_reg_mr* (host or CUDA device memory behind a virtual
// address), ibv_reg_dmabuf_mr (CUDA dma-buf exports) and the access checks.
#include "memory.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "core.h"

namespace sv {
namespace {

// Remote write (or atomic) access requires local write access, as on hardware.
bool access_ok(unsigned access) {
  bool remote_w = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  return !remote_w || (access & IBV_ACCESS_LOCAL_WRITE);
}

// Creates the MR (caller holds core().mu and has validated the request).
ibv_mr* add_mr(ibv_pd* pd, void* addr, std::size_t length, uint64_t iova, uint64_t base, unsigned access,
               const GpuMemory& gpu, Fd dmabuf) {
  Core& c = core();
  auto* m = new Mr{};
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  uint32_t key = ++c.next_key;
  m->mr.handle = key;
  m->mr.lkey = key;
  m->mr.rkey = key;
  m->iova = iova;
  m->base = base;
  m->access = access;
  m->gpu = gpu;
  m->dmabuf = std::move(dmabuf);
  c.mrs[key] = m;
  return &m->mr;
}

// The checks every registration makes first (caller holds core().mu); false
// with errno set when the registration is refused.
bool admit(ibv_pd* pd, const char* call, bool bad_range, unsigned access) {
  if (inherited(to_ctx(pd->context))) {
    refuse_inherited(call);
    return false;
  }
  if (!access_ok(access) || bad_range) {
    errno = EINVAL;
    return false;
  }
  if (core().faults.should_fail("mr")) {
    errno = ENOMEM;
    return false;
  }
  return true;
}

bool covers(uint64_t start, uint64_t length, uint64_t addr, uint64_t len) {
  return addr >= start && len <= length && addr - start <= length - len;
}

}  // namespace

const Mr* local_mr(const Qp* qp, const ibv_sge& sge, unsigned need) {
  auto it = core().mrs.find(sge.lkey);
  if (it == core().mrs.end()) return nullptr;
  const Mr* m = it->second;
  if (m->mr.pd != qp->qp.pd || (m->access & need) != need || !covers(m->base, m->mr.length, sge.addr, sge.length))
    return nullptr;
  return m;
}

bool remote_span(const Qp* qp, uint32_t rkey, uint64_t raddr, uint64_t len, unsigned need, Span* out) {
  auto it = core().mrs.find(rkey);
  if (it == core().mrs.end()) return false;
  const Mr* m = it->second;
  if (m->mr.pd != qp->qp.pd || !(m->access & need) || !covers(m->iova, m->mr.length, raddr, len)) return false;
  *out = {m->base + (raddr - m->iova), len, m->gpu};
  return true;
}

bool read_span(const Span& span, void* dst) {
  if (span.gpu.device()) return gpu_copy_from_device(span.gpu, dst, span.addr, span.len);
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(span.addr)), span.len);
  return true;
}

bool write_span(const Span& span, std::size_t offset, const void* src, std::size_t n) {
  if (span.gpu.device()) return gpu_copy_to_device(span.gpu, span.addr + offset, src, n);
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(span.addr + offset)), src, n);
  return true;
}

}  // namespace sv

using namespace sv;

extern "C" {

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  std::lock_guard lk(core().mu);
  if (!admit(pd, "ibv_reg_mr", (!addr && length) || length > kMaxMrSize, access)) return nullptr;
  // A device pointer here is the nvidia_peermem path: the "HCA" reaches GPU memory by its address.
  GpuMemory gpu;
  auto base = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr));
  if (length && gpu_lookup(base, length, &gpu) == GpuLookup::kRefused) {
    errno = EFAULT;
    return nullptr;
  }
  return add_mr(pd, addr, length, iova, base, access, gpu, Fd{});
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

// softverbs cannot map a dma-buf, so it serves the exports CUDA makes and
// finds the memory by the iova, which GPUDirect users set to the device address
// of the MR's first byte (offset is kept only as mr->addr, as rdma-core does).
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  std::lock_guard lk(core().mu);
  const auto flags = static_cast<unsigned>(access);
  if (!admit(pd, "ibv_reg_dmabuf_mr", !length || length > kMaxMrSize, flags)) return nullptr;
  if (fcntl(fd, F_GETFD) < 0) {
    errno = EBADF;
    return nullptr;
  }
  GpuMemory gpu;
  if (gpu_lookup(iova, length, &gpu) != GpuLookup::kDevice) {
    debug_log(
        "ibv_reg_dmabuf_mr: iova 0x%llx+%zu is not CUDA device memory; softverbs serves dma-bufs "
        "exported by CUDA, registered with iova = the device address",
        static_cast<unsigned long long>(iova), length);
    errno = EOPNOTSUPP;
    return nullptr;
  }
  Fd held(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!held.valid()) {
    int err = errno;
    gpu_release(&gpu);
    errno = err;
    return nullptr;
  }
  return add_mr(pd, reinterpret_cast<void*>(static_cast<uintptr_t>(offset)), length, iova, iova, flags, gpu,
                std::move(held));
}

int ibv_dereg_mr(ibv_mr* mr) {
  std::lock_guard lk(core().mu);
  core().mrs.erase(mr->rkey);
  Mr* m = to_mr(mr);
  gpu_release(&m->gpu);
  delete m;
  return 0;
}

}  // extern "C"
