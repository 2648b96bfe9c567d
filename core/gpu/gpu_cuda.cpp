// GPU support with the CUDA driver API loaded at run time: driver table,
// register_gpu (dma-buf, then peermem), the CUDA ordering and GpuBuffer (VMM
// memory that GPUDirect RDMA can use where the device supports it, else cuMemAlloc).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

#include "gpu/cuda_driver.hpp"
#include "gpu/gpu_internal.hpp"
#include "host/controller_impl.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/gpu.hpp"

namespace nvmeof {
namespace detail::gpu {
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
    const char* env = std::getenv("NVMEOF_CUDA_LIBRARY");
    const std::string library = env != nullptr && *env != '\0' ? env : "libcuda.so.1";
    out.driver.library = library;
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        out.error = "no CUDA driver on this machine (" + library + " cannot be loaded: " +
                    (why != nullptr ? why : "unknown error") + ")";
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
    resolve(d.flush_gpu_direct_rdma_writes, "cuFlushGPUDirectRDMAWrites", "cuFlushGPUDirectRDMAWrites");
    resolve(d.mem_alloc, "cuMemAlloc", "cuMemAlloc_v2");
    resolve(d.mem_free, "cuMemFree", "cuMemFree_v2");
    resolve(d.memcpy_htod, "cuMemcpyHtoD", "cuMemcpyHtoD_v2");
    resolve(d.memcpy_dtoh, "cuMemcpyDtoH", "cuMemcpyDtoH_v2");
    // Optional (CudaDriver::has_vmm): a driver without them still serves cuMemAlloc memory.
    find(d.mem_get_allocation_granularity, "cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity");
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
    std::string out = name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(result));
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

namespace {

// The default ordering: the owning context's work is done before a write is
// posted; inbound GPUDirect writes are flushed before a read is handed back.
class CudaOrdering final : public GpuOrdering {
public:
    CudaOrdering(const CudaDriver* cu, CUcontext context, bool flush)
        : cu_(cu), context_(context), flush_(flush) {}

    int before_write() noexcept override {
        return in_context([this] { return cu_->ctx_synchronize(); });
    }
    int after_read() noexcept override {
        if (!flush_) {
            return 0;  // the device orders GPUDirect writes to the owner natively
        }
        return in_context([this] {
            return cu_->flush_gpu_direct_rdma_writes(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                                     CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER);
        });
    }

private:
    template <typename F>
    int in_context(F call) noexcept {
        CUcontext current = nullptr;
        if (cu_->ctx_get_current(&current) == CUDA_SUCCESS && current == context_) {
            return static_cast<int>(call());
        }
        if (const CUresult r = cu_->ctx_push_current(context_); r != CUDA_SUCCESS) {
            return static_cast<int>(r);
        }
        const CUresult result = call();
        CUcontext popped = nullptr;
        cu_->ctx_pop_current(&popped);
        return static_cast<int>(result);
    }

