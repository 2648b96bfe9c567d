// A fake libcuda.so.1 for tests on machines without a GPU: "device memory" is
// host memory from aligned_alloc, there is one device with one primary
// context, and the ordering calls (cuCtxSynchronize, cuFlushGPUDirectRDMAWrites)
// are logged per calling thread for the test to read (fake_cuda_log: this
// thread's calls; fake_cuda_log_other_threads: everyone else's, e.g. the
// software RDMA device's progress thread). Loaded by libnvmeof through
// NVMEOF_CUDA_LIBRARY; it exports no cuGetProcAddress, so the dlsym path is used.
// FAKE_CUDA_DMABUF=1 makes the device claim dma-buf support and export a memfd.
// FAKE_CUDA_OPAQUE=1 hands out device addresses from a PROT_NONE reservation,
// like a real GPU's: touching them from the CPU faults, so only code that goes
// through cuMemcpy* can move the data (the host backing stays hidden).
// FAKE_CUDA_VMM=1 makes the device claim the VMM API with GPUDirect RDMA
// (cuMemCreate/cuMemAddressReserve/cuMemMap/...; those calls are logged). Its
// physical memory is a memfd, so that a mapping outside FAKE_CUDA_OPAQUE
// aliases it at the device address; like a real driver's, mapped memory
// belongs to no context (CU_POINTER_ATTRIBUTE_CONTEXT is NULL).
// FAKE_CUDA_VMM_FAIL=<call> makes that VMM call (cuMemCreate,
// cuMemAddressReserve, cuMemMap or cuMemSetAccess) fail, to test unwinding.
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {
struct Allocation {
    std::size_t size;
    std::byte* host;  // the bytes behind the device address
    bool vmm;         // mapped by cuMemMap rather than cuMemAlloc'd
};

std::mutex g_mutex;
std::vector<std::pair<std::thread::id, std::string>> g_log;
std::map<std::uintptr_t, Allocation> g_allocations;  // by device address
int g_context_tag = 0;
CUcontext fake_context() {
    return reinterpret_cast<CUcontext>(&g_context_tag);
}
thread_local CUcontext t_current = nullptr;
thread_local std::vector<CUcontext> t_stack;

constexpr std::size_t kGpuPage = std::size_t{2} << 20;
constexpr std::size_t kOpaqueSpace = std::size_t{16} << 30;  // reserved, never committed
std::uintptr_t g_opaque_base = 0;
std::size_t g_opaque_used = 0;

// VMM state (all under g_mutex).
struct Physical {  // a cuMemCreate handle's memory
    std::size_t size;
    int fd;           // memfd: cuMemMap can alias it at a reserved address
    std::byte* host;  // the fake's own view of the bytes
    int mappings;
    bool released;  // cuMemRelease'd: freed by the last cuMemUnmap
};
struct Reservation {  // a cuMemAddressReserve range
    std::size_t size;
    void* cpu;  // its PROT_NONE placeholder; nullptr in the opaque space
    std::size_t cpu_length;
};
constexpr CUmemGenericAllocationHandle kFirstHandle = 0xfa4e0001;  // opaque, never 0
CUmemGenericAllocationHandle g_next_handle = kFirstHandle;
std::map<CUmemGenericAllocationHandle, Physical> g_physical;
std::map<std::uintptr_t, Reservation> g_reservations;               // by device address
std::map<std::uintptr_t, CUmemGenericAllocationHandle> g_mappings;  // by device address

void log_call(const std::string& call) {
    std::lock_guard lock(g_mutex);
    g_log.emplace_back(std::this_thread::get_id(), call);
}

bool env_on(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, "1") == 0;
}
bool dmabuf() {
    return env_on("FAKE_CUDA_DMABUF");
}
bool opaque() {
    return env_on("FAKE_CUDA_OPAQUE");
}
bool injected_failure(const char* call) {
    const char* v = std::getenv("FAKE_CUDA_VMM_FAIL");
    return v != nullptr && std::strcmp(v, call) == 0;
}

