// ControllerImpl: the state behind nvmeof::Controller (internal; the public
// headers declare it opaque), and the host's names around it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/dhchap_crypto.hpp"
#include "host/keep_alive.hpp"
#include "memory/memory_record.hpp"
#include "nvmeof/controller.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/registers.hpp"
#include "transport/connect_deadline.hpp"
#include "transport/host_queue.hpp"
#include "transport/host_transport.hpp"

namespace nvmeof::detail {

// Connect-time scratch memory: Identify data and the Connect data, registered
// once per controller.
inline constexpr std::size_t kScratchIdentifyOffset = 0;
inline constexpr std::size_t kScratchConnectOffset = wire::kIdentifyDataSize;
// DH-HMAC-CHAP messages, both ways (the largest, an ffdhe8192 Reply, is 1168 bytes).
inline constexpr std::size_t kScratchAuthOffset = kScratchConnectOffset + wire::kConnectDataSize;
inline constexpr std::size_t kScratchAuthSize = 4096;
inline constexpr std::size_t kScratchSize = kScratchAuthOffset + kScratchAuthSize;
static_assert(kScratchConnectOffset + wire::kConnectDataSize <= kScratchAuthOffset);

// connecting → live → closing → closed; with Options::ctrl_loss_tmo an outage
// runs live → resetting → waiting → reconnecting → live (or back to waiting
// when an attempt fails), or → lost (ctrl_loss_tmo passed, or the controller
// came back with limits that no longer fit). core/host/reconnect.cpp.
enum class ControllerState : std::uint8_t {
    connecting,
    live,
    resetting,     // tearing every queue down (transfers in flight are held)
    waiting,       // reconnect_delay before the next attempt
    reconnecting,  // an association attempt is running
    lost,          // gave up: held and new transfers fail
    closing,
    closed,
};
const char* controller_state_name(ControllerState state);

// A reconnected controller whose limits no longer hold what was negotiated
// (queue count or size, MDTS, a namespace's size or LBA format): not retried.
class NoLongerFits : public Error {
  public:
    using Error::Error;
};

// What a controller says before an idle wait: its CQs are armed and `fd` reports
// the next completion; or a completion is already there; or it cannot wait.
// sleep_only: reconnecting, nothing to poll; `wake` says when there is work.
enum class IdlePreparation : std::uint8_t { armed, work_waiting, cannot_wait, sleep_only };

// What a Namespace keeps ready for the data path (Namespace::ref()).
NamespaceRef namespace_ref(const NamespaceInfo& info) noexcept;

// A blocking call between two polls (blocking_transfer.cpp): the caller's
// between_polls if it gave one, else a sleep of `nap`, or a yield for 0.
void pause_between_polls(const BetweenPolls& between_polls, std::chrono::microseconds nap);

// zones.cpp: InvalidArgument, naming `what`, unless the namespace is zoned.
void require_zoned(const NamespaceInfo& ns, const char* what);
// A Zone Append's rules in words (check_transfer): a zoned namespace whose
// controller supports it, `zslba` starting a zone, the blocks within the
// Zone Append limit (never split).
void check_zone_append(const NamespaceInfo& ns, std::uint64_t zslba, std::uint64_t blocks,
                       std::uint32_t block_bytes);

}  // namespace nvmeof::detail

namespace nvmeof {

// The opaque ControllerImpl of the public headers (Controller, Namespace).
class ControllerImpl final : public detail::QueueFailureListener {
  public:
    explicit ControllerImpl(const Options& options);
    ~ControllerImpl();
    ControllerImpl(const ControllerImpl&) = delete;
    ControllerImpl& operator=(const ControllerImpl&) = delete;

    // The whole bring-up (§9.1); throws ConnectError. `cancelled`: see
    // Controller::connect.
    void connect(std::function<bool()> cancelled);
    void close() noexcept;
    bool open() const noexcept { return state_ == detail::ControllerState::live; }
    // Controller::is_open: live, and not failed for good. With no reconnect
    // (ctrl_loss_tmo 0) a failed queue or keep-alive ends the association
    // though the state stays live (close() still has to tear it down).
    bool usable() const noexcept { return open() && (reconnect_enabled() || !target_lost()); }
    void require_open(const char* what) const;

