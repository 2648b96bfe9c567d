// GPU support in a build without cuda.h: everything reports it.
#include "gpu/gpu_registration.hpp"
#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/gpu.hpp"

namespace nvmeof {
namespace {
constexpr char kNoCuda[] =
    "built without CUDA support (reconfigure with -Dcuda=enabled where cuda.h is installed)";
}

namespace detail::gpu {
std::shared_ptr<MemoryRecord> register_gpu_memory(const RegistrationTarget&, void*, std::size_t,
                                                  std::shared_ptr<GpuOrdering>) {
    throw Error(std::string("register_gpu: libnvmeof was ") + kNoCuda);
}
std::shared_ptr<MemoryRecord> stage_gpu_memory(void*, std::size_t, std::shared_ptr<GpuOrdering>) {
    throw Error(std::string("register_gpu: libnvmeof was ") + kNoCuda);
}
}  // namespace detail::gpu

GpuDriverInfo gpu_driver_info() {
    GpuDriverInfo info;
    info.error = kNoCuda;
    return info;
}

int gpu_count() noexcept {
    return 0;
}

bool gpu_driver_present(std::string* why) noexcept {
    if (why != nullptr) {
        *why = kNoCuda;
    }
    return false;
}

std::string gpu_pci_address(int) {
    throw Error(std::string("gpu_pci_address: ") + kNoCuda);
}

GpuBuffer GpuBuffer::allocate(int, std::size_t) {
    throw Error(std::string("GPU buffer: ") + kNoCuda);
}
GpuBuffer::GpuBuffer(GpuBuffer&&) noexcept {}
GpuBuffer& GpuBuffer::operator=(GpuBuffer&&) noexcept {
    return *this;
}
GpuBuffer::~GpuBuffer() = default;
int GpuBuffer::copy_from_host(std::size_t, const void*, std::size_t) const noexcept {
    return -1;
}
int GpuBuffer::copy_to_host(std::size_t, void*, std::size_t) const noexcept {
    return -1;
}
void GpuBuffer::make_current() const {
    throw Error(std::string("GPU buffer: ") + kNoCuda);
}
void GpuBuffer::reset() noexcept {}

}  // namespace nvmeof
