// NVMe/TCP PDUs (NVMe/TCP Transport Specification 1.0): the layouts, their
// builders, the digests, and the receive-side checks that name the field a
// malformed PDU got wrong.
//
// Every PDU is a common header (8 bytes) and a PDU-specific header, together
// HLEN bytes; then, where negotiated, a 4-byte header digest; a PDU that
// carries data places it at PDO (padding between the header and PDO keeps the
// receiver's alignment, HPDA for data the host receives, CPDA for data the
// controller receives), followed by a 4-byte data digest where negotiated.
// PLEN is the whole PDU's length on the wire:
//   | header (HLEN) | HDGST? | pad | data (PLEN - PDO - DDGST?) | DDGST? |
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::wire {

inline constexpr std::uint16_t kTcpDiscoveryPort = 8009;  // the discovery service's TRSVCID
inline constexpr std::uint16_t kTcpPfv10 = 0;             // PDU format version 1.0
inline constexpr std::size_t kTcpDigestBytes = 4;         // CRC-32C, little endian
// HPDA and CPDA: data alignment in dwords, 0's based (0: 4 bytes, 31: 128 bytes).
inline constexpr std::uint8_t kTcpMaxPda = 31;
// MAXH2CDATA below this is invalid: every controller takes 4 KiB per H2CData PDU.
inline constexpr std::uint32_t kTcpMinMaxH2cData = 4096;
// A TermReq carries up to 128 bytes of the header in error after its own 24.
inline constexpr std::uint32_t kTcpTermReqMaxLength = 152;

enum class TcpPduType : std::uint8_t {
    ic_req = 0x00,
    ic_resp = 0x01,
    h2c_term_req = 0x02,
    c2h_term_req = 0x03,
    capsule_cmd = 0x04,
    capsule_resp = 0x05,
    h2c_data = 0x06,
    c2h_data = 0x07,
    r2t = 0x09,
};

// Common header FLAGS.
inline constexpr std::uint8_t kTcpFlagHeaderDigest = 1 << 0;  // HDGSTF
inline constexpr std::uint8_t kTcpFlagDataDigest = 1 << 1;    // DDGSTF
inline constexpr std::uint8_t kTcpFlagLastPdu = 1 << 2;       // H2CData, C2HData
inline constexpr std::uint8_t kTcpFlagSuccess = 1 << 3;       // C2HData: no CapsuleResp follows
// ICReq/ICResp DGST: which digests the connection uses.
inline constexpr std::uint8_t kTcpDigestHeaderEnable = 1 << 0;
inline constexpr std::uint8_t kTcpDigestDataEnable = 1 << 1;

// The digests a connection negotiated (ICReq asks, ICResp answers).
struct TcpDigests {
    bool header = false;
    bool data = false;
    std::uint8_t dgst() const noexcept {
        return static_cast<std::uint8_t>((header ? kTcpDigestHeaderEnable : 0) |
                                         (data ? kTcpDigestDataEnable : 0));
    }
    std::uint32_t header_bytes() const noexcept { return header ? kTcpDigestBytes : 0; }
    std::uint32_t data_bytes() const noexcept { return data ? kTcpDigestBytes : 0; }
};

// Fatal Error Status of a TermReq.
enum class TcpFatalError : std::uint16_t {
    none = 0x00,
    invalid_header_field = 0x01,
    pdu_sequence_error = 0x02,
    header_digest_error = 0x03,
    data_out_of_range = 0x04,
    data_limit_exceeded = 0x05,  // also R2T Limit Exceeded
    unsupported_parameter = 0x06,
};

struct TcpCommonHeader {
    std::uint8_t type;  // TcpPduType
    std::uint8_t flags;
    std::uint8_t hlen;
    std::uint8_t pdo;
    std::uint32_t plen;
};
static_assert(sizeof(TcpCommonHeader) == 8);
static_assert(offsetof(TcpCommonHeader, flags) == 1);
static_assert(offsetof(TcpCommonHeader, hlen) == 2);
static_assert(offsetof(TcpCommonHeader, pdo) == 3);
static_assert(offsetof(TcpCommonHeader, plen) == 4);

// Host → controller, the connection's first PDU.
struct TcpIcReq {
    TcpCommonHeader ch;
    std::uint16_t pfv;
    std::uint8_t hpda;
    std::uint8_t dgst;
    std::uint32_t maxr2t;  // 0's based: outstanding R2Ts per command
    std::uint8_t reserved[112];
};
static_assert(sizeof(TcpIcReq) == 128);
static_assert(offsetof(TcpIcReq, pfv) == 8);
static_assert(offsetof(TcpIcReq, hpda) == 10);
static_assert(offsetof(TcpIcReq, dgst) == 11);
static_assert(offsetof(TcpIcReq, maxr2t) == 12);

// Controller → host, the answer to ICReq.
struct TcpIcResp {
    TcpCommonHeader ch;
    std::uint16_t pfv;
    std::uint8_t cpda;
    std::uint8_t dgst;
    std::uint32_t maxh2cdata;  // bytes of data one H2CData PDU may carry
    std::uint8_t reserved[112];
};
static_assert(sizeof(TcpIcResp) == 128);
static_assert(offsetof(TcpIcResp, pfv) == 8);
static_assert(offsetof(TcpIcResp, cpda) == 10);
static_assert(offsetof(TcpIcResp, dgst) == 11);
static_assert(offsetof(TcpIcResp, maxh2cdata) == 12);

// H2CTermReq and C2HTermReq. FEI sits at byte 10, not 4-byte aligned: two halves.
struct TcpTermReq {
    TcpCommonHeader ch;
    std::uint16_t fes;  // TcpFatalError
    std::uint16_t fei_low;
    std::uint16_t fei_high;
    std::uint8_t reserved[10];
    std::uint32_t fei() const noexcept {
        return static_cast<std::uint32_t>(fei_low) | (static_cast<std::uint32_t>(fei_high) << 16);
    }
};
static_assert(sizeof(TcpTermReq) == 24);
static_assert(offsetof(TcpTermReq, fes) == 8);
static_assert(offsetof(TcpTermReq, fei_low) == 10);
static_assert(offsetof(TcpTermReq, fei_high) == 12);

struct TcpCapsuleCmd {
    TcpCommonHeader ch;
    Sqe sqe;
};
static_assert(sizeof(TcpCapsuleCmd) == 72);
static_assert(offsetof(TcpCapsuleCmd, sqe) == 8);

struct TcpCapsuleResp {
    TcpCommonHeader ch;
    Cqe cqe;
};
static_assert(sizeof(TcpCapsuleResp) == 24);
static_assert(offsetof(TcpCapsuleResp, cqe) == 8);

// H2CData and C2HData (TTAG is reserved in C2HData).
struct TcpDataHeader {
    TcpCommonHeader ch;
    std::uint16_t cccid;  // the command's CID
    std::uint16_t ttag;   // the R2T's transfer tag
    std::uint32_t datao;  // offset in the command's data
    std::uint32_t datal;
    std::uint8_t reserved[4];
};
static_assert(sizeof(TcpDataHeader) == 24);
static_assert(offsetof(TcpDataHeader, cccid) == 8);
static_assert(offsetof(TcpDataHeader, ttag) == 10);
static_assert(offsetof(TcpDataHeader, datao) == 12);
static_assert(offsetof(TcpDataHeader, datal) == 16);

struct TcpR2t {
    TcpCommonHeader ch;
    std::uint16_t cccid;
    std::uint16_t ttag;
    std::uint32_t r2to;  // offset in the command's data
    std::uint32_t r2tl;  // bytes the host may send now
    std::uint8_t reserved[4];
};
static_assert(sizeof(TcpR2t) == 24);
static_assert(offsetof(TcpR2t, cccid) == 8);
static_assert(offsetof(TcpR2t, ttag) == 10);
static_assert(offsetof(TcpR2t, r2to) == 12);
static_assert(offsetof(TcpR2t, r2tl) == 16);

// HLEN of each PDU type; 0 for a value that is no PDU type.
std::uint8_t tcp_header_length(std::uint8_t type) noexcept;
// "CapsuleResp", "C2HData", ...; "unknown PDU type" otherwise.
std::string_view tcp_pdu_type_name(std::uint8_t type) noexcept;
std::string_view tcp_fatal_error_name(std::uint16_t fes) noexcept;

// Where a PDU's parts lie, from its header length, the digests, its data and
// the receiver's data alignment (PDA, 0's based dwords).
struct TcpPduLayout {
    std::uint32_t header_bytes = 0;  // HLEN + header digest
    std::uint32_t pdo = 0;           // 0 without data
    std::uint32_t data_bytes = 0;
    std::uint32_t plen = 0;
};
TcpPduLayout tcp_pdu_layout(std::uint8_t hlen, TcpDigests digests, std::uint32_t data_bytes,
                            std::uint8_t pda) noexcept;

// Builders. Each fills every field; the digests themselves are the sender's
// to append (tcp_digest). `maxr2t` is 0's based; `maxh2cdata` in bytes.
TcpIcReq tcp_ic_req(std::uint8_t hpda, TcpDigests digests, std::uint32_t maxr2t) noexcept;
TcpIcResp tcp_ic_resp(std::uint8_t cpda, TcpDigests digests, std::uint32_t maxh2cdata) noexcept;
// A command capsule carrying `in_capsule_bytes` of data (0: none), placed at
// the controller's alignment `cpda`.
TcpCapsuleCmd tcp_capsule_cmd(const Sqe& sqe, std::uint32_t in_capsule_bytes, TcpDigests digests,
                              std::uint8_t cpda) noexcept;
TcpCapsuleResp tcp_capsule_resp(const Cqe& cqe, TcpDigests digests) noexcept;
TcpDataHeader tcp_h2c_data(std::uint16_t cccid, std::uint16_t ttag, std::uint32_t datao,
                           std::uint32_t datal, bool last, TcpDigests digests,
                           std::uint8_t cpda) noexcept;
// `success`: the command's status is success and no CapsuleResp follows
// (only with `last`).
TcpDataHeader tcp_c2h_data(std::uint16_t cccid, std::uint32_t datao, std::uint32_t datal, bool last,
                           bool success, TcpDigests digests, std::uint8_t hpda) noexcept;
TcpR2t tcp_r2t(std::uint16_t cccid, std::uint16_t ttag, std::uint32_t r2to, std::uint32_t r2tl,
               TcpDigests digests) noexcept;
// `type`: h2c_term_req or c2h_term_req. `header_copy_bytes` of the PDU in
// error follow the TermReq (at most 128, the sender copies them).
TcpTermReq tcp_term_req(TcpPduType type, TcpFatalError fes, std::uint32_t fei,
                        std::uint32_t header_copy_bytes) noexcept;

// CRC-32C of `length` bytes: a header digest (over HLEN bytes) or a data
// digest (over the data, which may arrive in pieces: continue from the last
// piece's value, starting at 0).
std::uint32_t tcp_digest(const void* data, std::size_t length, std::uint32_t crc = 0) noexcept;

// --- receiving ---
enum class TcpRole : std::uint8_t { host, controller };  // who receives

// Why a received PDU ends the connection: the TermReq's FES and FEI (the byte
// offset of the field in error) and one line naming the field. `why` is static
// text.
struct TcpPduFault {
    TcpFatalError fes = TcpFatalError::none;
    std::uint32_t fei = 0;
    const char* why = nullptr;
    explicit operator bool() const noexcept { return fes != TcpFatalError::none; }
};

// What a received common header promises, once checked.
struct TcpPduExpect {
    TcpPduType type = TcpPduType::ic_req;
    std::uint32_t header_bytes = 0;  // HLEN + header digest: read this much first
    std::uint32_t pdo = 0;
    std::uint32_t data_bytes = 0;  // 0: no data
    std::uint32_t plen = 0;
    bool data_digest = false;  // DDGST follows the data
};

// The state a receiver checks a common header against.
struct TcpReceiveState {
    TcpRole role = TcpRole::host;
    bool initialized = false;  // ICReq/ICResp exchanged
    TcpDigests digests;        // as negotiated
    // The alignment the receiver asked for data it receives (its own PDA).
    std::uint8_t pda = 0;
    // Most data one PDU may carry to this receiver (C2HData: the largest
    // transfer; CapsuleCmd: in-capsule data; H2CData: MAXH2CDATA).
    std::uint32_t max_data_bytes = 0;
};

// Checks the 8-byte common header: a type this receiver takes in this state,
// its HLEN, the digest flags against what was negotiated, PDO and PLEN
// consistent with each other and within the receiver's limits.
TcpPduFault check_tcp_common_header(const TcpCommonHeader& ch, const TcpReceiveState& state,
                                    TcpPduExpect& expect) noexcept;
// The PDU-specific checks, once the whole header is in (and its digest, if
// any, verified by the caller with tcp_header_digest_fault).
TcpPduFault check_tcp_ic_req(const TcpIcReq& pdu) noexcept;
// `asked`: the digests the host's ICReq asked for (the controller may enable
// fewer, never more).
TcpPduFault check_tcp_ic_resp(const TcpIcResp& pdu, TcpDigests asked) noexcept;
TcpPduFault check_tcp_data_header(const TcpDataHeader& pdu, const TcpPduExpect& expect) noexcept;
// The data an R2T asked for (R2TO, R2TL) and how much of it has come in, in
// order.
struct TcpR2tWindow {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    std::uint32_t received = 0;
};
// An H2CData PDU (check_tcp_data_header passed) against the R2T it answers:
// DATAO and DATAL inside the R2T's data, DATAO where that data continues, and
// LAST_PDU set on the PDU that ends it and on no other (the host splits an
// R2T's data into PDUs of at most MAXH2CDATA, the last flagged).
TcpPduFault check_tcp_h2c_data_in_r2t(const TcpDataHeader& pdu, const TcpR2tWindow& r2t) noexcept;
TcpPduFault check_tcp_r2t(const TcpR2t& pdu) noexcept;
TcpPduFault check_tcp_term_req(const TcpTermReq& pdu) noexcept;
// The header digest that follows `hlen` header bytes at `header`.
TcpPduFault tcp_header_digest_fault(const void* header, std::uint8_t hlen,
                                    std::uint32_t received) noexcept;

}  // namespace nvmeof::wire
