// One fio job's connection: controller, namespace, the registered buffer arena
// and the completion bookkeeping. Created in the job (never before fio forks),
// torn down in iomem_free, before fio frees the buffers.
#pragma once

#include <bit>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// The API's parts one by one: nvmeof/nvmeof.hpp brings the wire layout too,
// which the engine does not use.
#include "block_layout.hpp"
#include "nvmeof/controller.hpp"
#include "nvmeof/discovery.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/memory.hpp"
#include "nvmeof/namespace.hpp"
#include "nvmeof/queue.hpp"
#include "option_rules.hpp"
#include "target_spec.hpp"
// After the C++ headers: see fio_headers.hpp.
#include "fio_headers.hpp"

namespace nvmeof::engine {

// Engine options as fio stores them (td->eo). fio overwrites the first
// pointer-sized field with the td pointer while parsing, hence `pad`, and no
// option may have offset 0. The trailing fields are not options: setup() fills
// them in the parent and the forked job inherits them.
// Text options live inside the struct (not on the heap): fio copies this struct
// from job to job with memcpy and frees only the strings it stored itself.
inline constexpr std::size_t kOptionTextSize = 256;  // an NQN is at most 223 bytes
// Files one job may name: what setup() learns per file is kept in fixed-size
// arrays (the probe's reply to fio's parent, the zone facts below).
inline constexpr std::size_t kMaxFilesPerJob = 256;

// What setup() learns of a file's namespace for fio's zone hooks (zoned.hpp).
// Sizes are in fio's file: blocks of the file's layout.
struct ZoneFacts {
    bool zoned = false;
    std::uint32_t max_open_zones = 0;         // 0: no limit
    std::uint32_t block_bytes = 0;            // per block in fio's file
    std::uint32_t metadata_bytes = 0;         // per block; the namespace's format
    std::uint64_t zone_bytes = 0;             // a zone's size
    std::uint64_t zone_append_max_bytes = 0;  // 0: the controller has no Zone Append
};

struct EngineOptions {
    void* pad;
    char trtype[kOptionTextSize];  // "", rdma or tcp (any case): resolve_target
    char traddr[kOptionTextSize];
    char trsvcid[kOptionTextSize];
    char subnqn[kOptionTextSize];
    char nsid[kOptionTextSize];
    char hostnqn[kOptionTextSize];
    char hostid[kOptionTextSize];
    char host_traddr[kOptionTextSize];
    unsigned int nr_io_queues;
    unsigned int connect_timeout_ms;
    unsigned int io_timeout_ms;
    unsigned int keep_alive_ms;
    unsigned int poll_spin_us;  // idle polling before getevents sleeps on the completion channel
    char gpu[kOptionTextSize];  // "", "N" or "rr": I/O buffers in GPU memory
    char info_file[kOptionTextSize];      // "": none; else one JSON line of start-up facts per job
    unsigned int queue_size;              // I/O queue entries asked for; 0: derived from iodepth
    unsigned int reconnect_delay_ms;      // reconnect: see docs/reconnect.md
    unsigned int ctrl_loss_tmo_ms;        // 0: no reconnect
    unsigned int fast_io_fail_tmo_ms;     // 0: off
    char dhchap_secret[kOptionTextSize];  // "", DHHC-1 text or "@file"
    char dhchap_ctrl_secret[kOptionTextSize];  // same; set: bidirectional
    unsigned int in_capsule_writes;            // 1: small writes' data in the command (if allowed)
    // End-to-end protection (SPDK's names), as text: parse_protection_options.
    char pi_act[kOptionTextSize];
    char pi_chk[kOptionTextSize];
    char apptag[kOptionTextSize];
    char apptag_mask[kOptionTextSize];
    char md_per_io_size[kOptionTextSize];
    char digest_enable[kOptionTextSize];  // SPDK's: NVMe/TCP digests (parse_digest_enable)
    std::uint64_t spdk_ignored;           // bit i: kSpdkIgnoredOptions[i] was given
    // SPDK's zone options (zoned.hpp): reset every zone once in setup(); send
    // writes to zoned namespaces as Zone Append.
    unsigned int initial_zone_reset;
    unsigned int zone_append;
    // Learned by setup():
    unsigned int pieces_per_io_u;
    bool files_discovered;  // the files are what a discovery spec listed (their names say all)
    ZoneFacts zones[kMaxFilesPerJob];  // per file, in fio's file order
};

OptionValues option_values(const EngineOptions& options);
// The protection options parsed; SpecError naming the option.
ProtectionOptions protection_options(const EngineOptions& options);
// How fio's buffer holds the blocks of the file `spec` names, a namespace of
// `format`, for this job's block sizes (block_layout.hpp). SpecError when a
// block size fits no layout, or when GPU buffers meet a layout whose bytes the
// host must touch.
FileLayout file_layout(const thread_data* td, const EngineOptions& options, const TargetSpec& spec,
                       const BlockFormat& format);
Options controller_options(const TargetSpec& spec, const EngineOptions& options,
                           std::uint16_t queue_depth);

// One controller of a job: files naming the same target and subsystem (and
// host identity and source) share it. Its queues are a range of Job::queues_.
struct ControllerSlot {
    TargetSpec spec;
    std::uint16_t queue_size_asked = 0;
    Controller controller;
    MemoryRegion arena;  // the job's one buffer arena, registered with this controller
    std::size_t first_queue = 0;
    std::size_t queue_count = 0;
    std::size_t next_queue = 0;      // round-robin within the range
    bool keep_alive_failed = false;  // said once (or: gave up reconnecting)
};

// One fio file: a namespace on one of the job's controllers. Aligned so that
// its size is a power of two (256 bytes): queue() finds an io_u's file with
// one shift of fio's file number, not a multiply.
struct alignas(256) FileSlot {
    Namespace ns;
    std::size_t controller;
    std::uint64_t
        lba_mask;  // lba_size − 1: an I/O's offset and length are aligned when clear of it
    // queue()'s common case, set once the buffers are registered: the
    // controller's only queue (nullptr: several, GPU mirrors to copy, or a
    // layout the host works on) and its registration of the arena.
    IoQueue* only_queue = nullptr;
    const MemoryRegion* arena = nullptr;
    // What the common case's reads and writes ask of the controller: the
    // layout's (FileLayout::common_path: PRACT), else none. Copied into each
    // transfer as the default it replaces would be stored.
    Protection protection{};
    // A namespace with metadata: its layout, protection and the host's part
    // (job_protection.cpp); nullptr on a namespace without metadata.
    const FileLayout* layout = nullptr;
    // A zoned namespace: its zone size in blocks (0: not zoned). A zone's
    // writes all go through one of the controller's queues, so that they
    // reach its write pointer in the order fio issued them.
    std::uint64_t zone_blocks = 0;
    bool zone_append = false;  // zone_append=1: writes go as Zone Append to their zone's start
};
static_assert(std::has_single_bit(sizeof(FileSlot)), "queue() indexes files_ with a shift");

class Job {
  public:
    // One spec per fio file, in fio's file order (file->fileno).
    Job(thread_data* td, const std::vector<TargetSpec>& specs, const EngineOptions& options);

