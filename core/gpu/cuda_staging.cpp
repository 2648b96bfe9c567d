// GPU memory over NVMe/TCP: the transport moves bytes with the CPU, which
// cannot touch device memory, so each region gets a page-locked host copy of
// its length; a write copies its range device → host before the command
// leaves, a read copies host → device before it is handed back (cuMemcpy, one
// per transfer, synchronous: the cost docs/tcp.md states).
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "gpu/cuda_device_range.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/cuda_ordering.hpp"
#include "gpu/gpu_registration.hpp"
#include "nvmeof/base/errors.hpp"

namespace nvmeof::detail::gpu {
namespace {

class CudaStaging final : public HostStaging {
  public:
    CudaStaging(const CudaDriver& cu, const DeviceRange& range) : cu_(cu), range_(range) {
        const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        mapped_ = (range.bytes + page - 1) / page * page;
        void* copy =
            mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED) {
            throw Error("register_gpu: cannot map a " + std::to_string(range.bytes) +
                        "-byte host copy of " + range.where + range.on_gpu +
                        " for NVMe/TCP: " + std::strerror(errno));
        }
        host_ = static_cast<std::byte*>(copy);
        // Page-locked, the copies run at the bus's speed; without it (an old
        // driver, RLIMIT_MEMLOCK) they still work, through the driver's buffer.
        pinned_ = cu.mem_host_register != nullptr &&
                  cu.mem_host_register(copy, mapped_, 0) == CUDA_SUCCESS;
    }
    ~CudaStaging() override {
        if (pinned_) {
            in_context(cu_, range_.context, [this] { return cu_.mem_host_unregister(host_); });
        }
        munmap(host_, mapped_);
    }

    int to_host(std::uint64_t host_address, std::size_t bytes) noexcept override {
        return in_context(cu_, range_.context, [&] {
            return cu_.memcpy_dtoh(reinterpret_cast<void*>(host_address),
                                   device_address(host_address), bytes);
        });
    }
    int to_device(std::uint64_t host_address, std::size_t bytes) noexcept override {
        return in_context(cu_, range_.context, [&] {
            return cu_.memcpy_htod(device_address(host_address),
                                   reinterpret_cast<const void*>(host_address), bytes);
        });
    }

  private:
    CUdeviceptr device_address(std::uint64_t host_address) const noexcept {
        return range_.address + (host_address - reinterpret_cast<std::uint64_t>(host_));
    }

    const CudaDriver& cu_;
    DeviceRange range_;
    std::size_t mapped_ = 0;
    bool pinned_ = false;
};

}  // namespace

std::shared_ptr<MemoryRecord> stage_gpu_memory(void* device_ptr, std::size_t bytes,
                                               std::shared_ptr<GpuOrdering> ordering) {
    const CudaDriver& cu = driver_or_throw("register_gpu");
    const DeviceRange range = check_device_range(cu, device_ptr, bytes);
    auto record = std::make_shared<MemoryRecord>();
    record->address = static_cast<std::byte*>(device_ptr);
    record->length = bytes;
    record->kind = MemoryKind::gpu;
    record->path = RegistrationPath::staging;
    record->device_ordinal = range.ordinal;
    record->staging = std::make_shared<CudaStaging>(cu, range);
    record->ordering =
        ordering ? std::move(ordering) : make_cuda_ordering(cu, range.context, range.device);
    record->registered = true;
    return record;
}

}  // namespace nvmeof::detail::gpu
