// A fixed pool of IDs (a queue's command IDs, and the transfer IDs of its
// general path), sized once at connect. acquire/release never allocate. IDs that are not
// outstanding are refused on release, so a duplicate or forged completion can be detected.
#pragma once

#include <cstdint>
#include <memory>

#include "transport/invariant.hpp"

namespace nvmeof::detail {

class IdPool {
  public:
    IdPool() = default;
    explicit IdPool(std::uint16_t size)
        : size_(size),
          free_count_(size),
          free_(std::make_unique<std::uint16_t[]>(size)),
          state_(std::make_unique<std::uint8_t[]>(size)) {
        for (std::uint16_t i = 0; i < size; ++i) {
            free_[i] = static_cast<std::uint16_t>(size - 1 - i);  // hand out 0 first
        }
    }

    std::size_t size() const noexcept { return size_; }
    std::size_t available() const noexcept { return free_count_; }
    std::size_t outstanding() const noexcept { return size_ - free_count_; }

    bool acquire(std::uint16_t& id) noexcept {
        if (free_count_ == 0) {
            return false;
        }
        id = free_[--free_count_];
        NVMEOF_INVARIANT(state_[id] == kFree, "an ID on the free stack is handed out");
        state_[id] = kAcquired;
        return true;
    }
    // For IDs whose holder keeps track of them itself (the data path: a command
    // in flight has its ID): take() when available() is known to be non-zero,
    // put() an ID that take() gave. release() and is_outstanding() know only
    // acquire()d IDs; only builds with invariants record take()n ones, to
    // check put() (the data path pays no store for it otherwise).
    std::uint16_t take() noexcept {
        NVMEOF_INVARIANT(free_count_ > 0, "take() from a pool with no free ID");
        const std::uint16_t id = free_[--free_count_];
        NVMEOF_INVARIANT(state_[id] == kFree, "an ID on the free stack is handed out");
        if constexpr (NVMEOF_INVARIANTS) {
            state_[id] = kTaken;
        }
        return id;
    }
    // The ID the next take() hands out (available() known to be non-zero).
    std::uint16_t next() const noexcept {
        NVMEOF_INVARIANT(free_count_ > 0, "next() of a pool with no free ID");
        return free_[free_count_ - 1];
    }
    void put(std::uint16_t id) noexcept {
        NVMEOF_INVARIANT(id < size_ && free_count_ < size_, "put() of an ID the pool cannot hold");
        if constexpr (NVMEOF_INVARIANTS) {
            NVMEOF_INVARIANT(state_[id] == kTaken, "put() of an ID that take() did not hand out");
            state_[id] = kFree;
        }
        free_[free_count_++] = id;
    }
    // False (and nothing changes) for an ID out of range or not outstanding.
    bool release(std::uint16_t id) noexcept {
        if (!is_outstanding(id)) {
            return false;
        }
        state_[id] = kFree;
        free_[free_count_++] = id;  // at most size() IDs are ever free
        return true;
    }
    bool is_outstanding(std::uint16_t id) const noexcept {
        return id < size_ && state_[id] == kAcquired;
    }

  private:
    // By ID, a byte (no bit masking); kTaken only in builds with invariants.
    enum : std::uint8_t { kFree = 0, kAcquired = 1, kTaken = 2 };
    std::uint32_t size_ = 0;
    std::uint32_t free_count_ = 0;
    std::unique_ptr<std::uint16_t[]> free_;  // a stack of the free IDs
    std::unique_ptr<std::uint8_t[]> state_;
};

}  // namespace nvmeof::detail
