// GpuBuffer with CUDA: device memory for I/O buffers, VMM where the device
// lets GPUDirect RDMA use it, else cuMemAlloc.
#include <cstdlib>
#include <cstring>
#include <utility>

#include "gpu/cuda_driver.hpp"
#include "gpu/cuda_vmm.hpp"
#include "gpu/gpu_internal.hpp"
#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/gpu.hpp"

namespace nvmeof {
namespace detail::gpu {
namespace {

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
    throw InvalidArgument(std::string("NVMEOF_GPU_ALLOCATOR=") + env +
                          ": expected vmm or cuMemAlloc");
}

}  // namespace
}  // namespace detail::gpu

GpuBuffer GpuBuffer::allocate(int ordinal, std::size_t bytes) {
    const auto& cu = detail::gpu::driver_or_throw("GPU buffer");
    const std::string what = "GPU " + std::to_string(ordinal);
    if (bytes == 0) {
        throw InvalidArgument("cannot allocate 0 bytes of GPU memory");
    }
    const auto wanted = detail::gpu::requested_allocator();
    CUdevice device = 0;
    if (const CUresult r = cu.device_get(&device, ordinal); r != CUDA_SUCCESS) {
        throw Error(what + ": " + cu.describe(r) + " (" + std::to_string(gpu_count()) +
                    " GPU(s) visible)");
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
    const std::size_t rounded = (bytes + detail::gpu::kGpuPageSize - 1) /
                                detail::gpu::kGpuPageSize * detail::gpu::kGpuPageSize;
    CUdeviceptr p = 0;
    if (const CUresult r = cu.mem_alloc(&p, rounded); r != CUDA_SUCCESS) {
        throw Error(what + ": cuMemAlloc of " + std::to_string(rounded) +
                    " bytes: " + cu.describe(r));
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

GpuBuffer::~GpuBuffer() {
    reset();
}

int GpuBuffer::copy_from_host(std::size_t offset, const void* source,
                              std::size_t bytes) const noexcept {
    const auto* cu = detail::gpu::cuda_driver();
    if (cu == nullptr || data_ == nullptr || offset > size_ || bytes > size_ - offset) {
        return static_cast<int>(CUDA_ERROR_INVALID_VALUE);
    }
    return static_cast<int>(cu->memcpy_htod(
        static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(data_)) + offset, source, bytes));
}

int GpuBuffer::copy_to_host(std::size_t offset, void* destination,
                            std::size_t bytes) const noexcept {
    const auto* cu = detail::gpu::cuda_driver();
    if (cu == nullptr || data_ == nullptr || offset > size_ || bytes > size_ - offset) {
        return static_cast<int>(CUDA_ERROR_INVALID_VALUE);
    }
    return static_cast<int>(cu->memcpy_dtoh(
        destination, static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(data_)) + offset,
        bytes));
}

void GpuBuffer::make_current() const {
    const auto& cu = detail::gpu::driver_or_throw("GPU buffer");
    if (const CUresult r = cu.ctx_set_current(static_cast<CUcontext>(context_));
        r != CUDA_SUCCESS) {
        throw Error("GPU " + std::to_string(ordinal_) + ": cuCtxSetCurrent: " + cu.describe(r));
    }
}

void GpuBuffer::reset() noexcept {
    const auto* cu = detail::gpu::cuda_driver();
    if (cu != nullptr && data_ != nullptr) {
        const auto address = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(data_));
        if (vmm_) {
            // Unmapping drops the last reference to the memory (its handle was released at
            // allocation).
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
