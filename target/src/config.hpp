// nvmeof-target configuration: the command line of docs/target-cli.md parsed
// into plain values. Parsing never touches the network or the disk.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/dhchap_crypto.hpp"
#include "nvmeof/wire/ana.hpp"
#include "nvmeof/wire/protection.hpp"
#include "nvmeof/wire/status.hpp"

namespace nvmeof::target {

// A bad command-line argument; what() is the one line printed after
// "nvmeof-target: ", and the process exits with kUsageExitCode.
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

inline constexpr int kUsageExitCode = 2;
inline constexpr std::uint32_t kDefaultLbaSize = 512;
inline constexpr std::uint64_t kMaxPorts = 64;        // --port given at most this often
inline constexpr std::uint64_t kMaxDelayMs = 600000;  // the faults' delays: ten minutes at most
// reorder-io: how long a held command waits for a later one before it runs anyway.
inline constexpr std::uint32_t kReorderHoldMs = 5;

// A zoned namespace (the Zoned Namespace command set; RAM only, no metadata):
// its zones, their capacity and the open and active resource limits.
struct ZonedConfig {
    std::uint64_t zone_bytes = 0;      // ZSZE × LBA size; SIZE is a whole number of zones
    std::uint64_t capacity_bytes = 0;  // ZCAP × LBA size of each sequential zone (≤ zone_bytes)
    std::optional<std::uint32_t> max_open;    // none: no limit
    std::optional<std::uint32_t> max_active;  // none: no limit
    std::uint32_t conventional = 0;           // the first zones take writes anywhere
};

struct NamespaceConfig {
    enum class Backing : std::uint8_t { ram, file };
    Backing backing = Backing::ram;
    // Data capacity (blocks × lba_size) of RAM, or of a file created anew (0: unknown); the
    // store holds each block's metadata too.
    std::uint64_t size_bytes = 0;
    std::string path;  // file backing only
    std::uint32_t lba_size = kDefaultLbaSize;
    // Metadata interleaved after each block's data (an extended LBA), and the end-to-end
    // protection information in it.
    std::uint32_t metadata_size = 0;
    wire::PiType pi_type = wire::PiType::none;
    wire::PiGuard pi_guard = wire::PiGuard::crc16;
    bool pi_first = false;
    std::uint8_t storage_tag_bits = 0;  // STS; every storage tag bit is checked (LBSTM all ones)
    std::optional<ZonedConfig> zoned;

    wire::BlockFormat block_format() const {
        return {lba_size, metadata_size, pi_type, pi_guard, pi_first, storage_tag_bits};
    }
    // Bytes the backing store holds for size_bytes of data.
    std::uint64_t store_bytes() const {
        return size_bytes / lba_size * block_format().extended_bytes();
    }
};

struct SubsystemConfig {
    std::string nqn;
    std::vector<NamespaceConfig> namespaces;  // NSID = index + 1
    std::vector<std::string> allowed_hosts;   // empty: any host
};

// Negotiation limits (all settable on the command line).
struct Limits {
    std::uint8_t mdts = 5;                 // Identify MDTS: 2^5 × 4 KiB = 128 KiB
    std::uint16_t mqes = 127;              // CAP.MQES, 0's based
    std::uint16_t maxcmd = 0;              // Identify MAXCMD; 0 here means MQES + 1
    std::optional<std::uint16_t> crqsize;  // forced CM REP CRQSIZE
    std::uint32_t ioccsz = 260;            // 16-byte units: 64-byte SQE + 4 KiB in-capsule data
    std::uint16_t max_io_queues = 8;
    std::uint16_t kas = 10;  // keep-alive granularity, 100 ms units
    // ZASL of zoned namespaces: the largest Zone Append, 2^zasl × 4 KiB; 0: MDTS.
    std::uint8_t zasl = 0;

