// A fixed pool of command IDs (= request slot indices), sized once at connect.
// acquire/release never allocate. IDs that are not outstanding are refused on
// release, so a duplicate or forged completion can be detected.
#pragma once

#include <cstdint>
#include <vector>

namespace nvmeof::detail {

class CidPool {
public:
    CidPool() = default;
    explicit CidPool(std::uint16_t size) : free_(size), outstanding_(size, false) {
        for (std::uint16_t i = 0; i < size; ++i) {
            free_[i] = static_cast<std::uint16_t>(size - 1 - i);  // hand out 0 first
        }
    }

    std::size_t size() const noexcept { return outstanding_.size(); }
    std::size_t available() const noexcept { return free_.size(); }
    std::size_t outstanding() const noexcept { return size() - available(); }

    bool acquire(std::uint16_t& cid) noexcept {
        if (free_.empty()) {
            return false;
        }
        cid = free_.back();
        free_.pop_back();  // never reallocates: capacity was reserved at construction
        outstanding_[cid] = true;
        return true;
    }
    // False (and nothing changes) for an ID out of range or not outstanding.
    bool release(std::uint16_t cid) noexcept {
        if (!is_outstanding(cid)) {
            return false;
        }
        outstanding_[cid] = false;
        free_.push_back(cid);  // within capacity: at most size() IDs are ever free
        return true;
    }
    bool is_outstanding(std::uint16_t cid) const noexcept {
        return cid < outstanding_.size() && outstanding_[cid];
    }

private:
    std::vector<std::uint16_t> free_;
    std::vector<bool> outstanding_;
};

}  // namespace nvmeof::detail
