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
    none = 1, infiniband = 2, roce = 3, roce_v2 = 4, iwarp = 5 };
enum class RdmaCms : std::uint8_t { rdma_cm = 1 };
inline constexpr std::uint8_t kTreqSecureChannelNotRequired = 0x2;

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

// A discovery record in plain values (strings trimmed of NUL and space padding).
struct DiscoveryRecord {
    TransportType transport = TransportType::rdma;
    AddressFamily family = AddressFamily::ipv4;
    SubsystemType subtype = SubsystemType::nvm;
    std::uint16_t port_id = 0;
    std::uint16_t cntlid = 0xFFFF;
    std::uint16_t admin_queue_size = 32;
    std::string service_id;  // "4420"
    std::string subsystem_nqn;
    std::string address;     // "127.0.0.1"
};

// Fills an RDMA/IPv4 entry; throws std::invalid_argument for strings that do
// not fit their fields.
DiscoveryLogEntry discovery_entry(const DiscoveryRecord& record);
DiscoveryRecord parse_discovery_entry(const DiscoveryLogEntry& entry);

// The whole log: header then one record per entry.
std::vector<std::uint8_t> discovery_log(std::uint64_t generation,
                                        const std::vector<DiscoveryRecord>& records);
// Throws std::runtime_error for a log shorter than its NUMREC says.
std::vector<DiscoveryRecord> parse_discovery_log(const std::uint8_t* data, std::size_t length);

}  // namespace nvmeof::wire