    std::uint16_t effective_maxcmd() const {
        return maxcmd != 0 ? maxcmd : static_cast<std::uint16_t>(mqes + 1u);
    }
    // Largest data transfer of one command in bytes (MDTS 0 = no limit: the
    // 24-bit keyed SGL length bounds it then).
    std::uint32_t max_transfer_bytes() const;
    // Largest Zone Append in bytes: 2^zasl pages, or the largest transfer.
    std::uint32_t zone_append_limit_bytes() const;
};

// NVMe/TCP's own settings (--transport tcp only).
struct TcpSettings {
    // ICResp MAXH2CDATA: the most data one H2CData PDU may carry; a host splits
    // an R2T's data into PDUs of at most this.
    std::uint32_t maxh2cdata = 128 * 1024;
    std::uint32_t c2h_pdu_bytes = 64 * 1024;  // the most data one C2HData PDU carries
    // SUCCESS on a read's last C2HData instead of a CapsuleResp, where the
    // queue has SQ flow control disabled (as nvmet); false: always a CapsuleResp.
    bool c2h_success = true;
};
inline constexpr std::uint32_t kTcpMaxPduData = 16 * 1024 * 1024;  // those two at most

struct FailIoFault {
    std::uint64_t nth = 0;  // 1-based over all I/O queues
    wire::Status status;
};
struct FailLbaFault {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    wire::Status status;
};

// corrupt-guard/-apptag/-reftag/-storage-tag=LBA: every write that stores block LBA of a
// namespace with protection information stores it with that PI field altered.
struct CorruptPiFault {
    wire::PiCheck field = wire::PiCheck::guard;
    std::uint64_t lba = 0;
};

// zone-offline/-read-only/-full=LBA: at start, the zone holding block LBA of
// every zoned namespace is put in that state.
struct ZoneFault {
    enum class Kind : std::uint8_t { offline, read_only, full };
    Kind kind = Kind::offline;
    std::uint64_t lba = 0;
};

struct FaultConfig {
    std::optional<std::uint16_t> reject_connect;  // NVMe/RDMA CM reject STS
    std::optional<wire::Status> connect_status;
    std::vector<FailIoFault> fail_io;
    std::vector<FailLbaFault> fail_lba;
    std::vector<CorruptPiFault> corrupt_pi;
    // skip-pi-checks=LBA: a Read of block LBA returns it without the PRCHK
    // checks, as a controller that does not check would (the host's own check
    // is then what finds a corrupted block).
    std::vector<std::uint64_t> skip_pi_checks;
    std::vector<ZoneFault> zone_faults;
    std::optional<std::uint64_t> drop_after;
    std::optional<std::uint32_t> delay_ms;
    std::optional<std::uint64_t> stop_answering_after;
    std::optional<std::uint64_t> ignore_io;  // the Nth I/O command is never answered
    // drop-after-run=N: the Nth I/O command runs, its answer is never sent,
    // the commands received after it never run, and every connection is
    // dropped (a controller that ran a command and lost its connection
    // before answering).
    std::optional<std::uint64_t> drop_after_run;
    // reorder-io=N (NVMe/RDMA): every Nth I/O command of a queue is held back
    // and run once a command that arrived after it on that queue has
    // finished (or kReorderHoldMs later): the two run against their order
    // of arrival.
    std::optional<std::uint64_t> reorder_io;
    // outage-after=N:MS: after N commands, every connection dropped and no
    // listener for MS ms (a target restart without restarting the process).
    struct Outage {
        std::uint64_t after = 0;
        std::uint32_t ms = 0;
    };
    std::vector<Outage> outages;  // in the order given; each fires once
    // port-down-after=N:INDEX: after N commands, the INDEXth --port (0-based)
    // stops listening for good and its connections are dropped (a path lost).
    struct PortDown {
        std::uint64_t after = 0;
        std::size_t port_index = 0;
    };
    std::vector<PortDown> ports_down;
    // ana-change-after=N:INDEX:STATE: after N commands, the INDEXth --port's ANA
    // state becomes STATE (an ANA change notice to its controllers).
    struct AnaChange {
        std::uint64_t after = 0;
        std::size_t port_index = 0;
        wire::AnaState state = wire::AnaState::optimized;
    };
    std::vector<AnaChange> ana_changes;  // in the order given; each fires once

