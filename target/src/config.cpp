#include "config.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <span>

#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/sgl.hpp"
#include "nvmeof/wire/tcp.hpp"

namespace nvmeof::target {
namespace {

constexpr std::uint32_t kPageSize = 4096;             // CAP.MPSMIN = 0
constexpr std::uint8_t kMaxMdts = 12;                 // 2^12 × 4 KiB = 16 MiB, the keyed SGL limit
constexpr std::uint32_t kMinIoccsz = 4;               // the SQE alone
constexpr std::uint32_t kMaxIoccsz = 4 + 65536 / 16;  // 64 KiB of in-capsule data at most
constexpr std::uint16_t kMaxQueueEntriesField = 0xFFFF;
constexpr std::uint64_t kMaxStatusCodeType = 7;
constexpr std::uint64_t kMaxStatusCode = 0xFF;

constexpr std::string_view kHelp = R"(Usage: nvmeof-target [OPTIONS]

A userspace NVMe-over-Fabrics target on the RDMA transport (rdma-core verbs and RDMA-CM)
or the TCP transport (NVMe/TCP over plain sockets).
Once listening it prints exactly one line to stdout, "listening on ADDR:PORT" ("[ADDR]:PORT"
for IPv6); everything else goes to stderr.

Listening:
  --transport rdma|tcp     the fabric: NVMe/RDMA (default) or NVMe/TCP
  --listen ADDR            address to listen on (default 127.0.0.1; IPv6 as ::1 or [::1])
  --port PORT              RDMA-CM or TCP port (default 4420; 0 picks a free port); repeatable:
                           every subsystem is served on each port, one "listening on" line
                           per port in the order given

Subsystems and namespaces (--subsystem starts a new subsystem; the options after it apply to it):
  --subsystem NQN          an NVM subsystem (repeatable; at least one)
  --namespace ram:SIZE[:LBA]
                           RAM-backed namespace; SIZE takes K/M/G suffixes; LBA 512 or 4096
                           (default 512); allocated and touched at start
  --namespace file:PATH[:LBA]
                           file or block device; its data survives a restart
                           LBA may be DATA+MD: MD bytes of metadata (8, 16, 32 or 64) after
                           each block's data, then optionally :pi1, :pi2 or :pi3 (end-to-end
                           protection information of that type in the metadata), :first (PI
                           at the start of the metadata, else at its end), :guard64 (64-bit
                           CRC guard, 16-byte PI; MD 16 or more), e.g. ram:64M:512+8:pi1;
                           SIZE counts data only
  --namespace ram:SIZE[:LBA]:zoned=ZONE_SIZE[,OPTION...]
                           a zoned namespace (Zoned Namespace command set): SIZE a whole
                           number of zones of ZONE_SIZE (K/M/G suffixes); OPTIONs: cap=BYTES
                           each zone's writable capacity (default ZONE_SIZE), max_open=N and
                           max_active=N the open and active zone limits (default none),
                           conv=N the first N zones conventional (written anywhere)
  --size SIZE              size for a file namespace whose file does not exist yet
  --allow-host NQN         allowed host NQN (repeatable; default: any host)
  The discovery subsystem nqn.2014-08.org.nvmexpress.discovery always exists and lists the others.

Authentication (DH-HMAC-CHAP; keys as nvme-cli gen-dhchap-key prints them):
  --dhchap-key HOSTNQN=DHHC-1:hh:BASE64:
                           that host must authenticate every queue with this key before any
                           other command (repeatable, one per host; all subsystems)
  --dhchap-ctrl-key HOSTNQN=DHHC-1:hh:BASE64:
                           controller key for that host's bidirectional authentication
  --dhchap-hash LIST       hashes in order of preference (default sha256,sha384,sha512)
  --dhchap-dhgroup LIST    DH groups in order of preference
                           (default null,ffdhe2048,ffdhe3072,ffdhe4096,ffdhe6144,ffdhe8192)

Limits (to exercise negotiation):
  --mdts N                 Identify MDTS (default 5 = 128 KiB; 0 = no limit)
  --mqes N                 CAP.MQES, 0's based (default 127)
  --maxcmd N               Identify MAXCMD (default MQES+1)
  --crqsize N              force the CRQSIZE answered in the CM REP
  --ioccsz N               I/O command capsule size in 16-byte units (default 260)
  --max-io-queues N        I/O queues per controller (default 8)
  --kas N                  keep-alive granularity in 100 ms units (default 10)
  --zasl N                 zoned namespaces' Zone Append size limit, 2^N x 4 KiB (default 0:
                           the MDTS; at most --mdts)

