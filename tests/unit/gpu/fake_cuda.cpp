// A fake libcuda.so.1 for tests on machines without a GPU: "device memory" is
// host memory from aligned_alloc, there is one device with one primary
// context, and the ordering calls (cuCtxSynchronize, cuFlushGPUDirectRDMAWrites)
// are logged for the test to read (fake_cuda_log). Loaded by libnvmeof through
// NVMEOF_CUDA_LIBRARY; it exports no cuGetProcAddress, so the dlsym path is used.
// FAKE_CUDA_DMABUF=1 makes the device claim dma-buf support and export a memfd.
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {
std::mutex g_mutex;
std::string g_log;
std::map<std::uintptr_t, std::size_t> g_allocations;
int g_context_tag = 0;
CUcontext fake_context() { return reinterpret_cast<CUcontext>(&g_context_tag); }
thread_local CUcontext t_current = nullptr;
thread_local std::vector<CUcontext> t_stack;

void log_call(const std::string& call) {
    std::lock_guard lock(g_mutex);
    g_log += call + "\n";
}

bool dmabuf() {
    const char* v = std::getenv("FAKE_CUDA_DMABUF");
    return v != nullptr && std::strcmp(v, "1") == 0;
}

bool lookup(CUdeviceptr p, std::uintptr_t* base, std::size_t* size) {
    std::lock_guard lock(g_mutex);
    auto it = g_allocations.upper_bound(static_cast<std::uintptr_t>(p));
    if (it == g_allocations.begin()) {
        return false;
    }
    --it;
    if (p >= it->first + it->second) {
        return false;
    }
    *base = it->first;
    *size = it->second;
    return true;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* fake_cuda_log() {
    static thread_local std::string copy;
    std::lock_guard lock(g_mutex);
    copy = g_log;
    return copy.c_str();
}
__attribute__((visibility("default"))) void fake_cuda_clear_log() {
    std::lock_guard lock(g_mutex);
    g_log.clear();
}

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int* v) { *v = 12080; return CUDA_SUCCESS; }
CUresult CUDAAPI cuGetErrorName(CUresult r, const char** s) {
    *s = r == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED"
         : r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** s) { *s = "fake driver"; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetCount(int* n) { *n = 1; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGet(CUdevice* d, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
    switch (a) {
        case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *v = dmabuf() ? 1 : 0; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: *v = CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: *v = CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE; break;
        default: *v = 0;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetPCIBusId(char* s, int n, CUdevice) {
    std::snprintf(s, static_cast<std::size_t>(n), "00000000:17:00.0");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) { *c = fake_context(); return CUDA_SUCCESS; }
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* c) { *c = t_current; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) { t_current = c; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) { t_stack.push_back(t_current); t_current = c; log_call("cuCtxPushCurrent"); return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* c) {
    *c = t_current;
    t_current = t_stack.empty() ? nullptr : t_stack.back();
    if (!t_stack.empty()) t_stack.pop_back();
    log_call("cuCtxPopCurrent");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() {
    log_call(t_current == fake_context() ? "cuCtxSynchronize" : "cuCtxSynchronize(no context)");
    return t_current == fake_context() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target, CUflushGPUDirectRDMAWritesScope scope) {
    log_call("cuFlushGPUDirectRDMAWrites(" + std::to_string(static_cast<int>(target)) + "," +
             std::to_string(static_cast<int>(scope)) + ")");
    return t_current == fake_context() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
    std::uintptr_t base = 0;
    std::size_t size = 0;
    if (!lookup(p, &base, &size)) return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE; break;
        case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data) = fake_context(); break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = 0; break;
        default: return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerSetAttribute(const void*, CUpointer_attribute, CUdeviceptr) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
    std::uintptr_t b = 0;
    std::size_t s = 0;
    if (!lookup(p, &b, &s)) return CUDA_ERROR_NOT_FOUND;
    *base = b;
    *size = s;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetHandleForAddressRange(void* handle, CUdeviceptr, size_t size, CUmemRangeHandleType, unsigned long long) {
    if (!dmabuf()) return CUDA_ERROR_NOT_SUPPORTED;
    const int fd = memfd_create("fake-dmabuf", 0);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    *static_cast<int*>(handle) = fd;
    log_call("cuMemGetHandleForAddressRange");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* p, size_t size) {
    void* m = std::aligned_alloc(2 << 20, (size + (2 << 20) - 1) / (2 << 20) * (2 << 20));
    if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(m, 0, size);
    std::lock_guard lock(g_mutex);
    g_allocations[reinterpret_cast<std::uintptr_t>(m)] = size;
    *p = reinterpret_cast<std::uintptr_t>(m);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
    std::lock_guard lock(g_mutex);
    if (g_allocations.erase(static_cast<std::uintptr_t>(p)) == 0) return CUDA_ERROR_INVALID_VALUE;
    std::free(reinterpret_cast<void*>(p));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr d, const void* s, size_t n) {
    std::memcpy(reinterpret_cast<void*>(d), s, n);
    log_call("cuMemcpyHtoD");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* d, CUdeviceptr s, size_t n) {
    std::memcpy(d, reinterpret_cast<const void*>(s), n);
    log_call("cuMemcpyDtoH");
    return CUDA_SUCCESS;
}

}  // extern "C"
