// The discovery log page (LID 0x70).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nvmeof/wire/common.hpp"

namespace nvmeof::wire {

inline constexpr std::size_t kDiscoveryRecordSize = 1024;

enum class TransportType : std::uint8_t { rdma = 1, fibre_channel = 2, tcp = 3, loop = 254 };
enum class AddressFamily : std::uint8_t { ipv4 = 1, ipv6 = 2, infiniband = 3, fibre_channel = 4 };
enum class SubsystemType : std::uint8_t { referral = 1, nvm = 2, current_discovery = 3 };
enum class RdmaQpType : std::uint8_t { reliable_connected = 1, reliable_datagram = 2 };
enum class RdmaProviderType : std::uint8_t {
    none = 1,
    infiniband = 2,
    roce = 3,
    roce_v2 = 4,
    iwarp = 5
};
enum class RdmaCms : std::uint8_t { rdma_cm = 1 };
// TCP's TSAS SECTYPE: the secure channel's protocol.
enum class TcpSecurityType : std::uint8_t { none = 0, tls = 1, tls13 = 2 };
// TREQ bits 1:0: secure channel requirement; bit 2: SQ flow control disable supported.
inline constexpr std::uint8_t kTreqSecureChannelNotSpecified = 0x0;
inline constexpr std::uint8_t kTreqSecureChannelRequired = 0x1;
inline constexpr std::uint8_t kTreqSecureChannelNotRequired = 0x2;
inline constexpr std::uint8_t kTreqSecureChannelMask = 0x3;
inline constexpr std::uint8_t kTreqSqFlowControlDisable = 0x4;
// EFLAGS (TP 8013/8014): duplicate returned information, explicit persistent
// connection support, no CDC connectivity.
inline constexpr std::uint16_t kEflagsDuplicateInformation = 0x1;
inline constexpr std::uint16_t kEflagsExplicitPersistentConnections = 0x2;
inline constexpr std::uint16_t kEflagsNoCdcConnectivity = 0x4;

struct DiscoveryLogHeader {
    std::uint64_t genctr;
    std::uint64_t numrec;
    std::uint16_t recfmt;
    std::uint8_t reserved18[1006];
};
static_assert(sizeof(DiscoveryLogHeader) == kDiscoveryRecordSize);
static_assert(offsetof(DiscoveryLogHeader, numrec) == 8);
static_assert(offsetof(DiscoveryLogHeader, recfmt) == 16);

struct RdmaTransportAddress {
    std::uint8_t qptype;
    std::uint8_t prtype;
    std::uint8_t cms;
    std::uint8_t reserved3[5];
    std::uint16_t pkey;
    std::uint8_t reserved10[246];
};
static_assert(sizeof(RdmaTransportAddress) == 256);
static_assert(offsetof(RdmaTransportAddress, pkey) == 8);

// TCP's layout of the same 256 bytes.
struct TcpTransportAddress {
    std::uint8_t sectype;
    std::uint8_t reserved1[255];
};
static_assert(sizeof(TcpTransportAddress) == sizeof(RdmaTransportAddress));

struct DiscoveryLogEntry {
    std::uint8_t trtype;
    std::uint8_t adrfam;
    std::uint8_t subtype;
    std::uint8_t treq;
    std::uint16_t portid;
    std::uint16_t cntlid;
    std::uint16_t asqsz;
    std::uint16_t eflags;
    std::uint8_t reserved12[20];
    char trsvcid[32];
    std::uint8_t reserved64[192];
    char subnqn[kNqnFieldSize];
    char traddr[256];
    // TSAS in RDMA's layout; over TCP, TcpTransportAddress's (copied in and out).
    RdmaTransportAddress tsas;
};
static_assert(sizeof(DiscoveryLogEntry) == kDiscoveryRecordSize);
static_assert(offsetof(DiscoveryLogEntry, portid) == 4);
static_assert(offsetof(DiscoveryLogEntry, cntlid) == 6);
static_assert(offsetof(DiscoveryLogEntry, asqsz) == 8);
static_assert(offsetof(DiscoveryLogEntry, eflags) == 10);
static_assert(offsetof(DiscoveryLogEntry, trsvcid) == 32);
static_assert(offsetof(DiscoveryLogEntry, subnqn) == 256);
static_assert(offsetof(DiscoveryLogEntry, traddr) == 512);
static_assert(offsetof(DiscoveryLogEntry, tsas) == 768);

// The RDMA transport-specific address subtype (TSAS) in plain values.
struct RdmaTransportSpecific {
    RdmaQpType qp_type = RdmaQpType::reliable_connected;
    RdmaProviderType provider_type = RdmaProviderType::none;
    RdmaCms cms = RdmaCms::rdma_cm;
    std::uint16_t pkey = 0;

    bool operator==(const RdmaTransportSpecific&) const = default;
};

// The TCP transport-specific address subtype in plain values.
struct TcpTransportSpecific {
    TcpSecurityType security_type = TcpSecurityType::none;

    bool operator==(const TcpTransportSpecific&) const = default;
};

// A discovery record in plain values (strings trimmed of NUL and space padding).
// Codes a peer sends that this enum does not name are kept as they are.
struct DiscoveryRecord {
    TransportType transport = TransportType::rdma;      // TRTYPE
    AddressFamily family = AddressFamily::ipv4;         // ADRFAM
    SubsystemType subtype = SubsystemType::nvm;         // SUBTYPE
    std::uint8_t treq = kTreqSecureChannelNotRequired;  // TREQ
    std::uint16_t port_id = 0;                          // PORTID
    std::uint16_t cntlid = 0xFFFF;                      // CNTLID
    std::uint16_t admin_queue_size = 32;                // ASQSZ
    std::uint16_t eflags = 0;                           // EFLAGS
    std::string service_id;                             // TRSVCID: "4420"
    std::string subsystem_nqn;                          // SUBNQN
    std::string address;                                // TRADDR: "127.0.0.1"
    RdmaTransportSpecific rdma;                         // TSAS, meaningful when transport is rdma
    TcpTransportSpecific tcp;                           // TSAS, meaningful when transport is tcp

    bool operator==(const DiscoveryRecord&) const = default;
};

// The header fields of the log (GENCTR, NUMREC, RECFMT).
struct DiscoveryLogSummary {
    std::uint64_t generation = 0;
    std::uint64_t records = 0;
    std::uint16_t format = 0;
};
DiscoveryLogSummary parse_discovery_log_header(const DiscoveryLogHeader& header);

// Fills an entry (TSAS for RDMA and TCP); throws std::invalid_argument for strings that do
// not fit their fields.
DiscoveryLogEntry discovery_entry(const DiscoveryRecord& record);
DiscoveryRecord parse_discovery_entry(const DiscoveryLogEntry& entry);

// The whole log: header then one record per entry.
std::vector<std::uint8_t> discovery_log(std::uint64_t generation,
                                        const std::vector<DiscoveryRecord>& records);
// Throws std::runtime_error for a log shorter than its NUMREC says.
std::vector<DiscoveryRecord> parse_discovery_log(const std::uint8_t* data, std::size_t length);

}  // namespace nvmeof::wire
