// Identify (admin opcode 0x06): the command, and the data structures it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/protection.hpp"

namespace nvmeof::wire {

enum class IdentifyCns : std::uint8_t {
    namespace_data = 0x00,
    controller = 0x01,
    active_namespace_list = 0x02,
    namespace_descriptors = 0x03,
    io_command_set_namespace = 0x05,     // the command set's own namespace data (CSI in CDW11)
    io_command_set_controller = 0x06,    // the command set's own controller data (CSI in CDW11)
    io_command_set_combinations = 0x1C,  // the I/O command set combinations of CNTID
};

inline constexpr std::uint32_t kIdentifyCnsMask = 0xFF;
inline constexpr unsigned kIdentifyCsiShift = 24;    // CDW11 bits 31:24
inline constexpr unsigned kIdentifyCntidShift = 16;  // CDW10 bits 31:16

// Command Set Identifiers (CSI): Identify CDW11, Get Log Page CDW14 and the
// namespace identification descriptor of type csi.
inline constexpr std::uint8_t kCsiNvm = 0x00;    // the NVM command set
inline constexpr std::uint8_t kCsiZoned = 0x02;  // the Zoned Namespace command set (wire/zns.hpp)

// Identify with CNS `cns` for `nsid`, data returned through `data` (4096 bytes).
Sqe identify_command(IdentifyCns cns, std::uint32_t nsid, const SglDescriptor& data);
inline IdentifyCns identify_cns(const Sqe& sqe) {
    return static_cast<IdentifyCns>(sqe.cdw10 & kIdentifyCnsMask);
}
inline std::uint8_t identify_csi(const Sqe& sqe) {
    return static_cast<std::uint8_t>(sqe.cdw11 >> kIdentifyCsiShift);
}
inline std::uint16_t identify_cntid(const Sqe& sqe) {
    return static_cast<std::uint16_t>(sqe.cdw10 >> kIdentifyCntidShift);
}

// Identify Controller SGLS bits the initiator relies on.
inline constexpr std::uint32_t kSglsSupportedMask = 0x3;       // 01b: SGLs, byte aligned
inline constexpr std::uint32_t kSglsKeyedDataBlock = 1u << 2;  // required on RDMA
inline constexpr std::uint32_t kSglsOffsetAddress = 1u << 20;  // in-capsule data allowed
inline constexpr std::uint8_t kControllerTypeIo = 1;
inline constexpr std::uint8_t kControllerTypeDiscovery = 2;
inline constexpr std::uint16_t kOncsCompare = 1u << 0;
inline constexpr std::uint16_t kOncsDatasetManagement = 1u << 2;
inline constexpr std::uint16_t kOncsWriteZeroes = 1u << 3;
inline constexpr std::uint8_t kVwcPresent = 1u << 0;
// LPA bit 1: the Commands Supported and Effects log page (wire/admin.hpp).
inline constexpr std::uint8_t kLpaCommandsSupportedEffects = 1u << 1;
inline constexpr std::uint32_t kCapsuleUnit = 16;  // IOCCSZ, IORCSZ, ICDOFF are in 16-byte units

// Identify Controller KAS (keep-alive granularity) counts in these units.
inline constexpr std::uint32_t kKasUnitMs = 100;

// Identify Controller data (CNS 0x01). Only the fields NVMe-oF needs are named.
struct IdentifyController {
    std::uint16_t vid;
    std::uint16_t ssvid;
    char sn[20];
    char mn[40];
    char fr[8];
    std::uint8_t rab;
    std::uint8_t ieee[3];
    std::uint8_t cmic;
    std::uint8_t mdts;  // max transfer = 2^MDTS × CAP.MPSMIN page; 0 = no limit
    std::uint16_t cntlid;
    std::uint32_t ver;
    std::uint32_t rtd3r;
    std::uint32_t rtd3e;
    std::uint32_t oaes;
    std::uint32_t ctratt;
    std::uint8_t reserved100[11];
    std::uint8_t cntrltype;
    std::uint8_t fguid[16];
    std::uint16_t crdt[3];  // command retry delay times, 100 ms units
    std::uint8_t reserved134[122];
    std::uint16_t oacs;
    std::uint8_t acl;
    std::uint8_t aerl;
    std::uint8_t frmw;
    std::uint8_t lpa;
    std::uint8_t elpe;
    std::uint8_t npss;
    std::uint8_t reserved264[56];
    std::uint16_t kas;  // keep-alive granularity, kKasUnitMs units; 0 = unsupported
    std::uint8_t reserved322[20];
    std::uint8_t anatt;   // ANA transition time, seconds
    std::uint8_t anacap;  // ANA states reported (wire/ana.hpp kAnacap*)
    std::uint32_t anagrpmax;
    std::uint32_t nanagrpid;
    std::uint8_t reserved352[160];
    std::uint8_t sqes;
    std::uint8_t cqes;
    std::uint16_t maxcmd;
    std::uint32_t nn;
    std::uint16_t oncs;
    std::uint16_t fuses;
    std::uint8_t fna;
    std::uint8_t vwc;
    std::uint16_t awun;
    std::uint16_t awupf;
    std::uint8_t icsvscc;
    std::uint8_t nwpc;
    std::uint16_t acwu;
    std::uint16_t ocfs;
    std::uint32_t sgls;
    std::uint32_t mnan;
    std::uint8_t reserved544[224];
    char subnqn[kNqnFieldSize];
    std::uint8_t reserved1024[768];
    std::uint32_t ioccsz;  // I/O command capsule size, 16-byte units
    std::uint32_t iorcsz;  // I/O response capsule size, 16-byte units
    std::uint16_t icdoff;  // in-capsule data offset, 16-byte units
    std::uint8_t fcatt;
    std::uint8_t msdbd;  // max SGL data block descriptors per capsule; 0 = no limit
    std::uint16_t ofcs;
    std::uint8_t dctype;
    std::uint8_t reserved1807[241];
    std::uint8_t psd[32][32];
    std::uint8_t vendor_specific[1024];