    const CudaDriver* cu_;
    CUcontext context_;
    bool flush_;
};

std::string hex(std::uint64_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

const CudaDriver& driver_or_throw(const char* what) {
    std::string why;
    const CudaDriver* cu = cuda_driver(&why);
    if (cu == nullptr) {
        throw Error(std::string(what) + ": " + why);
    }
    return *cu;
}

// --- GpuBuffer's allocators ---

enum class Allocator : std::uint8_t { automatic, vmm, mem_alloc };

// NVMEOF_GPU_ALLOCATOR=vmm or =cuMemAlloc forces one (device checks compare
// them); unset or empty chooses by what the device supports.
Allocator requested_allocator() {
    const char* env = std::getenv("NVMEOF_GPU_ALLOCATOR");
    if (env == nullptr || *env == '\0') {
        return Allocator::automatic;
    }
    if (std::strcmp(env, "vmm") == 0) {
        return Allocator::vmm;
    }
    if (std::strcmp(env, "cuMemAlloc") == 0) {
        return Allocator::mem_alloc;
    }
    throw InvalidArgument(std::string("NVMEOF_GPU_ALLOCATOR=") + env + ": expected vmm or cuMemAlloc");
}

// Why VMM memory that GPUDirect RDMA can use cannot be had on `device`, or ""
// when it can.
std::string vmm_unavailable(const CudaDriver& cu, CUdevice device) {
    std::string missing;
    if (!cu.has_vmm(&missing)) {
        return "the CUDA driver lacks " + missing;
    }
    const std::pair<CUdevice_attribute, const char*> needed[] = {
        {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"},
        {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
         "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED"},
    };
    for (const auto& [attribute, name] : needed) {
        int value = 0;
        if (const CUresult r = cu.device_get_attribute(&value, attribute, device); r != CUDA_SUCCESS) {
            return std::string("cuDeviceGetAttribute(") + name + "): " + cu.describe(r);
        }
        if (value == 0) {
            return std::string("the device does not report ") + name;
        }
    }
    return "";
}

struct VmmAllocation {
    CUdeviceptr address = 0;
    std::size_t size = 0;  // reserved and mapped
};

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

// Pinned memory on GPU `ordinal` that GPUDirect RDMA may use, mapped read-write
// for that GPU; `bytes` rounded up to the allocation granularity.
VmmAllocation allocate_vmm(const CudaDriver& cu, int ordinal, std::size_t bytes, const std::string& what) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    prop.allocFlags.gpuDirectRDMACapable = 1;
    std::size_t granularity = 0;
    if (const CUresult r = cu.mem_get_allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        r != CUDA_SUCCESS || granularity == 0) {
        throw Error(what + ": cuMemGetAllocationGranularity: " +
                    (r != CUDA_SUCCESS ? cu.describe(r) : std::string("reported 0")));
    }
    if (bytes > std::numeric_limits<std::size_t>::max() - granularity) {
        throw InvalidArgument(what + ": " + std::to_string(bytes) + " bytes is too large to allocate");
    }
    VmmSteps steps(cu, (bytes + granularity - 1) / granularity * granularity);
    const std::string sized = " of " + std::to_string(steps.size) + " bytes: ";
    if (const CUresult r = cu.mem_create(&steps.handle, steps.size, &prop, 0); r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemCreate" + sized + cu.describe(r));
    }
    steps.created = true;
    if (const CUresult r = cu.mem_address_reserve(&steps.address, steps.size, granularity, 0, 0); r != CUDA_SUCCESS) {
        steps.address = 0;
        throw Error(what + ": cuMemAddressReserve" + sized + cu.describe(r));
    }
    if (const CUresult r = cu.mem_map(steps.address, steps.size, 0, steps.handle, 0); r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemMap" + sized + cu.describe(r));
    }
    steps.mapped = true;
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (const CUresult r = cu.mem_set_access(steps.address, steps.size, &access, 1); r != CUDA_SUCCESS) {
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

}  // namespace
}  // namespace detail::gpu

// --- Controller::register_gpu --------------------------------------------

namespace detail {

MemoryRegion ControllerImpl::register_gpu(void* device_ptr, std::size_t bytes,
                                          std::shared_ptr<GpuOrdering> ordering) {
    using gpu::hex;
    require_open("register_gpu");
    if (device_ptr == nullptr || bytes == 0) {
        throw InvalidArgument("cannot register an empty GPU memory range");
    }
    const gpu::CudaDriver& cu = gpu::driver_or_throw("register_gpu");
    const auto dptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(device_ptr));
    const std::string where = std::to_string(bytes) + " bytes at " + hex(dptr);

    unsigned int memory_type = 0;
    if (const CUresult r = cu.pointer_get_attribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr);
        r != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE) {
        throw Error("register_gpu: " + where + " is not CUDA device memory" +
                    (r != CUDA_SUCCESS ? " (" + cu.describe(r) + ")" : "") +
                    "; use register_memory for host memory");
    }
    int ordinal = -1;
    cu.pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr);
    CUcontext owner = nullptr;
    cu.pointer_get_attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dptr);  // NULL for VMM memory
    CUcontext current = nullptr;
    cu.ctx_get_current(&current);
    const std::string on_gpu = " on GPU " + std::to_string(ordinal);
    if (current == nullptr || (owner != nullptr && owner != current)) {
        throw Error("register_gpu: the CUDA context that owns " + where + on_gpu +
                    " is not current on this thread" +
                    (current == nullptr ? " (no context is current)" : " (another context is)") +
                    "; make it current first (cuCtxSetCurrent, cudaSetDevice, torch.cuda.set_device)");
    }