NVMe/TCP (with --transport tcp):
  --maxh2cdata BYTES       ICResp MAXH2CDATA, the most data per H2CData PDU: a multiple of
                           4 from 4096 (default 128K); a host splits larger R2T data
  --c2h-pdu-bytes BYTES    the most data per C2HData PDU (default 64K): larger reads go out
                           in several
  --no-c2h-success         end every read with a CapsuleResp, never with SUCCESS on its last
                           C2HData (which a queue with SQ flow control disabled gets otherwise)

Asymmetric namespace access (ANA: every namespace is in group 1; the state is per port):
  --ana-state INDEX:STATE  the INDEXth --port's (0-based) state: optimized (default),
                           non-optimized, inaccessible, persistent-loss or change; I/O through
                           a port inaccessible, lost or changing fails with that path status

Faults (repeatable --fault SPEC; each injected fault logs one line on stderr):
  --fault SPEC             inject the fault SPEC, one of:
  reject-connect=STS       reject every CM connect with NVMe/RDMA reject status STS
  connect-status=SCT/SC    fail the Fabrics Connect with that status (DNR set)
  fail-io=N:SCT/SC         fail the Nth I/O command (1-based, counted over all I/O queues)
  fail-lba=FIRST-LAST:SCT/SC
                           fail every read/write touching that LBA range
  corrupt-guard=LBA        every write storing block LBA (of a namespace with PI) stores its
                           PI guard altered, after the write's own checks
  corrupt-apptag=LBA       the same with the application tag
  corrupt-reftag=LBA       the same with the reference tag
  corrupt-storage-tag=LBA  the same with the storage tag (a format with sts=BITS)
  skip-pi-checks=LBA       a read of block LBA skips the PI checks PRCHK asks for
  zone-offline=LBA         at start, the zone holding block LBA of every zoned namespace is
                           offline (reads and writes fail with Zone Is Offline)
  zone-read-only=LBA       the same, read only (writes fail with Zone Is Read Only)
  zone-full=LBA            the same, full (writes fail with Zone Is Full; reads give zeroes)
  drop-after=N             disconnect all queues after N commands in total
  delay-ms=N               delay every completion by N ms
  stop-answering-after=N   after N commands, accept but never answer
  ignore-io=N              the Nth I/O command (1-based, counted over all I/O queues) is
                           accepted but never answered; the others are
  drop-after-run=N         the Nth I/O command (counted as ignore-io) runs, but its answer is
                           never sent: every connection is dropped instead (the commands
                           received after it never run)
  reorder-io=N             (RDMA) every Nth I/O command of a queue runs after one that
                           arrived later (held until it finished, 5 ms at most)
  outage-after=N:MS        after N commands, drop every connection and stop listening for
                           MS ms, then listen again on the same ports (repeatable)
  port-down-after=N:INDEX  after N commands, stop listening on the INDEXth --port (0-based)
                           for good and drop the connections made through it
  ana-change-after=N:INDEX:STATE
                           after N commands, the INDEXth --port's ANA state becomes STATE;
                           its controllers get an ANA change notice (repeatable)
  NVMe/TCP only (repeatable; N counts commands as drop-after in reset-after, I/O commands
  as fail-io in the others):
  reset-after=N            the Nth command's connection is reset (RST, SO_LINGER 0) once
                           what was sent for that command has gone out
  reset-mid-transfer=N     the Nth I/O command's data cut off by a RST: half of its first
                           C2HData, or the RST right after its R2T (else instead of its
                           response)
  short-pdu=N[:stall|:close]
                           the first PDU sent for the Nth I/O command stops half-way
                           through its PLEN; then nothing more is sent (stall, the default)
                           or the connection is closed
  corrupt-pdu=N:type|hlen|hdgst|ddgst
                           the first PDU sent for the Nth I/O command goes out with PDU-Type
                           0xFF, HLEN one too large, or a wrong header digest; ddgst: its
                           first C2HData with a wrong data digest (digests as negotiated)
  r2t-delay-ms=D           send every R2T D ms after its command arrived
  SCT and SC are numbers (decimal or 0x hex).

