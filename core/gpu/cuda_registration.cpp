// register_gpu with CUDA: CUDA device memory registered with the RDMA device,
// by dma-buf (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr), else by
// peermem (ibv_reg_mr on the device pointer).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "gpu/cuda_device_range.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/cuda_ordering.hpp"
#include "gpu/gpu_internal.hpp"
#include "gpu/gpu_registration.hpp"
#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail::gpu {

std::shared_ptr<MemoryRecord> register_gpu_memory(const RegistrationTarget& target,
                                                  void* device_ptr, std::size_t bytes,
                                                  std::shared_ptr<GpuOrdering> ordering) {
    const CudaDriver& cu = driver_or_throw("register_gpu");
    const DeviceRange checked = check_device_range(cu, device_ptr, bytes);
    const CUdeviceptr dptr = checked.address;
    const std::string& where = checked.where;
    const std::string& on_gpu = checked.on_gpu;
    const CUdeviceptr base = checked.base;
    const std::size_t allocation = checked.allocation;
    const AlignedRange range = align_gpu_range(dptr, bytes, base, allocation,
                                               static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    unsigned int sync_memops = 1;  // GPUDirect RDMA: synchronous memory operations on the buffer
    cu.pointer_set_attribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr);

    const CUdevice device = checked.device;
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    auto record = std::make_shared<MemoryRecord>();
    record->address = static_cast<std::byte*>(device_ptr);
    record->length = bytes;
    record->kind = MemoryKind::gpu;
    record->device_ordinal = checked.ordinal;

    // NVMEOF_GPU_REGISTRATION=dma-buf or =peermem restricts register_gpu to one
    // path (device checks); anything else tries both.
    const char* only = std::getenv("NVMEOF_GPU_REGISTRATION");
    const bool try_dmabuf = only == nullptr || std::strcmp(only, "peermem") != 0;
    const bool try_peermem = only == nullptr || std::strcmp(only, "dma-buf") != 0;
    RegistrationAttempt dmabuf;
    int fd = -1;
    const CUresult handle =
        try_dmabuf ? cu.mem_get_handle_for_address_range(&fd, range.start, range.length,
                                                         CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)
                   : CUDA_ERROR_NOT_PERMITTED;
    if (!try_dmabuf) {
        dmabuf.step.clear();  // "not tried"
    } else if (handle == CUDA_SUCCESS) {
        ibv_mr* mr = ibv_reg_dmabuf_mr(target.pd, 0, range.length, range.start, fd, access);
        const int error = errno;
        ::close(fd);  // the MR holds its own reference
        if (mr != nullptr) {
            record->mr.reset(mr);
            record->path = RegistrationPath::dma_buf;
        } else {
            dmabuf.step = "ibv_reg_dmabuf_mr";
            dmabuf.sys_errno = error;
        }
    } else {
        int supported = 0;
        cu.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, device);
        dmabuf.step = "cuMemGetHandleForAddressRange";
        dmabuf.driver_error = cu.describe(handle);
        dmabuf.driver_not_supported = supported == 0 || handle == CUDA_ERROR_NOT_SUPPORTED;
    }
    RegistrationAttempt peermem;
    if (!record->mr && try_peermem) {
        ibv_mr* mr =
            ibv_reg_mr(target.pd, reinterpret_cast<void*>(static_cast<std::uintptr_t>(range.start)),
                       range.length, access);
        if (mr != nullptr) {
            record->mr.reset(mr);
            record->path = RegistrationPath::peermem;
        } else {
            peermem.step = "ibv_reg_mr";
            peermem.sys_errno = errno;
            peermem.module_loaded = std::filesystem::exists("/sys/module/nvidia_peermem");
        }
    }
    if (!record->mr) {
        throw Error("register_gpu: cannot register " + where + on_gpu + " with " +
                    std::string(target.device_name) + ": " +
                    explain_registration_failure(dmabuf, peermem));
    }
    if (!ordering) {
        ordering = make_cuda_ordering(cu, checked.context, device);
    }
    record->ordering = std::move(ordering);
    record->registered = true;
    record->lkey = record->mr->lkey;
    record->rkey = record->mr->rkey;
    return record;
}

}  // namespace nvmeof::detail::gpu
