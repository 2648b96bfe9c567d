// The target's command-execution core, independent of verbs: subsystems,
// namespaces, controllers, and every command handler. A transport drives it in
// two steps per capsule:
//   1. plan(): validate the command (flags, queue state, opcode, NSID, SGL form
//      and length, MDTS, LBA range) and say what data must move;
//   2. execute(): run it once the host→controller data is in the buffer, and
//      fill the controller→host data.
// Everything here runs on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auth/dhchap_transaction.hpp"
#include "config.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/protection.hpp"
#include "nvmeof/wire/status.hpp"
#include "stats.hpp"
#include "storage.hpp"
#include "zones.hpp"

namespace nvmeof::target {

using Clock = std::chrono::steady_clock;

struct Namespace {
    std::uint32_t nsid = 0;
    wire::BlockFormat format;  // each block's data, then its metadata, in the store
    std::uint64_t blocks = 0;
    std::unique_ptr<Storage> storage;
    std::unique_ptr<ZoneSet> zones;  // a zoned namespace's; null for the NVM command set's
};

struct Subsystem {
    std::string nqn;
    bool discovery = false;
    std::vector<Namespace> namespaces;  // namespaces[i].nsid == i + 1
    std::vector<std::string> allowed_hosts;

    bool allows(std::string_view hostnqn) const;
    Namespace* find_namespace(std::uint32_t nsid);
    // A zoned namespace here makes its controllers report the I/O command sets
    // (CAP.CSS bit 6, CNS 0x1C, the CSI descriptor, the effects log); without
    // one they answer as they always have.
    bool has_zoned_namespace() const;
};

struct Controller {
    std::uint16_t cntlid = 0;
    Subsystem* subsystem = nullptr;
    std::string hostnqn;
    wire::HostId host_id{};
    std::uint32_t cc = 0;
    std::uint32_t csts = 0;
    std::uint32_t kato_ms = 0;  // 0: keep-alive disabled
    Clock::time_point last_keep_alive{};
    std::vector<bool> io_queue_live;  // index = QID
    unsigned held_async_events = 0;
    std::size_t port_index = 0;       // the --port its admin queue came through (ANA state)
    bool ana_notice_pending = false;  // its port's ANA state changed; not yet reported
    std::string local_address;        // of the admin queue: a wildcard listener's discovery TRADDR
    wire::HostBehaviorSupport host_behavior{};  // as the host last set it: all disabled at first
};

// Per-queue state the transport owns and the core updates.
struct QueueState {
    Transport transport = Transport::rdma;  // which SGL forms its commands may carry
    std::uint16_t qid = 0;                  // from the CM REQ (RDMA) or the Connect command (TCP)
    std::uint16_t cntlid = 0;               // 0 until Connect succeeds
    bool connected = false;
    std::uint16_t sqsize = 0;  // 0's based, from Connect
    std::uint16_t sq_head = 0;
    bool sq_flow_control_disabled = false;
    std::uint32_t in_capsule_capacity = 0;  // bytes of data a capsule may carry
    std::string local_address;   // the address the host reached (numeric), "" when unknown
    std::size_t port_index = 0;  // which --port (0-based) the queue came through
    // DH-HMAC-CHAP: set by Connect for a host with a key; until `authenticated`
    // only Authentication Send/Receive run (anything else: 0x91).
    bool auth_required = false;
    bool authenticated = false;
    std::shared_ptr<auth::ControllerTransaction> auth;
    std::string hostnqn;  // for authentication messages