    // Allocates the registered buffer arena fio slices into io_u buffers and
    // registers it with every controller. With gpu=, the arena is GPU memory
    // and what fio gets is its host mirror.
    void* allocate_buffers(std::size_t bytes);
    // Closes every controller: every queue drained, memory deregistered.
    void close() noexcept;

    // Never throws: an error fails the io_u, so fio's hook needs no exception
    // boundary per I/O.
    fio_q_status queue(io_u* unit) noexcept;
    // Posts everything queued since the last commit in one chain per queue.
    int commit() noexcept;
    // Out of line: with nothing deferred (Post::now), commit() is one check.
    [[gnu::noinline]] void post_deferred() noexcept;
    int getevents(unsigned int min, unsigned int max, const timespec* t);
    // The namespace of fio file `f`, for fio's zone hooks in the job (reports,
    // resets): every deferred I/O is posted first, so that a zone command never
    // overtakes a write queued before it.
    Namespace& namespace_for_zone_command(const fio_file* f);
    io_u* event(int index) {
        return reinterpret_cast<io_u*>(
            static_cast<std::uintptr_t>(completions_[static_cast<std::size_t>(index)].user_data));
    }

  private:
    void connect_all(const std::vector<TargetSpec>& specs, const EngineOptions& options);
    void clamp_iodepth();
    // Fills each FileSlot's only_queue and arena (after allocate_buffers).
    void prepare_common_case();
    void announce() const;
    void record_facts(const EngineOptions& options) const;
    // Inlined into queue_general(), its one caller.
    [[gnu::always_inline]] inline bool build_transfer(io_u* unit, const FileSlot& file,
                                                      ControllerSlot& controller,
                                                      Transfer& transfer);
    // build_transfer() on a namespace with metadata (job_protection.cpp):
    // blocks of the file's layout, its protection, and a write's metadata
    // staged or its PI generated.
    [[gnu::noinline]] bool build_protected_transfer(io_u* unit, const FileSlot& file,
                                                    ControllerSlot& controller, Transfer& transfer);
    // A read on such a namespace completed: its PI checked by the host, its
    // data copied out of the bounce area; a mismatch fails it with EILSEQ.
    void finish_protected_read(io_u* unit, const FileSlot& file);
    // Each zoned file's zone size, and with zone_append=1 its writes as Zone
    // Append (zoned.cpp).
    void choose_zone_writes(const EngineOptions& options);
    // A Zone Append succeeded at `written_at`: fio 3.33 cannot move an I/O to
    // where the controller put it, so anywhere but where fio placed it fails.
    void check_append(io_u* unit, std::uint64_t written_at);
    // A trim of a zoned namespace's zone in zonemode=zbd is fio's zone reset
    // (do_io_u_trim, which calls reset_wp), run inline as SPDK's plugin has
    // fio run it (FIO_ASYNCIO_SYNC_TRIM) rather than a Dataset Management.
    fio_q_status trim_as_zone_reset(io_u* unit);
    // The io_u's part of the bounce area (data-only layout).
    std::byte* bounce_of(const io_u* unit) const;
    // Sets each file's layout (files_ and layouts_ in step) and sizes the bounce area.
    void choose_layouts(const std::vector<TargetSpec>& specs, const EngineOptions& options);
    // queue() for anything but an aligned read or write on a one-queue
    // controller's host buffers: queue_general, an exception failing the io_u.
    [[gnu::noinline]] fio_q_status queue_unusual(io_u* unit, const FileSlot& file,
                                                 ControllerSlot& controller) noexcept;
    fio_q_status queue_general(io_u* unit, const FileSlot& file, ControllerSlot& controller);
    // What queue() tells fio about a submission not queued (busy, invalid or
    // failed), refused by `refused_by` (nullptr: the controller's first queue).
    [[gnu::cold, gnu::noinline]] fio_q_status not_queued(
        io_u* unit, SubmitResult result, const IoQueue* refused_by = nullptr) noexcept;
    void complete_with_error(io_u* unit, int error, const std::string& why);
    // Error paths, out of line and cold: the strings they build would cost the
    // per-I/O functions stack frames and cleanups on every call.
    [[gnu::cold, gnu::noinline]] void fail_unit(io_u* unit, const CompletionStatus& status);
    [[gnu::cold, gnu::noinline]] void reject(io_u* unit, int error, const char* why);
    [[gnu::cold, gnu::noinline]] void reject_unaligned(io_u* unit, std::uint32_t lba);
    // completions_[first, first + count) just polled, some failed, GPU
    // mirrors to copy or reads of namespaces with metadata to finish: called
    // only then, since a successful I/O needs nothing
    // (fio cleared error and resid before queue()). Part of the budget's
    // "reap" path (perf/nvmeof_perf/budget.py): fails the failed I/Os, copies
    // GPU mirrors of verified reads back.
    [[gnu::cold, gnu::noinline]] void finish_unusual(std::size_t first, std::size_t count);
    std::size_t in_flight() const;
    // Whether the next answer on some queue can finish an I/O.
    bool completion_near() const;

