// Zoned namespaces in the engine: the zone facts, the zone options' checks,
// fio's zone hooks and the job's Zone Appends. See zoned.hpp.
#include "zoned.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "probe.hpp"

namespace nvmeof::engine {
namespace {

const ZoneFacts& facts_of(const EngineOptions& options, const fio_file* f) {
    return options.zones[f->fileno];
}

std::string namespace_named(const TargetSpec& spec) {
    return "namespace " + std::to_string(spec.nsid) + " of " + spec.subsystem_nqn;
}

// fio's condition of a zone. A zone without a write pointer reports none
// (all ones); fio wants one inside the zone: a full or read only zone holds
// data up to its capacity, an offline one none that can be read.
zbd_zone_cond fio_condition(ZoneState state) {
    switch (state) {
        case ZoneState::empty:
            return ZBD_ZONE_COND_EMPTY;
        case ZoneState::implicitly_opened:
            return ZBD_ZONE_COND_IMP_OPEN;
        case ZoneState::explicitly_opened:
            return ZBD_ZONE_COND_EXP_OPEN;
        case ZoneState::closed:
            return ZBD_ZONE_COND_CLOSED;
        case ZoneState::read_only:
            return ZBD_ZONE_COND_READONLY;
        case ZoneState::full:
            return ZBD_ZONE_COND_FULL;
        case ZoneState::offline:
            return ZBD_ZONE_COND_OFFLINE;
    }
    throw std::runtime_error("zone state " + std::to_string(static_cast<unsigned>(state)) +
                             " is not one the ZNS specification defines");
}

zbd_zone fio_zone(const Zone& zone, const ZoneFacts& facts) {
    zbd_zone out{};
    out.start = zone.start * facts.block_bytes;
    out.len = facts.zone_bytes;
    out.capacity = zone.capacity * facts.block_bytes;
    const std::uint64_t written_to_capacity = out.start + out.capacity;
    if (zone.type == ZoneType::conventional) {
        out.type = ZBD_ZONE_TYPE_CNV;
        out.cond = ZBD_ZONE_COND_NOT_WP;
        out.wp = written_to_capacity;
        return out;
    }
    out.type = ZBD_ZONE_TYPE_SWR;
    out.cond = fio_condition(zone.state);
    if (zone.write_pointer != kNoWritePointer) {
        out.wp = zone.write_pointer * facts.block_bytes;
    } else {
        out.wp = zone.state == ZoneState::offline ? out.start : written_to_capacity;
    }
    return out;
}

// Runs `work` on the namespace of `f` and returns its reply: on the job's
// own connection once the job has one (resets fio makes while the job runs;
// thread jobs), else on a connection made for this call where RDMA may run
// (fio's parent asks from setup_files, before any job connects).
std::string on_namespace(thread_data* td, const TargetSpec& spec, const fio_file* f,
                         const std::function<std::string(Namespace&)>& work) {
    if (auto* job = static_cast<Job*>(td->io_ops_data)) {
        return work(job->namespace_for_zone_command(f));
    }
    const auto& options = *static_cast<const EngineOptions*>(td->eo);
    return run_rdma_work(td, [&] {
        Options o = controller_options(spec, options, kProbeQueueDepth);
        o.keep_alive_ms = 0;  // one command or a few, then disconnect
        Controller controller = Controller::connect(o);
        Namespace ns = controller.namespace_at(spec.nsid);
        std::string reply = work(ns);
        controller.close();
        return reply;
    });
}

}  // namespace

ZoneFacts zone_facts(const Namespace& ns, const FileLayout& layout) {
    const NamespaceInfo& info = ns.info();
    ZoneFacts facts;
    facts.zoned = info.zoned;
    facts.block_bytes = layout.block_bytes;
    facts.metadata_bytes = ns.format().metadata_bytes;
    if (info.zoned) {
        facts.max_open_zones = info.zones.max_open_zones;
        facts.zone_bytes = info.zones.zone_blocks * layout.block_bytes;
        facts.zone_append_max_bytes = info.zones.zone_append_max_bytes;
    }
    return facts;
}

std::string check_zone_options(const thread_data* td, const EngineOptions& options,
                               const std::vector<TargetSpec>& specs) {
    std::string notes;
    for (std::size_t i = 0; i < specs.size() && i < kMaxFilesPerJob; ++i) {
        const ZoneFacts& facts = options.zones[i];
        const std::string where = namespace_named(specs[i]);
        if (options.initial_zone_reset != 0 && !facts.zoned) {
            notes += (notes.empty() ? "" : "; ") + where + " is not zoned";
        }
        if (options.zone_append == 0) {
            continue;
        }
        const std::string option = "zone_append=1: ";
        if (!facts.zoned) {
            throw SpecError(option + where + " is not zoned: Zone Append needs a zoned namespace");
        }
        if (facts.zone_append_max_bytes == 0) {
            throw SpecError(option + "the controller of " + where +
                            " does not support Zone Append (Commands Supported and Effects of "
                            "the zoned command set)");
        }
        if (facts.metadata_bytes != 0) {
            throw SpecError(
                option + where + " has metadata (" + std::to_string(facts.metadata_bytes) +
                " bytes per block): the engine sends Zone Append only to namespaces without "
                "metadata");
        }
        if (td->o.max_bs[DDIR_WRITE] > facts.zone_append_max_bytes) {
            throw SpecError(option + "a write of " + std::to_string(td->o.max_bs[DDIR_WRITE]) +
                            " bytes is above the Zone Append size limit of " + where + ", " +
                            std::to_string(facts.zone_append_max_bytes) +
                            " bytes (ZASL, or MDTS where ZASL is 0): a Zone Append is never split");
        }
        if (td->o.zone_mode != ZONE_MODE_ZBD) {
            throw SpecError(option +
                            "needs zonemode=zbd: only fio's zone mode places each write at its "
                            "zone's write pointer, in order");
        }
    }
    return notes.empty() ? notes : "initial_zone_reset=1 does nothing where " + notes;
}

void mark_zoned_files(thread_data* td, const EngineOptions& options) {
    for (unsigned int i = 0; td->files != nullptr && i < td->o.nr_files && i < kMaxFilesPerJob;
         ++i) {
        if (options.zones[i].zoned) {
            td->files[i]->filetype = FIO_TYPE_CHAR;
        }
    }
}

zbd_zoned_model zoned_model(const EngineOptions& options, const fio_file* f) {
    return facts_of(options, f).zoned ? ZBD_HOST_MANAGED : ZBD_NONE;
}

unsigned int max_open_zones(const EngineOptions& options, const fio_file* f) {
    return facts_of(options, f).max_open_zones;
}

std::vector<zbd_zone> report_zones(thread_data* td, const TargetSpec& spec, const fio_file* f,
                                   std::uint64_t offset, unsigned int max_zones) {
    const ZoneFacts& facts = facts_of(*static_cast<const EngineOptions*>(td->eo), f);
    const std::string reply = on_namespace(td, spec, f, [&](Namespace& ns) {
        const std::vector<Zone> zones = ns.report_zones(offset / facts.block_bytes, max_zones);
        std::string bytes(zones.size() * sizeof(zbd_zone), '\0');
        for (std::size_t i = 0; i < zones.size(); ++i) {
            const zbd_zone z = fio_zone(zones[i], facts);
            std::memcpy(bytes.data() + i * sizeof z, &z, sizeof z);
        }
        return bytes;
    });
    std::vector<zbd_zone> zones(reply.size() / sizeof(zbd_zone));
    std::memcpy(zones.data(), reply.data(), zones.size() * sizeof(zbd_zone));
    return zones;
}

void reset_zones(thread_data* td, const TargetSpec& spec, const fio_file* f, std::uint64_t offset,
                 std::uint64_t length) {
    const ZoneFacts& facts = facts_of(*static_cast<const EngineOptions*>(td->eo), f);
    if (offset % facts.zone_bytes != 0) {
        throw InvalidArgument("zone reset at byte " + std::to_string(offset) +
                              ", which does not start a zone (zones of " +
                              std::to_string(facts.zone_bytes) + " bytes)");
    }
    const bool whole_namespace = offset == 0 && length >= f->real_file_size;
    on_namespace(td, spec, f, [&](Namespace& ns) {
        if (whole_namespace) {
            ns.zone_action(ZoneAction::reset, 0, ZoneSelect::all);
            return std::string();
        }
        const std::uint64_t zone_blocks = facts.zone_bytes / facts.block_bytes;
        const std::uint64_t end = std::min<std::uint64_t>(offset + length, f->real_file_size);
        for (std::uint64_t at = offset; at < end; at += facts.zone_bytes) {
            const std::uint64_t zslba = at / facts.zone_bytes * zone_blocks;
            try {
                ns.zone_action(ZoneAction::reset, zslba);
            } catch (const std::exception& error) {
                throw std::runtime_error("reset of the zone at byte " + std::to_string(at) +
                                         " (LBA " + std::to_string(zslba) + "): " + error.what());
            }
        }
        return std::string();
    });
}

// --- the job's Zone Appends ---------------------------------------------------

void Job::choose_zone_writes(const EngineOptions& options) {
    for (FileSlot& file : files_) {
        if (file.ns.info().zoned) {
            file.zone_blocks = file.ns.info().zones.zone_blocks;
            file.zone_append = options.zone_append != 0;
        }
    }
}

void Job::check_append(io_u* unit, std::uint64_t written_at) {
    const FileSlot& file = files_[static_cast<std::size_t>(unit->file->fileno)];
    if (!file.zone_append) {
        return;
    }
    const std::uint64_t placed_at = unit->offset >> file.ns.lba_shift();
    if (written_at != placed_at) {
        complete_with_error(
            unit, EIO,
            "Zone Append wrote the blocks at LBA " + std::to_string(written_at) + ", not at LBA " +
                std::to_string(placed_at) +
                " where fio placed them (fio 3.33 cannot move an I/O to where the controller "
                "appended it): was the zone written by something besides this fio run?");
    }
}

fio_q_status Job::trim_as_zone_reset(io_u* unit) {
    if (fio_fill_issue_time(td_)) {
        fio_gettime(&unit->issue_time, nullptr);  // fio leaves it to the engine
    }
    if (do_io_u_trim(td_, unit) == 0) {  // failed: fio's error set, reset_wp said why
        unit->resid = unit->xfer_buflen;
    }
    return FIO_Q_COMPLETED;
}

Namespace& Job::namespace_for_zone_command(const fio_file* f) {
    if (post_ == Post::deferred) {
        post_deferred();
    }
    return files_[f->fileno].ns;
}

}  // namespace nvmeof::engine