    CUdeviceptr base = 0;
    std::size_t allocation = 0;
    if (const CUresult r = cu.mem_get_address_range(&base, &allocation, dptr); r != CUDA_SUCCESS) {
        throw Error("register_gpu: cuMemGetAddressRange(" + hex(dptr) + "): " + cu.describe(r));
    }
    if (dptr + bytes > base + allocation) {
        throw InvalidArgument("register_gpu: " + where + " runs past the end of its " +
                              std::to_string(allocation) + "-byte allocation at " + hex(base));
    }
    const gpu::AlignedRange range = gpu::align_gpu_range(dptr, bytes, base, allocation,
                                                         static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
    unsigned int sync_memops = 1;  // GPUDirect RDMA: synchronous memory operations on the buffer
    cu.pointer_set_attribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr);

    CUdevice device = 0;
    cu.device_get(&device, ordinal);
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    auto record = std::make_shared<MemoryRecord>();
    record->address = static_cast<std::byte*>(device_ptr);
    record->length = bytes;
    record->kind = MemoryKind::gpu;
    record->device_ordinal = ordinal;

    // NVMEOF_GPU_REGISTRATION=dma-buf or =peermem restricts register_gpu to one
    // path (device checks); anything else tries both.
    const char* only = std::getenv("NVMEOF_GPU_REGISTRATION");
    const bool try_dmabuf = only == nullptr || std::strcmp(only, "peermem") != 0;
    const bool try_peermem = only == nullptr || std::strcmp(only, "dma-buf") != 0;
    gpu::RegistrationAttempt dmabuf;
    int fd = -1;
    const CUresult handle = try_dmabuf ? cu.mem_get_handle_for_address_range(
                                             &fd, range.start, range.length, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)
                                       : CUDA_ERROR_NOT_PERMITTED;
    if (!try_dmabuf) {
        dmabuf.step.clear();  // "not tried"
    } else if (handle == CUDA_SUCCESS) {
        ibv_mr* mr = ibv_reg_dmabuf_mr(pd_.get(), 0, range.length, range.start, fd, access);
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
    gpu::RegistrationAttempt peermem;
    if (!record->mr && try_peermem) {
        ibv_mr* mr = ibv_reg_mr(pd_.get(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(range.start)),
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
        throw Error("register_gpu: cannot register " + where + on_gpu + " with " + limits_.device_name +
                    ": " + gpu::explain_registration_failure(dmabuf, peermem));
    }
    if (!ordering) {
        int options = 0;
        int native = 0;
        cu.device_get_attribute(&options, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, device);
        cu.device_get_attribute(&native, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, device);
        const bool flush = (options & CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST) != 0 ||
                           native < CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER;
        ordering = std::make_shared<gpu::CudaOrdering>(&cu, owner != nullptr ? owner : current, flush);
    }
    record->ordering = std::move(ordering);
    record->lkey = record->mr->lkey;
    record->rkey = record->mr->rkey;
    return track(std::move(record));
}

}  // namespace detail

// --- driver info, devices, GpuBuffer ------------------------------------------

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
    const char* env = std::getenv("NVMEOF_CUDA_LIBRARY");
    const std::string library = env != nullptr && *env != '\0' ? env : "libcuda.so.1";
    void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);  // no cuInit: fork stays safe
    if (handle == nullptr) {
        if (why != nullptr) {
            const char* error = dlerror();
            *why = "no CUDA driver on this machine (" + library + " cannot be loaded: " +
                   (error != nullptr ? error : "unknown error") + ")";
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
    if (const CUresult r = cu.device_get_pci_bus_id(bus_id, sizeof bus_id, device); r != CUDA_SUCCESS) {
        throw Error("GPU " + std::to_string(ordinal) + ": cuDeviceGetPCIBusId: " + cu.describe(r));
    }
    return normalize_pci_address(bus_id);
}

GpuBuffer GpuBuffer::allocate(int ordinal, std::size_t bytes) {
    const auto& cu = detail::gpu::driver_or_throw("GPU buffer");
    const std::string what = "GPU " + std::to_string(ordinal);
    if (bytes == 0) {
        throw InvalidArgument("cannot allocate 0 bytes of GPU memory");
    }
    const auto wanted = detail::gpu::requested_allocator();
    CUdevice device = 0;
    if (const CUresult r = cu.device_get(&device, ordinal); r != CUDA_SUCCESS) {
        throw Error(what + ": " + cu.describe(r) + " (" + std::to_string(gpu_count()) + " GPU(s) visible)");
    }
    bool use_vmm = false;
    if (wanted != detail::gpu::Allocator::mem_alloc) {
        const std::string unavailable = detail::gpu::vmm_unavailable(cu, device);
        if (wanted == detail::gpu::Allocator::vmm && !unavailable.empty()) {
            throw Error(what + ": NVMEOF_GPU_ALLOCATOR=vmm, but " + unavailable);
        }
        use_vmm = unavailable.empty();
    }
    CUcontext context = nullptr;
    if (const CUresult r = cu.primary_ctx_retain(&context, device); r != CUDA_SUCCESS) {
        throw Error(what + ": cuDevicePrimaryCtxRetain: " + cu.describe(r));
    }
    GpuBuffer buffer;
    buffer.ordinal_ = ordinal;
    buffer.context_ = context;  // released by reset(), also on the throws below
    if (const CUresult r = cu.ctx_set_current(context); r != CUDA_SUCCESS) {
        throw Error(what + ": cuCtxSetCurrent: " + cu.describe(r));
    }
    if (use_vmm) {
        const detail::gpu::VmmAllocation vmm = detail::gpu::allocate_vmm(cu, ordinal, bytes, what);
        buffer.data_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(vmm.address));
        buffer.vmm_ = true;
        buffer.reserved_ = vmm.size;
        buffer.size_ = bytes;
        return buffer;
    }
    const std::size_t rounded = (bytes + detail::gpu::kGpuPageSize - 1) / detail::gpu::kGpuPageSize *
                                detail::gpu::kGpuPageSize;
    CUdeviceptr p = 0;
    if (const CUresult r = cu.mem_alloc(&p, rounded); r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemAlloc of " + std::to_string(rounded) + " bytes: " + cu.describe(r));
    }
    buffer.data_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
    buffer.size_ = bytes;
    return buffer;
}