    std::string_view serial() const { return field_text(sn, sizeof sn); }
    std::string_view model() const { return field_text(mn, sizeof mn); }
    std::string_view firmware() const { return field_text(fr, sizeof fr); }
    std::string_view subsystem_nqn() const { return field_text(subnqn, sizeof subnqn); }
};
static_assert(sizeof(IdentifyController) == kIdentifyDataSize);
static_assert(offsetof(IdentifyController, sn) == 4);
static_assert(offsetof(IdentifyController, mn) == 24);
static_assert(offsetof(IdentifyController, fr) == 64);
static_assert(offsetof(IdentifyController, cmic) == 76);
static_assert(offsetof(IdentifyController, mdts) == 77);
static_assert(offsetof(IdentifyController, cntlid) == 78);
static_assert(offsetof(IdentifyController, ver) == 80);
static_assert(offsetof(IdentifyController, rtd3e) == 88);
static_assert(offsetof(IdentifyController, oaes) == 92);
static_assert(offsetof(IdentifyController, ctratt) == 96);
static_assert(offsetof(IdentifyController, cntrltype) == 111);
static_assert(offsetof(IdentifyController, crdt) == 128);
static_assert(offsetof(IdentifyController, oacs) == 256);
static_assert(offsetof(IdentifyController, lpa) == 261);
static_assert(offsetof(IdentifyController, kas) == 320);
static_assert(offsetof(IdentifyController, anatt) == 342);
static_assert(offsetof(IdentifyController, anacap) == 343);
static_assert(offsetof(IdentifyController, anagrpmax) == 344);
static_assert(offsetof(IdentifyController, nanagrpid) == 348);
static_assert(offsetof(IdentifyController, sqes) == 512);
static_assert(offsetof(IdentifyController, cqes) == 513);
static_assert(offsetof(IdentifyController, maxcmd) == 514);
static_assert(offsetof(IdentifyController, nn) == 516);
static_assert(offsetof(IdentifyController, oncs) == 520);
static_assert(offsetof(IdentifyController, vwc) == 525);
static_assert(offsetof(IdentifyController, sgls) == 536);
static_assert(offsetof(IdentifyController, subnqn) == 768);
static_assert(offsetof(IdentifyController, ioccsz) == 1792);
static_assert(offsetof(IdentifyController, iorcsz) == 1796);
static_assert(offsetof(IdentifyController, icdoff) == 1800);
static_assert(offsetof(IdentifyController, fcatt) == 1802);
static_assert(offsetof(IdentifyController, msdbd) == 1803);
static_assert(offsetof(IdentifyController, ofcs) == 1804);
static_assert(offsetof(IdentifyController, dctype) == 1806);
static_assert(offsetof(IdentifyController, psd) == 2048);
static_assert(offsetof(IdentifyController, vendor_specific) == 3072);

// One LBA format: metadata size, log2 of the data size, relative performance.
struct LbaFormat {
    std::uint16_t ms;
    std::uint8_t lbads;
    std::uint8_t rp;
};
static_assert(sizeof(LbaFormat) == 4);

inline constexpr std::uint8_t kFlbasIndexLowMask = 0x0F;
inline constexpr std::uint8_t kFlbasExtendedMetadata = 1u << 4;
inline constexpr unsigned kFlbasIndexHighShift = 5;
inline constexpr std::uint8_t kFlbasIndexHighMask = 0x3;
inline constexpr unsigned kMaxLbaFormats = 64;

// Identify Namespace data (CNS 0x00).
struct IdentifyNamespace {
    std::uint64_t nsze;  // size in logical blocks
    std::uint64_t ncap;
    std::uint64_t nuse;
    std::uint8_t nsfeat;
    std::uint8_t nlbaf;  // number of LBA formats, 0's based
    std::uint8_t flbas;  // format in use
    std::uint8_t mc;
    std::uint8_t dpc;
    std::uint8_t dps;  // end-to-end protection settings; 0 = no PI
    std::uint8_t nmic;
    std::uint8_t rescap;
    std::uint8_t fpi;
    std::uint8_t dlfeat;  // deallocate features: bits 2:0 what a deallocated block reads as
    std::uint8_t reserved34[12];
    std::uint16_t noiob;
    std::uint8_t nvmcap[16];
    std::uint8_t reserved64[28];
    std::uint32_t anagrpid;  // ANA group of the namespace; 0: none
    std::uint8_t reserved96[8];
    std::uint8_t nguid[16];
    std::uint8_t eui64[8];
    LbaFormat lbaf[kMaxLbaFormats];
    std::uint8_t reserved384[3712];