// The next free stretch of the PROT_NONE reservation (caller holds g_mutex);
// 0 when it is used up.
std::uintptr_t opaque_address(std::size_t rounded) {
    if (g_opaque_base == 0) {
        void* space = mmap(nullptr, kOpaqueSpace, PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (space == MAP_FAILED)
            return 0;
        g_opaque_base =
            (reinterpret_cast<std::uintptr_t>(space) + kGpuPage - 1) / kGpuPage * kGpuPage;
    }
    if (g_opaque_used + rounded > kOpaqueSpace - kGpuPage)
        return 0;
    const std::uintptr_t address = g_opaque_base + g_opaque_used;
    g_opaque_used += rounded;
    return address;
}

// A device address for `host` (caller holds g_mutex): the host address itself,
// or, when opaque, the next free stretch of the PROT_NONE reservation.
std::uintptr_t device_address_for(std::byte* host, std::size_t rounded) {
    return opaque() ? opaque_address(rounded) : reinterpret_cast<std::uintptr_t>(host);
}

// The reservation holding [p, p + n) (caller holds g_mutex), or nullptr.
Reservation* reservation_of(std::uintptr_t p, std::size_t n) {
    auto it = g_reservations.upper_bound(p);
    if (it == g_reservations.begin()) {
        return nullptr;
    }
    --it;
    if (p - it->first > it->second.size || n > it->second.size - (p - it->first)) {
        return nullptr;
    }
    return &it->second;
}

// Frees a handle's memory once it is released and no longer mapped (caller holds g_mutex).
void drop_if_unused(CUmemGenericAllocationHandle handle) {
    auto it = g_physical.find(handle);
    if (it == g_physical.end() || !it->second.released || it->second.mappings != 0) {
        return;
    }
    munmap(it->second.host, it->second.size);
    close(it->second.fd);
    g_physical.erase(it);
}

bool lookup(CUdeviceptr p, std::uintptr_t* base, Allocation* allocation) {
    std::lock_guard lock(g_mutex);
    auto it = g_allocations.upper_bound(static_cast<std::uintptr_t>(p));
    if (it == g_allocations.begin()) {
        return false;
    }
    --it;
    if (p >= it->first + it->second.size) {
        return false;
    }
    *base = it->first;
    *allocation = it->second;
    return true;
}

// The host bytes behind [p, p + n), or nullptr when that is not inside one allocation.
std::byte* backing(CUdeviceptr p, std::size_t n) {
    std::uintptr_t base = 0;
    Allocation a{};
    if (!lookup(p, &base, &a) || n > a.size - (p - base)) {
        return nullptr;
    }
    return a.host + (p - base);
}

std::string joined_log(bool this_thread) {
    std::lock_guard lock(g_mutex);
    std::string out;
    for (const auto& [thread, call] : g_log) {
        if ((thread == std::this_thread::get_id()) == this_thread)
            out += call + "\n";
    }
    return out;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* fake_cuda_log() {
    static thread_local std::string copy;
    copy = joined_log(true);
    return copy.c_str();
}
__attribute__((visibility("default"))) const char* fake_cuda_log_other_threads() {
    static thread_local std::string copy;
    copy = joined_log(false);
    return copy.c_str();
}
__attribute__((visibility("default"))) void fake_cuda_clear_log() {
    std::lock_guard lock(g_mutex);
    g_log.clear();
}

CUresult CUDAAPI cuInit(unsigned int) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int* v) {
    *v = 12080;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult r, const char** s) {
    *s = r == CUDA_ERROR_NOT_SUPPORTED   ? "CUDA_ERROR_NOT_SUPPORTED"
         : r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
                                         : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** s) {
    *s = "fake driver";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* n) {
    *n = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* d, int ordinal) {
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
    switch (a) {
        case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
            *v = dmabuf() ? 1 : 0;
            break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
            *v = CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST;
            break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
            *v = CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE;
            break;
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
            *v = env_on("FAKE_CUDA_VMM") ? 1 : 0;
            break;
        default:
            *v = 0;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetPCIBusId(char* s, int n, CUdevice) {
    std::snprintf(s, static_cast<std::size_t>(n), "00000000:17:00.0");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
    *c = fake_context();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* c) {
    *c = t_current;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
    t_current = c;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) {
    t_stack.push_back(t_current);
    t_current = c;
    log_call("cuCtxPushCurrent");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* c) {
    *c = t_current;
    t_current = t_stack.empty() ? nullptr : t_stack.back();
    if (!t_stack.empty())
        t_stack.pop_back();
    log_call("cuCtxPopCurrent");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() {
    log_call(t_current == fake_context() ? "cuCtxSynchronize" : "cuCtxSynchronize(no context)");
    return t_current == fake_context() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                            CUflushGPUDirectRDMAWritesScope scope) {
    log_call("cuFlushGPUDirectRDMAWrites(" + std::to_string(static_cast<int>(target)) + "," +
             std::to_string(static_cast<int>(scope)) + ")");
    return t_current == fake_context() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
    std::uintptr_t base = 0;
    Allocation allocation{};
    if (!lookup(p, &base, &allocation))
        return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            *static_cast<CUcontext*>(data) = allocation.vmm ? nullptr : fake_context();
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *static_cast<int*>(data) = 0;
            break;
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerSetAttribute(const void*, CUpointer_attribute, CUdeviceptr) {
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
    std::uintptr_t b = 0;
    Allocation allocation{};
    if (!lookup(p, &b, &allocation))
        return CUDA_ERROR_NOT_FOUND;
    *base = b;
    *size = allocation.size;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetHandleForAddressRange(void* handle, CUdeviceptr, size_t size,
                                               CUmemRangeHandleType, unsigned long long) {
    if (!dmabuf())
        return CUDA_ERROR_NOT_SUPPORTED;
    const int fd = memfd_create("fake-dmabuf", 0);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *static_cast<int*>(handle) = fd;
    log_call("cuMemGetHandleForAddressRange");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* p, size_t size) {
    const std::size_t rounded = (size + kGpuPage - 1) / kGpuPage * kGpuPage;
    auto* host = static_cast<std::byte*>(std::aligned_alloc(kGpuPage, rounded));
    if (host == nullptr)
        return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(host, 0, size);
    std::lock_guard lock(g_mutex);
    const std::uintptr_t device = device_address_for(host, rounded);
    if (device == 0) {
        std::free(host);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_allocations[device] = Allocation{size, host, false};
    *p = device;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
    std::lock_guard lock(g_mutex);
    auto it = g_allocations.find(static_cast<std::uintptr_t>(p));
    if (it == g_allocations.end())
        return CUDA_ERROR_INVALID_VALUE;
    std::free(it->second.host);
    g_allocations.erase(it);
    return CUDA_SUCCESS;
}
// Like the driver's, the copies need a current context.
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr d, const void* s, size_t n) {
    if (t_current == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    std::byte* host = backing(d, n);
    if (host == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(host, s, n);
    log_call("cuMemcpyHtoD");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* d, CUdeviceptr s, size_t n) {
    if (t_current == nullptr)
        return CUDA_ERROR_INVALID_CONTEXT;
    const std::byte* host = backing(s, n);
    if (host == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(d, host, n);
    log_call("cuMemcpyDtoH");
    return CUDA_SUCCESS;
}
// Page-locking is only logged: the fake's copies are memcpy either way.
CUresult CUDAAPI cuMemHostRegister(void* p, size_t n, unsigned int) {
    if (p == nullptr || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    log_call("cuMemHostRegister");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostUnregister(void* p) {
    if (p == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    log_call("cuMemHostUnregister");
    return CUDA_SUCCESS;
}

// --- the VMM API (FAKE_CUDA_VMM=1 advertises it) ---

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp*,
                                               CUmemAllocationGranularity_flags) {
    *granularity = kGpuPage;
    log_call("cuMemGetAllocationGranularity");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long) {
    if (injected_failure("cuMemCreate"))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (size == 0 || size % kGpuPage != 0 || prop == nullptr ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const int fd = memfd_create("fake-vmm", 0);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void* host = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(size)) == 0) {
        host = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (host == MAP_FAILED) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    {
        std::lock_guard lock(g_mutex);
        *handle = g_next_handle++;
        g_physical[*handle] = Physical{size, fd, static_cast<std::byte*>(host), 0, false};
    }
    log_call("cuMemCreate(gpuDirectRDMACapable=" +
             std::to_string(prop->allocFlags.gpuDirectRDMACapable) + ")");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
    {
        std::lock_guard lock(g_mutex);
        auto it = g_physical.find(handle);
        if (it == g_physical.end() || it->second.released)
            return CUDA_ERROR_INVALID_VALUE;
        it->second.released = true;
        drop_if_unused(handle);
    }
    log_call("cuMemRelease");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr,
                                     unsigned long long) {
    if (injected_failure("cuMemAddressReserve"))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (size == 0 || size % kGpuPage != 0 || alignment > kGpuPage)
        return CUDA_ERROR_INVALID_VALUE;
    {
        std::lock_guard lock(g_mutex);
        Reservation reservation{size, nullptr, 0};
        std::uintptr_t address = 0;
        if (opaque()) {
            address = opaque_address(size);
        } else {
            // A placeholder the size of the range plus room to align it, so
            // that cuMemMap can put the memory right at the device address.
            reservation.cpu_length = size + kGpuPage;
            reservation.cpu = mmap(nullptr, reservation.cpu_length, PROT_NONE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (reservation.cpu == MAP_FAILED)
                return CUDA_ERROR_OUT_OF_MEMORY;
            address = (reinterpret_cast<std::uintptr_t>(reservation.cpu) + kGpuPage - 1) /
                      kGpuPage * kGpuPage;
        }
        if (address == 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g_reservations[address] = reservation;
        *ptr = address;
    }
    log_call("cuMemAddressReserve");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    {
        std::lock_guard lock(g_mutex);
        auto it = g_reservations.find(static_cast<std::uintptr_t>(ptr));
        if (it == g_reservations.end() || it->second.size != size)
            return CUDA_ERROR_INVALID_VALUE;
        auto mapped = g_mappings.lower_bound(it->first);
        if (mapped != g_mappings.end() && mapped->first < it->first + size)
            return CUDA_ERROR_INVALID_VALUE;
        if (it->second.cpu != nullptr)
            munmap(it->second.cpu, it->second.cpu_length);
        g_reservations.erase(it);
    }
    log_call("cuMemAddressFree");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long) {
    if (injected_failure("cuMemMap"))
        return CUDA_ERROR_OUT_OF_MEMORY;
    {
        std::lock_guard lock(g_mutex);
        const auto address = static_cast<std::uintptr_t>(ptr);
        auto physical = g_physical.find(handle);
        const Reservation* reservation = reservation_of(address, size);
        if (physical == g_physical.end() || reservation == nullptr || size == 0 ||
            offset > physical->second.size || size > physical->second.size - offset ||
            g_mappings.count(address) != 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (reservation->cpu != nullptr &&
            mmap(reinterpret_cast<void*>(address), size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, physical->second.fd,
                 static_cast<off_t>(offset)) == MAP_FAILED) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        ++physical->second.mappings;
        g_mappings[address] = handle;
        g_allocations[address] = Allocation{size, physical->second.host + offset, true};
    }
    log_call("cuMemMap");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
    {
        std::lock_guard lock(g_mutex);
        const auto address = static_cast<std::uintptr_t>(ptr);
        auto mapping = g_mappings.find(address);
        auto allocation = g_allocations.find(address);
        const Reservation* reservation = reservation_of(address, size);
        if (mapping == g_mappings.end() || allocation == g_allocations.end() ||
            allocation->second.size != size || reservation == nullptr) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (reservation->cpu != nullptr) {
            // Back to a placeholder: the range stays reserved until cuMemAddressFree.
            mmap(reinterpret_cast<void*>(address), size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        }
        const CUmemGenericAllocationHandle handle = mapping->second;
        g_mappings.erase(mapping);
        g_allocations.erase(allocation);
        --g_physical[handle].mappings;
        drop_if_unused(handle);
    }
    log_call("cuMemUnmap");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
    if (injected_failure("cuMemSetAccess"))
        return CUDA_ERROR_OUT_OF_MEMORY;
    {
        std::lock_guard lock(g_mutex);
        auto allocation = g_allocations.find(static_cast<std::uintptr_t>(ptr));
        if (allocation == g_allocations.end() || !allocation->second.vmm ||
            allocation->second.size != size || count != 1 || desc == nullptr ||
            desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc->location.id != 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    log_call("cuMemSetAccess(" + std::to_string(static_cast<int>(desc->flags)) + ")");
    return CUDA_SUCCESS;
}

}  // extern "C"
