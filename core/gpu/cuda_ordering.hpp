// The CUDA ordering register_gpu installs when the caller brings none
// (internal; only built with cuda.h).
#pragma once

#include <memory>

#include "gpu/cuda_driver.hpp"
#include "nvmeof/base/gpu.hpp"

namespace nvmeof::detail::gpu {

// Synchronizes `context` before writes; flushes GPUDirect RDMA writes after
// reads where `device` reports it needs it (flush option, or writes not
// ordered to the owner).
std::shared_ptr<GpuOrdering> make_cuda_ordering(const CudaDriver& cu, CUcontext context,
                                                CUdevice device);

}  // namespace nvmeof::detail::gpu
