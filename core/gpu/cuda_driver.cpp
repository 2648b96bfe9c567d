// The CUDA driver API loaded at run time: dlopen, cuGetProcAddress (dlsym
// where the driver has none), cuInit, once per process.
#include "gpu/cuda_driver.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail::gpu {
namespace {

template <typename Fn>
void from_void(Fn& fn, void* p) {
    static_assert(sizeof fn == sizeof p);
    std::memcpy(&fn, &p, sizeof fn);  // object → function pointer without a pedantic cast
}

struct Loaded {
    CudaDriver driver;
    std::string error;
    bool ok = false;
};

Loaded load() {
    Loaded out;
    const std::string library = cuda_library_name();
    out.driver.library = library;
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        out.error = "no CUDA driver on this machine (" + library +
                    " cannot be loaded: " + (why != nullptr ? why : "unknown error") + ")";
        return out;
    }
    // Kept loaded for the life of the process (unloading a CUDA driver is unsafe).
    decltype(&::cuDriverGetVersion) get_version = nullptr;
    decltype(&::cuInit) init = nullptr;
    from_void(get_version, dlsym(handle, "cuDriverGetVersion"));
    from_void(init, dlsym(handle, "cuInit"));
    if (get_version == nullptr || init == nullptr) {
        out.error = library + " is not a CUDA driver (cuInit/cuDriverGetVersion missing)";
        return out;
    }
    int version = 0;
    if (get_version(&version) != CUDA_SUCCESS) {
        version = 0;
    }
    out.driver.version = version;
    decltype(&::cuGetProcAddress) get_proc = nullptr;
    from_void(get_proc, dlsym(handle, "cuGetProcAddress_v2"));
    const int want = std::min(CUDA_VERSION, version);
    std::string missing;
    auto find = [&](auto& fn, const char* base, const char* exported) {
        void* p = nullptr;
        if (get_proc != nullptr) {
            CUdriverProcAddressQueryResult status{};
            if (get_proc(base, &p, want, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) {
                p = nullptr;
            }
        }
        if (p == nullptr) {
            p = dlsym(handle, exported);
        }
        from_void(fn, p);
        return p != nullptr;
    };
    auto resolve = [&](auto& fn, const char* base, const char* exported) {
        if (!find(fn, base, exported)) {
            missing += std::string(missing.empty() ? "" : ", ") + base;
        }
    };
    CudaDriver& d = out.driver;
    resolve(d.get_error_name, "cuGetErrorName", "cuGetErrorName");
    resolve(d.get_error_string, "cuGetErrorString", "cuGetErrorString");
    resolve(d.device_get_count, "cuDeviceGetCount", "cuDeviceGetCount");
    resolve(d.device_get, "cuDeviceGet", "cuDeviceGet");
    resolve(d.device_get_attribute, "cuDeviceGetAttribute", "cuDeviceGetAttribute");
    resolve(d.device_get_pci_bus_id, "cuDeviceGetPCIBusId", "cuDeviceGetPCIBusId");
    resolve(d.primary_ctx_retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
    resolve(d.primary_ctx_release, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2");
    resolve(d.ctx_get_current, "cuCtxGetCurrent", "cuCtxGetCurrent");
    resolve(d.ctx_set_current, "cuCtxSetCurrent", "cuCtxSetCurrent");
    resolve(d.ctx_push_current, "cuCtxPushCurrent", "cuCtxPushCurrent_v2");
    resolve(d.ctx_pop_current, "cuCtxPopCurrent", "cuCtxPopCurrent_v2");
    resolve(d.ctx_synchronize, "cuCtxSynchronize", "cuCtxSynchronize");
    resolve(d.pointer_get_attribute, "cuPointerGetAttribute", "cuPointerGetAttribute");
    resolve(d.pointer_set_attribute, "cuPointerSetAttribute", "cuPointerSetAttribute");
    resolve(d.mem_get_address_range, "cuMemGetAddressRange", "cuMemGetAddressRange_v2");
    resolve(d.mem_get_handle_for_address_range, "cuMemGetHandleForAddressRange",
            "cuMemGetHandleForAddressRange");
    resolve(d.flush_gpu_direct_rdma_writes, "cuFlushGPUDirectRDMAWrites",
            "cuFlushGPUDirectRDMAWrites");
    resolve(d.mem_alloc, "cuMemAlloc", "cuMemAlloc_v2");
    resolve(d.mem_free, "cuMemFree", "cuMemFree_v2");
    resolve(d.memcpy_htod, "cuMemcpyHtoD", "cuMemcpyHtoD_v2");
    resolve(d.memcpy_dtoh, "cuMemcpyDtoH", "cuMemcpyDtoH_v2");
    find(d.mem_host_register, "cuMemHostRegister", "cuMemHostRegister_v2");
    find(d.mem_host_unregister, "cuMemHostUnregister", "cuMemHostUnregister");
    // Optional (CudaDriver::has_vmm): a driver without them still serves cuMemAlloc memory.
    find(d.mem_get_allocation_granularity, "cuMemGetAllocationGranularity",
         "cuMemGetAllocationGranularity");
    find(d.mem_create, "cuMemCreate", "cuMemCreate");
    find(d.mem_release, "cuMemRelease", "cuMemRelease");
    find(d.mem_address_reserve, "cuMemAddressReserve", "cuMemAddressReserve");
    find(d.mem_address_free, "cuMemAddressFree", "cuMemAddressFree");
    find(d.mem_map, "cuMemMap", "cuMemMap");
    find(d.mem_unmap, "cuMemUnmap", "cuMemUnmap");
    find(d.mem_set_access, "cuMemSetAccess", "cuMemSetAccess");
    if (!missing.empty()) {
        out.error = library + " (driver " + std::to_string(version) + ") lacks " + missing +
                    " (a CUDA 11.7 or newer driver is needed)";
        return out;
    }
    const CUresult init_result = init(0);
    if (init_result != CUDA_SUCCESS) {
        out.error = "cuInit failed: " + d.describe(init_result);
        return out;
    }
    out.ok = true;
    return out;
}

}  // namespace

std::string CudaDriver::describe(CUresult result) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (get_error_name == nullptr || get_error_name(result, &name) != CUDA_SUCCESS) {
        name = nullptr;
    }
    if (get_error_string == nullptr || get_error_string(result, &text) != CUDA_SUCCESS) {
        text = nullptr;
    }
    std::string out =
        name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(result));
    if (text != nullptr) {
        out += std::string(" (") + text + ")";
    }
    return out;
}

