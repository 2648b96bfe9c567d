// A move-only owner of a C handle (rdma-core object pointers), released by a
// deleter function object. Members declared in creation order destroy in
// reverse, which is the order verbs objects must go away in.
#pragma once

#include <utility>

namespace nvmeof::verbs {

template <typename T, typename Deleter>
class UniqueHandle {
  public:
    UniqueHandle() = default;
    explicit UniqueHandle(T* handle) : handle_(handle) {}
    UniqueHandle(const UniqueHandle&) = delete;
    UniqueHandle& operator=(const UniqueHandle&) = delete;
    UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    UniqueHandle& operator=(UniqueHandle&& other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.handle_, nullptr));
        }
        return *this;
    }
    ~UniqueHandle() { reset(); }

    T* get() const { return handle_; }
    T* operator->() const { return handle_; }
    explicit operator bool() const { return handle_ != nullptr; }
    T* release() { return std::exchange(handle_, nullptr); }
    void reset(T* handle = nullptr) {
        if (T* old = std::exchange(handle_, handle)) {
            Deleter{}(old);
        }
    }

  private:
    T* handle_ = nullptr;
};

}  // namespace nvmeof::verbs
