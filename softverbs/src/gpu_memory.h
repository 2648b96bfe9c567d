// Registrations of CUDA device memory.  softverbs never dereferences a device
// address: it moves bytes with the CUDA driver the application has already
// loaded (cuMemcpyHtoD/DtoH with the owning context pushed), so the GPU path of
// a verbs program runs end to end without an RDMA NIC.  Processes that never
// loaded CUDA pay one dlopen(RTLD_NOLOAD) per registration and nothing else.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sv {

// The CUDA context that reaches one registration's device memory; empty for host memory.
struct GpuMemory {
  void* context = nullptr;   // CUcontext pushed around every copy
  int primary_ordinal = -1;  // >= 0: context is that device's retained primary context
  bool device() const { return context != nullptr; }
};

enum class GpuLookup { kHost, kDevice, kRefused };

// Classifies [addr, addr + len): host memory, CUDA device memory inside one
// allocation (filling *out), or device memory softverbs cannot serve (the range
// runs past its allocation, or no context reaches it; the debug log says which).
GpuLookup gpu_lookup(uint64_t addr, uint64_t len, GpuMemory* out);
// Drops what gpu_lookup retained (a primary context).
void gpu_release(GpuMemory* mem);

// Copies; false when the driver refused (the reason goes to the debug log).
bool gpu_copy_to_device(const GpuMemory& mem, uint64_t dst, const void* src, std::size_t n);
bool gpu_copy_from_device(const GpuMemory& mem, void* dst, uint64_t src, std::size_t n);
// Waits until copies into the context's memory have landed; cuMemcpyHtoD from
// pageable memory may return before its DMA is done, and a completion must not
// be visible before the data is.
bool gpu_settle(const GpuMemory& mem);

}  // namespace sv
