// Consuming DLPack tensors (`__dlpack__` / `__dlpack_device__`, as PyTorch
// tensors expose them) for Controller.register and Controller.register_gpu.
//
// The ABI structs follow dlpack.h (v0.x: the unversioned "dltensor" capsule,
// which every producer still gives when the consumer asks for no max_version).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace nvmeof_python::dlpack {

// DLDeviceType values this binding tells apart.
enum class DeviceType : std::int32_t {
    cpu = 1,           // kDLCPU
    cuda = 2,          // kDLCUDA
    cuda_host = 3,     // kDLCUDAHost (pinned host memory)
    cuda_managed = 13  // kDLCUDAManaged
};

struct Device {
    std::int32_t device_type;
    std::int32_t device_id;
};

struct DataType {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
};

struct Tensor {
    void* data;
    Device device;
    std::int32_t ndim;
    DataType dtype;
    std::int64_t* shape;
    std::int64_t* strides;  // in elements; null means compact row-major
    std::uint64_t byte_offset;
};

struct ManagedTensor {
    Tensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(ManagedTensor* self);
};

static_assert(sizeof(Device) == 8 && sizeof(DataType) == 4);
static_assert(offsetof(Tensor, device) == 8 && offsetof(Tensor, ndim) == 16);
static_assert(offsetof(Tensor, dtype) == 20 && offsetof(Tensor, shape) == 24);
static_assert(offsetof(Tensor, strides) == 32 && offsetof(Tensor, byte_offset) == 40);
static_assert(sizeof(Tensor) == 48);
static_assert(offsetof(ManagedTensor, manager_ctx) == 48);
static_assert(offsetof(ManagedTensor, deleter) == 56 && sizeof(ManagedTensor) == 64);

// A consumed DLPack tensor: the producer's memory stays valid until this is
// destroyed (which calls the producer's deleter; the GIL must be held, as a
// Python producer's deleter may run Python code).
class ConsumedTensor {
  public:
    ConsumedTensor(ManagedTensor* managed, std::size_t bytes);
    ConsumedTensor(const ConsumedTensor&) = delete;
    ConsumedTensor& operator=(const ConsumedTensor&) = delete;
    ~ConsumedTensor();

    // The first byte (data + byte_offset) and the size of the whole tensor.
    void* data() const;
    std::size_t size() const { return bytes_; }
    std::int32_t device_id() const { return managed_->dl_tensor.device.device_id; }

  private:
    ManagedTensor* managed_;
    std::size_t bytes_;
};

// True when `object` offers DLPack (both __dlpack__ and __dlpack_device__).
bool offers_dlpack(const pybind11::handle& object);

// Takes `object`'s tensor by DLPack, which must live on `device` and be
// C-contiguous and non-empty. ValueError naming `caller` and the cause when it
// is not (another device, strides, an exporter that refuses, e.g. a tensor
// that requires grad).
std::unique_ptr<ConsumedTensor> consume(const pybind11::object& object, DeviceType device,
                                        std::string_view caller);

}  // namespace nvmeof_python::dlpack
