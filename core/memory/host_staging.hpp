// A region the CPU cannot reach (GPU memory) seen through a host copy of the
// same length, for a transport that moves the bytes with the CPU (NVMe/TCP):
// the data path sends a write from the copy and receives a read into it; these
// calls move the bytes between the copy and the region. The GPU layer
// implements it with the CUDA driver.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nvmeof::detail {

class HostStaging {
  public:
    HostStaging() = default;
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;
    virtual ~HostStaging() = default;

    // The copy: the region's offset N is at host() + N.
    std::byte* host() const noexcept { return host_; }
    // Both run on the thread driving the queue, allocate nothing and return 0
    // or the driver's nonzero error code (the I/O then fails with EIO).
    // The region's bytes behind [host_address, +bytes) of the copy, into the
    // copy (before a write from the region leaves).
    virtual int to_host(std::uint64_t host_address, std::size_t bytes) noexcept = 0;
    // [host_address, +bytes) of the copy into the region (after a read into
    // the region completed, before it is handed back).
    virtual int to_device(std::uint64_t host_address, std::size_t bytes) noexcept = 0;

  protected:
    std::byte* host_ = nullptr;
};

}  // namespace nvmeof::detail
