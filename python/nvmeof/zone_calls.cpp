// Namespace's zone calls from Python (namespace_calls.hpp): the zoned
// namespace's facts, reports, zone actions and Zone Append, blocking (the GIL
// released, the controller's lock let go while the core waits) and, for
// Zone Append, asynchronous. Zones come back as nvmeof.zones.Zone objects.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "arguments.hpp"
#include "buffer.hpp"
#include "namespace_calls.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/zones.hpp"

namespace nvmeof_python {

namespace {

using Blocks = std::optional<std::uint64_t>;
using Reftag = std::optional<std::int64_t>;

nvmeof::ZoneFilter filter_argument(const py::handle& value) {
    return static_cast<nvmeof::ZoneFilter>(unsigned_argument(value, "filter", 7));
}

nvmeof::ZoneAction action_argument(const py::handle& value) {
    const std::uint64_t action = unsigned_argument(value, "action", 0xFF);
    if (action < 1 || action > 5) {
        throw py::value_error("action must be a ZoneAction (1 to 5), not " +
                              std::to_string(action));
    }
    return static_cast<nvmeof::ZoneAction>(action);
}

// A buffer registered with this namespace's controller.
Buffer& own_buffer(const PyNamespace& n, const py::object& object) {
    Buffer& buffer = buffer_of(object);
    if (buffer.state != n.state) {
        throw py::value_error("the buffer is registered with another controller");
    }
    return buffer;
}

py::list python_zones(const std::vector<nvmeof::Zone>& zones) {
    const py::object make = py::module_::import("nvmeof.zones").attr("Zone").attr("_from_core");
    py::list out;
    for (const nvmeof::Zone& z : zones) {
        out.append(make(z.start, z.capacity, z.write_pointer, static_cast<int>(z.state),
                        static_cast<int>(z.type), z.attributes));
    }
    return out;
}

void act(PyNamespace& n, nvmeof::ZoneAction action, std::uint64_t slba, bool select_all) {
    py::gil_scoped_release no_gil;
    blocking_call(*n.state, [&](const nvmeof::BetweenPolls& between_polls) {
        nvmeof::Namespace bound = n.ns;
        bound.zone_action(action, slba,
                          select_all ? nvmeof::ZoneSelect::all : nvmeof::ZoneSelect::one,
                          between_polls);
    });
}

// Namespace.open_zone and its kin: one action each.
void def_action(py::class_<PyNamespace>& cls, const char* name, nvmeof::ZoneAction action,
                const char* doc) {
    cls.def(
        name,
        [action](PyNamespace& n, const py::object& slba, bool select_all) {
            act(n, action, unsigned_argument(slba, "slba"), select_all);
        },
        py::arg("slba") = 0, py::kw_only(), py::arg("select_all") = false, doc);
}

// Namespace.append and append_async.
template <typename Call>
void def_append(py::class_<PyNamespace>& cls, const char* name, Call call, const char* doc) {
    cls.def(
        name,
        [call](PyNamespace& n, const py::object& buffer, const py::object& zslba,
               const py::object& blocks, const py::object& offset, bool pract, std::int64_t prchk,
               std::int64_t apptag, std::int64_t apptag_mask, Reftag reftag,
               const py::object& storage_tag) {
            Buffer& registered = own_buffer(n, buffer);
            const nvmeof::Transfer t = n.describe(
                nvmeof::Op::zone_append, registered, unsigned_argument(zslba, "zslba"),
                optional_argument(blocks, "blocks"), unsigned_argument(offset, "buffer_offset"),
                ProtectionArgs{pract, prchk, apptag, apptag_mask, reftag,
                               unsigned_argument(storage_tag, "storage_tag")});
            return call(n, buffer, registered, t);
        },
        py::arg("buffer"), py::arg("zslba"), py::arg("blocks") = py::none(), py::kw_only(),
        py::arg("buffer_offset") = 0, py::arg("pract") = false, py::arg("prchk") = 0,
        py::arg("apptag") = 0, py::arg("apptag_mask") = 0xFFFF, py::arg("reftag") = py::none(),
        py::arg("storage_tag") = 0, doc);
}

}  // namespace

void bind_zone_calls(py::class_<PyNamespace>& cls) {
    cls.def_property_readonly(
           "zoned", [](const PyNamespace& n) { return n.ns.info().zoned; },
           "True for a namespace of the Zoned Namespace command set (CSI 2).")
        .def_property_readonly(
            "csi", [](const PyNamespace& n) { return n.ns.info().csi; },
            "The namespace's I/O command set: 0 (NVM) or 2 (zoned).")
        .def_property_readonly(
            "zone_size", [](const PyNamespace& n) { return n.ns.info().zones.zone_blocks; },
            "Blocks per zone (ZSZE); 0 where not zoned. Zone i starts at i * zone_size.")
        .def_property_readonly(
            "zone_count", [](const PyNamespace& n) { return n.ns.info().zones.zone_count; },
            "Zones in the namespace; 0 where not zoned.")
        .def_property_readonly(
            "max_open_zones", [](const PyNamespace& n) { return n.ns.info().zones.max_open_zones; },
            "Zones that may be open at once (MOR + 1); 0: no limit.")
        .def_property_readonly(
            "max_active_zones",
            [](const PyNamespace& n) { return n.ns.info().zones.max_active_zones; },
            "Zones that may be open or closed at once (MAR + 1); 0: no limit.")
        .def_property_readonly(
            "zone_append_max_bytes",
            [](const PyNamespace& n) { return n.ns.info().zones.zone_append_max_bytes; },
            "The largest append() in bytes (ZASL, or MDTS where ZASL is 0); 0: the "
            "controller does not support Zone Append.");
    cls.def(
        "report_zones",
        [](PyNamespace& n, const py::object& slba, const py::object& max_zones,
           const py::object& filter, const py::object& page) {
            const std::uint64_t start = unsigned_argument(slba, "slba");
            const std::uint64_t most = max_zones.is_none()
                                           ? nvmeof::Namespace::kAllZones
                                           : unsigned_argument(max_zones, "max_zones");
            const nvmeof::ZoneFilter which = filter_argument(filter);
            Buffer* registered = page.is_none() ? nullptr : &own_buffer(n, page);
            const BufferInUse in_use(registered);
            std::vector<nvmeof::Zone> zones;
            {
                py::gil_scoped_release no_gil;
                zones = blocking_call(*n.state, [&](const nvmeof::BetweenPolls& between_polls) {
                    nvmeof::Namespace bound = n.ns;
                    return bound.report_zones(
                        start, most, which, registered != nullptr ? &registered->usable() : nullptr,
                        between_polls);
                });
            }
            return python_zones(zones);
        },
        py::arg("slba") = 0, py::arg("max_zones") = py::none(), py::kw_only(),
        py::arg("filter") = 0, py::arg("page") = py::none(),
        "The zones from the one holding `slba` on (a list of nvmeof.zones.Zone), at most "
        "max_zones (None: all), those `filter` lists (a ZoneFilter), read a page at a time "
        "(partial reports) into `page` (a registered Buffer of at least 128 bytes; default: "
        "up to 64 KiB the call allocates). ValueError on a namespace that is not zoned.");
    cls.def(
        "report_zones_into",
        [](PyNamespace& n, const py::object& buffer, const py::object& slba,
           const py::object& filter, bool partial, bool extended, const py::object& offset,
           const py::object& nbytes) {
            Buffer& registered = own_buffer(n, buffer);
            const std::uint64_t start = unsigned_argument(slba, "slba");
            const nvmeof::ZoneReportOptions options{filter_argument(filter), partial, extended};
            const std::uint64_t at = unsigned_argument(offset, "buffer_offset");
            const auto length = optional_argument(nbytes, "nbytes");
            const BufferInUse in_use(&registered);
            nvmeof::ZoneReport report;
            {
                py::gil_scoped_release no_gil;
                report = blocking_call(*n.state, [&](const nvmeof::BetweenPolls& between_polls) {
                    nvmeof::Namespace bound = n.ns;
                    return bound.report_zones_into(registered.usable(), start, options, at, length,
                                                   between_polls);
                });
            }
            return py::module_::import("nvmeof.zones")
                .attr("ZoneReport")(report.matching, python_zones(report.zones));
        },
        py::arg("buffer"), py::arg("slba") = 0, py::kw_only(), py::arg("filter") = 0,
        py::arg("partial") = false, py::arg("extended") = false, py::arg("buffer_offset") = 0,
        py::arg("nbytes") = py::none(),
        "One Zone Management Receive into the registered `buffer` (its bytes from "
        "buffer_offset, nbytes of them; default: the rest): a ZoneReport of the header's count "
        "(every zone from `slba` on that `filter` lists, or with partial=True those returned) "
        "and the zones the buffer held. extended=True asks for an extended report (refused "
        "where the namespace has no zone descriptor extensions).");
    cls.def(
        "zone_action",
        [](PyNamespace& n, const py::object& action, const py::object& slba, bool select_all) {
            act(n, action_argument(action), unsigned_argument(slba, "slba"), select_all);
        },
        py::arg("action"), py::arg("slba") = 0, py::kw_only(), py::arg("select_all") = false,
        "Zone Management Send: `action` (a ZoneAction) on the zone starting at `slba`, or with "
        "select_all=True on every zone in a state it applies to. Zone errors raise NvmeError "
        "naming the status (Invalid Zone State Transition, Too Many Open Zones (errno "
        "ETOOMANYREFS), Too Many Active Zones (EOVERFLOW), ...).");
    def_action(cls, "open_zone", nvmeof::ZoneAction::open,
               "Open Zone (explicitly) at `slba`, or every closed zone with select_all=True.");
    def_action(cls, "close_zone", nvmeof::ZoneAction::close,
               "Close Zone at `slba`, or every open zone with select_all=True.");
    def_action(cls, "finish_zone", nvmeof::ZoneAction::finish,
               "Finish Zone at `slba` (it becomes full), or every open and closed zone with "
               "select_all=True.");
    def_action(cls, "reset_zone", nvmeof::ZoneAction::reset,
               "Reset Zone at `slba` (empty again, its write pointer at its start), or every "
               "zone written with select_all=True.");
    def_action(cls, "offline_zone", nvmeof::ZoneAction::offline,
               "Offline Zone at `slba` (a read only zone), or every read only zone with "
               "select_all=True.");
    def_append(
        cls, "append",
        [](PyNamespace& n, const py::object&, Buffer& registered, const nvmeof::Transfer& t) {
            const BufferInUse in_use(&registered);
            py::gil_scoped_release no_gil;
            return blocking_call(*n.state, [&](const nvmeof::BetweenPolls& between_polls) {
                nvmeof::Namespace bound = n.ns;
                return bound.zone_append(registered.usable(), t.slba, t.blocks, t.offset,
                                         t.protection, between_polls);
            });
        },
        "Zone Append: `blocks` blocks (default: the whole blocks of the buffer from "
        "buffer_offset) to the zone starting at `zslba`; returns the LBA the controller wrote "
        "them at. Never split: ValueError above zone_append_max_bytes, for an LBA that does "
        "not start a zone, or on a namespace that is not zoned. Protection keywords as "
        "write().");
    def_append(
        cls, "append_async",
        [](PyNamespace& n, const py::object& buffer, Buffer&, const nvmeof::Transfer& t) {
            return n.start(t, buffer);
        },
        "As append(), without waiting: a TransferFuture whose result() is the LBA written.");
}

}  // namespace nvmeof_python
