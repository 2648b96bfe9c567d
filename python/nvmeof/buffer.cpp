// Registered memory for Python (buffer.hpp).
#include <pybind11/stl.h>

#include "buffer.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

#include "arguments.hpp"
#include "requests.hpp"

namespace nvmeof_python {

HeldView::HeldView(const py::object& object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
        PyErr_Clear();
        throw py::value_error("register: a " + type_name(object) +
                              " is not a writable C-contiguous buffer");
    }
    held_ = true;
}

void HeldView::release() {
    if (held_) {
        PyBuffer_Release(&view_);
        held_ = false;
    }
}

void Buffer::deregister() {
    {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        region.reset();
    }
    closed = true;
    release_object();
}

void Buffer::release_object() {
    if (closed && exports == 0) {
        if (view) {
            view->release();
            view.reset();
        }
        tensor.reset();
        owner = py::none();
    }
}

const nvmeof::MemoryRegion& Buffer::usable() const {
    if (closed) {
        throw py::value_error("the buffer is closed (deregistered)");
    }
    return region;
}

void Buffer::close() {
    if (closed) {
        return;
    }
    if (transfers != 0) {
        throw py::value_error("close: the buffer is in use by a transfer still in flight");
    }
    sweep_requests(*state);
    if (requests != 0) {
        throw py::value_error(
            "close: a low-level request with this buffer as data_owner is "
            "still in flight (poll until request.done)");
    }
    deregister();
}

std::uint64_t blocks_in_buffer(std::uint64_t size, std::uint64_t offset, std::uint64_t block_bytes,
                               std::optional<std::uint64_t> blocks, const std::string& what) {
    if (blocks) {
        if (!nvmeof::buffer_range_fits(*blocks, static_cast<std::uint32_t>(block_bytes), offset,
                                       size)) {
            throw py::value_error(what + std::to_string(*blocks) + " blocks of " +
                                  std::to_string(block_bytes) + " bytes at buffer offset " +
                                  std::to_string(offset) + " do not fit the " +
                                  std::to_string(size) + "-byte buffer");
        }
        return *blocks;
    }
    if (offset >= size) {
        throw py::value_error(what + "the buffer holds no whole block after offset " +
                              std::to_string(offset));
    }
    if ((size - offset) % block_bytes != 0) {
        throw py::value_error(what + "the buffer's " + std::to_string(size - offset) +
                              " bytes after offset " + std::to_string(offset) +
                              " are not a whole number of " + std::to_string(block_bytes) +
                              "-byte blocks: pass blocks");
    }
    return (size - offset) / block_bytes;
}

Buffer& buffer_of(const py::object& object) {
    if (object.is_none() || !py::isinstance<Buffer>(object)) {
        throw py::value_error(
            "expected a registered buffer (Controller.allocate or Controller.register), got " +
            type_name(object));
    }
    auto& result = object.cast<Buffer&>();
    result.usable();
    return result;
}