Observability:
  --stats PATH             on exit write JSON statistics (commands by opcode, bytes, RDMA
                           operations, errors, largest number of commands in flight, ...)
  --help                   this text

A bad argument prints one line "nvmeof-target: <what is wrong>" and exits 2. SIGINT and
SIGTERM stop the target cleanly (file data flushed, statistics written) with exit status 0.
)";

// "HOSTNQN=DHHC-1:..." of --dhchap-key / --dhchap-ctrl-key.
std::pair<std::string, auth::Secret> parse_host_key(std::string_view value,
                                                    std::string_view option) {
    const auto eq = value.find('=');
    if (eq == std::string_view::npos || eq == 0) {
        throw UsageError(std::string(option) + " takes HOSTNQN=DHHC-1:hh:BASE64:");
    }
    const std::string_view nqn = value.substr(0, eq);
    try {
        wire::validate_nqn(nqn, std::string(option) + " HOSTNQN");
        return {std::string(nqn), auth::parse_secret(value.substr(eq + 1))};
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string(option) + " " + std::string(nqn) + ": " + e.what());
    }
}

template <typename Id, std::size_t N>
std::vector<Id> parse_id_list(std::string_view text, std::string_view option, const Id (&known)[N],
                              std::string_view (*name)(Id)) {
    std::vector<Id> out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        const auto* match = std::find_if(std::begin(known), std::end(known),
                                         [&](Id id) { return name(id) == item; });
        if (match == std::end(known)) {
            std::string names;
            for (const Id id : known) {
                names += (names.empty() ? "" : ", ") + std::string(name(id));
            }
            throw UsageError(std::string(option) + ": unknown " + quoted(item) + " (one of " +
                             names + ")");
        }
        out.push_back(*match);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    }
    if (out.empty()) {
        throw UsageError(std::string(option) + " needs at least one name");
    }
    return out;
}

void finish_subsystem(SubsystemConfig& subsystem, std::uint64_t file_size) {
    for (auto& ns : subsystem.namespaces) {
        if (ns.backing == NamespaceConfig::Backing::file && ns.size_bytes == 0 && file_size != 0) {
            if (file_size < ns.lba_size || file_size % ns.lba_size != 0) {
                throw UsageError("--size " + std::to_string(file_size) +
                                 " must be a non-zero multiple of the LBA size of " + ns.path);
            }
            ns.size_bytes = file_size;
        }
    }
}

}  // namespace

std::pair<std::string_view, std::string_view> split_once(std::string_view text, char separator) {
    const auto at = text.find(separator);
    if (at == std::string_view::npos) {
        return {text, {}};
    }
    return {text.substr(0, at), text.substr(at + 1)};
}

std::pair<std::size_t, wire::AnaState> parse_port_ana_state(std::string_view text,
                                                            const std::string& what) {
    const auto [index, name] = split_once(text, ':');
    wire::AnaState state{};
    if (name.empty() || !wire::parse_ana_state(name, state)) {
        throw UsageError(what +
                         ": expected INDEX:STATE, STATE one of optimized, non-optimized, "
                         "inaccessible, persistent-loss, change (got " +
                         quoted(text) + ")");
    }
    return {static_cast<std::size_t>(parse_number(index, what, kMaxPorts - 1)), state};
}

std::string quoted(std::string_view text) {
    return "\"" + std::string(text) + "\"";
}

std::uint32_t Limits::max_transfer_bytes() const {
    if (mdts == 0) {
        return wire::kMaxKeyedSglLength;
    }
    const std::uint64_t bytes = std::uint64_t{kPageSize} << mdts;
    return bytes > wire::kMaxKeyedSglLength ? wire::kMaxKeyedSglLength
                                            : static_cast<std::uint32_t>(bytes);
}

std::uint32_t Limits::zone_append_limit_bytes() const {
    const std::uint32_t largest = max_transfer_bytes();
    if (zasl == 0) {
        return largest;
    }
    const std::uint64_t bytes = std::uint64_t{kPageSize} << zasl;
    return bytes < largest ? static_cast<std::uint32_t>(bytes) : largest;
}

std::string_view help_text() {
    return kHelp;
}

