// Namespace calls from Python (namespace_calls.hpp).
//
// A blocking read, write or compare runs the core's blocking loop (Namespace::run), with
// the GIL released: it holds the controller's lock to submit and for each poll
// and lets it go between polls, so other threads' transfers are in flight
// together. The
// asynchronous forms return a future at once; the progress thread polls while
// any is pending and completes the futures (taking the GIL only for that).
#include <pybind11/stl.h>

#include "namespace_calls.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "arguments.hpp"
#include "buffer.hpp"
#include "exceptions.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/queue.hpp"
#include "protection_calls.hpp"

namespace nvmeof_python {

namespace {

// Polls that found nothing before the progress thread naps between polls: a
// completion within that window is seen at once, a longer wait costs little CPU.
constexpr unsigned kBusyPolls = 2000;
constexpr std::chrono::microseconds kNap{50};

bool usable(const ControllerState& state) {
    return state.controller && !state.closed &&
           (state.controller->is_open() || state.controller->is_reconnecting());
}

void progress_loop(ControllerState* state) {
    std::unique_lock lock(state->mutex);
    unsigned idle = 0;
    for (;;) {
        state->progress_wake.wait(lock, [&] {
            return state->progress_stopping || state->transfers.asynchronous_pending() != 0 ||
                   state->transfers.has_finished();
        });
        if (state->progress_stopping) {
            return;
        }
        bool moved = false;
        if (usable(*state)) {
            moved = state->transfers.progress(*state->controller);
            state->controller->keep_connected();
        } else {
            // Failed or given up with transfers pending: they will never complete.
            nvmeof::CompletionStatus gone;
            gone.transport = nvmeof::TransportErrc::disconnected;
            gone.sys_errno = ENOTCONN;
            state->transfers.fail_all(gone);
        }
        if (state->transfers.has_finished()) {
            auto finished = state->transfers.take_finished();
            lock.unlock();
            deliver(std::move(finished));
            lock.lock();
            idle = 0;
            continue;
        }
        idle = moved ? 0 : idle + 1;
        lock.unlock();
        if (idle > kBusyPolls) {
            std::this_thread::sleep_for(kNap);
        } else {
            std::this_thread::yield();
        }
        lock.lock();
    }
}

// With the lock held.
void start_progress(ControllerState& state) {
    if (!state.progress.joinable()) {
        state.progress_stopping = false;
        state.progress = std::thread(progress_loop, &state);
    }
    state.progress_wake.notify_one();
}

// The core's blocking loop, letting go of the controller's lock each time it
// waits, so other threads' calls (and the progress thread) run meanwhile. The
// caller has released the GIL. False for a Compare whose blocks differ.
bool blocking_transfer(ControllerState& state, const nvmeof::Namespace& ns,
                       const nvmeof::Transfer& transfer) {
    return blocking_call(state, [&](const nvmeof::BetweenPolls& between_polls) {
        nvmeof::Namespace bound = ns;
        return bound.run(transfer, between_polls);
    });
}

}  // namespace

nvmeof::BetweenPolls unlocking(ControllerState& state, std::unique_lock<std::mutex>& lock) {
    return [&state, &lock] {
        if (state.transfers.has_finished()) {
            state.progress_wake.notify_one();  // others' futures, found by this poll
        }
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
        state.open();  // closed or given up meanwhile: that is the call's error
    };
}

nvmeof::Transfer PyNamespace::describe(nvmeof::Op op, Buffer& registered, std::uint64_t slba,
                                       std::optional<std::uint64_t> blocks, std::uint64_t offset,
                                       const ProtectionArgs& args) const {
    if (registered.state != state) {
        throw py::value_error("the buffer is registered with another controller");
    }
    const nvmeof::Protection protection = args.of(ns);
    const std::uint64_t block_bytes = ns.info().buffer_block_bytes(protection);
    // Given blocks are checked against the region by check_transfer below.
    const std::uint64_t count =
        blocks ? *blocks : blocks_in_buffer(registered.size, offset, block_bytes, std::nullopt, "");
    if (count == 0) {
        throw py::value_error("the buffer holds no whole block after offset " +
                              std::to_string(offset));
    }
    const nvmeof::Transfer transfer{op, slba, count, &registered.region, offset, 0, protection};
    nvmeof::check_transfer(ns.info(), transfer);
    return transfer;
}

bool PyNamespace::transfer(nvmeof::Op op, const py::object& buffer, std::uint64_t slba,
                           std::optional<std::uint64_t> blocks, std::uint64_t offset,
                           const ProtectionArgs& args) {
    auto& registered = buffer_of(buffer);
    const nvmeof::Transfer t = describe(op, registered, slba, blocks, offset, args);
    const BufferInUse in_use(&registered);
    return run(t);
}

py::object PyNamespace::transfer_async(nvmeof::Op op, const py::object& buffer, std::uint64_t slba,
                                       std::optional<std::uint64_t> blocks, std::uint64_t offset,
                                       const ProtectionArgs& args) {
    auto& registered = buffer_of(buffer);
    const nvmeof::Transfer t = describe(op, registered, slba, blocks, offset, args);
    return start(t, buffer);
}

py::object PyNamespace::start(const nvmeof::Transfer& t, const py::object& buffer) {
    py::object future = py::module_::import("nvmeof.futures").attr("TransferFuture")();
    future.attr("set_running_or_notify_cancel")();
    Buffer* registered = buffer.is_none() ? nullptr : &buffer.cast<Buffer&>();
    BufferInUse in_use(registered);
    PyObject* owned_future = future.inc_ref().ptr();
    PyObject* owned_buffer = buffer.is_none() ? nullptr : buffer.inc_ref().ptr();
    try {
        py::gil_scoped_release no_gil;
        std::lock_guard lock(state->mutex);
        state->transfers.add(state->open(), ns, t, owned_future, owned_buffer);
        start_progress(*state);
    } catch (...) {
        Py_DECREF(owned_future);
        Py_XDECREF(owned_buffer);
        throw;
    }
    in_use.release();  // deliver() gives the count back
    return future;
}

bool PyNamespace::run(const nvmeof::Transfer& transfer) {
    py::gil_scoped_release no_gil;
    return blocking_transfer(*state, ns, transfer);
}

void deliver(std::vector<TransferBoard::Finished> finished) {
    py::gil_scoped_acquire gil;
    for (auto& done : finished) {
        const auto future = py::reinterpret_steal<py::object>(done.future);
        if (done.buffer != nullptr) {
            const auto buffer = py::reinterpret_steal<py::object>(done.buffer);
            --buffer.cast<Buffer&>().transfers;
        }
        try {
            if (done.op == nvmeof::Op::compare && (done.status.ok() || done.status.miscompare())) {
                future.attr("set_result")(done.status.ok());  // a Compare's answer
            } else if (done.op == nvmeof::Op::zone_append && done.status.ok()) {
                future.attr("set_result")(done.append_lba);  // where the blocks went
            } else if (done.status.ok()) {
                future.attr("set_result")(py::none());
            } else {
                future.attr("set_exception")(exception_for(done.status));
            }
        } catch (py::error_already_set& error) {
            error.discard_as_unraisable("nvmeof: completing a transfer future");
        }
    }
}

void stop_progress(ControllerState& state) {
    {
        std::lock_guard lock(state.mutex);
        state.progress_stopping = true;
    }
    state.progress_wake.notify_all();
    if (state.progress.joinable()) {
        state.progress.join();
    }
}

py::object make_namespace(const StatePtr& state, const nvmeof::Namespace& ns) {
    return py::cast(PyNamespace{state, ns});
}

namespace {

using Blocks = std::optional<std::uint64_t>;  // None: the rest of the buffer
using Reftag = std::optional<std::int64_t>;

// A read, write or compare (blocking or not) with its documented arguments, the
// protection ones keyword-only after buffer_offset.
template <typename Call>
void def_transfer(py::class_<PyNamespace>& cls, const char* name, Call call, const char* doc) {
    cls.def(
        name,
        [call](PyNamespace& n, const py::object& buffer, const py::object& slba,
               const py::object& blocks, const py::object& offset, bool pract, std::int64_t prchk,
               std::int64_t apptag, std::int64_t apptag_mask, Reftag reftag,
               const py::object& storage_tag) {
            return call(n, buffer, unsigned_argument(slba, "slba"),
                        optional_argument(blocks, "blocks"),
                        unsigned_argument(offset, "buffer_offset"),
                        ProtectionArgs{pract, prchk, apptag, apptag_mask, reftag,
                                       unsigned_argument(storage_tag, "storage_tag")});
        },
        py::arg("buffer"), py::arg("slba") = 0, py::arg("blocks") = py::none(), py::kw_only(),
        py::arg("buffer_offset") = 0, py::arg("pract") = false, py::arg("prchk") = 0,
        py::arg("apptag") = 0, py::arg("apptag_mask") = 0xFFFF, py::arg("reftag") = py::none(),
        py::arg("storage_tag") = 0, doc);
}

}  // namespace

void bind_namespace(py::module_& m) {
    py::class_<PyNamespace> cls(m, "Namespace", py::dynamic_attr(),
                                "A namespace of a connected controller.");
    cls.def_property_readonly("nsid", [](const PyNamespace& n) { return n.ns.nsid(); })
        .def_property_readonly(
            "lba_size", [](const PyNamespace& n) { return n.ns.lba_size(); },
            "Data bytes per block.")
        .def_property_readonly("size_lbas", [](const PyNamespace& n) { return n.ns.size_lbas(); })
        .def_property_readonly("capacity_lbas",
                               [](const PyNamespace& n) { return n.ns.info().capacity_lbas; })
        .def_property_readonly("size_bytes",
                               [](const PyNamespace& n) { return n.ns.info().size_bytes(); })
        .def_property_readonly(
            "format", [](const PyNamespace& n) { return n.ns.format(); },
            "The block layout (a BlockFormat).")
        .def_property_readonly(
            "metadata_size", [](const PyNamespace& n) { return n.ns.info().metadata_size(); },
            "Metadata bytes per block, interleaved after its data (nvme "
            "id-ns: ms of the format flbas selects).")
        .def_property_readonly(
            "pi_type", [](const PyNamespace& n) { return static_cast<int>(n.ns.format().pi_type); },
            "Protection information type: 0 (none), 1, 2 or 3 (nvme id-ns: "
            "dps bits 2:0).")
        .def_property_readonly(
            "pi_guard_bits", [](const PyNamespace& n) { return pi_guard_bits(n.ns.format()); },
            "16 (CRC-16/T10-DIF), 32 (CRC-32C) or 64 (CRC-64/NVME); 0 "
            "without PI.")
        .def_property_readonly(
            "storage_tag_bits",
            [](const PyNamespace& n) { return storage_tag_bits(n.ns.format()); },
            "Bits of the storage tag in the PI (nvme id-ns --csi: elbaf sts); 0 "
            "without.")
        .def_property_readonly(
            "storage_tag_mask", [](const PyNamespace& n) { return n.ns.info().storage_tag_mask; },
            "The storage tag bits a Prchk.STORAGE_TAG check compares (LBSTM).")
        .def_property_readonly(
            "pi_first", [](const PyNamespace& n) { return pi_first(n.ns.format()); },
            "PI in the first bytes of the metadata, else in its last (nvme "
            "id-ns: dps bit 3).")
        .def_property_readonly(
            "pi_size", [](const PyNamespace& n) { return n.ns.format().pi_bytes(); },
            "Bytes of PI per block: 8 (16-bit guard), 16 (32- or 64-bit), 0 "
            "without.")
        .def(
            "buffer_block_size",
            [](const PyNamespace& n, bool pract) {
                return n.ns.format().transfer_block_bytes(pract);
            },
            py::arg("pract") = false,
            "Bytes per block in a transfer's buffer: lba_size + metadata_size (data and "
            "metadata interleaved), or lba_size alone when pract has the controller insert and "
            "strip PI that is all the metadata.");
    def_transfer(
        cls, "read",
        [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
           std::uint64_t offset, const ProtectionArgs& args) {
            n.transfer(nvmeof::Op::read, buffer, slba, blocks, offset, args);
        },
        "Reads `blocks` blocks at `slba` into the registered buffer (default: the whole "
        "blocks from buffer_offset to its end; a block is buffer_block_size(pract) bytes). "
        "Blocks without the GIL; split at MDTS into commands spread over the I/O queues. "
        "On a namespace with protection information: pract (PRACT: the controller strips "
        "the PI), prchk (Prchk flags: what the controller checks), apptag and apptag_mask, "
        "reftag (of the first block; None: the LBA), storage_tag. ValueError for a range outside "
        "the "
        "namespace or buffer, or PRACT/PRCHK on a namespace without PI; NvmeError / "
        "TransportError when it fails (an end-to-end check: NvmeError with errno EILSEQ).");
    def_transfer(
        cls, "write",
        [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
           std::uint64_t offset, const ProtectionArgs& args) {
            n.transfer(nvmeof::Op::write, buffer, slba, blocks, offset, args);
        },
        "Writes `blocks` blocks at `slba` from the registered buffer; as read() (pract: the "
        "controller generates the PI, the buffer holding data only when PI is all the "
        "metadata).");
    def_transfer(
        cls, "read_async",
        [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
           std::uint64_t offset, const ProtectionArgs& args) {
            return n.transfer_async(nvmeof::Op::read, buffer, slba, blocks, offset, args);
        },
        "As read(), without waiting: returns a TransferFuture (a concurrent.futures.Future, "
        "also awaitable) whose result() is None once the data is in the buffer, or raises "
        "the transfer's error. The buffer cannot be closed until it is done.");
    def_transfer(
        cls, "write_async",
        [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
           std::uint64_t offset, const ProtectionArgs& args) {
            return n.transfer_async(nvmeof::Op::write, buffer, slba, blocks, offset, args);
        },
        "As write(), without waiting; returns a TransferFuture as read_async().");
    def_transfer(
        cls, "compare",
        [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
           std::uint64_t offset, const ProtectionArgs& args) {
            return n.transfer(nvmeof::Op::compare, buffer, slba, blocks, offset, args);
        },
        "Compare: the controller compares `blocks` blocks at `slba` with the registered "
        "buffer's (sent as write() sends them; with metadata, the metadata that travels too). "
        "True when they are the same, False when the controller answers Compare Failure "
        "(SCT 2, SC 0x85). pract, prchk and the tags as read(): the stored PI is checked as a "
        "read would (a failed check: NvmeError with errno EILSEQ). ValueError where the "
        "controller does not support Compare (Identify ONCS bit 0); other errors as read().");
    def_transfer(
        cls, "compare_async",
        [](PyNamespace& n, const py::object& buffer, std::uint64_t slba, Blocks blocks,
           std::uint64_t offset, const ProtectionArgs& args) {
            return n.transfer_async(nvmeof::Op::compare, buffer, slba, blocks, offset, args);
        },
        "As compare(), without waiting: returns a TransferFuture whose result() is True or "
        "False, or raises the transfer's error.");
    cls.def(
           "flush",
           [](PyNamespace& n) {
               n.run({nvmeof::Op::flush, 0, 0, nullptr, 0, 0});
           },
           "Flush: the namespace's volatile write data made durable.")
        .def(
            "write_zeroes",
            [](PyNamespace& n, const py::object& slba, const py::object& blocks, bool pract,
               std::int64_t prchk, std::int64_t apptag, std::int64_t apptag_mask, Reftag reftag,
               const py::object& storage_tag) {
                const ProtectionArgs args{pract,  prchk,
                                          apptag, apptag_mask,
                                          reftag, unsigned_argument(storage_tag, "storage_tag")};
                n.run({nvmeof::Op::write_zeroes, unsigned_argument(slba, "slba"),
                       unsigned_argument(blocks, "blocks"), nullptr, 0, 0, args.of(n.ns)});
            },
            py::arg("slba"), py::arg("blocks"), py::kw_only(), py::arg("pract") = false,
            py::arg("prchk") = 0, py::arg("apptag") = 0, py::arg("apptag_mask") = 0xFFFF,
            py::arg("reftag") = py::none(), py::arg("storage_tag") = 0,
            "Write Zeroes of `blocks` blocks at `slba`; pract, prchk and the tags as write().")
        .def(
            "deallocate",
            [](PyNamespace& n, const py::object& slba, const py::object& blocks) {
                n.run({nvmeof::Op::deallocate, unsigned_argument(slba, "slba"),
                       unsigned_argument(blocks, "blocks"), nullptr, 0, 0});
            },
            py::arg("slba"), py::arg("blocks"));
    bind_zone_calls(cls);
}

}  // namespace nvmeof_python