namespace {

// The buffer protocol, by hand: pybind11's def_buffer cannot refuse a closed
// buffer with an exception, nor count the views that keep the bytes in use.
int buffer_get(PyObject* object, Py_buffer* view, int flags) {
    view->obj = nullptr;
    Buffer* buffer = nullptr;
    try {
        buffer = &py::handle(object).cast<Buffer&>();
    } catch (const std::exception&) {
        PyErr_SetString(PyExc_BufferError, "not an nvmeof.Buffer");
        return -1;
    }
    if (buffer->closed) {
        PyErr_SetString(PyExc_ValueError, "the buffer is closed (deregistered)");
        return -1;
    }
    if (buffer->device) {
        PyErr_SetString(PyExc_BufferError,
                        "GPU memory has no host view (copy it with the GPU's API)");
        return -1;
    }
    if (PyBuffer_FillInfo(view, object, buffer->data, static_cast<Py_ssize_t>(buffer->size), 0,
                          flags) != 0) {
        return -1;
    }
    ++buffer->exports;
    return 0;
}

void buffer_release(PyObject* object, Py_buffer*) {
    auto& buffer = py::handle(object).cast<Buffer&>();
    --buffer.exports;
    buffer.release_object();
}

// Host bytes [offset, offset + length) of a buffer, for read()/write().
std::byte* host_range(const Buffer& buffer, std::uint64_t offset, std::uint64_t length,
                      const char* what) {
    buffer.usable();
    if (buffer.device) {
        throw py::value_error(std::string(what) +
                              ": GPU memory has no host view (copy it with the GPU's API)");
    }
    if (offset > buffer.size || length > buffer.size - offset) {
        throw py::value_error(std::string(what) + ": [" + std::to_string(offset) + ", +" +
                              std::to_string(length) + ") exceeds the " +
                              std::to_string(buffer.size) + "-byte buffer");
    }
    return static_cast<std::byte*>(buffer.data) + offset;
}

py::bytes read_bytes(const Buffer& buffer, std::optional<std::uint64_t> length,
                     std::uint64_t offset) {
    const std::uint64_t count =
        length.value_or(offset <= buffer.size ? buffer.size - offset : std::uint64_t{0});
    const std::byte* from = host_range(buffer, offset, count, "read");
    return py::bytes(reinterpret_cast<const char*>(from), count);
}

void write_bytes(const Buffer& buffer, const py::buffer& data, std::uint64_t offset) {
    const py::buffer_info info = data.request();
    const auto count = static_cast<std::uint64_t>(info.size * info.itemsize);
    std::byte* to = host_range(buffer, offset, count, "write");
    std::memcpy(to, info.ptr, count);
}

// The device range of an object exposing __cuda_array_interface__ (version 2+):
// C-contiguous (strides None or the C-order strides), writable.
std::pair<void*, std::size_t> cuda_array_range(const py::object& object) {
    const py::dict interface = object.attr("__cuda_array_interface__");
    const auto data = interface["data"].cast<py::tuple>();
    if (data[1].cast<bool>()) {
        throw py::value_error("register_gpu: the array is read-only");
    }
    const auto typestr = interface["typestr"].cast<std::string>();
    if (typestr.size() < 3) {
        throw py::value_error("register_gpu: bad typestr " + typestr);
    }
    const auto itemsize = static_cast<std::size_t>(std::stoul(typestr.substr(2)));
    std::size_t bytes = itemsize;
    std::vector<std::size_t> shape;
    for (const auto& extent : interface["shape"].cast<py::tuple>()) {
        shape.push_back(extent.cast<std::size_t>());
        bytes *= shape.back();
    }
    if (interface.contains("strides") && !interface["strides"].is_none()) {
        std::size_t expected = itemsize;
        const auto strides = interface["strides"].cast<py::tuple>();
        for (std::size_t i = shape.size(); i-- > 0;) {
            if (shape[i] > 1 && strides[i].cast<std::size_t>() != expected) {
                throw py::value_error("register_gpu: the array is not C-contiguous");
            }
            expected *= shape[i];
        }
    }
    if (bytes == 0) {
        throw py::value_error("register_gpu: the array is empty");
    }
    return {reinterpret_cast<void*>(data[0].cast<std::uintptr_t>()), bytes};
}

}  // namespace

Buffer allocate_buffer(const StatePtr& state, std::size_t size) {
    if (size == 0) {
        throw py::value_error("allocate: length must be positive");
    }
    // The buffer owns its memory (not Controller::allocate's) so views of it
    // stay valid after the controller closes.
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t rounded = (size + page - 1) / page * page;
    std::unique_ptr<void, FreeMemory> memory(std::aligned_alloc(page, rounded));
    if (!memory) {
        throw std::bad_alloc();
    }
    std::memset(memory.get(), 0, rounded);
    Buffer buffer{};
    buffer.state = state;
    buffer.memory = std::move(memory);
    buffer.size = size;
    buffer.data = buffer.memory.get();
    buffer.region = locked(state, [&](nvmeof::Controller& controller) {
        return controller.register_memory(buffer.data, size);
    });
    return buffer;
}

Buffer register_buffer(const StatePtr& state, const py::object& object) {
    Buffer buffer{};
    buffer.state = state;
    buffer.owner = object;
    if (PyObject_CheckBuffer(object.ptr()) != 0) {
        buffer.view = std::make_unique<HeldView>(object);
        buffer.data = buffer.view->data();
        buffer.size = buffer.view->size();
    } else if (dlpack::offers_dlpack(object)) {
        buffer.tensor = dlpack::consume(object, dlpack::DeviceType::cpu, "register");
        buffer.data = buffer.tensor->data();
        buffer.size = buffer.tensor->size();
    } else {
        throw py::value_error("register: a " + type_name(object) +
                              " is neither a buffer (numpy array, bytearray) nor a "
                              "DLPack tensor (torch CPU tensor)");
    }
    if (buffer.size == 0) {
        throw py::value_error("register: the buffer is empty");
    }
    buffer.region = locked(state, [&](nvmeof::Controller& controller) {
        return controller.register_memory(buffer.data, buffer.size);
    });
    return buffer;
}

