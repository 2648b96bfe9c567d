// VMM device memory for GpuBuffer (internal; only built with cuda.h).
#pragma once

#include <cstddef>
#include <string>

#include "gpu/cuda_driver.hpp"

namespace nvmeof::detail::gpu {

// Why VMM memory that GPUDirect RDMA can use cannot be had on `device`, or ""
// when it can.
std::string vmm_unavailable(const CudaDriver& cu, CUdevice device);

struct VmmAllocation {
    CUdeviceptr address = 0;
    std::size_t size = 0;  // reserved and mapped
};

// Pinned memory on GPU `ordinal` that GPUDirect RDMA may use, mapped read-write
// for that GPU; `bytes` rounded up to the allocation granularity. Throws
// naming the step that failed (`what` first), with nothing left allocated.
VmmAllocation allocate_vmm(const CudaDriver& cu, int ordinal, std::size_t bytes,
                           const std::string& what);

}  // namespace nvmeof::detail::gpu