bool CudaDriver::has_vmm(std::string* missing) const {
    const std::pair<bool, const char*> entries[] = {
        {mem_get_allocation_granularity != nullptr, "cuMemGetAllocationGranularity"},
        {mem_create != nullptr, "cuMemCreate"},
        {mem_release != nullptr, "cuMemRelease"},
        {mem_address_reserve != nullptr, "cuMemAddressReserve"},
        {mem_address_free != nullptr, "cuMemAddressFree"},
        {mem_map != nullptr, "cuMemMap"},
        {mem_unmap != nullptr, "cuMemUnmap"},
        {mem_set_access != nullptr, "cuMemSetAccess"},
    };
    for (const auto& [found, name] : entries) {
        if (!found) {
            if (missing != nullptr) {
                *missing = name;
            }
            return false;
        }
    }
    return true;
}

const CudaDriver* cuda_driver(std::string* error) {
    static const Loaded loaded = load();
    if (!loaded.ok && error != nullptr) {
        *error = loaded.error;
    }
    return loaded.ok ? &loaded.driver : nullptr;
}

const CudaDriver& driver_or_throw(const char* what) {
    std::string why;
    const CudaDriver* cu = cuda_driver(&why);
    if (cu == nullptr) {
        throw Error(std::string(what) + ": " + why);
    }
    return *cu;
}

std::string cuda_library_name() {
    const char* env = std::getenv("NVMEOF_CUDA_LIBRARY");
    return env != nullptr && *env != '\0' ? env : "libcuda.so.1";
}

}  // namespace nvmeof::detail::gpu
