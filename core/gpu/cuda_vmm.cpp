// VMM allocations (cuMemCreate, reserve, map, set access): device memory
// that GPUDirect RDMA can use on every platform that supports it.
#include "gpu/cuda_vmm.hpp"

#include <limits>
#include <utility>

#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail::gpu {

std::string vmm_unavailable(const CudaDriver& cu, CUdevice device) {
    std::string missing;
    if (!cu.has_vmm(&missing)) {
        return "the CUDA driver lacks " + missing;
    }
    const std::pair<CUdevice_attribute, const char*> needed[] = {
        {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
         "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"},
        {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
         "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED"},
    };
    for (const auto& [attribute, name] : needed) {
        int value = 0;
        if (const CUresult r = cu.device_get_attribute(&value, attribute, device);
            r != CUDA_SUCCESS) {
            return std::string("cuDeviceGetAttribute(") + name + "): " + cu.describe(r);
        }
        if (value == 0) {
            return std::string("the device does not report ") + name;
        }
    }
    return "";
}

namespace {

// The steps of a VMM allocation done so far, undone (in reverse) unless the
// allocation is handed over.
struct VmmSteps {
    const CudaDriver& cu;
    std::size_t size = 0;
    CUmemGenericAllocationHandle handle{};
    bool created = false;
    CUdeviceptr address = 0;
    bool mapped = false;

    VmmSteps(const CudaDriver& driver, std::size_t bytes) : cu(driver), size(bytes) {}
    VmmSteps(const VmmSteps&) = delete;
    VmmSteps& operator=(const VmmSteps&) = delete;
    ~VmmSteps() {
        if (mapped) {
            cu.mem_unmap(address, size);
        }
        if (address != 0) {
            cu.mem_address_free(address, size);
        }
        if (created) {
            cu.mem_release(handle);
        }
    }
};

}  // namespace

VmmAllocation allocate_vmm(const CudaDriver& cu, int ordinal, std::size_t bytes,
                           const std::string& what) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    prop.allocFlags.gpuDirectRDMACapable = 1;
    std::size_t granularity = 0;
    if (const CUresult r = cu.mem_get_allocation_granularity(&granularity, &prop,
                                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        r != CUDA_SUCCESS || granularity == 0) {
        throw Error(what + ": cuMemGetAllocationGranularity: " +
                    (r != CUDA_SUCCESS ? cu.describe(r) : std::string("reported 0")));
    }
    if (bytes > std::numeric_limits<std::size_t>::max() - granularity) {
        throw InvalidArgument(what + ": " + std::to_string(bytes) +
                              " bytes is too large to allocate");
    }
    VmmSteps steps(cu, (bytes + granularity - 1) / granularity * granularity);
    const std::string sized = " of " + std::to_string(steps.size) + " bytes: ";
    if (const CUresult r = cu.mem_create(&steps.handle, steps.size, &prop, 0); r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemCreate" + sized + cu.describe(r));
    }
    steps.created = true;
    if (const CUresult r = cu.mem_address_reserve(&steps.address, steps.size, granularity, 0, 0);
        r != CUDA_SUCCESS) {
        steps.address = 0;
        throw Error(what + ": cuMemAddressReserve" + sized + cu.describe(r));
    }
    if (const CUresult r = cu.mem_map(steps.address, steps.size, 0, steps.handle, 0);
        r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemMap" + sized + cu.describe(r));
    }
    steps.mapped = true;
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (const CUresult r = cu.mem_set_access(steps.address, steps.size, &access, 1);
        r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemSetAccess" + sized + cu.describe(r));
    }
    // The mapping keeps the memory alive from here on; unmapping frees it.
    if (const CUresult r = cu.mem_release(steps.handle); r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemRelease" + sized + cu.describe(r));
    }
    steps.created = false;
    const VmmAllocation out{steps.address, steps.size};
    steps.mapped = false;
    steps.address = 0;
    return out;
}

}  // namespace nvmeof::detail::gpu