GpuBuffer::GpuBuffer(GpuBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      ordinal_(std::exchange(other.ordinal_, -1)),
      context_(std::exchange(other.context_, nullptr)),
      vmm_(std::exchange(other.vmm_, false)),
      reserved_(std::exchange(other.reserved_, 0)) {}

GpuBuffer& GpuBuffer::operator=(GpuBuffer&& other) noexcept {
    if (this != &other) {
        reset();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        ordinal_ = std::exchange(other.ordinal_, -1);
        context_ = std::exchange(other.context_, nullptr);
        vmm_ = std::exchange(other.vmm_, false);
        reserved_ = std::exchange(other.reserved_, 0);
    }
    return *this;
}

GpuBuffer::~GpuBuffer() { reset(); }

int GpuBuffer::copy_from_host(std::size_t offset, const void* source, std::size_t bytes) const noexcept {
    const auto* cu = detail::gpu::cuda_driver();
    if (cu == nullptr || data_ == nullptr || offset > size_ || bytes > size_ - offset) {
        return static_cast<int>(CUDA_ERROR_INVALID_VALUE);
    }
    return static_cast<int>(
        cu->memcpy_htod(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(data_)) + offset, source, bytes));
}

int GpuBuffer::copy_to_host(std::size_t offset, void* destination, std::size_t bytes) const noexcept {
    const auto* cu = detail::gpu::cuda_driver();
    if (cu == nullptr || data_ == nullptr || offset > size_ || bytes > size_ - offset) {
        return static_cast<int>(CUDA_ERROR_INVALID_VALUE);
    }
    return static_cast<int>(
        cu->memcpy_dtoh(destination, static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(data_)) + offset, bytes));
}

void GpuBuffer::make_current() const {
    const auto& cu = detail::gpu::driver_or_throw("GPU buffer");
    if (const CUresult r = cu.ctx_set_current(static_cast<CUcontext>(context_)); r != CUDA_SUCCESS) {
        throw Error("GPU " + std::to_string(ordinal_) + ": cuCtxSetCurrent: " + cu.describe(r));
    }
}

void GpuBuffer::reset() noexcept {
    const auto* cu = detail::gpu::cuda_driver();
    if (cu != nullptr && data_ != nullptr) {
        const auto address = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(data_));
        if (vmm_) {
            // Unmapping drops the last reference to the memory (its handle was released at allocation).
            cu->mem_unmap(address, reserved_);
            cu->mem_address_free(address, reserved_);
        } else {
            cu->mem_free(address);
        }
    }
    if (cu != nullptr && context_ != nullptr) {
        CUdevice device = 0;
        if (cu->device_get(&device, ordinal_) == CUDA_SUCCESS) {
            cu->primary_ctx_release(device);
        }
    }
    data_ = nullptr;
    size_ = 0;
    ordinal_ = -1;
    context_ = nullptr;
    vmm_ = false;
    reserved_ = 0;
}

}  // namespace nvmeof