std::uint64_t parse_number(std::string_view text, std::string_view what, std::uint64_t max) {
    int base = 10;
    std::string_view digits = text;
    if (digits.starts_with("0x") || digits.starts_with("0X")) {
        base = 16;
        digits = digits.substr(2);
    }
    std::uint64_t value = 0;
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size()) {
        throw UsageError(std::string(what) + ": " + quoted(text) + " is not a number");
    }
    if (value > max) {
        throw UsageError(std::string(what) + ": " + std::string(text) + " is above the maximum " +
                         std::to_string(max));
    }
    return value;
}

std::uint64_t parse_size(std::string_view text, std::string_view what) {
    std::uint64_t multiplier = 1;
    std::string_view digits = text;
    if (!digits.empty()) {
        switch (digits.back()) {
            case 'k':
            case 'K':
                multiplier = std::uint64_t{1} << 10;
                break;
            case 'm':
            case 'M':
                multiplier = std::uint64_t{1} << 20;
                break;
            case 'g':
            case 'G':
                multiplier = std::uint64_t{1} << 30;
                break;
            case 't':
            case 'T':
                multiplier = std::uint64_t{1} << 40;
                break;
            default:
                break;
        }
        if (multiplier != 1) {
            digits.remove_suffix(1);
        }
    }
    const std::uint64_t value =
        parse_number(digits, what, std::numeric_limits<std::uint64_t>::max() / multiplier);
    if (value == 0) {
        throw UsageError(std::string(what) + ": size " + quoted(text) + " must not be zero");
    }
    return value * multiplier;
}

wire::Status parse_status(std::string_view text, std::string_view what) {
    const auto [sct, sc] = split_once(text, '/');
    if (sc.empty()) {
        throw UsageError(std::string(what) + ": status " + quoted(text) + " must be SCT/SC");
    }
    const auto type = parse_number(sct, what, kMaxStatusCodeType);
    const auto code = parse_number(sc, what, kMaxStatusCode);
    return wire::Status::make(static_cast<wire::StatusCodeType>(type),
                              static_cast<std::uint8_t>(code), true);
}