    // Index of the LBA format in use (FLBAS bits 3:0, plus 6:5 above 16 formats).
    std::uint8_t format_index() const {
        return static_cast<std::uint8_t>(
            (flbas & kFlbasIndexLowMask) |
            (((flbas >> kFlbasIndexHighShift) & kFlbasIndexHighMask) << 4));
    }
};
static_assert(sizeof(IdentifyNamespace) == kIdentifyDataSize);
static_assert(offsetof(IdentifyNamespace, nsze) == 0);
static_assert(offsetof(IdentifyNamespace, ncap) == 8);
static_assert(offsetof(IdentifyNamespace, nuse) == 16);
static_assert(offsetof(IdentifyNamespace, nlbaf) == 25);
static_assert(offsetof(IdentifyNamespace, flbas) == 26);
static_assert(offsetof(IdentifyNamespace, dps) == 29);
static_assert(offsetof(IdentifyNamespace, nmic) == 30);
static_assert(offsetof(IdentifyNamespace, dlfeat) == 33);
static_assert(offsetof(IdentifyNamespace, noiob) == 46);
static_assert(offsetof(IdentifyNamespace, nvmcap) == 48);
static_assert(offsetof(IdentifyNamespace, anagrpid) == 92);
static_assert(offsetof(IdentifyNamespace, nguid) == 104);
static_assert(offsetof(IdentifyNamespace, eui64) == 120);
static_assert(offsetof(IdentifyNamespace, lbaf) == 128);

// DLFEAT bits 2:0: a deallocated (or never written) block reads as all zeroes.
// With DLFEAT bit 4 clear its PI reads as all ones (FFh), the escape value.
inline constexpr std::uint8_t kDlfeatReadsZeroes = 0x1;
inline constexpr std::uint8_t kDlfeatReadValueMask = 0x7;

// DPC (byte 28): which PI types and places the namespace can be formatted with.
inline constexpr std::uint8_t kDpcType1 = 1u << 0;
inline constexpr std::uint8_t kDpcType2 = 1u << 1;
inline constexpr std::uint8_t kDpcType3 = 1u << 2;
inline constexpr std::uint8_t kDpcPiFirst = 1u << 3;
inline constexpr std::uint8_t kDpcPiLast = 1u << 4;

// Identify Namespace of the NVM command set (CNS 0x05, CSI 0): the extended
// LBA formats, whose ELBAF says each format's guard type (kElbaf* in
// protection.hpp). Read when Identify Controller CTRATT has
// kCtrattExtendedLbaFormats; without it every PI format has the 16-bit guard.
struct IdentifyNvmNamespace {
    std::uint64_t lbstm;  // logical block storage tag mask
    std::uint8_t pic;     // protection information capabilities
    std::uint8_t reserved9[3];
    std::uint32_t elbaf[kMaxLbaFormats];
    std::uint8_t reserved268[3828];
};
static_assert(sizeof(IdentifyNvmNamespace) == kIdentifyDataSize);
static_assert(offsetof(IdentifyNvmNamespace, pic) == 8);
static_assert(offsetof(IdentifyNvmNamespace, elbaf) == 12);

// Identify (CNS 0x05) of `nsid` for the command set `csi`.
Sqe identify_command_set_namespace(std::uint32_t nsid, std::uint8_t csi, const SglDescriptor& data);
// Identify (CNS 0x06): the controller's data for the command set `csi`.
Sqe identify_command_set_controller(std::uint8_t csi, const SglDescriptor& data);
// Identify (CNS 0x1C): the I/O command set combinations controller `cntlid` supports.
Sqe identify_command_set_combinations(std::uint16_t cntlid, const SglDescriptor& data);

// CNS 0x1C: up to 512 I/O command set combinations, each a vector of command
// sets (bit n: CSI n) that may be enabled together; an all-zero vector ends
// the list. The I/O Command Set Profile feature selects one by its index
// (index 0 unless a host sets another).
inline constexpr std::size_t kIoCommandSetCombinations = 512;
inline constexpr std::uint64_t kIocsNvm = std::uint64_t{1} << kCsiNvm;
inline constexpr std::uint64_t kIocsZoned = std::uint64_t{1} << kCsiZoned;
struct IoCommandSetCombinations {
    std::uint64_t vector[kIoCommandSetCombinations];
};
static_assert(sizeof(IoCommandSetCombinations) == kIdentifyDataSize);

// What the initiator needs from Identify Namespace, validated.
struct NamespaceGeometry {
    std::uint64_t size_blocks = 0;
    std::uint64_t capacity_blocks = 0;
    std::uint32_t lba_size = 0;
    BlockFormat format;  // data, metadata and PI layout of a block
    // LBSTM: the storage tag bits a storage tag check compares (all when the
    // controller does not report extended LBA formats).
    std::uint64_t storage_tag_mask = ~std::uint64_t{0};
};

// Throws std::runtime_error for a format index beyond NLBAF, an LBA data size
// outside 2^9..2^31, or a layout a fabrics host cannot use: metadata in a
// separate buffer (FLBAS bit 4 clear; NVMe-oF carries metadata only interleaved
// as an extended LBA), a reserved PI type or PI format, PI larger than the
// metadata, or a storage tag size its PI format does not allow. `nvm` is the NVM command set's
// namespace data when the controller reports extended LBA formats (else 16-bit guards).
NamespaceGeometry namespace_geometry(const IdentifyNamespace& ns,
                                     const IdentifyNvmNamespace* nvm = nullptr);

inline constexpr std::size_t kActiveNamespaceListEntries = 1024;

// CNS 0x02: ascending NSIDs greater than the command's NSID; zero ends the list.
struct ActiveNamespaceList {
    std::uint32_t nsid[kActiveNamespaceListEntries];
};
static_assert(sizeof(ActiveNamespaceList) == kIdentifyDataSize);

std::vector<std::uint32_t> parse_active_namespaces(const ActiveNamespaceList& list);

// CNS 0x03: namespace identification descriptors.
enum class NamespaceIdType : std::uint8_t { eui64 = 1, nguid = 2, uuid = 3, csi = 4 };

struct NamespaceIdDescriptorHeader {
    std::uint8_t nidt;
    std::uint8_t nidl;
    std::uint16_t reserved;
};
static_assert(sizeof(NamespaceIdDescriptorHeader) == 4);

struct NamespaceIdDescriptor {
    NamespaceIdType type;
    std::vector<std::uint8_t> id;
};

// Walks the list until a zero NIDT; throws std::runtime_error for a descriptor
// running past the end of the page.
std::vector<NamespaceIdDescriptor> parse_namespace_descriptors(
    std::span<const std::uint8_t, kIdentifyDataSize> page);

// Appends one descriptor at `offset`; returns the offset after it, or 0 when it
// does not fit.
std::size_t append_namespace_descriptor(std::span<std::uint8_t, kIdentifyDataSize> page,
                                        std::size_t offset, NamespaceIdType type,
                                        std::span<const std::uint8_t> id);

}  // namespace nvmeof::wire
