#include "gpu/cuda_device_range.hpp"

#include <cstdio>

#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail::gpu {

std::string hex(std::uint64_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

DeviceRange check_device_range(const CudaDriver& cu, void* device_ptr, std::size_t bytes) {
    if (device_ptr == nullptr || bytes == 0) {
        throw InvalidArgument("cannot register an empty GPU memory range");
    }
    DeviceRange range;
    range.address = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(device_ptr));
    range.bytes = bytes;
    range.where = std::to_string(bytes) + " bytes at " + hex(range.address);

    unsigned int memory_type = 0;
    if (const CUresult r =
            cu.pointer_get_attribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, range.address);
        r != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE) {
        throw Error("register_gpu: " + range.where + " is not CUDA device memory" +
                    (r != CUDA_SUCCESS ? " (" + cu.describe(r) + ")" : "") +
                    "; use register_memory for host memory");
    }
    cu.pointer_get_attribute(&range.ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, range.address);
    CUcontext owner = nullptr;
    cu.pointer_get_attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT,
                             range.address);  // NULL for VMM memory
    CUcontext current = nullptr;
    cu.ctx_get_current(&current);
    range.on_gpu = " on GPU " + std::to_string(range.ordinal);
    if (current == nullptr || (owner != nullptr && owner != current)) {
        throw Error(
            "register_gpu: the CUDA context that owns " + range.where + range.on_gpu +
            " is not current on this thread" +
            (current == nullptr ? " (no context is current)" : " (another context is)") +
            "; make it current first (cuCtxSetCurrent, cudaSetDevice, torch.cuda.set_device)");
    }
    range.context = owner != nullptr ? owner : current;

    if (const CUresult r = cu.mem_get_address_range(&range.base, &range.allocation, range.address);
        r != CUDA_SUCCESS) {
        throw Error("register_gpu: cuMemGetAddressRange(" + hex(range.address) +
                    "): " + cu.describe(r));
    }
    if (range.address + bytes > range.base + range.allocation) {
        throw InvalidArgument("register_gpu: " + range.where + " runs past the end of its " +
                              std::to_string(range.allocation) + "-byte allocation at " +
                              hex(range.base));
    }
    cu.device_get(&range.device, range.ordinal);
    return range;
}

}  // namespace nvmeof::detail::gpu
