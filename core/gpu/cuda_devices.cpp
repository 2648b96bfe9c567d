// What the CUDA driver reports: whether it is there, its version, the GPUs
// and their PCI addresses.
#include <dlfcn.h>

#include "gpu/cuda_driver.hpp"
#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/gpu.hpp"

namespace nvmeof {

GpuDriverInfo gpu_driver_info() {
    GpuDriverInfo info;
    info.built = true;
    std::string why;
    const detail::gpu::CudaDriver* cu = detail::gpu::cuda_driver(&why);
    if (cu == nullptr) {
        info.error = why;
        return info;
    }
    info.loaded = true;
    info.version = cu->version;
    info.library = cu->library;
    int count = 0;
    if (cu->device_get_count(&count) == CUDA_SUCCESS) {
        info.devices = count;
    }
    return info;
}

bool gpu_driver_present(std::string* why) noexcept {
    const std::string library = detail::gpu::cuda_library_name();
    void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);  // no cuInit: fork stays safe
    if (handle == nullptr) {
        if (why != nullptr) {
            const char* error = dlerror();
            *why = "no CUDA driver on this machine (" + library +
                   " cannot be loaded: " + (error != nullptr ? error : "unknown error") + ")";
        }
        return false;
    }
    dlclose(handle);
    return true;
}

int gpu_count() noexcept {
    const detail::gpu::CudaDriver* cu = detail::gpu::cuda_driver();
    int count = 0;
    if (cu == nullptr || cu->device_get_count(&count) != CUDA_SUCCESS) {
        return 0;
    }
    return count;
}

std::string gpu_pci_address(int ordinal) {
    const auto& cu = detail::gpu::driver_or_throw("gpu_pci_address");
    CUdevice device = 0;
    if (const CUresult r = cu.device_get(&device, ordinal); r != CUDA_SUCCESS) {
        throw Error("GPU " + std::to_string(ordinal) + ": " + cu.describe(r));
    }
    char bus_id[64] = {};
    if (const CUresult r = cu.device_get_pci_bus_id(bus_id, sizeof bus_id, device);
        r != CUDA_SUCCESS) {
        throw Error("GPU " + std::to_string(ordinal) + ": cuDeviceGetPCIBusId: " + cu.describe(r));
    }
    return normalize_pci_address(bus_id);
}

}  // namespace nvmeof