    // NVMe/TCP faults (--transport tcp only), for a host's error handling.
    struct Tcp {
        // reset-after=N: after the Nth command (counted over all queues, as
        // drop-after), the connection it came on is reset (RST).
        std::vector<std::uint64_t> reset_after;
        // What a fault does to the PDUs the target sends for one I/O command.
        enum class Action : std::uint8_t {
            reset_mid_transfer,  // reset-mid-transfer=N: its data cut off by a RST
            short_stall,         // short-pdu=N[:stall]: its first PDU cut short, then silence
            short_close,         // short-pdu=N:close: the same, then the connection closed
            corrupt_type,        // corrupt-pdu=N:type: its first PDU with PDU-Type 0xFF
            corrupt_hlen,        // corrupt-pdu=N:hlen: ... with HLEN one too large
            corrupt_hdgst,       // corrupt-pdu=N:hdgst: ... with a wrong header digest
            corrupt_ddgst,       // corrupt-pdu=N:ddgst: its first C2HData with a wrong DDGST
        };
        struct CommandFault {
            std::uint64_t nth = 0;  // the Nth I/O command, 1-based over all I/O queues
            Action action = Action::reset_mid_transfer;
        };
        std::vector<CommandFault> commands;         // at most one per I/O command
        std::optional<std::uint32_t> r2t_delay_ms;  // r2t-delay-ms=D: every R2T sent D ms late

        bool any() const { return !reset_after.empty() || !commands.empty() || r2t_delay_ms; }
    };
    Tcp tcp;
};

// DH-HMAC-CHAP: hosts with a key must authenticate every queue before any
// other command; the controller key (optional) answers a host that asks the
// controller to prove itself.
struct DhchapHostKeys {
    std::optional<auth::Secret> host_key;
    std::optional<auth::Secret> controller_key;
};
struct DhchapConfig {
    std::map<std::string, DhchapHostKeys, std::less<>> hosts;  // by host NQN
    // Preference order; the first one the host offers is chosen.
    std::vector<wire::DhchapHash> hashes{std::begin(wire::kAllDhchapHashes),
                                         std::end(wire::kAllDhchapHashes)};
    std::vector<wire::DhGroup> dh_groups{std::begin(wire::kAllDhGroups),
                                         std::end(wire::kAllDhGroups)};
};

// The fabric the target serves: NVMe/RDMA (rdma-core verbs and RDMA-CM) or
// NVMe/TCP (plain sockets).
enum class Transport : std::uint8_t { rdma, tcp };

struct TargetConfig {
    Transport transport = Transport::rdma;
    std::string listen_address = "127.0.0.1";
    std::uint16_t port = 4420;
    std::vector<std::uint16_t> more_ports;  // --port repeated: the same subsystems on each
    // --ana-state INDEX:STATE: a port's ANA state at start (optimized otherwise).
    std::vector<std::pair<std::size_t, wire::AnaState>> ana_states;
    std::vector<SubsystemConfig> subsystems;
    Limits limits;
    TcpSettings tcp;
    FaultConfig faults;
    DhchapConfig dhchap;
    std::string stats_path;
};

enum class ParseOutcome : std::uint8_t { run, help };

// Parses argv (without argv[0]). Throws UsageError naming the bad argument.
ParseOutcome parse_command_line(const std::vector<std::string_view>& args, TargetConfig& config);

std::string_view help_text();

// "4K", "64M", "1G", "4096" → bytes. Throws UsageError.
std::uint64_t parse_size(std::string_view text, std::string_view what);
// TEXT in quotes, for the usage errors.
std::string quoted(std::string_view text);
// One --namespace SPEC (target/src/namespace_spec.cpp); UsageError naming what is wrong.
NamespaceConfig parse_namespace(std::string_view spec);
// Decimal or 0x hex. Throws UsageError when not a number or above max.
std::uint64_t parse_number(std::string_view text, std::string_view what, std::uint64_t max);
// "SCT/SC" → a status with DNR set.
wire::Status parse_status(std::string_view text, std::string_view what);
// TEXT split at the first SEPARATOR; the second part is empty when there is none.
std::pair<std::string_view, std::string_view> split_once(std::string_view text, char separator);
// "INDEX:STATE" of --ana-state and the ana-change-after fault.
std::pair<std::size_t, wire::AnaState> parse_port_ana_state(std::string_view text,
                                                            const std::string& what);
// One --fault SPEC added to faults (target/src/fault_spec.cpp).
void parse_fault(std::string_view spec, FaultConfig& faults);
// An NVMe/TCP command fault as --fault takes it: "short-pdu=3:close".
std::string tcp_fault_spec(const FaultConfig::Tcp::CommandFault& fault);
// The name of one NVMe/TCP fault given (reset-after, short-pdu, ...); empty: none.
std::string_view tcp_fault_name(const FaultConfig::Tcp& faults);

}  // namespace nvmeof::target
