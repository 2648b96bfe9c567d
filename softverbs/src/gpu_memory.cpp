#include "gpu_memory.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "config.h"

namespace sv {
namespace {

// The driver API types and values used here; softverbs builds without cuda.h.
using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUdevice = int;
constexpr CUresult kCudaSuccess = 0;
constexpr int kPointerAttributeContext = 1;        // CU_POINTER_ATTRIBUTE_CONTEXT
constexpr int kPointerAttributeMemoryType = 2;     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kPointerAttributeDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr unsigned kMemoryTypeDevice = 2;          // CU_MEMORYTYPE_DEVICE
constexpr const char* kDefaultDriver = "libcuda.so.1";

struct Driver {
  CUresult (*pointer_get_attribute)(void*, int, CUdeviceptr) = nullptr;
  CUresult (*mem_get_address_range)(CUdeviceptr*, std::size_t*, CUdeviceptr) = nullptr;
  CUresult (*ctx_push_current)(CUcontext) = nullptr;
  CUresult (*ctx_pop_current)(CUcontext*) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn* fn) {
  void* p = dlsym(lib, name);
  static_assert(sizeof *fn == sizeof p);
  std::memcpy(fn, &p, sizeof p);
  return p != nullptr;
}

// The CUDA driver once the application has loaded one (device memory cannot
// exist before that), else nullptr.  Bound once and kept for the process;
// after that, copies on the data path find it without a lock.
const Driver* driver() {
  static std::atomic<const Driver*> bound{nullptr};
  if (const Driver* ready = bound.load(std::memory_order_acquire)) return ready;
  static std::mutex mu;
  static Driver d;
  std::lock_guard lk(mu);
  if (const Driver* ready = bound.load(std::memory_order_relaxed)) return ready;
  const char* env = std::getenv("SOFTVERBS_CUDA_LIBRARY");
  const char* name = env && *env ? env : kDefaultDriver;
  void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return nullptr;
  bool ok = bind(lib, "cuPointerGetAttribute", &d.pointer_get_attribute);
  ok = bind(lib, "cuMemGetAddressRange_v2", &d.mem_get_address_range) && ok;
  ok = bind(lib, "cuCtxPushCurrent_v2", &d.ctx_push_current) && ok;
  ok = bind(lib, "cuCtxPopCurrent_v2", &d.ctx_pop_current) && ok;
  ok = bind(lib, "cuCtxSynchronize", &d.ctx_synchronize) && ok;
  ok = bind(lib, "cuMemcpyHtoD_v2", &d.memcpy_htod) && ok;
  ok = bind(lib, "cuMemcpyDtoH_v2", &d.memcpy_dtoh) && ok;
  ok = bind(lib, "cuDeviceGet", &d.device_get) && ok;
  ok = bind(lib, "cuDevicePrimaryCtxRetain", &d.primary_ctx_retain) && ok;
  ok = bind(lib, "cuDevicePrimaryCtxRelease_v2", &d.primary_ctx_release) && ok;
  if (!ok) {
    debug_log("%s is loaded but lacks driver entry points; GPU memory is not served", name);
    dlclose(lib);
    return nullptr;
  }
  bound.store(&d, std::memory_order_release);
  return &d;
}

// Makes a context current on this thread for one scope (the engine thread has
// none of its own; an application thread gets its own back afterwards).
class ContextScope {
 public:
  ContextScope(const Driver* d, void* context) : d_(d) {
    CUresult r = d_->ctx_push_current(context);
    pushed_ = r == kCudaSuccess;
    if (!pushed_) debug_log("cuCtxPushCurrent failed: CUDA error %d", r);
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (pushed_) d_->ctx_pop_current(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  bool ok() const { return pushed_; }

 private:
  const Driver* d_;
  bool pushed_ = false;
};

bool checked(CUresult r, const char* call, uint64_t addr, std::size_t n) {
  if (r == kCudaSuccess) return true;
  debug_log("%s of %zu bytes at device address 0x%llx failed: CUDA error %d", call, n,
            static_cast<unsigned long long>(addr), r);
  return false;
}

}  // namespace

GpuLookup gpu_lookup(uint64_t addr, uint64_t len, GpuMemory* out) {
  const Driver* d = driver();
  if (!d || addr == 0) return GpuLookup::kHost;
  unsigned type = 0;
  // Host memory (also pinned or registered host memory) is read directly.
  if (d->pointer_get_attribute(&type, kPointerAttributeMemoryType, addr) != kCudaSuccess || type != kMemoryTypeDevice)
    return GpuLookup::kHost;
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (d->mem_get_address_range(&base, &size, addr) != kCudaSuccess || len > size || addr - base > size - len) {
    debug_log("device memory 0x%llx+%llu runs past its allocation", static_cast<unsigned long long>(addr),
              static_cast<unsigned long long>(len));
    return GpuLookup::kRefused;
  }
  GpuMemory m;
  CUcontext owner = nullptr;
  if (d->pointer_get_attribute(&owner, kPointerAttributeContext, addr) == kCudaSuccess && owner) {
    m.context = owner;
  } else {
    // VMM allocations belong to no context; the device's primary context reaches them.
    int ordinal = -1;
    CUdevice dev = 0;
    CUcontext primary = nullptr;
    if (d->pointer_get_attribute(&ordinal, kPointerAttributeDeviceOrdinal, addr) != kCudaSuccess ||
        d->device_get(&dev, ordinal) != kCudaSuccess || d->primary_ctx_retain(&primary, dev) != kCudaSuccess) {
      debug_log("no CUDA context reaches device memory 0x%llx", static_cast<unsigned long long>(addr));
      return GpuLookup::kRefused;
    }
    m.context = primary;
    m.primary_ordinal = ordinal;
  }
  *out = m;
  return GpuLookup::kDevice;
}

void gpu_release(GpuMemory* mem) {
  const Driver* d = driver();
  CUdevice dev = 0;
  if (d && mem->primary_ordinal >= 0 && d->device_get(&dev, mem->primary_ordinal) == kCudaSuccess)
    d->primary_ctx_release(dev);
  *mem = GpuMemory{};
}

bool gpu_copy_to_device(const GpuMemory& mem, uint64_t dst, const void* src, std::size_t n) {
  const Driver* d = driver();
  if (!d) return false;
  ContextScope scope(d, mem.context);
  return scope.ok() && checked(d->memcpy_htod(dst, src, n), "cuMemcpyHtoD", dst, n);
}

bool gpu_copy_from_device(const GpuMemory& mem, void* dst, uint64_t src, std::size_t n) {
  const Driver* d = driver();
  if (!d) return false;
  ContextScope scope(d, mem.context);
  return scope.ok() && checked(d->memcpy_dtoh(dst, src, n), "cuMemcpyDtoH", src, n);
}

bool gpu_settle(const GpuMemory& mem) {
  const Driver* d = driver();
  if (!d) return false;
  ContextScope scope(d, mem.context);
  return scope.ok() && checked(d->ctx_synchronize(), "cuCtxSynchronize", 0, 0);
}

}  // namespace sv
