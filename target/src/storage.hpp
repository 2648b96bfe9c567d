// Namespace backing stores: anonymous memory or a file / block device.
// Offsets and lengths are in bytes and already range-checked by the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "config.hpp"

namespace nvmeof::target {

class Storage {
  public:
    virtual ~Storage() = default;
    virtual std::uint64_t size_bytes() const = 0;
    // Each returns 0 or an errno value.
    virtual int read(std::uint64_t offset, std::span<std::uint8_t> out) = 0;
    virtual int write(std::uint64_t offset, std::span<const std::uint8_t> in) = 0;
    virtual int write_zeroes(std::uint64_t offset, std::uint64_t length) = 0;
    virtual int flush() = 0;
};

// Opens the backing of one namespace: every block's data followed by its
// metadata (config.store_bytes() for a new one). Throws std::system_error when a file
// cannot be opened or created, and UsageError when a new file has no size.
std::unique_ptr<Storage> open_storage(const NamespaceConfig& config);

}  // namespace nvmeof::target
