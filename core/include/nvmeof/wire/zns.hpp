// The Zoned Namespace command set (NVM Express Zoned Namespace Command Set
// Specification 1.1, CSI kCsiZoned): its Identify data (CNS 0x05 and 0x06),
// Zone Management Send and Receive, the zone report, and Zone Append. Its
// opcodes are in command.hpp (IoOpcode), its status codes in status.hpp
// (ZonedStatus).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/identify.hpp"

namespace nvmeof::wire {

// ---- Identify ---------------------------------------------------------------

// ZOC (zone operation characteristics): bit 0 variable zone capacity, bit 1
// zone active excursions. Linux's host refuses a namespace with either.
inline constexpr std::uint16_t kZocVariableZoneCapacity = 1u << 0;
inline constexpr std::uint16_t kZocZoneActiveExcursions = 1u << 1;
// OZCS bit 0: a read may span zones (else Zone Boundary Error).
inline constexpr std::uint16_t kOzcsReadAcrossZoneBoundaries = 1u << 0;
// MAR and MOR are 0's based; all ones: no limit.
inline constexpr std::uint32_t kNoZoneResourceLimit = 0xFFFFFFFF;

// One LBA format's zone geometry (LBAFE): the zone size in logical blocks and
// the zone descriptor extension size in 64-byte units.
struct ZonedLbaFormatExtension {
    std::uint64_t zsze;
    std::uint8_t zdes;
    std::uint8_t reserved9[7];
};
static_assert(sizeof(ZonedLbaFormatExtension) == 16);
static_assert(offsetof(ZonedLbaFormatExtension, zdes) == 8);
inline constexpr std::uint32_t kZoneDescriptorExtensionUnit = 64;  // ZDES units

// Identify Namespace of the Zoned Namespace command set (CNS 0x05, CSI 0x02).
struct IdentifyZonedNamespace {
    std::uint16_t zoc;
    std::uint16_t ozcs;
    std::uint32_t mar;   // maximum active resources, 0's based
    std::uint32_t mor;   // maximum open resources, 0's based
    std::uint32_t rrl;   // reset recommended limit, seconds; 0: none
    std::uint32_t frl;   // finish recommended limit, seconds; 0: none
    std::uint32_t rrl1;  // RRL1-3, FRL1-3: the limits of the reset and
    std::uint32_t rrl2;  // finish recommended limit classes
    std::uint32_t rrl3;
    std::uint32_t frl1;
    std::uint32_t frl2;
    std::uint32_t frl3;
    std::uint32_t numzrwa;  // zone random write area resources
    std::uint16_t zrwafg;
    std::uint16_t zrwasz;
    std::uint8_t zrwacap;
    std::uint8_t reserved53[2763];
    ZonedLbaFormatExtension lbafe[kMaxLbaFormats];
    std::uint8_t vendor_specific[256];
};
static_assert(sizeof(IdentifyZonedNamespace) == kIdentifyDataSize);
static_assert(offsetof(IdentifyZonedNamespace, ozcs) == 2);
static_assert(offsetof(IdentifyZonedNamespace, mar) == 4);
static_assert(offsetof(IdentifyZonedNamespace, mor) == 8);
static_assert(offsetof(IdentifyZonedNamespace, rrl) == 12);
static_assert(offsetof(IdentifyZonedNamespace, frl) == 16);
static_assert(offsetof(IdentifyZonedNamespace, rrl1) == 20);
static_assert(offsetof(IdentifyZonedNamespace, frl3) == 40);
static_assert(offsetof(IdentifyZonedNamespace, numzrwa) == 44);
static_assert(offsetof(IdentifyZonedNamespace, zrwacap) == 52);
static_assert(offsetof(IdentifyZonedNamespace, lbafe) == 2816);
static_assert(offsetof(IdentifyZonedNamespace, vendor_specific) == 3840);

// Identify Controller of the Zoned Namespace command set (CNS 0x06, CSI 0x02).
// ZASL: the largest Zone Append, 2^ZASL units of CAP.MPSMIN; 0: MDTS.
struct IdentifyZonedController {
    std::uint8_t zasl;
    std::uint8_t reserved1[4095];
};
static_assert(sizeof(IdentifyZonedController) == kIdentifyDataSize);

// What the initiator needs of a zoned namespace's Identify data (CNS 0x05,
// CSI 0x02) for the LBA format in use (IdentifyNamespace::format_index()).
struct ZonedGeometry {
    std::uint64_t zone_blocks = 0;                 // ZSZE of the format in use
    std::uint32_t max_open = 0;                    // MOR + 1; 0: no limit
    std::uint32_t max_active = 0;                  // MAR + 1; 0: no limit
    std::uint32_t descriptor_extension_bytes = 0;  // ZDES × 64
    std::uint16_t zoc = 0;
    std::uint16_t ozcs = 0;
};
// Throws std::runtime_error for a format index beyond the LBAFE table or a
// zone size of 0.
ZonedGeometry zoned_geometry(const IdentifyZonedNamespace& zns, std::uint8_t format_index);

// ZASL in bytes: 2^ZASL units of the minimum memory page size; 0 for ZASL 0,
// where the limit is the MDTS.
std::uint64_t zone_append_size_limit(std::uint8_t zasl, std::uint64_t min_page_size);

// The CSI a namespace identification descriptor list (CNS 0x03) carries, if
// any (a descriptor of type csi, one byte long).
std::optional<std::uint8_t> namespace_csi(std::span<const std::uint8_t, kIdentifyDataSize> page);

// ---- Zones ------------------------------------------------------------------

// Zone Type (ZT, descriptor byte 0 bits 3:0): the specification defines one.
enum class ZoneType : std::uint8_t { sequential_write_required = 0x2 };
inline constexpr std::uint8_t kZoneTypeMask = 0x0F;

// Zone State (ZS, descriptor byte 1 bits 7:4).
enum class ZoneState : std::uint8_t {
    empty = 0x1,
    implicitly_opened = 0x2,
    explicitly_opened = 0x3,
    closed = 0x4,
    read_only = 0xD,
    full = 0xE,
    offline = 0xF,
};
inline constexpr unsigned kZoneStateShift = 4;
inline constexpr std::uint8_t kZoneStateMask = 0x0F;

// Zone Attributes (ZA, descriptor byte 2).
inline constexpr std::uint8_t kZoneFinishedByController = 1u << 0;      // ZFC
inline constexpr std::uint8_t kZoneFinishRecommended = 1u << 1;         // FZR
inline constexpr std::uint8_t kZoneResetRecommended = 1u << 2;          // RZR
inline constexpr std::uint8_t kZoneDescriptorExtensionValid = 1u << 7;  // ZDEV

// One zone of a report (64 bytes).
struct ZoneDescriptor {
    std::uint8_t zt;   // bits 3:0 the zone type
    std::uint8_t zs;   // bits 7:4 the zone state
    std::uint8_t za;   // zone attributes
    std::uint8_t zai;  // zone attributes information
    std::uint8_t reserved4[4];
    std::uint64_t zcap;   // zone capacity, logical blocks
    std::uint64_t zslba;  // zone start LBA
    std::uint64_t wp;     // write pointer (an LBA)
    std::uint8_t reserved32[32];

