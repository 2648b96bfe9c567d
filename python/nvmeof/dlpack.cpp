#include "dlpack.hpp"

#include <string>

namespace py = pybind11;

namespace nvmeof_python::dlpack {

namespace {

// The capsule names of the DLPack exchange: a producer hands out "dltensor";
// the consumer renames it once it owns the tensor, so the capsule's destructor
// no longer frees it.
constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

std::string device_name(std::int32_t type) {
    switch (static_cast<DeviceType>(type)) {
        case DeviceType::cpu:
            return "CPU (kDLCPU)";
        case DeviceType::cuda:
            return "CUDA (kDLCUDA)";
        case DeviceType::cuda_host:
            return "CUDA pinned host memory (kDLCUDAHost)";
        case DeviceType::cuda_managed:
            return "CUDA managed memory (kDLCUDAManaged)";
    }
    return "DLPack device type " + std::to_string(type);
}

std::string type_name(const py::handle& object) {
    return py::str(py::type::of(object).attr("__name__"));
}

// The tensor's size in bytes; ValueError unless it is compact row-major.
std::size_t contiguous_bytes(const Tensor& tensor, const std::string& who) {
    const std::uint32_t item_bits = std::uint32_t{tensor.dtype.bits} * tensor.dtype.lanes;
    if (item_bits == 0 || item_bits % 8 != 0) {
        throw py::value_error(who + ": elements of " + std::to_string(item_bits) +
                              " bits are not whole bytes");
    }
    if (tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape == nullptr)) {
        throw py::value_error(who + ": the DLPack tensor has no shape");
    }
    std::size_t elements = 1;
    for (std::int32_t i = 0; i < tensor.ndim; ++i) {
        if (tensor.shape[i] < 0) {
            throw py::value_error(who + ": negative extent in the DLPack shape");
        }
        elements *= static_cast<std::size_t>(tensor.shape[i]);
    }
    if (tensor.strides != nullptr) {
        std::int64_t expected = 1;
        for (std::int32_t i = tensor.ndim; i-- > 0;) {
            if (tensor.shape[i] > 1 && tensor.strides[i] != expected) {
                throw py::value_error(who + ": the tensor is not C-contiguous (strides)");
            }
            expected *= tensor.shape[i];
        }
    }
    if (elements == 0) {
        throw py::value_error(who + ": the tensor is empty");
    }
    return elements * (item_bits / 8);
}

}  // namespace

ConsumedTensor::ConsumedTensor(ManagedTensor* managed, std::size_t bytes)
    : managed_(managed), bytes_(bytes) {}

ConsumedTensor::~ConsumedTensor() {
    if (managed_->deleter != nullptr) {
        managed_->deleter(managed_);
    }
}

void* ConsumedTensor::data() const {
    return static_cast<std::byte*>(managed_->dl_tensor.data) + managed_->dl_tensor.byte_offset;
}

bool offers_dlpack(const py::handle& object) {
    return py::hasattr(object, "__dlpack__") && py::hasattr(object, "__dlpack_device__");
}

std::unique_ptr<ConsumedTensor> consume(const py::object& object, DeviceType device,
                                        std::string_view caller) {
    const std::string who(caller);
    std::int32_t type = 0;
    py::object capsule;
    try {
        const auto where = object.attr("__dlpack_device__")().cast<py::tuple>();
        type = py::int_(where[0]).cast<std::int32_t>();
        if (type != static_cast<std::int32_t>(device)) {
            throw py::value_error(
                who + ": the " + type_name(object) + " lives on " + device_name(type) + ", not " +
                device_name(static_cast<std::int32_t>(device)) +
                (type == static_cast<std::int32_t>(DeviceType::cpu) ? " (use register())" : ""));
        }
        capsule = object.attr("__dlpack__")();
    } catch (py::error_already_set& refused) {
        // The exporter's own reason (e.g. PyTorch: a tensor that requires grad).
        throw py::value_error(who + ": the " + type_name(object) +
                              " refused DLPack export: " + refused.what());
    } catch (const py::cast_error&) {
        throw py::value_error(who + ": __dlpack_device__ of the " + type_name(object) +
                              " is not a (device_type, device_id) tuple");
    }
    if (PyCapsule_IsValid(capsule.ptr(), kCapsule) == 0) {
        throw py::value_error(who + ": __dlpack__ of the " + type_name(object) +
                              " returned no unused \"dltensor\" capsule");
    }
    auto* managed = static_cast<ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsule));
    if (managed->dl_tensor.device.device_type != type) {
        throw py::value_error(who + ": the DLPack tensor says " +
                              device_name(managed->dl_tensor.device.device_type) +
                              ", __dlpack_device__ said " + device_name(type));
    }
    // Checked while the capsule still owns the tensor: a refusal leaves it to
    // the capsule's destructor.
    const std::size_t bytes = contiguous_bytes(managed->dl_tensor, who);
    if (PyCapsule_SetName(capsule.ptr(), kUsedCapsule) != 0) {
        throw py::error_already_set();
    }
    return std::make_unique<ConsumedTensor>(managed, bytes);
}

}  // namespace nvmeof_python::dlpack
