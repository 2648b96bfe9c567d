// Registered host memory: move-only handles whose lifetime the controller checks.
//
// The base layer's: a Transfer points the transport at a MemoryRegion, whose
// record the memory layer keeps. Programs include nvmeof/memory.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "nvmeof/base/gpu.hpp"
#include "nvmeof/wire/common.hpp"

namespace nvmeof {

// The registration a region holds (core/memory/memory_record.hpp; opaque here).
struct MemoryRecord;

// A registration of host memory with the controller's RDMA device. Keyed SGLs
// point straight into it. Destroying the handle deregisters the memory; closing
// the controller deregisters every handle still alive, which then reports
// valid() == false and is refused by I/O (an error, not a crash).
class MemoryRegion {
  public:
    MemoryRegion() = default;
    explicit MemoryRegion(std::shared_ptr<MemoryRecord> record);
    MemoryRegion(MemoryRegion&&) noexcept = default;
    MemoryRegion& operator=(MemoryRegion&&) noexcept = default;
    MemoryRegion(const MemoryRegion&) = delete;
    MemoryRegion& operator=(const MemoryRegion&) = delete;
    ~MemoryRegion();

    std::byte* data() const noexcept;
    std::size_t size() const noexcept;
    std::span<std::byte> bytes() const noexcept { return {data(), size()}; }
    bool valid() const noexcept;
    // Host memory, or GPU memory from Controller::register_gpu (data() is then a
    // device address: never dereference it on the host).
    MemoryKind kind() const noexcept;
    int device_ordinal() const noexcept;  // the GPU, or -1 for host memory
    // "host", "dma-buf", "peermem" or "staging" (GPU memory over NVMe/TCP):
    // how the region was registered.
    std::string_view registration_path() const noexcept;
    // The range [offset, offset + length) as the target sees it (address, rkey),
    // for building commands with the wire layer. Throws InvalidArgument when the
    // range is outside the region or the region is closed.
    wire::RemoteBuffer remote(std::uint64_t offset = 0) const;
    wire::RemoteBuffer remote(std::uint64_t offset, std::uint64_t length) const;
    // The registration's keys: rkey for a keyed SGL built by hand, lkey for a
    // local work request (0 once closed).
    std::uint32_t rkey() const noexcept;
    std::uint32_t lkey() const noexcept;
    // Deregisters now (and frees memory from Controller::allocate).
    void reset() noexcept;

    const MemoryRecord* record() const noexcept { return record_.get(); }

  private:
    std::shared_ptr<MemoryRecord> record_;
};

}  // namespace nvmeof