    wire::QueueKind kind() const { return qid == 0 ? wire::QueueKind::admin : wire::QueueKind::io; }
};

// Where a command's data is: host memory named by a keyed SGL (RDMA READ or
// WRITE), after the SQE in the capsule, or moved by the transport's own PDUs
// (NVMe/TCP: R2T and H2CData to the controller, C2HData to the host).
enum class DataSource : std::uint8_t { none, keyed, in_capsule, transport };

// What plan() decided.
struct DataPlan {
    wire::Status status;  // not ok: answer at once, move no data
    wire::DataDirection direction = wire::DataDirection::none;
    DataSource source = DataSource::none;
    std::uint32_t length = 0;  // bytes to move (at most the SGL length)
    std::uint64_t remote_address = 0;
    std::uint32_t rkey = 0;
    std::uint32_t in_capsule_offset = 0;
    bool minimum_length = false;  // the SGL may be longer than `length` (DSM)
    // How `length` follows from the command, named in the log when the SGL's
    // length differs ("" for a fixed-size structure).
    const char* length_rule = "";
    bool hold = false;      // never answered (Asynchronous Event Request)
    wire::Status injected;  // a fault to return from execute() instead of running
    bool inject = false;
};

struct Completion {
    wire::Status status;
    std::uint32_t dw0 = 0;
    std::uint32_t dw1 = 0;
    std::uint32_t data_length = 0;  // controller→host bytes written to the buffer
};

class CommandCore {
  public:
    // Opens every namespace. Throws UsageError or std::system_error.
    CommandCore(const TargetConfig& config, Stats& stats);
    ~CommandCore();
    CommandCore(const CommandCore&) = delete;
    CommandCore& operator=(const CommandCore&) = delete;

    DataPlan plan(QueueState& queue, const wire::Sqe& sqe, std::size_t in_capsule_bytes);
    // `data` holds plan.length bytes: filled by the transport for
    // host→controller commands, by execute() for controller→host ones.
    Completion execute(QueueState& queue, const wire::Sqe& sqe, const DataPlan& plan,
                       std::span<std::uint8_t> data);
    // The response for a command: SQHD, SQID and CID filled in, errors counted.
    wire::Cqe make_cqe(QueueState& queue, const wire::Sqe& sqe, const Completion& done);

    // The queue is gone. Losing the admin queue deletes the controller; the
    // transport then tears down that controller's I/O queues.
    void queue_disconnected(QueueState& queue);
    // Controllers whose keep-alive timer expired; each is marked fatal and
    // should be torn down by the transport.
    std::vector<std::uint16_t> expired_controllers(Clock::time_point now);
    bool controller_exists(std::uint16_t cntlid) const { return controllers_.contains(cntlid); }
    Controller* find_controller(std::uint16_t cntlid);

    // ANA: every namespace of a subsystem is in group kAnaGroupId; each port has
    // one state for it. A change is counted and reported, by an ANA change
    // notice, to every controller on that port.
    void set_ana_state(std::size_t port_index, wire::AnaState state);
    wire::AnaState ana_state(std::size_t port_index) const { return ana_states_.at(port_index); }
    // The DW0 of an Asynchronous Event Request to complete for this controller
    // now (one of its held requests), if an event waits and a request is held.
    std::optional<std::uint32_t> take_async_event(std::uint16_t cntlid);

    void flush_all();
    const TargetConfig& config() const { return config_; }
    Stats& stats() { return stats_; }
    Subsystem* find_subsystem(std::string_view nqn);
    // Address and port to report in the discovery log.
    void set_listen_address(std::string address, std::uint16_t port);

  private:
    friend class CommandCoreTestAccess;

    DataPlan plan_fabrics(QueueState& queue, const wire::Sqe& sqe, std::size_t in_capsule_bytes);
    DataPlan plan_admin(QueueState& queue, Controller& ctrl, const wire::Sqe& sqe,
                        std::size_t in_capsule_bytes);
    DataPlan plan_io(QueueState& queue, Controller& ctrl, const wire::Sqe& sqe,
                     std::size_t in_capsule_bytes);
    // Checks SGL1 against plan.direction/length and fills the data source;
    // returns false (plan.status set) when the descriptor is refused.
    bool check_data_pointer(const QueueState& queue, const wire::Sqe& sqe,
                            std::size_t in_capsule_bytes, DataPlan& plan) const;

