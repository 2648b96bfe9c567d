// A job's per-I/O path: queue, commit, the completions fio reaps and the idle
// wait in getevents. Setup, reports and close are job_setup.cpp.
#include "job.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

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

}  // namespace

// verify with GPU buffers: fio fills and checks the host mirror; the data moves
// host→GPU before a write is posted and GPU→host after a read completes.
void Job::gpu_copy(io_u* unit, bool to_gpu) {
    auto* host = static_cast<std::byte*>(unit->xfer_buf);
    const auto offset = static_cast<std::size_t>(host - mirror_);
    const int result = to_gpu ? gpu_arena_.copy_from_host(offset, host, unit->xfer_buflen)
                              : gpu_arena_.copy_to_host(offset, host, unit->xfer_buflen);
    if (result != 0 && unit->error == 0) {
        complete_with_error(unit, EIO,
                            std::string(to_gpu ? "cuMemcpyHtoD" : "cuMemcpyDtoH") +
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
    std::string why = describe(status);
    const FileSlot& file = files_[static_cast<std::size_t>(unit->file->fileno)];
    if (unit->ddir == DDIR_WRITE && status.zone_invalid_write() &&
        controllers_[file.controller].controller.reconnect_stats().transfers_retried != 0) {
        // The core re-sends a zoned write held through an outage; the zone's
        // write pointer refuses it if the first reached the controller.
        why +=
            ": if a reconnect re-sent it, the write had reached the controller before the "
            "outage and moved the zone's write pointer (a zoned write is never applied twice)";
    }
    complete_with_error(unit, status.error_number(), why);
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
        case DDIR_READ:
            transfer.op = Op::read;
            break;
        case DDIR_WRITE:
            transfer.op = file.zone_append ? Op::zone_append : Op::write;
            break;
        case DDIR_TRIM:
            transfer.op = Op::deallocate;
            break;
        case DDIR_SYNC:
        case DDIR_DATASYNC:
            transfer.op = Op::flush;
            break;
        default:
            reject(unit, EINVAL, "unsupported I/O direction");
            return false;
    }
    transfer.user_data = reinterpret_cast<std::uintptr_t>(unit);
    if (transfer.op == Op::flush) {
        return true;
    }
    if (file.layout != nullptr) {
        return build_protected_transfer(unit, file, controller, transfer);
    }
    // Block sizes are powers of two: a mask and a shift, no division.
    const std::uint32_t lba_shift = file.ns.lba_shift();
    if (((unit->offset | unit->xfer_buflen) & file.lba_mask) != 0) {
        reject_unaligned(unit, file.ns.lba_size());
        return false;
    }
    transfer.slba = unit->offset >> lba_shift;
    transfer.blocks = unit->xfer_buflen >> lba_shift;
    if (transfer.op == Op::zone_append) {
        transfer.slba -= transfer.slba % file.zone_blocks;  // the zone's start
    }
    if (transfer.op == Op::read || transfer.op == Op::write || transfer.op == Op::zone_append) {
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
    // no GPU mirror, no work for the host on the blocks. Only `unit` and `this` live across the
    // call, so the frame stays small.
    if (unit->ddir <= DDIR_WRITE && file.only_queue != nullptr &&
        ((unit->offset | unit->xfer_buflen) & file.lba_mask) == 0) [[likely]] {
        // Every field set once (DDIR_READ and DDIR_WRITE are Op::read and Op::write).
        const std::uint32_t lba_shift = file.ns.lba_shift();
        const Transfer transfer{
            .op = unit->ddir == DDIR_READ ? Op::read : Op::write,
            .slba = unit->offset >> lba_shift,
            .blocks = unit->xfer_buflen >> lba_shift,
            .memory = file.arena,
            .offset =
                static_cast<std::uint64_t>(static_cast<std::byte*>(unit->xfer_buf) - arena_base_),
            .user_data = reinterpret_cast<std::uintptr_t>(unit),
            .protection = file.protection,
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
    if (unit->ddir == DDIR_TRIM && td_->o.zone_mode == ZONE_MODE_ZBD && file.ns.info().zoned) {
        return trim_as_zone_reset(unit);
    }
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
    std::size_t tries = controller.queue_count;
    if (file.zone_blocks != 0 && (transfer.op == Op::write || transfer.op == Op::zone_append)) {
        // The zone's own queue, and only it: on another a later write could
        // overtake an earlier one and miss the write pointer.
        index = transfer.slba / file.zone_blocks % controller.queue_count;
        tries = 1;
    }
    for (std::size_t tried = 0; tried < tries; ++tried) {
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

void Job::finish_unusual(std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) {
        const Completion& completion = completions_[i];
        auto* unit = reinterpret_cast<io_u*>(static_cast<std::uintptr_t>(completion.user_data));
        if (!completion.status.ok()) {
            fail_unit(unit, completion.status);
        } else if (unit->ddir != DDIR_READ) {
            if (zone_appends_ && unit->ddir == DDIR_WRITE) {
                check_append(unit, completion.append_lba);
            }
        } else if (gpu_verify_) {
            gpu_copy(unit, false);  // after poll() flushed the GPUDirect writes
        } else if (const FileSlot& file = files_[static_cast<std::size_t>(unit->file->fileno)];
                   file.layout != nullptr && file.layout->finishes_reads()) {
            finish_protected_read(unit, file);
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
        if (!slot.controller.keep_connected(&why)) {
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
                if (failed != 0 || finish_every_) [[unlikely]] {
                    finish_unusual(nr_events, n);
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