    std::uint8_t type() const { return zt & kZoneTypeMask; }
    ZoneState state() const {
        return static_cast<ZoneState>((zs >> kZoneStateShift) & kZoneStateMask);
    }
};
static_assert(sizeof(ZoneDescriptor) == 64);
static_assert(offsetof(ZoneDescriptor, zs) == 1);
static_assert(offsetof(ZoneDescriptor, za) == 2);
static_assert(offsetof(ZoneDescriptor, zai) == 3);
static_assert(offsetof(ZoneDescriptor, zcap) == 8);
static_assert(offsetof(ZoneDescriptor, zslba) == 16);
static_assert(offsetof(ZoneDescriptor, wp) == 24);

ZoneDescriptor zone_descriptor(std::uint8_t type, ZoneState state, std::uint64_t zslba,
                               std::uint64_t zcap, std::uint64_t wp, std::uint8_t attributes = 0);

// The header of a zone report (64 bytes): how many zones match, then that
// many descriptors (fewer where the buffer ends first).
struct ZoneReportHeader {
    std::uint64_t nr_zones;
    std::uint8_t reserved8[56];
};
static_assert(sizeof(ZoneReportHeader) == 64);

// ---- Zone Management Send (0x79) --------------------------------------------

// ZSA, CDW13 bits 7:0.
enum class ZoneSendAction : std::uint8_t {
    close = 0x01,
    finish = 0x02,
    open = 0x03,
    reset = 0x04,
    offline = 0x05,
    set_descriptor_extension = 0x10,
};
inline constexpr std::uint32_t kZoneActionMask = 0xFF;
inline constexpr unsigned kZoneSelectAllBit = 8;  // CDW13: every zone the action applies to

// The action on the zone starting at `slba` (CDW10-11), or with `select_all`
// on every zone in a state it applies to (SLBA ignored).
Sqe zone_management_send_command(std::uint32_t nsid, std::uint64_t slba, ZoneSendAction action,
                                 bool select_all = false);

struct ZoneSendRequest {
    std::uint64_t slba = 0;
    ZoneSendAction action{};
    bool select_all = false;
};
ZoneSendRequest parse_zone_management_send(const Sqe& sqe);

// ---- Zone Management Receive (0x7A) -----------------------------------------

// ZRA, CDW13 bits 7:0.
enum class ZoneReceiveAction : std::uint8_t { report = 0x00, extended_report = 0x01 };
// ZRASF for a report, CDW13 bits 15:8: the zones listed.
enum class ZoneReportFilter : std::uint8_t {
    all = 0x0,
    empty = 0x1,
    implicitly_opened = 0x2,
    explicitly_opened = 0x3,
    closed = 0x4,
    full = 0x5,
    read_only = 0x6,
    offline = 0x7,
};
inline constexpr unsigned kZoneReportFilterShift = 8;
inline constexpr std::uint32_t kZoneReportFilterMask = 0xFF;
// CDW13 bit 16: nr_zones counts only the descriptors that fit the buffer.
inline constexpr unsigned kZonePartialReportBit = 16;

// A report of the zones from the one holding `slba` on, into `data` (a whole
// number of dwords, at least the 64-byte header; CDW12 is NUMD, 0's based).
// Throws std::invalid_argument otherwise.
Sqe zone_management_receive_command(std::uint32_t nsid, std::uint64_t slba,
                                    ZoneReceiveAction action, ZoneReportFilter filter, bool partial,
                                    const SglDescriptor& data);

struct ZoneReceiveRequest {
    std::uint64_t slba = 0;
    ZoneReceiveAction action{};
    std::uint8_t filter = 0;  // ZRASF as sent: a ZoneReportFilter when valid
    bool partial = false;
    std::uint64_t length = 0;  // bytes, from NUMD
};
ZoneReceiveRequest parse_zone_management_receive(const Sqe& sqe);

struct ZoneReport {
    std::uint64_t nr_zones = 0;  // as the header says
    std::vector<ZoneDescriptor> zones;
};
// Reads the header and the descriptors the buffer holds (at most nr_zones).
// `extension_bytes`: an extended report's descriptor extension size (ZDES ×
// 64), which follows each descriptor and is skipped. Throws
// std::runtime_error for a buffer shorter than the header.
ZoneReport parse_zone_report(std::span<const std::uint8_t> data, std::uint32_t extension_bytes = 0);

// ---- Zone Append (0x7D) -----------------------------------------------------

// CDW12 bit 25 (PIREMAP): the reference tags are remapped to the LBA written.
inline constexpr unsigned kZoneAppendPiRemapBit = 25;

// Zone Append of `blocks` blocks (1..65536) to the zone starting at `zslba`,
// data in `buffer` as rw_command takes it; the CQE's DW0 and DW1 return the
// LBA the data was written at (zone_append_lba). Throws std::invalid_argument
// as rw_command does.
Sqe zone_append_command(std::uint32_t nsid, std::uint64_t zslba, std::uint32_t blocks,
                        const RemoteBuffer& buffer, std::uint32_t lba_size);

inline std::uint64_t zone_append_lba(const Cqe& cqe) {
    return cqe.result64();
}

}  // namespace nvmeof::wire