ParseOutcome parse_command_line(const std::vector<std::string_view>& args, TargetConfig& config) {
    SubsystemConfig* current = nullptr;
    std::uint64_t file_size = 0;  // --size of the current subsystem; 0: none
    bool port_given = false;      // the first --port replaces the default, later ones add
    std::string_view tcp_only;    // the last NVMe/TCP option given, if any
    auto close_current = [&] {
        if (current != nullptr) {
            finish_subsystem(*current, file_size);
        }
        file_size = 0;
    };

    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view option = args[i];
        std::string_view value;
        bool has_value = false;
        if (option == "--help" || option == "-h") {
            return ParseOutcome::help;
        }
        if (!option.starts_with("--")) {
            throw UsageError("unexpected argument " + quoted(option) + " (see --help)");
        }
        if (const auto eq = option.find('='); eq != std::string_view::npos) {
            value = option.substr(eq + 1);
            option = option.substr(0, eq);
            has_value = true;
        }
        auto take = [&]() -> std::string_view {
            if (has_value) {
                return value;
            }
            if (i + 1 >= args.size()) {
                throw UsageError(std::string(option) + " needs a value");
            }
            return args[++i];
        };
        auto need_subsystem = [&] {
            if (current == nullptr) {
                throw UsageError(std::string(option) + " must follow a --subsystem");
            }
        };

        if (option == "--transport") {
            const auto name = take();
            if (name == "rdma") {
                config.transport = Transport::rdma;
            } else if (name == "tcp") {
                config.transport = Transport::tcp;
            } else {
                throw UsageError("--transport " + quoted(name) + ": expected rdma or tcp");
            }
        } else if (option == "--listen") {
            config.listen_address = std::string(take());
            // IPv6 may come bracketed ("[::1]"), as in URLs.
            if (config.listen_address.size() >= 2 && config.listen_address.front() == '[' &&
                config.listen_address.back() == ']') {
                config.listen_address =
                    config.listen_address.substr(1, config.listen_address.size() - 2);
            }
            if (config.listen_address.empty()) {
                throw UsageError("--listen: the address is empty");
            }
        } else if (option == "--port") {
            const auto port = static_cast<std::uint16_t>(parse_number(take(), "--port", 0xFFFF));
            if (!port_given) {
                config.port = port;
                port_given = true;
            } else if (config.more_ports.size() + 1 >= kMaxPorts) {
                throw UsageError("--port: at most " + std::to_string(kMaxPorts) + " ports");
            } else {
                config.more_ports.push_back(port);
            }
        } else if (option == "--subsystem") {
            const auto nqn = take();
            try {
                wire::validate_nqn(nqn, "--subsystem NQN");
            } catch (const std::invalid_argument& e) {
                throw UsageError(e.what());
            }
            if (nqn == wire::kDiscoveryNqn) {
                throw UsageError("--subsystem: the discovery subsystem always exists");
            }
            for (const auto& s : config.subsystems) {
                if (s.nqn == nqn) {
                    throw UsageError("--subsystem " + std::string(nqn) + " is given twice");
                }
            }
            close_current();
            config.subsystems.push_back(SubsystemConfig{std::string(nqn), {}, {}});
            current = &config.subsystems.back();
        } else if (option == "--namespace") {
            need_subsystem();
            current->namespaces.push_back(parse_namespace(take()));
        } else if (option == "--size") {
            need_subsystem();
            file_size = parse_size(take(), "--size");
        } else if (option == "--allow-host") {
            need_subsystem();
            const auto nqn = take();
            try {
                wire::validate_nqn(nqn, "--allow-host NQN");
            } catch (const std::invalid_argument& e) {
                throw UsageError(e.what());
            }
            current->allowed_hosts.emplace_back(nqn);
        } else if (option == "--dhchap-key" || option == "--dhchap-ctrl-key") {
            auto [nqn, secret] = parse_host_key(take(), option);
            auto& keys = config.dhchap.hosts[nqn];
            auto& slot = option == "--dhchap-key" ? keys.host_key : keys.controller_key;
            if (slot) {
                throw UsageError(std::string(option) + " " + nqn + " is given twice");
            }
            slot = std::move(secret);
        } else if (option == "--dhchap-hash") {
            config.dhchap.hashes =
                parse_id_list(take(), option, wire::kAllDhchapHashes, &wire::hash_name);
        } else if (option == "--dhchap-dhgroup") {
            config.dhchap.dh_groups =
                parse_id_list(take(), option, wire::kAllDhGroups, &wire::dh_group_name);
        } else if (option == "--mdts") {
            config.limits.mdts =
                static_cast<std::uint8_t>(parse_number(take(), "--mdts", kMaxMdts));
        } else if (option == "--mqes") {
            config.limits.mqes = static_cast<std::uint16_t>(
                parse_number(take(), "--mqes", kMaxQueueEntriesField - 1));
            if (config.limits.mqes == 0) {
                throw UsageError("--mqes must be at least 1 (a queue of two entries)");
            }
        } else if (option == "--maxcmd") {
            config.limits.maxcmd =
                static_cast<std::uint16_t>(parse_number(take(), "--maxcmd", kMaxQueueEntriesField));
        } else if (option == "--crqsize") {
            config.limits.crqsize = static_cast<std::uint16_t>(
                parse_number(take(), "--crqsize", kMaxQueueEntriesField));
        } else if (option == "--ioccsz") {
            config.limits.ioccsz =
                static_cast<std::uint32_t>(parse_number(take(), "--ioccsz", kMaxIoccsz));
            if (config.limits.ioccsz < kMinIoccsz) {
                throw UsageError("--ioccsz must be at least 4 (the 64-byte command alone)");
            }
        } else if (option == "--max-io-queues") {
            config.limits.max_io_queues = static_cast<std::uint16_t>(
                parse_number(take(), "--max-io-queues", kMaxQueueEntriesField - 1));
            if (config.limits.max_io_queues == 0) {
                throw UsageError("--max-io-queues must be at least 1");
            }
        } else if (option == "--kas") {
            config.limits.kas = static_cast<std::uint16_t>(parse_number(take(), "--kas", 0xFFFF));
        } else if (option == "--maxh2cdata") {
            tcp_only = option;
            const auto text = take();
            const std::uint64_t bytes = parse_size(text, "--maxh2cdata");
            if (bytes < wire::kTcpMinMaxH2cData || bytes % 4 != 0 || bytes > kTcpMaxPduData) {
                throw UsageError("--maxh2cdata " + std::string(text) +
                                 ": MAXH2CDATA must be a multiple of 4 bytes from 4096 to 16M");
            }
            config.tcp.maxh2cdata = static_cast<std::uint32_t>(bytes);
        } else if (option == "--c2h-pdu-bytes") {
            tcp_only = option;
            const auto text = take();
            const std::uint64_t bytes = parse_size(text, "--c2h-pdu-bytes");
            if (bytes > kTcpMaxPduData) {
                throw UsageError("--c2h-pdu-bytes " + std::string(text) + ": at most 16M");
            }
            config.tcp.c2h_pdu_bytes = static_cast<std::uint32_t>(bytes);
        } else if (option == "--no-c2h-success") {
            tcp_only = option;
            if (has_value) {
                throw UsageError("--no-c2h-success takes no value");
            }
            config.tcp.c2h_success = false;
        } else if (option == "--zasl") {
            config.limits.zasl =
                static_cast<std::uint8_t>(parse_number(take(), "--zasl", kMaxMdts));
        } else if (option == "--ana-state") {
            const auto [index, state] = parse_port_ana_state(take(), "--ana-state");
            config.ana_states.emplace_back(index, state);
        } else if (option == "--fault") {
            parse_fault(take(), config.faults);
        } else if (option == "--stats") {
            config.stats_path = std::string(take());
            if (config.stats_path.empty()) {
                throw UsageError("--stats: the path is empty");
            }
        } else {
            throw UsageError("unknown option " + quoted(option) + " (see --help)");
        }
    }
    close_current();
    if (config.subsystems.empty()) {
        throw UsageError("at least one --subsystem NQN is needed");
    }
    for (const auto& down : config.faults.ports_down) {
        if (down.port_index > config.more_ports.size()) {
            throw UsageError("--fault port-down-after: port index " +
                             std::to_string(down.port_index) + " names no --port (" +
                             std::to_string(config.more_ports.size() + 1) + " given)");
        }
    }
    const auto check_port_index = [&](std::size_t index, const char* what) {
        if (index > config.more_ports.size()) {
            throw UsageError(std::string(what) + ": port index " + std::to_string(index) +
                             " names no --port (" + std::to_string(config.more_ports.size() + 1) +
                             " given)");
        }
    };
    for (const auto& [index, state] : config.ana_states) {
        check_port_index(index, "--ana-state");
    }
    for (const auto& change : config.faults.ana_changes) {
        check_port_index(change.port_index, "--fault ana-change-after");
    }
    // NVMe/TCP has no connection manager to reject with a status, and no
    // CM REP to carry a CRQSIZE.
    if (config.transport == Transport::tcp && config.faults.reject_connect) {
        throw UsageError("--fault reject-connect is NVMe/RDMA only (--transport rdma)");
    }
    if (config.transport == Transport::tcp && config.faults.reorder_io) {
        throw UsageError("--fault reorder-io is NVMe/RDMA only (--transport rdma)");
    }
    if (config.transport == Transport::tcp && config.limits.crqsize) {
        throw UsageError("--crqsize is NVMe/RDMA only (--transport rdma)");
    }
    if (const std::string_view fault = tcp_fault_name(config.faults.tcp);
        config.transport != Transport::tcp && !fault.empty()) {
        throw UsageError("--fault " + std::string(fault) + " is NVMe/TCP only (--transport tcp)");
    }
    if (config.transport != Transport::tcp && !tcp_only.empty()) {
        throw UsageError(std::string(tcp_only) + " is NVMe/TCP only (--transport tcp)");
    }
    if (config.limits.zasl != 0 && config.limits.mdts != 0 &&
        config.limits.zasl > config.limits.mdts) {
        throw UsageError("--zasl " + std::to_string(config.limits.zasl) + " is above --mdts " +
                         std::to_string(config.limits.mdts) + " (a Zone Append is one transfer)");
    }
    for (const auto& [nqn, keys] : config.dhchap.hosts) {
        if (!keys.host_key) {
            throw UsageError("--dhchap-ctrl-key " + nqn + " needs a --dhchap-key for that host");
        }
    }
    return ParseOutcome::run;
}

}  // namespace nvmeof::target
