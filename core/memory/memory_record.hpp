// What a MemoryRegion handle points to: the opaque nvmeof::MemoryRecord of the
// public headers, defined here for the memory layer and those above it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "memory/host_staging.hpp"
#include "nvmeof/base/gpu.hpp"
#include "verbs/resources.hpp"

namespace nvmeof {

struct MemoryRecord {
    std::byte* address = nullptr;
    std::size_t length = 0;
    std::uint32_t lkey = 0;
    std::uint32_t rkey = 0;
    const void* owner = nullptr;  // the ControllerImpl whose PD registered it
    // `owner` while registered, for host memory only (else nullptr): the data
    // path's common case checks this one field.
    const void* host_owner = nullptr;
    verbs::MemoryRegion mr;
    // Registered for this process's transports: the RDMA registration sets it
    // with `mr`; a transport that needs no registration of its own (NVMe/TCP
    // moves the bytes itself) sets it alone. close() clears it.
    bool registered = false;
    void* owned = nullptr;  // memory from Controller::allocate, freed with the record
    // GPU memory: the datapath calls `ordering` (one predictable branch on `kind`
    // for host memory, nothing else).
    MemoryKind kind = MemoryKind::host;
    RegistrationPath path = RegistrationPath::host;
    int device_ordinal = -1;
    std::shared_ptr<GpuOrdering> ordering;
    // GPU memory over a transport without keys (NVMe/TCP): the host copy the
    // bytes travel through (`address` stays the device address). Kept until
    // the record goes, like `ordering`.
    std::shared_ptr<detail::HostStaging> staging;
    // Set by the registering controller while it is open: called before the
    // deregistration, so no SEND still in a send queue gathers from this memory.
    void (*retire_sends)(void* controller) noexcept = nullptr;
    void* retire_context = nullptr;

    MemoryRecord() = default;
    MemoryRecord(const MemoryRecord&) = delete;
    MemoryRecord& operator=(const MemoryRecord&) = delete;
    ~MemoryRecord() { close(); }

    bool alive() const noexcept { return registered; }
    // Deregisters (the PD must still exist) and frees owned memory. Idempotent.
    void close() noexcept {
        if (registered && retire_sends != nullptr) {
            retire_sends(retire_context);
        }
        retire_sends = nullptr;
        retire_context = nullptr;
        registered = false;
        mr.reset();
        owner = nullptr;
        host_owner = nullptr;  // `ordering` stays with the record: transfers may still hold it
        if (owned != nullptr) {
            std::free(owned);
            owned = nullptr;
            address = nullptr;
            length = 0;
        }
    }
};

}  // namespace nvmeof
