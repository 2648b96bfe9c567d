#include "job.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "job_facts.hpp"
#include "output.hpp"

namespace nvmeof::engine {
namespace {

// Empty polls of every queue before the job gives its core away once. Only
// idle waits pay for it; it keeps a job that spins in getevents from starving
// a software RDMA device or target sharing the CPU.
constexpr unsigned kIdlePollsBeforeYield = 256;
// Empty polls between two looks at the clock while spinning idle (a clock read
// costs about as much as an empty poll).
constexpr unsigned kIdlePollsPerClockRead = 32;
// Longest single sleep in getevents; the controller wakes sooner for request
// deadlines and keep-alive.
constexpr std::chrono::seconds kLongestIdleSleep{1};

template <typename T>
void clamp_to(T& value, unsigned int limit) {
    if (value > limit) {
        value = static_cast<T>(limit);
    }
}

}  // namespace

OptionValues option_values(const EngineOptions& o) {
    auto view = [](const char* s) { return s != nullptr ? std::string_view(s) : std::string_view(); };
    return OptionValues{view(o.traddr), view(o.trsvcid), view(o.subnqn),    view(o.nsid),
                        view(o.hostnqn), view(o.hostid), view(o.host_traddr)};
}

Options controller_options(const TargetSpec& spec, const EngineOptions& options,
                           std::uint16_t queue_depth) {
    Options o;
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
    return o;
}

namespace {

// Slots per queue so that iodepth transfers of `pieces` commands each fit,
// plus the one slot NVMe keeps free.
std::uint16_t wanted_queue_depth(const thread_data* td, const EngineOptions& options) {
    const std::uint64_t queues = std::max(1u, options.nr_io_queues);
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
Options job_options(const thread_data* td, const TargetSpec& spec, const EngineOptions& options, int gpu,
                    std::string& note) {
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

// One controller per distinct (target, port, subsystem, host, source), in the
// order the files first name them; each file's namespace on its controller.
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
        for (const FileSlot& f : files_) {
            if (f.controller != c) {
                continue;
            }
            Transfer largest{.op = Op::write, .slba = 0, .blocks = max_bytes / f.ns.lba_size()};
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
    say_info("nvmeof: %s: iodepth %u clamped to %zu: the target granted %u I/O queue(s) of %u "
             "usable slots and each I/O needs %zu command(s)\n",
             td_->o.name, td_->o.iodepth, fit, limits.io_queues, limits.usable_slots, pieces_most);
    const auto depth = static_cast<unsigned int>(fit);
    td_->o.iodepth = depth;
    clamp_to(td_->o.iodepth_low, depth);
    clamp_to(td_->o.iodepth_batch, depth);
    clamp_to(td_->o.iodepth_batch_complete_min, depth);
    clamp_to(td_->o.iodepth_batch_complete_max, depth);
}

// The start-up line, one per file.
void Job::announce() const {
    for (const FileSlot& f : files_) {
        const Limits& limits = controllers_[f.controller].controller.limits();
        say_info("nvmeof: %s: target %s nqn %s ns %u: %llu blocks of %u bytes (%llu MiB); %u I/O "
                 "queue(s) of %u entries (%u usable); MDTS %llu bytes; source %s, device %s\n",
                 td_->o.name, limits.target_address.c_str(), limits.subsystem_nqn.c_str(),
                 f.ns.nsid(), static_cast<unsigned long long>(f.ns.size_lbas()), f.ns.lba_size(),
                 static_cast<unsigned long long>(f.ns.info().size_bytes() >> 20), limits.io_queues,
                 limits.queue_size, limits.usable_slots,
                 static_cast<unsigned long long>(limits.max_transfer_bytes),
                 limits.source_address.c_str(), limits.device_name.c_str());
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
        });
    }
    append_line(options.info_file, to_json_line(facts));
}

void* Job::allocate_buffers(std::size_t bytes) {
    if (gpu_ < 0) {
        // Allocated (and owned) through the first controller, registered with the others.
        controllers_.front().arena = controllers_.front().controller.allocate(bytes);
        arena_base_ = controllers_.front().arena.data();
        for (std::size_t c = 1; c < controllers_.size(); ++c) {
            controllers_[c].arena = controllers_[c].controller.register_memory(arena_base_, bytes);
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
        throw Error("out of memory allocating the " + std::to_string(rounded) + "-byte host mirror");
    }
    std::memset(mirror_, 0, rounded);
    arena_base_ = mirror_;
    gpu_verify_ = td_->o.verify != 0;  // VERIFY_NONE (verify.h is not C++-clean)
    std::string pci;
    try {
        pci = gpu_pci_address(gpu_);
    } catch (const std::exception&) {
        pci = "?";
    }
    const ControllerSlot& first = controllers_.front();
    say_info("nvmeof: %s: I/O buffers in GPU %d (PCI %s): %zu bytes allocated with %s, registered by %s with "
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
        const bool common = controller.queue_count == 1 && !gpu_verify_;
        file.only_queue = common ? &queues_[controller.first_queue] : nullptr;
        file.arena = &controller.arena;
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

// verify with GPU buffers: fio fills and checks the host mirror; the data moves
// host→GPU before a write is posted and GPU→host after a read completes.
void Job::gpu_copy(io_u* unit, bool to_gpu) {
    auto* host = static_cast<std::byte*>(unit->xfer_buf);
    const auto offset = static_cast<std::size_t>(host - mirror_);
    const int result = to_gpu ? gpu_arena_.copy_from_host(offset, host, unit->xfer_buflen)
                              : gpu_arena_.copy_to_host(offset, host, unit->xfer_buflen);
    if (result != 0 && unit->error == 0) {
        complete_with_error(unit, EIO, std::string(to_gpu ? "cuMemcpyHtoD" : "cuMemcpyDtoH") +
                                           " failed (CUDA error " + std::to_string(result) + ")");
    }
}

std::size_t Job::in_flight() const {
    std::size_t n = 0;
    for (const IoQueue& q : queues_) {
        n += q.in_flight() + q.held();  // held: re-sent once reconnected
    }
    return n;
}

bool Job::completion_near() const {
    return std::ranges::any_of(queues_, [](const IoQueue& q) { return q.near_completion() != 0; });
}

void Job::fail_unit(io_u* unit, const CompletionStatus& status) {
    complete_with_error(unit, status.error_number(), describe(status));
}

void Job::reject(io_u* unit, int error, const char* why) {
    complete_with_error(unit, error, why);
}

void Job::reject_unaligned(io_u* unit, std::uint32_t lba) {
    complete_with_error(unit, EINVAL,
                        "not aligned to the namespace's " + std::to_string(lba) + "-byte blocks");
}

void Job::complete_with_error(io_u* unit, int error, const std::string& why) {
    unit->error = error;
    unit->resid = unit->xfer_buflen;
    log_err("nvmeof: %s: %s of %llu bytes at offset %llu failed: %s\n", td_->o.name,
            io_ddir_name(unit->ddir), static_cast<unsigned long long>(unit->xfer_buflen),
            static_cast<unsigned long long>(unit->offset), why.c_str());
}

bool Job::build_transfer(io_u* unit, const FileSlot& file, ControllerSlot& controller,
                         Transfer& transfer) {
    switch (unit->ddir) {
        case DDIR_READ: transfer.op = Op::read; break;
        case DDIR_WRITE: transfer.op = Op::write; break;
        case DDIR_TRIM: transfer.op = Op::deallocate; break;
        case DDIR_SYNC:
        case DDIR_DATASYNC: transfer.op = Op::flush; break;
        default:
            reject(unit, EINVAL, "unsupported I/O direction");
            return false;
    }
    transfer.user_data = reinterpret_cast<std::uintptr_t>(unit);
    if (transfer.op == Op::flush) {
        return true;
    }
    // Block sizes are powers of two: a mask and a shift, no division.
    const std::uint32_t lba_shift = file.ns.lba_shift();
    if (((unit->offset | unit->xfer_buflen) & file.lba_mask) != 0) {
        reject_unaligned(unit, file.ns.lba_size());
        return false;
    }
    transfer.slba = unit->offset >> lba_shift;
    transfer.blocks = unit->xfer_buflen >> lba_shift;
    if (transfer.op == Op::read || transfer.op == Op::write) {
        // This controller's registration of the arena; GPU buffers: the same
        // offset in the GPU arena as in the host mirror.
        transfer.memory = &controller.arena;
        transfer.offset =
            static_cast<std::uint64_t>(static_cast<std::byte*>(unit->xfer_buf) - arena_base_);
    }
    return true;
}

fio_q_status Job::queue(io_u* unit) noexcept {
    fio_ro_check(td_, unit);
    const FileSlot& file = files_[static_cast<std::size_t>(unit->file->fileno)];
    // The common case: an aligned read or write, the controller's only queue,
    // no GPU mirror. Only `unit` and `this` live across the call, so the frame
    // stays small.
    if (unit->ddir <= DDIR_WRITE && file.only_queue != nullptr &&
        ((unit->offset | unit->xfer_buflen) & file.lba_mask) == 0) [[likely]] {
        // Every field set once (DDIR_READ and DDIR_WRITE are Op::read and Op::write).
        const std::uint32_t lba_shift = file.ns.lba_shift();
        const Transfer transfer{
            .op = unit->ddir == DDIR_READ ? Op::read : Op::write,
            .slba = unit->offset >> lba_shift,
            .blocks = unit->xfer_buflen >> lba_shift,
            .memory = file.arena,
            .offset = static_cast<std::uint64_t>(static_cast<std::byte*>(unit->xfer_buf) - arena_base_),
            .user_data = reinterpret_cast<std::uintptr_t>(unit),
        };
        stamp_before_post(unit);
        const SubmitResult result = file.only_queue->submit(file.ns, transfer, post_);
        if (result == SubmitResult::queued) [[likely]] {
            issued(unit);
            return FIO_Q_QUEUED;
        }
        return not_queued(unit, result);
    }
    return queue_unusual(unit, file, controllers_[file.controller]);  // rejects what is unaligned
}

fio_q_status Job::queue_unusual(io_u* unit, const FileSlot& file,
                                 ControllerSlot& controller) noexcept {
    try {
        return queue_general(unit, file, controller);
    } catch (const std::exception& error) {
        log_err("nvmeof: %s: queue: %s\n", td_->o.name, error.what());
        unit->error = EIO;
        return FIO_Q_COMPLETED;
    }
}

fio_q_status Job::queue_general(io_u* unit, const FileSlot& file, ControllerSlot& controller) {
    Transfer transfer;
    if (!build_transfer(unit, file, controller, transfer)) {
        return FIO_Q_COMPLETED;
    }
    if (gpu_verify_ && transfer.op == Op::write) {
        gpu_copy(unit, true);
        if (unit->error != 0) {
            return FIO_Q_COMPLETED;
        }
    }
    stamp_before_post(unit);
    // Round robin over the controller's queues, starting after the last one used.
    std::size_t index = controller.next_queue;
    for (std::size_t tried = 0; tried < controller.queue_count; ++tried) {
        IoQueue& q = queues_[controller.first_queue + index];
        if (++index == controller.queue_count) {
            index = 0;
        }
        // Deferred: commit() posts the batch, one doorbell for iodepth_batch I/Os.
        const SubmitResult result = q.submit(file.ns, transfer, post_);
        if (result == SubmitResult::queued) {
            controller.next_queue = index;
            issued(unit);
            return FIO_Q_QUEUED;
        }
        if (result != SubmitResult::busy) {
            controller.next_queue = index;
            return not_queued(unit, result, &q);
        }
    }
    return not_queued(unit, SubmitResult::busy);
}

fio_q_status Job::not_queued(io_u* unit, SubmitResult result, const IoQueue* refused_by) noexcept {
    const FileSlot& file = files_[static_cast<std::size_t>(unit->file->fileno)];
    ControllerSlot& controller = controllers_[file.controller];
    if (result != SubmitResult::busy) {
        // Refused by the queue the controller's common case uses, unless told.
        const IoQueue& q = refused_by != nullptr ? *refused_by : queues_[controller.first_queue];
        try {
            fail_unit(unit, q.last_error());
        } catch (const std::exception&) {
            unit->error = q.last_error().error_number();  // no memory to describe it
        }
    }
    if (controller.controller.is_reconnecting()) [[unlikely]] {
        // busy: fio calls queue() again at once; failed past fast_io_fail_tmo:
        // fail at a bounded rate.
        ride_out_outage(controller);
    }
    return result == SubmitResult::busy ? FIO_Q_BUSY : FIO_Q_COMPLETED;
}

void Job::ride_out_outage(ControllerSlot& controller) noexcept {
    // fio calls queue() again at once when nothing is in flight: the reconnect
    // runs from here then, and the job sleeps until it is due.
    constexpr auto kOutageBackoff = std::chrono::milliseconds(10);
    service_keep_alive();
    if (controller.controller.is_reconnecting()) {
        wait_for_completions(waitable_, std::chrono::steady_clock::now() + kOutageBackoff);
    }
}

int Job::commit() noexcept {
    if (post_ == Post::deferred) {
        post_deferred();
    }
    // fio calls this only with I/Os queued since its last commit (io_u_queued),
    // each of them posted by now.
    io_u_mark_submit(td_, td_->io_u_queued);
    return 0;
}

void Job::stamp_before_post(io_u* unit) noexcept {
    if (stamp_now_) {
        fio_gettime(&unit->issue_time, nullptr);
    }
}

void Job::issued(io_u* unit) noexcept {
    if (stamp_now_) {
        io_u_queued(td_, unit);  // slat: fio's start of the I/O to its post
    } else if (stamp_deferred_ && unstamped_count_ < unstamped_.size()) {
        unstamped_[unstamped_count_++] = unit;
    }
}

void Job::stamp_deferred() noexcept {
    timespec now{};
    fio_gettime(&now, nullptr);
    for (std::size_t i = 0; i < unstamped_count_; ++i) {
        unstamped_[i]->issue_time = now;
        io_u_queued(td_, unstamped_[i]);
    }
    unstamped_count_ = 0;
}

void Job::post_deferred() noexcept {
    if (unstamped_count_ != 0) {
        stamp_deferred();
    }
    for (IoQueue& q : queues_) {
        q.commit();
    }
}

void Job::reap(std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) {
        const Completion& completion = completions_[i];
        auto* unit = reinterpret_cast<io_u*>(static_cast<std::uintptr_t>(completion.user_data));
        if (!completion.status.ok()) {
            fail_unit(unit, completion.status);
        } else if (gpu_verify_ && unit->ddir == DDIR_READ) {
            gpu_copy(unit, false);  // after poll() flushed the GPUDirect writes
        }
    }
}

// Keep Alive rides on fio's polling, as in SPDK's plugin: a job that stops
// polling for longer than half the timeout (a long thinktime) can be dropped.
void Job::service_keep_alive() noexcept {
    if (!keep_alive_) {
        return;
    }
    for (ControllerSlot& slot : controllers_) {
        if (slot.keep_alive_failed) {
            continue;
        }
        std::string why;  // written (allocated) only on failure
        if (!slot.controller.keep_alive(&why)) {
            slot.keep_alive_failed = true;
            log_err("nvmeof: %s: keep-alive (%s): %s\n", td_->o.name,
                    slot.controller.limits().subsystem_nqn.c_str(), why.c_str());
        }
    }
}

int Job::getevents(unsigned int min, unsigned int max, const timespec* t) {
    std::size_t nr_events = 0;  // completions_[0, nr_events) go to fio
    max = std::min<unsigned int>(max, static_cast<unsigned int>(completions_.size()));
    // fio commits before a blocking wait but not before a non-blocking pass;
    // anything still deferred would otherwise never leave (fio's own commit
    // counts them as submitted later).
    if (post_ == Post::deferred) {
        post_deferred();
    }
    service_keep_alive();
    const bool one_pass = t != nullptr && t->tv_sec == 0 && t->tv_nsec == 0;
    using Clock = std::chrono::steady_clock;
    unsigned idle_polls = 0;
    Clock::time_point idle_since{};  // first empty poll of this idle stretch
    while (nr_events < max) {
        std::size_t found = 0;
        // From a different queue each call: with fio's usual max of 1, a
        // fixed first queue would always win and the others wait.
        std::size_t index = poll_start_;
        for (std::size_t polled = 0; polled < queues_.size(); ++polled) {
            IoQueue& q = queues_[index];
            if (++index == queues_.size()) {
                index = 0;
            }
            std::size_t failed = 0;
            const std::size_t n =
                q.poll(std::span(completions_.data() + nr_events, max - nr_events), failed);
            if (n != 0) {
                if (failed != 0 || gpu_verify_) [[unlikely]] {
                    reap(nr_events, n);
                }
                nr_events += n;
                found += n;
                if (nr_events == max) {
                    break;
                }
            }
        }
        if (nr_events >= min || one_pass) {
            break;
        }
        // Nothing in flight can complete: return what there is rather than spin.
        if (found == 0 && in_flight() == 0) {
            break;
        }
        if (found != 0) {
            idle_since = {};
            continue;
        }
        ++idle_polls;
        // Spinning pays only while the next answer can finish an I/O: the
        // pieces of a split I/O before its last are waited for asleep, so a
        // job of split I/Os does not hold a core it may share with the target.
        const bool spin = poll_spin_.count() != 0 && completion_near();
        if (!spin || idle_polls % kIdlePollsPerClockRead == 1) {
            // Spun idle long enough: sleep on the completion channel instead
            // of burning a core while the target takes its time (or is dead).
            const auto now = Clock::now();
            if (spin && idle_since == Clock::time_point{}) {
                idle_since = now;
            } else if (!spin || now - idle_since >= poll_spin_) {
                wait_for_completions(waitable_, now + kLongestIdleSleep);
                service_keep_alive();
                idle_since = {};
                idle_polls = 0;
                continue;
            }
        }
        if (idle_polls >= kIdlePollsBeforeYield) {
            idle_polls = 0;
            service_keep_alive();  // a long wait for the target must not starve its timer
            sched_yield();
        }
    }
    if (++poll_start_ >= queues_.size()) {
        poll_start_ = 0;
    }
    return static_cast<int>(nr_events);
}

}  // namespace nvmeof::engine
