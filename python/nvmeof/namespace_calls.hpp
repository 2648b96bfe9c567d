// nvmeof.Namespace: blocking and asynchronous transfers (internal to the
// nvmeof._core extension); its zone calls are zone_calls.cpp's.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "buffer.hpp"
#include "nvmeof/namespace.hpp"
#include "protection_calls.hpp"
#include "state.hpp"

namespace nvmeof_python {

void bind_namespace(py::module_& m);
py::object make_namespace(const StatePtr& state, const nvmeof::Namespace& ns);
// Completes the futures of finished asynchronous transfers. GIL held.
void deliver(std::vector<TransferBoard::Finished> finished);
// Stops the progress thread. GIL released, controller lock not held.
void stop_progress(ControllerState& state);

// What a blocking call of the core does each time it waits: lets go of the
// controller's lock (taken again after), so other threads' calls and the
// progress thread run meanwhile, and raises if the controller closed.
nvmeof::BetweenPolls unlocking(ControllerState& state, std::unique_lock<std::mutex>& lock);
// `call(between_polls)`, a blocking call of the core, with the controller
// locked but while it waits. The caller has released the GIL.
template <typename Call>
auto blocking_call(ControllerState& state, Call&& call) {
    std::unique_lock lock(state.mutex);
    state.open();
    return call(unlocking(state, lock));
}

// The keyword arguments of a read, write, compare, write zeroes or append
// that ask for end-to-end protection (PRACT, PRCHK and the tags), as Python
// passes them.
struct ProtectionArgs {
    bool pract = false;
    std::int64_t prchk = 0;
    std::int64_t apptag = 0;
    std::int64_t apptag_mask = 0xFFFF;
    std::optional<std::int64_t> reftag;
    std::uint64_t storage_tag = 0;

    nvmeof::Protection of(const nvmeof::Namespace& ns) const {
        return protection_from(ns.format(), pract, prchk, apptag, apptag_mask, reftag, storage_tag);
    }
};

// The Python Namespace.
struct PyNamespace {
    StatePtr state;
    nvmeof::Namespace ns;

    // The transfer an operation on `registered` describes, checked.
    // Blocks are as many bytes in the buffer as buffer_block_bytes(protection) says.
    nvmeof::Transfer describe(nvmeof::Op op, Buffer& registered, std::uint64_t slba,
                              std::optional<std::uint64_t> blocks, std::uint64_t offset,
                              const ProtectionArgs& args) const;
    // False for a Compare whose blocks differ.
    bool transfer(nvmeof::Op op, const py::object& buffer, std::uint64_t slba,
                  std::optional<std::uint64_t> blocks, std::uint64_t offset,
                  const ProtectionArgs& args);
    py::object transfer_async(nvmeof::Op op, const py::object& buffer, std::uint64_t slba,
                              std::optional<std::uint64_t> blocks, std::uint64_t offset,
                              const ProtectionArgs& args);
    // Files `t` on the board; a TransferFuture.
    py::object start(const nvmeof::Transfer& t, const py::object& buffer);
    // The GIL released; false for a Compare whose blocks differ.
    bool run(const nvmeof::Transfer& transfer);
};

// Namespace's zone calls and properties (zone_calls.cpp).
void bind_zone_calls(py::class_<PyNamespace>& cls);

}  // namespace nvmeof_python