Buffer register_gpu_buffer(const StatePtr& state, const py::object& object) {
    Buffer buffer{};
    buffer.state = state;
    buffer.owner = object;
    buffer.device = true;
    if (py::hasattr(object, "__cuda_array_interface__")) {
        std::tie(buffer.data, buffer.size) = cuda_array_range(object);
    } else if (dlpack::offers_dlpack(object)) {
        buffer.tensor = dlpack::consume(object, dlpack::DeviceType::cuda, "register_gpu");
        buffer.data = buffer.tensor->data();
        buffer.size = buffer.tensor->size();
    } else {
        throw py::value_error("register_gpu: a " + type_name(object) +
                              " has neither __cuda_array_interface__ nor DLPack "
                              "(__dlpack__, __dlpack_device__)");
    }
    buffer.region = locked(state, [&](nvmeof::Controller& controller) {
        return controller.register_gpu(buffer.data, buffer.size);
    });
    return buffer;
}

void bind_buffer(py::module_& m) {
    py::class_<Buffer> buffer_class(
        m, "Buffer", py::buffer_protocol(),
        "Registered memory (the reference package's HostBuffer). Supports the buffer protocol "
        "(memoryview, numpy.frombuffer, torch.frombuffer: zero copy, format 'B'), read()/write() "
        "copies and `with`; close() deregisters it (refused while a transfer uses it, or a "
        "low-level request with it as data_owner is in flight). Views taken before close() stay "
        "valid; new ones are refused.");
    auto* heap_type = reinterpret_cast<PyHeapTypeObject*>(buffer_class.ptr());
    heap_type->as_buffer.bf_getbuffer = buffer_get;
    heap_type->as_buffer.bf_releasebuffer = buffer_release;
    buffer_class.def("__len__", [](const Buffer& b) { return b.size; })
        .def_property_readonly(
            "closed", [](const Buffer& b) { return b.closed; },
            "Whether the memory has been deregistered.")
        .def_property_readonly(
            "length", [](const Buffer& b) { return b.size; }, "Its size in bytes.")
        .def_property_readonly(
            "addr", [](const Buffer& b) { return b.usable().remote(0).address; },
            "The address a keyed SGL names for byte 0 (a device address for GPU memory).")
        .def_property_readonly(
            "rkey", [](const Buffer& b) { return b.usable().rkey(); },
            "The remote key a keyed SGL carries (protocol.set_keyed_sgl).")
        .def_property_readonly(
            "lkey", [](const Buffer& b) { return b.usable().lkey(); },
            "The local key of the registration.")
        .def_property_readonly(
            "kind", [](const Buffer& b) { return b.device ? "gpu" : "host"; },
            "\"host\", or \"gpu\" for register_gpu() (no host view then).")
        .def_property_readonly(
            "registration_path",
            [](const Buffer& b) { return std::string(b.region.registration_path()); })
        .def_property_readonly(
            "obj", [](const Buffer& b) { return b.owner; },
            "The registered object (None for allocate()d memory).")
        .def(
            "read",
            [](const Buffer& b, const py::object& length, const py::object& offset) {
                return read_bytes(b, optional_argument(length, "length"),
                                  unsigned_argument(offset, "offset"));
            },
            py::arg("length") = py::none(), py::arg("offset") = 0,
            "A copy of `length` bytes from byte `offset` (default: to the end) as bytes. "
            "ValueError beyond the buffer, or for GPU memory.")
        .def(
            "write",
            [](const Buffer& b, const py::buffer& data, const py::object& offset) {
                write_bytes(b, data, unsigned_argument(offset, "offset"));
            },
            py::arg("data"), py::arg("offset") = 0,
            "Copies the bytes of `data` (any buffer) in from byte `offset`. ValueError beyond "
            "the buffer, or for GPU memory.")
        .def("close", &Buffer::close,
             "Deregisters the memory (and frees allocate()d memory). Idempotent.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Buffer& b, const py::args&) {
            b.close();
            return false;
        });
}

}  // namespace nvmeof_python
