// A fixed pool of command IDs (= request slot indices), sized once at connect.
// acquire/release never allocate. IDs that are not outstanding are refused on
// release, so a duplicate or forged completion can be detected.
#pragma once

#include <cstdint>
#include <memory>

namespace nvmeof::detail {

class CidPool {
public:
    CidPool() = default;
    explicit CidPool(std::uint16_t size)
        : size_(size),
          free_count_(size),
          free_(std::make_unique<std::uint16_t[]>(size)),
          outstanding_(std::make_unique<std::uint8_t[]>(size)) {
        for (std::uint16_t i = 0; i < size; ++i) {
            free_[i] = static_cast<std::uint16_t>(size - 1 - i);  // hand out 0 first
        }
    }

    std::size_t size() const noexcept { return size_; }
    std::size_t available() const noexcept { return free_count_; }
    std::size_t outstanding() const noexcept { return size_ - free_count_; }

    bool acquire(std::uint16_t& cid) noexcept {
        if (free_count_ == 0) {
            return false;
        }
        cid = free_[--free_count_];
        outstanding_[cid] = 1;
        return true;
    }
    // For IDs whose holder keeps track of them itself (the data path: a slot
    // in flight has its ID): take() when available() is known to be non-zero,
    // put() an ID that take() gave. Not marked outstanding, so release() and
    // is_outstanding() know only acquire()d IDs.
    std::uint16_t take() noexcept { return free_[--free_count_]; }
    void put(std::uint16_t cid) noexcept { free_[free_count_++] = cid; }
    // False (and nothing changes) for an ID out of range or not outstanding.
    bool release(std::uint16_t cid) noexcept {
        if (!is_outstanding(cid)) {
            return false;
        }
        outstanding_[cid] = 0;
        free_[free_count_++] = cid;  // at most size() IDs are ever free
        return true;
    }
    bool is_outstanding(std::uint16_t cid) const noexcept {
        return cid < size_ && outstanding_[cid] != 0;
    }

private:
  std::uint32_t size_ = 0;
  std::uint32_t free_count_ = 0;
  std::unique_ptr<std::uint16_t[]> free_;  // a stack of the free IDs
  std::unique_ptr<std::uint8_t[]>
      outstanding_;  // by ID: 1 while handed out (a byte: no bit masking)
};

}  // namespace nvmeof::detail
