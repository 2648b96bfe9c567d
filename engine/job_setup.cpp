// A job's setup, its reports and its close: the controllers connected, fio's
// depths fitted to the queues, the buffer arena registered, the facts and
// reconnect figures written. The per-I/O path is job.cpp.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "job.hpp"
#include "job_facts.hpp"
#include "output.hpp"

namespace nvmeof::engine {
namespace {

template <typename T>
void clamp_to(T& value, unsigned int limit) {
    if (value > limit) {
        value = static_cast<T>(limit);
    }
}

}  // namespace

OptionValues option_values(const EngineOptions& o) {
    auto view = [](const char* s) {
        return s != nullptr ? std::string_view(s) : std::string_view();
    };
    return OptionValues{view(o.trtype), view(o.traddr),  view(o.trsvcid), view(o.subnqn),
                        view(o.nsid),   view(o.hostnqn), view(o.hostid),  view(o.host_traddr)};
}

ProtectionOptions protection_options(const EngineOptions& o) {
    return parse_protection_options(
        {o.pi_act, o.pi_chk, o.apptag, o.apptag_mask, o.md_per_io_size});
}

FileLayout file_layout(const thread_data* td, const EngineOptions& options, const TargetSpec& spec,
                       const BlockFormat& format) {
    std::vector<std::uint64_t> sizes;
    for (int d = DDIR_READ; d < DDIR_RWDIR_CNT; ++d) {
        sizes.push_back(td->o.min_bs[d]);
        sizes.push_back(td->o.max_bs[d]);
    }
    const std::string where =
        "namespace " + std::to_string(spec.nsid) + " of " + spec.subsystem_nqn;
    FileLayout layout = choose_layout(format, protection_options(options), sizes, where);
    if (layout.host_work() && parse_gpu_option(options.gpu).enabled) {
        throw SpecError(
            "gpu=" + std::string(options.gpu) + ": " + where + " (" + format_name(format) +
            ") in the " + std::string(layout_name(layout.layout)) + " layout" +
            (layout.generate ? " with pi_act=0" : "") +
            " needs the host to touch each I/O's bytes, which it cannot in GPU "
            "memory (" +
            (layout.pi_options_apply ? "pi_act=1 with " : "") + "a bs that is a multiple of " +
            std::to_string(format.transfer_block_bytes(true)) + " can)");
    }
    return layout;
}

Options controller_options(const TargetSpec& spec, const EngineOptions& options,
                           std::uint16_t queue_depth) {
    Options o;
    o.transport = spec.transport;
    o.target = spec.address;
    o.subsystem_nqn = spec.subsystem_nqn;
    o.port = spec.port;
    o.source = spec.source;
    o.host_nqn = spec.host_nqn;
    o.host_id = spec.host_id;
    o.queue_depth = queue_depth;
    o.io_queues = options.nr_io_queues;  // 1..65534, checked in setup()
    o.timeout = std::chrono::milliseconds(options.connect_timeout_ms);
    o.io_timeout = std::chrono::milliseconds(options.io_timeout_ms);
    o.keep_alive_ms = options.keep_alive_ms;
    o.ctrl_loss_tmo = std::chrono::milliseconds(options.ctrl_loss_tmo_ms);
    o.reconnect_delay = std::chrono::milliseconds(options.reconnect_delay_ms);
    o.fast_io_fail_tmo = std::chrono::milliseconds(options.fast_io_fail_tmo_ms);
    o.dhchap_secret = options.dhchap_secret;
    o.dhchap_ctrl_secret = options.dhchap_ctrl_secret;
    o.in_capsule_writes = options.in_capsule_writes != 0;
    if (spec.transport == Transport::tcp) {  // RDMA has no PDUs to digest
        const DigestChoice digests = parse_digest_enable(options.digest_enable);
        o.header_digest = digests.header;
        o.data_digest = digests.data;
    }
    return o;
}

namespace {

// Slots per queue so that iodepth transfers of `pieces` commands each fit,
// plus the one slot NVMe keeps free. In zonemode=zbd every queue holds the
// whole iodepth: a zone's writes all take one queue (Job::queue_general), and
// a busy queue must not happen there, since fio 3.33 moves the zone's write
// pointer past a write it is told is busy and lets another job write the zone
// before the requeued one.
std::uint16_t wanted_queue_depth(const thread_data* td, const EngineOptions& options) {
    const std::uint64_t queues =
        td->o.zone_mode == ZONE_MODE_ZBD ? 1 : std::max(1u, options.nr_io_queues);
    const std::uint64_t pieces = std::max(1u, options.pieces_per_io_u);
    const std::uint64_t per_queue = (td->o.iodepth * pieces + queues - 1) / queues + 1;
    return static_cast<std::uint16_t>(std::min<std::uint64_t>(per_queue, 0xFFFF));
}

// queue_size when given, else what iodepth needs.
std::uint16_t asked_queue_size(const thread_data* td, const EngineOptions& options) {
    return options.queue_size != 0 ? static_cast<std::uint16_t>(options.queue_size)
                                   : wanted_queue_depth(td, options);
}

// The GPU this job's buffers go to (-1: host memory), checked against the
// visible GPUs; fio's job number picks one for gpu=rr.
int job_gpu(const thread_data* td, const EngineOptions& options) {
    const GpuChoice choice = parse_gpu_option(options.gpu);
    if (!choice.enabled) {
        return -1;
    }
    std::string why;
    if (!gpu_driver_present(&why)) {
        throw SpecError("gpu=" + std::string(options.gpu) + ": " + why);
    }
    const unsigned int job_index = td->thread_number > 0 ? td->thread_number - 1 : 0;
    return gpu_for_job(choice, job_index, gpu_count());
}

// With GPU buffers and no host_traddr: bind to the RDMA device closest to the GPU.
Options job_options(const thread_data* td, const TargetSpec& spec, const EngineOptions& options,
                    int gpu, std::string& note) {
    Options o = controller_options(spec, options, asked_queue_size(td, options));
    if (gpu >= 0 && o.source.empty()) {
        o.source = source_near_gpu(gpu, &note);
    } else if (gpu >= 0) {
        note = "host_traddr given";
    }
    return o;
}

}  // namespace

Job::Job(thread_data* td, const std::vector<TargetSpec>& specs, const EngineOptions& options)
    : td_(td),
      gpu_(job_gpu(td, options)),
      poll_spin_(options.poll_spin_us),
      keep_alive_(options.keep_alive_ms != 0 || options.ctrl_loss_tmo_ms != 0) {
    connect_all(specs, options);
    choose_layouts(specs, options);
    choose_zone_writes(options);
    clamp_iodepth();
    for (ControllerSlot& slot : controllers_) {
        waitable_.push_back(&slot.controller);
    }
    completions_.resize(std::max(1u, td->o.iodepth));
    post_ = td->o.iodepth_batch <= 1 ? Post::now : Post::deferred;
    stamp_now_ = fio_fill_issue_time(td) && post_ == Post::now;
    stamp_deferred_ = fio_fill_issue_time(td) && post_ == Post::deferred;
    if (stamp_deferred_) {
        unstamped_.resize(std::max(1u, td->o.iodepth));
    }
    announce();
    if (options.info_file[0] != '\0') {
        record_facts(options);
        if (options.ctrl_loss_tmo_ms > 0) {
            end_record_file_ = options.info_file;
        }
    }
}

// One controller per distinct (transport, target, port, subsystem, host,
// source), in the order the files first name them; each file's namespace on
// its controller.
void Job::connect_all(const std::vector<TargetSpec>& specs, const EngineOptions& options) {
    controllers_.reserve(specs.size());
    files_.reserve(specs.size());
    for (const TargetSpec& spec : specs) {
        const std::string key = controller_key(spec);
        auto same =
            std::find_if(controllers_.begin(), controllers_.end(),
                         [&](const ControllerSlot& c) { return controller_key(c.spec) == key; });
        if (same == controllers_.end()) {
            std::string note;
            Options o = job_options(td_, spec, options, gpu_, note);
            if (!note.empty()) {
                gpu_source_note_ = note;
            }
            controllers_.push_back(ControllerSlot{.spec = spec,
                                                  .queue_size_asked = o.queue_depth,
                                                  .controller = Controller::connect(o)});
            ControllerSlot& c = controllers_.back();
            c.first_queue = queues_.size();
            c.queue_count = c.controller.io_queue_count();
            for (std::size_t i = 0; i < c.queue_count; ++i) {
                queues_.push_back(c.controller.io(i));
            }
            const Limits& limits = c.controller.limits();
            if (limits.io_queues < options.nr_io_queues) {
                say_note("nvmeof: %s: nr_io_queues=%u: the target granted %u I/O queue(s)\n",
                         td_->o.name, options.nr_io_queues, limits.io_queues);
            }
            same = controllers_.end() - 1;
        }
        const auto index = static_cast<std::size_t>(same - controllers_.begin());
        Namespace ns = controllers_[index].controller.namespace_at(spec.nsid);
        const std::uint64_t lba_mask = ns.lba_size() - 1;
        files_.push_back(FileSlot{ns, index, lba_mask});
    }
}

void Job::choose_layouts(const std::vector<TargetSpec>& specs, const EngineOptions& options) {
    layouts_.reserve(files_.size());  // never reallocated: files_ point into it
    std::uint64_t slot = 0;
    for (std::size_t i = 0; i < files_.size(); ++i) {
        FileSlot& file = files_[i];
        layouts_.push_back(file_layout(td_, options, specs[i], file.ns.format()));
        if (file.ns.format().metadata_bytes != 0) {
            file.layout = &layouts_.back();
        }
        slot = std::max(slot, layouts_.back().bounce_bytes(td_max_bs(td_)));
    }
    constexpr std::uint64_t kSlotAlign = 4096;
    bounce_slot_bytes_ = (slot + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
}

// iodepth I/Os may all go to one file, so each controller's queues must hold
// them all: clamp to what the tightest controller holds.
void Job::clamp_iodepth() {
    const std::uint64_t max_bytes = td_max_bs(td_);
    std::size_t fit = SIZE_MAX;
    std::size_t pieces_most = 1;
    const ControllerSlot* tightest = nullptr;
    for (std::size_t c = 0; c < controllers_.size(); ++c) {
        ControllerSlot& slot = controllers_[c];
        std::size_t pieces = 1;
        for (std::size_t i = 0; i < files_.size(); ++i) {
            const FileSlot& f = files_[i];
            if (f.controller != c) {
                continue;
            }
            const Transfer largest{.op = Op::write,
                                   .slba = 0,
                                   .blocks = max_bytes / layouts_[i].block_bytes,
                                   .protection = layouts_[i].protection};
            pieces = std::max(pieces, queues_[slot.first_queue].pieces(f.ns, largest));
        }
        std::size_t holds = 0;
        for (std::size_t q = slot.first_queue; q < slot.first_queue + slot.queue_count; ++q) {
            // An I/O of more pieces than a queue holds runs alone there, its
            // pieces posted as slots free up.
            holds += queues_[q].capacity() / std::min(pieces, queues_[q].capacity());
        }
        if (holds < fit) {
            fit = holds;
            pieces_most = pieces;
            tightest = &slot;
        }
    }
    if (tightest == nullptr || td_->o.iodepth <= fit) {
        return;
    }
    const Limits& limits = tightest->controller.limits();
    say_info(
        "nvmeof: %s: iodepth %u clamped to %zu: the target granted %u I/O queue(s) of %u "
        "usable slots and each I/O needs %zu command(s)\n",
        td_->o.name, td_->o.iodepth, fit, limits.io_queues, limits.usable_slots, pieces_most);
    const auto depth = static_cast<unsigned int>(fit);
    td_->o.iodepth = depth;
    clamp_to(td_->o.iodepth_low, depth);
    clamp_to(td_->o.iodepth_batch, depth);
    clamp_to(td_->o.iodepth_batch_complete_min, depth);
    clamp_to(td_->o.iodepth_batch_complete_max, depth);
}

// The start-up line, one per file: the transport, and over RDMA the device.
void Job::announce() const {
    for (const FileSlot& f : files_) {
        const ControllerSlot& slot = controllers_[f.controller];
        const Limits& limits = slot.controller.limits();
        const std::string device =
            slot.spec.transport == Transport::rdma ? ", device " + limits.device_name : "";
        say_info(
            "nvmeof: %s: target %s over %s nqn %s ns %u: %llu blocks of %u bytes (%llu MiB); %u "
            "I/O queue(s) of %u entries (%u usable); MDTS %llu bytes; source %s%s\n",
            td_->o.name, limits.target_address.c_str(),
            std::string(transport_name(slot.spec.transport)).c_str(), limits.subsystem_nqn.c_str(),
            f.ns.nsid(), static_cast<unsigned long long>(f.ns.size_lbas()), f.ns.lba_size(),
            static_cast<unsigned long long>(f.ns.info().size_bytes() >> 20), limits.io_queues,
            limits.queue_size, limits.usable_slots,
            static_cast<unsigned long long>(limits.max_transfer_bytes),
            limits.source_address.c_str(), device.c_str());
        if (f.layout != nullptr) {
            say_info("nvmeof: %s: ns %u: %s\n", td_->o.name, f.ns.nsid(),
                     describe_layout(*f.layout).c_str());
        }
    }
}

void Job::record_facts(const EngineOptions& options) const {
    JobFacts facts;
    facts.job = td_->o.name != nullptr ? td_->o.name : "";
    facts.job_number = td_->thread_number;
    facts.pid = static_cast<long>(getpid());
    facts.iodepth = td_->o.iodepth;
    for (const ControllerSlot& slot : controllers_) {
        const Limits& limits = slot.controller.limits();
        ControllerFacts c;
        c.trtype = std::string(transport_name(slot.spec.transport));
        c.traddr = slot.spec.address;
        c.trsvcid = slot.spec.port;
        c.subnqn = limits.subsystem_nqn;
        c.host_nqn = limits.host_nqn;
        c.cntlid = limits.cntlid;
        c.model = limits.model;
        c.serial = limits.serial;
        c.firmware = limits.firmware;
        c.io_queues = limits.io_queues;
        c.io_queues_asked = options.nr_io_queues;
        c.queue_size = limits.queue_size;
        c.queue_size_asked = slot.queue_size_asked;
        c.usable_slots = limits.usable_slots;
        c.mdts_bytes = limits.mdts_bytes;
        c.max_transfer_bytes = limits.max_transfer_bytes;
        c.kas_ms = limits.kas_ms;
        c.keep_alive_ms = options.keep_alive_ms;
        c.source = limits.source_address;
        c.device = limits.device_name;
        facts.controllers.push_back(std::move(c));
    }
    for (std::size_t i = 0; i < files_.size(); ++i) {
        const FileSlot& f = files_[i];
        const fio_file* file =
            td_->files != nullptr && i < td_->o.nr_files ? td_->files[i] : nullptr;
        facts.namespaces.push_back(NamespaceFacts{
            .file = file != nullptr && file->file_name != nullptr ? file->file_name : "",
            .controller = f.controller,
            .nsid = f.ns.nsid(),
            .size_bytes = f.ns.info().size_bytes(),
            .blocks = f.ns.size_lbas(),
            .lba_size = f.ns.lba_size(),
            .metadata_size = f.ns.format().metadata_bytes,
            .pi_type = static_cast<unsigned>(f.ns.format().pi_type),
            .layout = std::string(layout_name(layouts_[i].layout)),
            .block_bytes = layouts_[i].block_bytes,
        });
    }
    append_line(options.info_file, to_json_line(facts));
}

void* Job::allocate_buffers(std::size_t bytes) {
    // Reads the host finishes, and Zone Appends whose LBA is checked.
    zone_appends_ = std::ranges::any_of(files_, [](const FileSlot& f) { return f.zone_append; });
    finish_every_ =
        std::ranges::any_of(layouts_, [](const FileLayout& l) { return l.finishes_reads(); }) ||
        zone_appends_;
    if (gpu_ < 0) {
        // fio's buffers, then the bounce area (if a file stages): allocated
        // (and owned) through the first controller, registered with the others.
        constexpr std::size_t kAlign = 4096;
        bounce_offset_ = (bytes + kAlign - 1) / kAlign * kAlign;
        bounce_slots_ = bounce_slot_bytes_ != 0 ? std::max(1u, td_->o.iodepth) : 0;
        const std::size_t total =
            bounce_slot_bytes_ == 0 ? bytes : bounce_offset_ + bounce_slots_ * bounce_slot_bytes_;
        controllers_.front().arena = controllers_.front().controller.allocate(total);
        arena_base_ = controllers_.front().arena.data();
        for (std::size_t c = 1; c < controllers_.size(); ++c) {
            controllers_[c].arena = controllers_[c].controller.register_memory(arena_base_, total);
        }
        prepare_common_case();
        return arena_base_;
    }
    // GPU arena, registered here; fio's buffers are a host mirror of it, used
    // only to carry verify data (as fio's GPUDirect Storage engine does).
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t rounded = (bytes + page - 1) / page * page;
    gpu_arena_ = GpuBuffer::allocate(gpu_, rounded);
    for (ControllerSlot& slot : controllers_) {
        slot.arena = slot.controller.register_gpu(gpu_arena_.data(), rounded);
    }
    mirror_ = static_cast<std::byte*>(std::aligned_alloc(page, rounded));
    if (mirror_ == nullptr) {
        throw Error("out of memory allocating the " + std::to_string(rounded) +
                    "-byte host mirror");
    }
    std::memset(mirror_, 0, rounded);
    arena_base_ = mirror_;
    gpu_verify_ = td_->o.verify != 0;  // VERIFY_NONE (verify.h is not C++-clean)
    finish_every_ = finish_every_ || gpu_verify_;
    std::string pci;
    try {
        pci = gpu_pci_address(gpu_);
    } catch (const std::exception&) {
        pci = "?";
    }
    const ControllerSlot& first = controllers_.front();
    say_info(
        "nvmeof: %s: I/O buffers in GPU %d (PCI %s): %zu bytes allocated with %s, registered by %s "
        "with "
        "RDMA device %s, source %s (%s)%s\n",
        td_->o.name, gpu_, pci.c_str(), rounded, std::string(gpu_arena_.allocator()).c_str(),
        std::string(first.arena.registration_path()).c_str(),
        first.controller.limits().device_name.c_str(),
        first.controller.limits().source_address.c_str(),
        gpu_source_note_.empty() ? "default route" : gpu_source_note_.c_str(),
        gpu_verify_ ? "; verify data copied through a host mirror" : "");
    prepare_common_case();
    return mirror_;
}

void Job::prepare_common_case() {
    for (FileSlot& file : files_) {
        ControllerSlot& controller = controllers_[file.controller];
        const bool common = controller.queue_count == 1 && !gpu_verify_ &&
                            (file.layout == nullptr || file.layout->common_path()) &&
                            !file.zone_append;
        file.only_queue = common ? &queues_[controller.first_queue] : nullptr;
        file.arena = &controller.arena;
        file.protection = file.layout != nullptr ? file.layout->protection : Protection{};
    }
}

void Job::report_reconnects() const {
    for (const ControllerSlot& slot : controllers_) {
        const ReconnectStats& stats = slot.controller.reconnect_stats();
        if (stats.reconnects == 0 && stats.failed_attempts == 0 && !stats.lost) {
            continue;
        }
        std::string outages;
        for (const auto& outage : stats.outages) {
            outages += (outages.empty() ? "" : ", ") + std::to_string(outage.count()) + " ms";
        }
        say_note(
            "nvmeof: %s: %s: %u reconnects (outages: %s), %u failed attempts, %llu I/Os "
            "retried, %llu I/Os failed by the outage, %u moves on an ANA change notice%s%s\n",
            td_->o.name, slot.spec.subsystem_nqn.c_str(), stats.reconnects,
            outages.empty() ? "none" : outages.c_str(), stats.failed_attempts,
            static_cast<unsigned long long>(stats.transfers_retried),
            static_cast<unsigned long long>(stats.transfers_failed), stats.ana_moves,
            stats.lost ? "; the controller was given up: " : "", stats.lost_reason.c_str());
    }
}

void Job::record_reconnects() const {
    JobEndFacts facts;
    facts.job = td_->o.name != nullptr ? td_->o.name : "";
    facts.job_number = td_->thread_number;
    facts.pid = static_cast<long>(getpid());
    for (const ControllerSlot& slot : controllers_) {
        const ReconnectStats& stats = slot.controller.reconnect_stats();
        ReconnectFacts c;
        c.traddr = slot.spec.address;
        c.trsvcid = slot.spec.port;
        c.subnqn = slot.controller.limits().subsystem_nqn;
        c.path = stats.path;
        c.reconnects = stats.reconnects;
        c.failed_attempts = stats.failed_attempts;
        for (const auto& outage : stats.outages) {
            c.outages_ms.push_back(static_cast<std::uint64_t>(outage.count()));
        }
        c.ios_retried = stats.transfers_retried;
        c.ios_failed = stats.transfers_failed;
        c.ana_moves = stats.ana_moves;
        c.lost = stats.lost;
        c.lost_reason = stats.lost_reason;
        facts.controllers.push_back(std::move(c));
    }
    append_line(end_record_file_, to_json_line(facts));
}

void Job::close() noexcept {
    try {
        report_reconnects();
    } catch (...) {
    }
    if (!end_record_file_.empty()) {
        try {
            record_reconnects();
        } catch (const std::exception& e) {
            say_note("nvmeof: %s: %s\n", td_->o.name, e.what());
        }
    }
    // The first controller's region owns the host arena: deregister the others first.
    for (auto slot = controllers_.rbegin(); slot != controllers_.rend(); ++slot) {
        slot->arena.reset();
    }
    for (ControllerSlot& slot : controllers_) {
        slot.controller.close();
    }
    gpu_arena_.reset();
    std::free(mirror_);
    mirror_ = nullptr;
}

}  // namespace nvmeof::engine