    Completion execute_connect(QueueState& queue, const wire::Sqe& sqe,
                               std::span<const std::uint8_t> data);
    // core_auth.cpp: Authentication Send/Receive.
    DataPlan plan_authentication(QueueState& queue, const wire::Sqe& sqe,
                                 std::size_t in_capsule_bytes);
    Completion execute_authentication(QueueState& queue, const wire::Sqe& sqe,
                                      std::span<std::uint8_t> data);
    // After a successful Connect: asks for authentication when the host has a key.
    void require_authentication(QueueState& queue, const Subsystem& subsystem,
                                std::string_view hostnqn, Completion& done);
    Completion execute_property_get(Controller& ctrl, const wire::Sqe& sqe);
    Completion execute_property_set(Controller& ctrl, const wire::Sqe& sqe);
    Completion execute_admin(Controller& ctrl, const wire::Sqe& sqe, std::span<std::uint8_t> data);
    Completion execute_identify(Controller& ctrl, const wire::Sqe& sqe,
                                std::span<std::uint8_t> data);
    Completion execute_features(Controller& ctrl, const wire::Sqe& sqe,
                                std::span<std::uint8_t> data);
    Completion set_host_behavior(Controller& ctrl, std::span<const std::uint8_t> data);
    Completion execute_get_log_page(Controller& ctrl, const wire::Sqe& sqe,
                                    std::span<std::uint8_t> data);
    Completion execute_io(Controller& ctrl, const wire::Sqe& sqe, std::span<std::uint8_t> data);
    // io_zoned.cpp: a zoned namespace's command; nothing when it is to run as
    // on any namespace, its zone checks passed.
    std::optional<Completion> execute_zoned(Subsystem& subsystem, Namespace& ns,
                                            const wire::Sqe& sqe, std::span<std::uint8_t> data);
    // At start: the zone-* faults put their zones in their states.
    void apply_zone_faults(Namespace& ns);
    // Compare: the stored blocks, read as a Read would (PI checks included),
    // against the host's data; Compare Failure (SCT 2 SC 0x85) where they differ.
    Completion compare(Namespace& ns, const wire::Sqe& sqe, std::span<const std::uint8_t> data);
    // io_protection.cpp: Read, Write and Write Zeroes of a namespace with
    // protection information.
    Completion read_protected(Namespace& ns, const wire::Sqe& sqe, std::span<std::uint8_t> data);
    Completion write_protected(Namespace& ns, const wire::Sqe& sqe, std::span<std::uint8_t> data);
    Completion write_zeroes_protected(Namespace& ns, const wire::Sqe& sqe);
    // Applies the corrupt-* faults to `blocks`, extended blocks from `slba` about to be stored.
    void corrupt_protection(const Namespace& ns, const wire::Sqe& sqe, std::uint64_t slba,
                            std::span<std::byte> blocks);

    std::uint16_t allocate_cntlid();
    std::uint32_t effective_kato_ms(const Controller& ctrl, std::uint32_t requested) const;
    void update_cc(Controller& ctrl, std::uint32_t value);
    void log_fault(const std::string& line);

    TargetConfig config_;
    Stats& stats_;
    std::vector<std::unique_ptr<Subsystem>> subsystems_;  // [0] is discovery
    std::map<std::uint16_t, Controller> controllers_;
    std::uint16_t next_cntlid_ = 1;
    std::uint64_t io_commands_seen_ = 0;
    // Extended blocks built or read for a command whose data crosses the wire
    // without its PI (PRACT); kept to spare an allocation per command.
    std::vector<std::byte> pi_scratch_;
    // The stored blocks a Compare reads, as they would cross the wire.
    std::vector<std::uint8_t> compare_scratch_;
    std::vector<wire::AnaState> ana_states_;  // by port index
    std::uint64_t ana_change_count_ = 1;
    std::string listen_address_ = "127.0.0.1";
    std::uint16_t listen_port_ = 4420;
};

// The Connect Invalid Parameters status with its DW0 (IATTR/IPO).
Completion connect_invalid_parameter(bool in_data, std::uint16_t offset);

}  // namespace nvmeof::target
