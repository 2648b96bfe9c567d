// GPU helpers shared by the builds with and without CUDA.
#include <algorithm>
#include <cstring>

#include "gpu/gpu_internal.hpp"
#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/gpu.hpp"

namespace nvmeof {
namespace detail::gpu {

AlignedRange align_gpu_range(std::uint64_t address, std::uint64_t bytes, std::uint64_t base,
                             std::uint64_t allocation, std::uint64_t host_page) {
    const std::uint64_t end = address + bytes;
    const std::uint64_t allocation_end = base + allocation;
    std::uint64_t start = address / kGpuPageSize * kGpuPageSize;
    start = std::max(start, base);
    std::uint64_t aligned_end = (end + kGpuPageSize - 1) / kGpuPageSize * kGpuPageSize;
    if (aligned_end > allocation_end) {
        aligned_end = std::max(end, (allocation_end + host_page - 1) / host_page * host_page);
    }
    return {start, aligned_end - start};
}

std::string explain_registration_failure(const RegistrationAttempt& dmabuf,
                                         const RegistrationAttempt& peermem) {
    std::string out = "dma-buf: ";
    if (dmabuf.step == "cuMemGetHandleForAddressRange") {
        out += "the CUDA driver would not export it (" + dmabuf.driver_error + "): ";
        out += dmabuf.driver_not_supported
                   ? "no dma-buf support (the proprietary NVIDIA kernel module has none; the open "
                     "kernel module, driver 515 or newer, does)"
                   : "the allocation was not made with cuMemAlloc or with the VMM allocator "
                     "(cuMemCreate with gpuDirectRDMACapable)";
    } else if (!dmabuf.step.empty()) {
        out += dmabuf.step + " failed: " + std::string(std::strerror(dmabuf.sys_errno)) +
               " (the RDMA device or its driver does not take dma-buf memory)";
    } else {
        out += "not tried";
    }
    out += "; peermem: ";
    if (!peermem.step.empty()) {
        out += peermem.step +
               " on the device pointer failed: " + std::string(std::strerror(peermem.sys_errno));
        if (!peermem.module_loaded) {
            out += " (the nvidia_peermem module is not loaded: modprobe nvidia_peermem)";
        }
    } else {
        out += "not tried";
    }
    return out;
}

}  // namespace detail::gpu

std::string source_near_gpu(int ordinal, std::string* why, const std::string& sysfs_root) {
    auto say = [why](std::string text) {
        if (why != nullptr) {
            *why = std::move(text);
        }
        return std::string();
    };
    std::string pci;
    try {
        pci = gpu_pci_address(ordinal);
    } catch (const std::exception& e) {
        return say(e.what());
    }
    std::vector<RdmaDeviceRank> ranked;
    try {
        ranked = rank_rdma_devices(pci, sysfs_root);
    } catch (const std::exception& e) {
        return say(e.what());
    }
    if (ranked.size() < 2) {
        return say(std::to_string(ranked.size()) + " RDMA device(s): nothing to choose");
    }
    std::string device;
    std::string address = pick_source_address(ranked, interface_ipv4, &device);
    if (address.empty()) {
        return say("no RDMA device has an IPv4 address");
    }
    const auto it = std::find_if(ranked.begin(), ranked.end(),
                                 [&](const RdmaDeviceRank& r) { return r.device == device; });
    say(device + " (" + std::string(pcie_distance_name(it->distance)) + " as GPU " +
        std::to_string(ordinal) + " at " + pci + "), source " + address);
    return address;
}

}  // namespace nvmeof
