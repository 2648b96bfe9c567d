// What a transport asks of the GPU code: register CUDA device memory with
// its RDMA device, or give it a host copy to move the bytes through. All the controller hands over
// is where the registration goes; it gets back a MemoryRecord to track like any other. Built with
// CUDA (cuda_registration.cpp) or without (gpu_nocuda.cpp: it says so).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "memory/memory_record.hpp"
#include "nvmeof/base/gpu.hpp"

struct ibv_pd;

namespace nvmeof::detail::gpu {

// The controller's protection domain and, for messages, its RDMA device.
struct RegistrationTarget {
    ibv_pd* pd = nullptr;
    std::string_view device_name;
};

// Registers [device_ptr, +bytes) of CUDA device memory in `target.pd`:
// dma-buf first, then peermem (NVMEOF_GPU_REGISTRATION=dma-buf|peermem picks
// one). `ordering` defaults to the CUDA driver's. Throws InvalidArgument or
// Error naming the cause (not device memory, the owning context not current,
// each path's failure and what to do about it).
std::shared_ptr<MemoryRecord> register_gpu_memory(const RegistrationTarget& target,
                                                  void* device_ptr, std::size_t bytes,
                                                  std::shared_ptr<GpuOrdering> ordering);

// CUDA device memory for a transport that moves bytes with the CPU (NVMe/TCP):
// the same checks, then a page-locked host copy of [device_ptr, +bytes) that
// I/O goes through (MemoryRecord::staging, RegistrationPath::staging).
// `ordering` defaults to the CUDA driver's. Throws as register_gpu_memory does,
// or Error when the host copy cannot be allocated.
std::shared_ptr<MemoryRecord> stage_gpu_memory(void* device_ptr, std::size_t bytes,
                                               std::shared_ptr<GpuOrdering> ordering);

}  // namespace nvmeof::detail::gpu
