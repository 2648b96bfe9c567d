// Pure helpers of GPU registration (internal; no CUDA types, unit-tested).
#pragma once

#include <cstdint>
#include <string>

namespace nvmeof::detail::gpu {

inline constexpr std::uint64_t kGpuPageSize = 64 * 1024;

struct AlignedRange {
    std::uint64_t start = 0;
    std::uint64_t length = 0;
};
// [address, +bytes) widened to 64 KiB GPU pages, kept inside the allocation
// [base, +allocation) and, where the allocation ends unaligned, to host pages.
AlignedRange align_gpu_range(std::uint64_t address, std::uint64_t bytes, std::uint64_t base,
                             std::uint64_t allocation, std::uint64_t host_page);

// One registration path that failed, for the error message.
struct RegistrationAttempt {
    std::string step;          // "cuMemGetHandleForAddressRange", "ibv_reg_dmabuf_mr", "ibv_reg_mr"
    std::string driver_error;  // CUDA's words, for the export step
    int sys_errno = 0;         // for the verbs steps
    bool driver_not_supported = false;  // the driver cannot export dma-buf at all
    bool module_loaded = true;          // nvidia_peermem, for the peermem step
};
// "dma-buf: ...; peermem: ..." with what to do about each.
std::string explain_registration_failure(const RegistrationAttempt& dmabuf,
                                         const RegistrationAttempt& peermem);

}  // namespace nvmeof::detail::gpu
