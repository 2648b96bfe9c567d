// An NVMe-oF/RDMA controller association: admin queue, I/O queues, memory.
//
//   auto ctrl = nvmeof::Controller::connect({.target = ip, .subsystem_nqn = nqn});
//   auto ns = ctrl.namespace_at(1);
//   auto block = ctrl.allocate(4096);
//   ns.read(block, 0, 1);
//
// No static state: a process may connect, close and fork, then connect again.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvmeof/errors.hpp"
#include "nvmeof/memory.hpp"
#include "nvmeof/namespace.hpp"
#include "nvmeof/options.hpp"
#include "nvmeof/queue.hpp"

namespace nvmeof {

// What was negotiated, for sizing and for a start-up line.
struct Limits {
    std::uint16_t queue_size = 0;    // I/O queue entries (SQSIZE + 1)
    std::uint16_t usable_slots = 0;  // queue_size − 1: commands in flight per queue
    std::uint16_t admin_queue_size = 0;
    std::uint32_t io_queues = 0;
    std::uint64_t mdts_bytes = 0;          // 0 = the controller sets no limit
    std::uint64_t max_transfer_bytes = 0;  // per command: MDTS, capped by the 24-bit keyed SGL
    std::uint32_t ioccsz = 0;              // I/O capsule size, 16-byte units
    // Writes (and compares) of at most this many bytes per command carry their
    // data in the command capsule (no RDMA READ by the target); 0: all keyed.
    std::uint32_t in_capsule_bytes = 0;
    std::uint16_t cntlid = 0;
    std::uint16_t maxcmd = 0;
    std::uint32_t mqes_entries = 0;  // CAP.MQES + 1
    std::uint32_t namespaces = 0;    // Identify NN
    // Identify ONCS: the optional NVM commands the controller serves
    // (wire::kOncsCompare, kOncsDatasetManagement, kOncsWriteZeroes, ...).
    std::uint16_t oncs = 0;
    std::uint16_t kas = 0;            // Identify KAS: keep-alive granularity, 100 ms units
    std::uint32_t kas_ms = 0;         // the same in milliseconds; 0: no keep-alive
    std::uint32_t keep_alive_ms = 0;  // the keep-alive timeout (KATO) sent; 0: off
    std::string queue_size_limit;     // what bound queue_size ("requested", "CAP.MQES", ...)
    std::string source_address;       // local address the connection used
    std::string device_name;          // RDMA device
    std::string target_address;       // "addr:port"
    std::string subsystem_nqn;
    std::string host_nqn;
    std::string host_id;
    std::string host_identity_origin;
    std::string model, serial, firmware;
    // A discovery controller (the well-known discovery NQN, or Identify CNTRLTYPE 2):
    // admin queue only, no I/O queues (see nvmeof/discovery.hpp).
    bool discovery = false;
    // Identify CTRATT bit 15: the controller serves extended LBA formats (PI
    // guard types and storage tags, in Identify CNS 05h); and whether Set
    // Features Host Behavior Support enabled them (LBAFEE), as SPDK and Linux do.
    bool extended_lba_formats = false;
    bool extended_lba_formats_enabled = false;
    // CC.CSS 110b: where CAP.CSS bit 6 is set, the controller runs the I/O
    // command sets (NVM, and zoned namespaces) of combination
    // `command_set_combination` (Identify CNS 0x1C); false: CC.CSS 000b, NVM
    // only.
    bool io_command_sets = false;
    std::uint16_t command_set_combination = 0;
};

// What reconnecting has done so far (Options::ctrl_loss_tmo).
struct ReconnectStats {
    std::uint32_t reconnects = 0;         // outages ended by a reconnect
    std::uint32_t failed_attempts = 0;    // association attempts that failed
    std::uint64_t transfers_retried = 0;  // held in flight and re-sent after a reconnect
    std::uint64_t transfers_failed = 0;   // held, then failed (fast_io_fail_tmo, ctrl_loss_tmo)
    std::uint32_t ana_moves = 0;          // outages begun by an ANA change notice (a planned move)
    std::vector<std::chrono::milliseconds> outages;  // each ended outage, failure to live again
    std::string path;                                // the address in use ("addr:port")
    bool reconnecting = false;                       // in an outage now
    bool lost = false;        // gave up (ctrl_loss_tmo, or limits no longer fit)
    std::string lost_reason;  // why it gave up, once lost
};

class Controller {
  public:
    // Throws ConnectError (cause() and step() say what failed) or InvalidArgument.
    // `cancelled`, when given, is asked on this thread about every 50 ms while
    // the connect waits for the target; once it returns true the connect stops
    // with ConnectError(cancelled), having released what it made without
    // waiting for the target (e.g. Ctrl-C in an interactive caller). It is not
    // kept past this call.
    static Controller connect(const Options& options, std::function<bool()> cancelled = {});

