// The CUDA driver API, loaded at run time (internal; only built with cuda.h).
// libnvmeof never links libcuda: dlopen("libcuda.so.1") (or $NVMEOF_CUDA_LIBRARY)
// and cuGetProcAddress (dlsym when the driver has none) fill this table once.
#pragma once

#include <cuda.h>

#include <string>

namespace nvmeof::detail::gpu {

struct CudaDriver {
    int version = 0;
    std::string library;
    decltype(&::cuGetErrorName) get_error_name = nullptr;
    decltype(&::cuGetErrorString) get_error_string = nullptr;
    decltype(&::cuDeviceGetCount) device_get_count = nullptr;
    decltype(&::cuDeviceGet) device_get = nullptr;
    decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
    decltype(&::cuDeviceGetPCIBusId) device_get_pci_bus_id = nullptr;
    decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
    decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
    decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
    decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
    decltype(&::cuCtxPushCurrent) ctx_push_current = nullptr;
    decltype(&::cuCtxPopCurrent) ctx_pop_current = nullptr;
    decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
    decltype(&::cuPointerGetAttribute) pointer_get_attribute = nullptr;
    decltype(&::cuPointerSetAttribute) pointer_set_attribute = nullptr;
    decltype(&::cuMemGetAddressRange) mem_get_address_range = nullptr;
    decltype(&::cuMemGetHandleForAddressRange) mem_get_handle_for_address_range = nullptr;
    decltype(&::cuFlushGPUDirectRDMAWrites) flush_gpu_direct_rdma_writes = nullptr;
    decltype(&::cuMemAlloc) mem_alloc = nullptr;
    decltype(&::cuMemFree) mem_free = nullptr;
    decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
    decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
    // Optional: page-locks the host copy GPU memory is staged through over
    // NVMe/TCP (without them the copies go through the driver's own buffer).
    decltype(&::cuMemHostRegister) mem_host_register = nullptr;
    decltype(&::cuMemHostUnregister) mem_host_unregister = nullptr;
    // The virtual memory management API (allocations GPUDirect RDMA can take
    // on every platform). Optional: nullptr where the driver lacks them, and
    // GpuBuffer then allocates with cuMemAlloc.
    decltype(&::cuMemGetAllocationGranularity) mem_get_allocation_granularity = nullptr;
    decltype(&::cuMemCreate) mem_create = nullptr;
    decltype(&::cuMemRelease) mem_release = nullptr;
    decltype(&::cuMemAddressReserve) mem_address_reserve = nullptr;
    decltype(&::cuMemAddressFree) mem_address_free = nullptr;
    decltype(&::cuMemMap) mem_map = nullptr;
    decltype(&::cuMemUnmap) mem_unmap = nullptr;
    decltype(&::cuMemSetAccess) mem_set_access = nullptr;

    // Every VMM entry point was found; names the first one missing otherwise.
    bool has_vmm(std::string* missing = nullptr) const;

    // "CUDA_ERROR_NOT_SUPPORTED (operation not supported)".
    std::string describe(CUresult result) const;
};

// `call()` (a CUresult) with `context` current on this thread: pushed and
// popped around it unless it is current already. The data path's calls into
// the driver go through this (they run on whichever thread drives a queue).
template <typename F>
int in_context(const CudaDriver& cu, CUcontext context, F call) noexcept {
    CUcontext current = nullptr;
    if (cu.ctx_get_current(&current) == CUDA_SUCCESS && current == context) {
        return static_cast<int>(call());
    }
    if (const CUresult r = cu.ctx_push_current(context); r != CUDA_SUCCESS) {
        return static_cast<int>(r);
    }
    const CUresult result = call();
    CUcontext popped = nullptr;
    cu.ctx_pop_current(&popped);
    return static_cast<int>(result);
}

// The loaded driver, or nullptr with `error` saying why (no driver, cuInit
// failed, a symbol missing). Loads once per process; never throws.
const CudaDriver* cuda_driver(std::string* error = nullptr);

// The loaded driver; throws Error "`what`: why not" without one.
const CudaDriver& driver_or_throw(const char* what);

// The driver library to load: $NVMEOF_CUDA_LIBRARY, else libcuda.so.1.
std::string cuda_library_name();

}  // namespace nvmeof::detail::gpu