    NamespaceInfo identify_namespace(std::uint32_t nsid);
    MemoryRegion register_region(void* address, std::size_t length, void* owned);
    // Controller::allocate: page-aligned, zero-filled, registered.
    MemoryRegion allocate(std::size_t bytes);
    // The registration itself is core/gpu's (gpu/gpu_registration.hpp).
    MemoryRegion register_gpu(void* device_ptr, std::size_t bytes,
                              std::shared_ptr<GpuOrdering> ordering);
    // The blocking calls' loop (blocking_transfer.cpp); throws on failure,
    // but for a Compare the controller found different (Compare Failure): false.
    // `append_lba`: where a Zone Append's written LBA goes.
    bool run_transfer(const NamespaceInfo& ns, const Transfer& transfer,
                      const BetweenPolls& between_polls = {}, std::uint64_t* append_lba = nullptr);
    // A low-level I/O command (zone management) on an I/O queue with a free
    // command ID, waited for as run_transfer waits; throws wire::NvmeError
    // for an error status, TransportError when its queue failed (low-level
    // commands are not held through a reconnect). `data_owner`: the memory
    // its keyed SGL reaches (zones.cpp).
    Response run_io_command(const wire::Sqe& command, const MemoryRegion* data_owner,
                            const BetweenPolls& between_polls);
    // A blocking call's start: waits a reconnect out (or to its end), then
    // requires the controller open (blocking_transfer.cpp).
    void wait_out_outage(const BetweenPolls& between_polls);

    const Limits& limits() const { return limits_; }
    detail::HostQueue& io(std::size_t index);
    std::size_t io_count() const { return io_.size(); }
    detail::HostQueue& admin() { return *admin_; }
    // See Controller::keep_alive.
    bool keep_connected(std::string* why) noexcept;
    // Idle waiting (nvmeof::wait_for_completions): arms every I/O queue's CQ
    // and lowers `wake` to the earliest request deadline and keep-alive time.
    detail::IdlePreparation prepare_idle_wait(std::chrono::steady_clock::time_point& wake,
                                              int& fd) noexcept;
    // Takes and acknowledges every completion event; true if there was one.
    bool take_wakeups() noexcept;
    bool reconnecting() const noexcept {
        return state_ == detail::ControllerState::resetting ||
               state_ == detail::ControllerState::waiting ||
               state_ == detail::ControllerState::reconnecting;
    }
    const ReconnectStats& reconnect_stats() const noexcept { return reconnect_stats_; }
    // A queue failed, seen wherever (a poll, a post, a deadline): a live
    // controller that reconnects starts its outage now (reconnect.cpp), so a
    // caller refused busy drives the reconnect instead of retrying forever.
    void queue_failed(detail::HostQueue& queue) noexcept override;

  private:
    using Clock = std::chrono::steady_clock;
    // One association (§9.1): admin queue Connect, then (authentication goes
    // here, right after the admin Connect), enable, Identify Controller, I/O
    // queues. The first connect and every reconnect run it; the admin queue
    // exists (created, or reopened on the path in use) when it starts.
    void associate();
    bool associating() const noexcept {
        return state_ == detail::ControllerState::connecting ||
               state_ == detail::ControllerState::reconnecting;
    }
    NamespaceInfo read_namespace(std::uint32_t nsid);

    // zoned_identify.cpp: I/O command sets and zoned namespaces.
    // Where CC.CSS is 110b: the I/O command set combination holding NVM and
    // ZNS (Identify CNS 0x1C), selected if it is not index 0.
    void select_command_sets();
    // The CSI of namespace `nsid` (its identification descriptors).
    std::uint8_t namespace_command_set(std::uint32_t nsid);
    // Identify CNS 0x05 of CSI 2, and the controller's Zone Append limit.
    ZonedInfo read_zoned_namespace(std::uint32_t nsid, const wire::IdentifyNamespace& id,
                                   const NamespaceInfo& info);
    // ZASL (CNS 0x06 of CSI 2) in bytes, 0 where Zone Append is not supported
    // (the CSI 2 Commands Supported and Effects log); read once per association.
    std::uint64_t zone_append_limit();

    // reconnect.cpp
    bool reconnect_enabled() const noexcept;
    // Notices a failure, runs the timers and the next attempt; false once lost.
    bool service_reconnect(Clock::time_point now, std::string* why) noexcept;
    // `delay`: before the first attempt; reconnect_delay when not given.
    void begin_outage(Clock::time_point now, const std::string& why,
                      std::optional<std::chrono::milliseconds> delay = std::nullopt) noexcept;
    void tear_down_queues() noexcept;
    void attempt_reconnect(Clock::time_point now) noexcept;
    void reassociate(Clock::time_point now);
    // The admin queue reopened to peer_ within `deadline` (a reconnect, a path
    // move); throws ConnectError, also when the path is on another RDMA device
    // than the controller's memory.
    void reopen_admin_queue(const detail::ConnectDeadline& deadline);
    void check_still_fits(const Limits& before, const std::vector<NamespaceInfo>& namespaces);
    void give_up(const std::string& why) noexcept;