    Controller(Controller&&) noexcept;
    Controller& operator=(Controller&&) noexcept;
    Controller(const Controller&) = delete;
    Controller& operator=(const Controller&) = delete;
    // Closes if still open; never throws and never waits past the timeout.
    ~Controller();

    // I/O queues, shutdown (CC.SHN, CSTS.SHST), admin queue. Idempotent.
    void close() noexcept;
    // False once closed, given up after an outage, or failed with nothing to
    // bring it back: a queue or the keep-alive failed and ctrl_loss_tmo is 0.
    bool is_open() const noexcept;

    const Limits& limits() const;
    // Identify Namespace. Throws Error for a format with metadata or protection
    // information, wire::NvmeError for a refused NSID, InvalidArgument for 0 or
    // an NSID the controller reports no active namespace for.
    Namespace namespace_at(std::uint32_t nsid);

    // Page-aligned, zero-filled, registered host memory.
    MemoryRegion allocate(std::size_t bytes);
    // Registers existing memory (the caller keeps it alive longer than the handle).
    MemoryRegion register_memory(void* address, std::size_t length);
    // Registers CUDA device memory [device_ptr, +bytes) (the owning context must
    // be current on this thread). The range is widened to the 64 KiB GPU pages
    // inside its allocation; dma-buf (ibv_reg_dmabuf_mr) is tried first, then
    // ibv_reg_mr on the device pointer (nvidia_peermem); registration_path()
    // says which. Writes from the region synchronise the context before they are
    // posted, reads into it flush GPUDirect RDMA writes before they are handed
    // back, through `ordering` (default: the CUDA driver's; see GpuOrdering).
    // Throws Error saying why: built without CUDA support, no driver, not device
    // memory, context not current, or both registration paths refused.
    MemoryRegion register_gpu(void* device_ptr, std::size_t bytes,
                              std::shared_ptr<GpuOrdering> ordering = nullptr);

    // Keeps the association up; call it regularly, e.g. whenever you poll an I/O
    // queue (the fio engine does, the blocking Namespace calls do, and
    // KeepAliveThread does from a thread of its own). Two jobs:
    // - Keep-alive (Options::keep_alive_ms): sends a Keep Alive on the admin
    //   queue every half timeout and reaps the answer, without blocking. A
    //   target drops a controller that stays silent for a whole timeout.
    // - Reconnecting (Options::ctrl_loss_tmo): notices a failed queue, tears
    //   everything down, and runs the next association attempt once
    //   reconnect_delay has passed; that attempt blocks for at most the connect
    //   timeout. Call it also while submissions are refused busy
    //   (is_reconnecting()).
    // Returns true while connected or reconnecting (and when neither is
    // configured); false once a Keep Alive failed or went unanswered, the admin
    // queue failed, the controller gave up reconnecting, or it was closed
    // (`why` says which).
    bool keep_connected(std::string* why = nullptr) noexcept;
    bool is_reconnecting() const noexcept;
    const ReconnectStats& reconnect_stats() const;

    // Idle waiting without burning a core: blocks on the I/O queues' completion
    // channel until a completion arrives, the earliest request deadline or the
    // next keep-alive is due, or `until`, whichever comes first. Returns true
    // when completions may be waiting (poll the queues next), false when it woke
    // for time (polling then enforces deadlines) or cannot wait (closed, failed).
    // A system call and a wake-up latency: call it only after polling found
    // nothing for a while (the fio engine spins poll_spin_us first).
    bool wait_for_completions(std::chrono::steady_clock::time_point until) noexcept;

    IoQueue io(std::size_t index = 0);
    std::size_t io_queue_count() const noexcept;
    IoQueue admin();

  private:
    friend bool wait_for_completions(std::span<Controller* const> controllers,
                                     std::chrono::steady_clock::time_point until) noexcept;
    explicit Controller(std::unique_ptr<ControllerImpl> impl);
    std::unique_ptr<ControllerImpl> impl_;
};

// Refuses an operation the controller does not serve (InvalidArgument naming
// the Identify ONCS bit): Compare where ONCS bit 0 is clear. The blocking
// calls check with this; IoQueue::submit does not (the controller answers
// such a command Invalid Command Opcode).
void check_supported(const Limits& limits, Op op);

// Controller::wait_for_completions over several controllers at once (a job
// driving namespaces of several targets): sleeps until any of them has a
// completion, a request deadline or keep-alive is due, or `until`. Null and
// closed controllers are skipped. Same return value as the member.
bool wait_for_completions(std::span<Controller* const> controllers,
                          std::chrono::steady_clock::time_point until) noexcept;

}  // namespace nvmeof
