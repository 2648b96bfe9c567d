// A zoned namespace's blocking calls: reports (Zone Management Receive, one
// into the caller's buffer or paged), zone actions (Zone Management Send) and
// Zone Append, with the low-level command loop behind the first two and the
// rules a Zone Append is checked by (nvmeof/zones.hpp).
#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "host/controller_impl.hpp"
#include "memory/memory_record.hpp"
#include "nvmeof/wire.hpp"

namespace nvmeof {

using namespace detail;

namespace {

// A report's header and one descriptor: the least that makes progress.
constexpr std::uint64_t kSmallestPage =
    sizeof(wire::ZoneReportHeader) + sizeof(wire::ZoneDescriptor);
// The page report_zones() allocates when given none.
constexpr std::uint64_t kDefaultPageBytes = 64 * 1024;

Zone to_zone(const wire::ZoneDescriptor& d) {
    Zone zone;
    zone.start = d.zslba;
    zone.capacity = d.zcap;
    zone.write_pointer = d.wp;
    zone.state = static_cast<ZoneState>(d.state());
    zone.type = static_cast<ZoneType>(d.type());
    zone.attributes = d.za;
    return zone;
}

std::string namespace_text(const NamespaceInfo& ns) {
    return "namespace " + std::to_string(ns.nsid);
}

// The memory a report is read into: host memory registered with this
// controller, `bytes` of it from `offset` in whole dwords.
void check_report_buffer(const NamespaceInfo& ns, const MemoryRegion& buffer,
                         const void* controller, std::uint64_t offset, std::uint64_t bytes) {
    if (!buffer.valid() || buffer.record()->owner != controller) {
        throw InvalidArgument(namespace_text(ns) +
                              ": the report buffer is not registered with this controller");
    }
    if (buffer.kind() != MemoryKind::host) {
        throw InvalidArgument(namespace_text(ns) + ": a zone report is read into host memory");
    }
    if (offset > buffer.size() || bytes > buffer.size() - offset) {
        throw InvalidArgument(namespace_text(ns) + ": " + std::to_string(bytes) +
                              " bytes at buffer offset " + std::to_string(offset) +
                              " do not fit the " + std::to_string(buffer.size()) +
                              "-byte report buffer");
    }
    if (bytes < sizeof(wire::ZoneReportHeader)) {
        throw InvalidArgument(namespace_text(ns) + ": a zone report of " + std::to_string(bytes) +
                              " bytes cannot hold its 64-byte header");
    }
}

}  // namespace

std::string_view zone_state_name(ZoneState state) noexcept {
    switch (state) {
        case ZoneState::empty:
            return "empty";
        case ZoneState::implicitly_opened:
            return "implicitly opened";
        case ZoneState::explicitly_opened:
            return "explicitly opened";
        case ZoneState::closed:
            return "closed";
        case ZoneState::read_only:
            return "read only";
        case ZoneState::full:
            return "full";
        case ZoneState::offline:
            return "offline";
    }
    return "unknown";
}

std::string_view zone_action_name(ZoneAction action) noexcept {
    switch (action) {
        case ZoneAction::close:
            return "close";
        case ZoneAction::finish:
            return "finish";
        case ZoneAction::open:
            return "open";
        case ZoneAction::reset:
            return "reset";
        case ZoneAction::offline:
            return "offline";
    }
    return "unknown";
}

namespace detail {

void require_zoned(const NamespaceInfo& ns, const char* what) {
    if (!ns.zoned) {
        throw InvalidArgument(namespace_text(ns) + " is not zoned (CSI " + std::to_string(ns.csi) +
                              "): " + what + " needs a zoned namespace");
    }
}

void check_zone_append(const NamespaceInfo& ns, std::uint64_t zslba, std::uint64_t blocks,
                       std::uint32_t block_bytes) {
    require_zoned(ns, "Zone Append");
    const std::string what = namespace_text(ns) + ": Zone Append";
    if (ns.zones.zone_append_max_bytes == 0) {
        throw InvalidArgument(what +
                              ": the controller does not support it (Commands Supported "
                              "and Effects of the zoned command set)");
    }
    if (zslba % ns.zones.zone_blocks != 0) {
        throw InvalidArgument(what + " to LBA " + std::to_string(zslba) +
                              ", which does not start a zone (zones of " +
                              std::to_string(ns.zones.zone_blocks) + " blocks)");
    }
    if (blocks > ns.zones.zone_append_max_bytes / block_bytes) {
        throw InvalidArgument(what + " of " + std::to_string(blocks) + " blocks (" +
                              std::to_string(blocks * block_bytes) +
                              " bytes) is above the controller's Zone Append size limit of " +
                              std::to_string(ns.zones.zone_append_max_bytes) +
                              " bytes (ZASL, or MDTS where ZASL is 0): a Zone Append is never "
                              "split");
    }
}

}  // namespace detail

Response ControllerImpl::run_io_command(const wire::Sqe& command, const MemoryRegion* data_owner,
                                        const BetweenPolls& between_polls) {
    const auto pause = [&](std::chrono::microseconds nap) {
        pause_between_polls(between_polls, nap);
    };
    wait_out_outage(between_polls);
    if (data_owner != nullptr && (!data_owner->valid() || data_owner->record()->owner != this)) {
        throw InvalidArgument(
            "the memory region is not registered with this controller (closed, reset or moved "
            "from)");
    }
    // The first queue with a free command ID (low-level commands take them
    // from the same pool as transfers), round robin.
    std::optional<Request> request;
    HostQueue* queue = nullptr;
    std::size_t next = 0;
    while (!request) {
        for (std::size_t tried = 0; tried < io_.size() && !request; ++tried) {
            HostQueue& candidate = *io_[next++ % io_.size()];
            if (candidate.failed() || candidate.free_cids() == 0) {
                continue;
            }
            try {
                request.emplace(&candidate, candidate.submit_command(command));
                queue = &candidate;
            } catch (const TransportError& e) {
                if (e.code() != TransportErrc::busy) {
                    throw;
                }
            }
        }
        if (request) {
            break;
        }
        for (auto& q : io_) {
            q->poll_cq();
        }
        keep_connected(nullptr);
        pause(std::chrono::microseconds(0));
        if (reconnecting() || !open()) {
            require_open("I/O");  // closed or failed meanwhile (an outage throws too)
        }
    }
    while (!request->done()) {
        queue->poll_cq();
        if (request->done()) {
            break;
        }
        keep_connected(nullptr);
        pause(std::chrono::microseconds(0));
        if (!open() && !reconnecting()) {
            require_open("I/O");
        }
    }
    Response response = request->response();
    response.raise_for_status();
    return response;
}

// --- Namespace ------------------------------------------------------------

ZoneReport Namespace::report_zones_into(const MemoryRegion& buffer, std::uint64_t slba,
                                        const ZoneReportOptions& options,
                                        std::uint64_t buffer_offset,
                                        std::optional<std::uint64_t> bytes,
                                        const BetweenPolls& between_polls) {
    require_zoned(info_, "a zone report");
    if (slba >= info_.size_lbas) {
        throw InvalidArgument(namespace_text(info_) + ": LBA " + std::to_string(slba) +
                              " is outside the namespace (" + std::to_string(info_.size_lbas) +
                              " blocks)");
    }
    if (options.filter > ZoneFilter::offline) {
        throw InvalidArgument(namespace_text(info_) + ": zone report filter " +
                              std::to_string(static_cast<unsigned>(options.filter)) +
                              " is not one of ZRASF's 0-7");
    }
    if (options.extended && info_.zones.descriptor_extension_bytes == 0) {
        throw InvalidArgument(namespace_text(info_) +
                              ": an extended report needs zone descriptor extensions, and the "
                              "namespace has none (ZDES 0)");
    }
    const std::uint64_t length =
        (bytes ? *bytes : (buffer_offset <= buffer.size() ? buffer.size() - buffer_offset : 0)) /
        wire::kDwordSize * wire::kDwordSize;
    check_report_buffer(info_, buffer, controller_, buffer_offset, length);
    const wire::Sqe command = wire::zone_management_receive_command(
        info_.nsid, slba,
        options.extended ? wire::ZoneReceiveAction::extended_report
                         : wire::ZoneReceiveAction::report,
        static_cast<wire::ZoneReportFilter>(options.filter), options.partial,
        wire::keyed_data_block(buffer.remote(buffer_offset, length)));
    controller_->run_io_command(command, &buffer, between_polls);
    const auto* data = reinterpret_cast<const std::uint8_t*>(buffer.data() + buffer_offset);
    const wire::ZoneReport report = wire::parse_zone_report(
        std::span(data, length), options.extended ? info_.zones.descriptor_extension_bytes : 0);
    ZoneReport out;
    out.matching = report.nr_zones;
    out.zones.reserve(report.zones.size());
    for (const wire::ZoneDescriptor& d : report.zones) {
        out.zones.push_back(to_zone(d));
    }
    return out;
}

std::vector<Zone> Namespace::report_zones(std::uint64_t slba, std::uint64_t max_zones,
                                          ZoneFilter filter, const MemoryRegion* page,
                                          const BetweenPolls& between_polls) {
    require_zoned(info_, "a zone report");
    std::vector<Zone> zones;
    if (max_zones == 0 || slba >= info_.size_lbas) {
        return zones;
    }
    MemoryRegion own;
    if (page == nullptr) {
        // As many descriptors as zones are left to report, up to a page size.
        const std::uint64_t left = info_.zones.zone_count - slba / info_.zones.zone_blocks;
        const std::uint64_t wanted = std::min(max_zones, left);
        const std::uint64_t bytes = std::min<std::uint64_t>(
            {kDefaultPageBytes,
             sizeof(wire::ZoneReportHeader) + wanted * sizeof(wire::ZoneDescriptor),
             std::max<std::uint64_t>(controller_->limits().max_transfer_bytes, kSmallestPage)});
        own = controller_->allocate(static_cast<std::size_t>(bytes));
        page = &own;
    }
    if (page->size() < kSmallestPage) {
        throw InvalidArgument(namespace_text(info_) + ": a report page of " +
                              std::to_string(page->size()) +
                              " bytes holds no zone descriptor (128 bytes at least)");
    }
    const std::uint64_t page_bytes =
        std::min<std::uint64_t>(page->size(), controller_->limits().max_transfer_bytes);
    // Partial reports: each page's count is what it holds; the next starts
    // after the last zone it listed, until one comes back short.
    const ZoneReportOptions options{filter, true, false};
    for (;;) {
        const ZoneReport report =
            report_zones_into(*page, slba, options, 0, page_bytes, between_polls);
        const std::uint64_t room =
            (page_bytes - sizeof(wire::ZoneReportHeader)) / sizeof(wire::ZoneDescriptor);
        for (const Zone& zone : report.zones) {
            if (zones.size() == max_zones) {
                return zones;
            }
            zones.push_back(zone);
        }
        if (report.zones.empty() || report.zones.size() < room || zones.size() == max_zones) {
            return zones;
        }
        slba = report.zones.back().start + info_.zones.zone_blocks;
        if (slba >= info_.size_lbas) {
            return zones;
        }
    }
}

void Namespace::zone_action(ZoneAction action, std::uint64_t zslba, ZoneSelect select,
                            const BetweenPolls& between_polls) {
    require_zoned(info_, "a zone action");
    if (action < ZoneAction::close || action > ZoneAction::offline) {
        throw InvalidArgument(namespace_text(info_) + ": zone action " +
                              std::to_string(static_cast<unsigned>(action)) +
                              " is not one of close, finish, open, reset, offline (1-5)");
    }
    if (select == ZoneSelect::one && zslba >= info_.size_lbas) {
        throw InvalidArgument(namespace_text(info_) + ": LBA " + std::to_string(zslba) +
                              " is outside the namespace (" + std::to_string(info_.size_lbas) +
                              " blocks)");
    }
    controller_->run_io_command(
        wire::zone_management_send_command(info_.nsid, select == ZoneSelect::all ? 0 : zslba,
                                           static_cast<wire::ZoneSendAction>(action),
                                           select == ZoneSelect::all),
        nullptr, between_polls);
}

std::uint64_t Namespace::zone_append(const MemoryRegion& buffer, std::uint64_t zslba,
                                     std::optional<std::uint64_t> blocks,
                                     std::uint64_t buffer_offset, const Protection& protection,
                                     const BetweenPolls& between_polls) {
    const std::uint32_t block_bytes = info_.buffer_block_bytes(protection);
    std::uint64_t count = 0;
    if (blocks) {
        count = *blocks;
    } else if (buffer_offset < buffer.size()) {
        count = (buffer.size() - buffer_offset) / block_bytes;
    }
    if (count == 0) {
        throw InvalidArgument("the buffer holds no whole block after offset " +
                              std::to_string(buffer_offset));
    }
    std::uint64_t lba = 0;
    controller_->run_transfer(
        info_, {Op::zone_append, zslba, count, &buffer, buffer_offset, 0, protection},
        between_polls, &lba);
    return lba;
}

}  // namespace nvmeof