    void gpu_copy(io_u* unit, bool to_gpu);
    void service_keep_alive() noexcept;
    // fio's latencies (FIO_ASYNCIO_SETS_ISSUE_TIME): the engine stamps an
    // I/O's issue time itself, just before its command is posted, so clat
    // runs from the post to the completion and slat from fio's start to it.
    [[gnu::always_inline]] inline void stamp_before_post(io_u* unit) noexcept;
    [[gnu::always_inline]] inline void issued(io_u* unit) noexcept;
    // Deferred posting: every I/O queued since the last post gets the time of
    // the post that sends it.
    void stamp_deferred() noexcept;
    // Submissions refused busy while a controller reconnects: drive it, and
    // back off briefly instead of letting fio spin on queue().
    void ride_out_outage(ControllerSlot& controller) noexcept;
    void report_reconnects() const;
    // The info_file's "end" record: each controller's outages.
    void record_reconnects() const;

    thread_data* td_;
    int gpu_ = -1;  // GPU ordinal, or -1: host buffers
    std::string gpu_source_note_;
    std::vector<ControllerSlot> controllers_;
    std::vector<FileSlot> files_;      // index: fio's file number
    GpuBuffer gpu_arena_;              // outlives every registration of it (close() order)
    std::byte* arena_base_ = nullptr;  // what io_u buffers are offsets from
    std::byte* mirror_ = nullptr;      // host mirror of the GPU arena (fio's orig_buffer)
    bool gpu_verify_ = false;          // copy through the mirror around each I/O
    // Every completion goes through finish_unusual (GPU mirrors, reads to
    // finish, Zone Appends to check).
    bool finish_every_ = false;
    bool zone_appends_ = false;        // some file's writes go as Zone Append (check_append)
    std::vector<FileLayout> layouts_;  // per file (files_[i].layout points here when it applies)
    // The bounce area, after fio's buffers in the registered arena: one slot
    // per io_u (by io_u->index) for the data-only layout's staging.
    std::uint64_t bounce_offset_ = 0;      // from arena_base_
    std::uint64_t bounce_slot_bytes_ = 0;  // 0: no file stages
    std::size_t bounce_slots_ = 0;
    std::vector<IoQueue> queues_;        // every controller's, in controller order
    std::vector<Controller*> waitable_;  // every controller, for idle waiting
    std::size_t poll_start_ = 0;         // the queue getevents polls first (rotates)
    // Post::now when fio commits after every queue() (iodepth_batch_submit=1):
    // a deferred post would only wait for that commit.
    Post post_ = Post::deferred;
    // fio wants issue times (fio_fill_issue_time: not with gtod_reduce), by post mode.
    bool stamp_now_ = false;
    bool stamp_deferred_ = false;
    std::vector<io_u*> unstamped_;  // queued, not yet posted (Post::deferred); iodepth entries
    std::size_t unstamped_count_ = 0;
    // Filled by poll() in getevents, never past its max (the core keeps the
    // rest); fio takes them by event() (user_data is the io_u).
    std::vector<Completion> completions_;
    std::chrono::microseconds poll_spin_;  // idle polling before sleeping in getevents
    bool keep_alive_ = false;      // keep_alive_ms or ctrl_loss_tmo_ms > 0: serviced from getevents
    std::string end_record_file_;  // info_file, when the job reconnects; "" otherwise
};

}  // namespace nvmeof::engine
