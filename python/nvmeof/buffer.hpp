// Registered memory for Python: nvmeof.Buffer (the reference package's
// HostBuffer), internal to the nvmeof._core extension.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "dlpack.hpp"
#include "nvmeof/memory.hpp"
#include "state.hpp"

namespace nvmeof_python {

// Owns a Py_buffer (keeps the exporting object alive and, for a bytearray,
// unresizable) until released.
class HeldView {
  public:
    explicit HeldView(const py::object& object);
    HeldView(const HeldView&) = delete;
    HeldView& operator=(const HeldView&) = delete;
    ~HeldView() { release(); }
    void release();
    void* data() const { return view_.buf; }
    std::size_t size() const { return static_cast<std::size_t>(view_.len); }

  private:
    Py_buffer view_{};
    bool held_ = false;
};

struct FreeMemory {
    void operator()(void* memory) const { std::free(memory); }
};

// A registered buffer: its own page-aligned memory (Controller.allocate), or a
// Python object's memory (Controller.register: its buffer protocol, or its
// DLPack tensor; register_gpu: __cuda_array_interface__ or DLPack). The bytes
// outlive the registration: views (memoryview, numpy) taken before close() or
// before the controller closed stay valid, because the memory, or the object's
// buffer, is released only once no view is left (exports counts them).
struct Buffer {
    StatePtr state;
    std::unique_ptr<void, FreeMemory> memory;        // allocate()
    std::unique_ptr<HeldView> view;                  // register(): the object's buffer
    std::unique_ptr<dlpack::ConsumedTensor> tensor;  // register*() by DLPack
    py::object owner;                                // register*(): the object itself
    void* data = nullptr;
    std::size_t size = 0;
    nvmeof::MemoryRegion region;  // after memory/view/tensor: deregistered before they go
    std::size_t exports = 0;
    std::size_t transfers = 0;  // transfers using it now (counted under the GIL)
    std::size_t requests = 0;   // low-level requests in flight with it as data owner (likewise)
    bool closed = false;
    bool device = false;  // register_gpu(): `data` is a device address

    void close();  // refused while a transfer or a low-level request uses it
    void deregister();
    // The registered object is let go (a bytearray may resize again) once
    // closed and no view of it is left.
    void release_object();
    const nvmeof::MemoryRegion& usable() const;
};

// The registered Buffer `object` is, or ValueError.
Buffer& buffer_of(const py::object& object);

// How many blocks of `block_bytes` a transfer of `size` bytes from `offset`
// takes: `blocks` when given (ValueError unless they fit, the core's
// buffer_range_fits), else every block after `offset` (ValueError unless the
// rest is whole blocks, at least one). `what` begins each message.
std::uint64_t blocks_in_buffer(std::uint64_t size, std::uint64_t offset, std::uint64_t block_bytes,
                               std::optional<std::uint64_t> blocks, const std::string& what);

// Counts a transfer on a buffer (under the GIL) so close() from another thread
// cannot deregister memory in flight.
class BufferInUse {
  public:
    explicit BufferInUse(Buffer* buffer) : buffer_(buffer) {
        if (buffer_ != nullptr) {
            ++buffer_->transfers;
        }
    }
    BufferInUse(const BufferInUse&) = delete;
    BufferInUse& operator=(const BufferInUse&) = delete;
    ~BufferInUse() {
        if (buffer_ != nullptr) {
            --buffer_->transfers;
        }
    }
    // Hands the count to whoever finishes the transfer later (an asynchronous one).
    Buffer* release() { return std::exchange(buffer_, nullptr); }

  private:
    Buffer* buffer_;
};

void bind_buffer(py::module_& m);
// Controller.allocate / register / register_gpu.
Buffer allocate_buffer(const StatePtr& state, std::size_t size);
Buffer register_buffer(const StatePtr& state, const py::object& object);
Buffer register_gpu_buffer(const StatePtr& state, const py::object& object);

}  // namespace nvmeof_python
