// A FIFO over slots that are allocated once and then reused in place, so the
// data path queues and retires work requests and wire messages without touching
// the heap.  The send and receive queues are sized at QP creation and never
// grow (post checks the capacity first); a connection's output ring starts
// small and doubles when full, so it stops allocating once it has met its peak.
// Slots keep their members' capacity (vectors) from one use to the next.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

namespace sv {

template <class T>
class Ring {
 public:
  // Empties the ring and gives it exactly `capacity` default-built slots.
  void reset(std::size_t capacity) {
    slots_.clear();
    slots_.resize(capacity);
    head_ = size_ = 0;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return slots_.size(); }

  // The i-th element from the front.
  T& operator[](std::size_t i) { return slots_[wrap(head_ + i)]; }
  const T& operator[](std::size_t i) const { return slots_[wrap(head_ + i)]; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& back() { return (*this)[size_ - 1]; }

  // Appends a slot and returns it as its previous user left it; the caller
  // overwrites every field it uses.  Doubles the storage when full.
  T& push_back() {
    if (size_ == slots_.size()) grow();
    ++size_;
    return back();
  }
  void pop_front() {
    head_ = wrap(head_ + 1);
    --size_;
  }
  void pop_back() { --size_; }
  void clear() { head_ = size_ = 0; }

  // Visits every slot, used or not (to reserve capacity in each).
  template <class F>
  void for_each_slot(F f) {
    for (T& slot : slots_) f(slot);
  }

  // Keeps the elements for which keep(element) is true, in order.
  template <class Keep>
  void retain(Keep keep) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      T& e = (*this)[i];
      if (!keep(e)) continue;
      if (kept != i) std::swap((*this)[kept], e);
      ++kept;
    }
    size_ = kept;
  }

 private:
  // Indices stay below twice the capacity, so one compare replaces a division.
  std::size_t wrap(std::size_t i) const { return i >= slots_.size() ? i - slots_.size() : i; }
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 4 : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace sv
