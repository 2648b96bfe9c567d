// CUDA device memory handed to register_gpu, checked the same way whichever
// transport takes it (internal; only built with cuda.h).
#pragma once

#include <cstddef>
#include <string>

#include "gpu/cuda_driver.hpp"

namespace nvmeof::detail::gpu {

struct DeviceRange {
    CUdeviceptr address = 0;
    std::size_t bytes = 0;
    int ordinal = -1;
    CUdevice device = 0;
    CUcontext context = nullptr;  // the owning context (the current one for VMM memory)
    CUdeviceptr base = 0;         // the allocation it lies in
    std::size_t allocation = 0;
    std::string where;   // "N bytes at 0x…", for messages
    std::string on_gpu;  // " on GPU k"
};

// [device_ptr, +bytes): non-empty CUDA device memory inside one allocation,
// its owning context current on this thread. Throws InvalidArgument or Error
// ("register_gpu: …") naming what is wrong and what to do.
DeviceRange check_device_range(const CudaDriver& cu, void* device_ptr, std::size_t bytes);

std::string hex(std::uint64_t value);

}  // namespace nvmeof::detail::gpu