    // ana.cpp: asymmetric namespace access.
    bool ana_in_use() const noexcept;
    // Reads the ANA log page; the path's state is the worst of the groups
    // holding the namespaces in use. Throws ConnectError or Error.
    wire::AnaState read_ana_state();
    std::string ana_text() const;  // "ADDR:PORT is ANA STATE"
    // The first connect: the paths in order, the first optimized one kept,
    // else the first non-optimized; a path that cannot connect is skipped.
    void connect_preferred_path();
    void move_admin_queue_to(std::size_t path_index);
    // A reconnect: throws ConnectError when the path cannot reach the namespaces.
    void check_path_usable();
    void arm_async_event() noexcept;
    void service_async_event(Clock::time_point now) noexcept;
    void transition(detail::ControllerState to, const std::string& why) noexcept;
    std::string failure_text() const;
    std::string name() const;
    // MemoryRecord::retire_sends: every I/O queue's SENDs retired (a deregistration follows).
    static void retire_sends(void* controller) noexcept;
    // Remembers a registered record (closed with the controller) and hands it out.
    MemoryRegion track(std::shared_ptr<MemoryRecord> record);
    Response execute(detail::HostQueue& queue, const wire::Sqe& command, const std::string& step);
    Response execute_ok(detail::HostQueue& queue, const wire::Sqe& command,
                        const std::string& step);
    std::uint64_t property_get(wire::Property property, const std::string& step);
    void property_set(wire::Property property, std::uint64_t value, const std::string& step);
    std::uint16_t fabrics_connect(detail::HostQueue& queue, std::uint16_t qid, std::uint16_t size,
                                  std::uint16_t cntlid);
    // DH-HMAC-CHAP on a queue whose Connect asked for it (host/authentication.cpp).
    void load_dhchap_secrets();
    void authenticate(detail::HostQueue& queue, std::uint16_t qid);
    void auth_send(detail::HostQueue& queue, const wire::Bytes& message, const std::string& step);
    wire::Bytes auth_receive(detail::HostQueue& queue, const std::string& step);
    void enable();
    void identify_controller();
    void enable_extended_lba_formats();
    void check_keep_alive_granularity() const;
    void create_io_queues();
    void shutdown() noexcept;
    // A queue failed (timeout, WC error, lost connection) or keep-alive did: the
    // target is dead or stalled, so close() waits for nothing from it.
    bool target_lost() const noexcept;
    std::chrono::milliseconds io_request_timeout() const;
    wire::RemoteBuffer scratch(std::size_t offset, std::size_t length) const;
    void validate_options() const;

    Options options_;
    HostIdentity identity_;
    std::vector<detail::PeerAddress> paths_;  // Options::target's addresses, in order
    std::size_t path_ = 0;                    // the one in use
    detail::PeerAddress peer_;                // paths_[path_]
    Limits limits_;
    detail::ControllerState state_ = detail::ControllerState::connecting;
    detail::ConnectDeadline deadline_;  // the whole connect (Options::timeout)
    bool enabled_ = false;
    wire::Capabilities cap_;

    // Declaration order = creation order; close() tears down explicitly.
    std::unique_ptr<detail::HostTransport> transport_;  // its resources outlive the queues'
    std::optional<auth::Secret> dhchap_secret_;
    std::optional<auth::Secret> dhchap_ctrl_secret_;
    std::uint16_t auth_transaction_id_ = 0;
    std::unique_ptr<std::byte[]> scratch_;
    MemoryRecord scratch_memory_;  // scratch_, registered (not a caller's: never tracked)
    std::unique_ptr<detail::HostQueue> admin_;
    std::vector<std::unique_ptr<detail::HostQueue>> io_;
    std::vector<std::weak_ptr<MemoryRecord>> memory_;
    // With Options::keep_alive_ms; before the admin queue goes.
    std::optional<detail::KeepAlive> keep_alive_;
    std::optional<Request> async_event_;  // the Asynchronous Event Request outstanding (ANA)
    bool ana_reporting_ = false;          // Identify CMIC bit 3
    bool extended_lba_formats_ = false;   // Identify CTRATT bit 15: guard types in CNS 0x05
    bool io_command_sets_ = false;        // CC.CSS 110b (CAP.CSS bit 6)
    std::uint8_t lpa_ = 0;                // Identify LPA
    // ZASL in bytes (0: MDTS), or unsupported; per association.
    std::optional<std::uint64_t> zone_append_limit_;
    bool zone_append_supported_ = false;
    wire::AnaState ana_state_ = wire::AnaState::optimized;  // of the path in use
    std::uint64_t ana_change_count_ = 0;

    // Reconnecting (Options::ctrl_loss_tmo).
    std::vector<NamespaceInfo> namespaces_;  // identified so far: re-checked after a reconnect
    ReconnectStats reconnect_stats_;
    Clock::time_point outage_start_{};
    Clock::time_point next_attempt_{};
    Clock::time_point fast_fail_at_ = Clock::time_point::max();
    Clock::time_point lost_at_{};
    bool fast_failed_ = false;
};

}  // namespace nvmeof
