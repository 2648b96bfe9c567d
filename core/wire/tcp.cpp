#include "nvmeof/wire/tcp.hpp"

#include "nvmeof/wire/protection.hpp"

namespace nvmeof::wire {
namespace {

constexpr std::uint32_t alignment_bytes(std::uint8_t pda) noexcept {
    return (std::uint32_t{pda} + 1) * 4;
}

constexpr std::uint32_t round_up(std::uint32_t value, std::uint32_t to) noexcept {
    return (value + to - 1) / to * to;
}

TcpCommonHeader common_header(TcpPduType type, std::uint8_t flags, std::uint8_t hlen,
                              const TcpPduLayout& layout) noexcept {
    return TcpCommonHeader{static_cast<std::uint8_t>(type), flags, hlen,
                           static_cast<std::uint8_t>(layout.pdo), layout.plen};
}

std::uint8_t digest_flags(TcpDigests digests, bool with_data) noexcept {
    return static_cast<std::uint8_t>((digests.header ? kTcpFlagHeaderDigest : 0) |
                                     (digests.data && with_data ? kTcpFlagDataDigest : 0));
}

constexpr TcpPduFault fault(TcpFatalError fes, std::uint32_t fei, const char* why) noexcept {
    return TcpPduFault{fes, fei, why};
}

// Byte offsets of the common header's fields, for FEI.
constexpr std::uint32_t kFeiType = offsetof(TcpCommonHeader, type);
constexpr std::uint32_t kFeiFlags = offsetof(TcpCommonHeader, flags);
constexpr std::uint32_t kFeiHlen = offsetof(TcpCommonHeader, hlen);
constexpr std::uint32_t kFeiPdo = offsetof(TcpCommonHeader, pdo);
constexpr std::uint32_t kFeiPlen = offsetof(TcpCommonHeader, plen);

bool receives(TcpRole role, TcpPduType type) noexcept {
    switch (type) {
        case TcpPduType::ic_resp:
        case TcpPduType::c2h_term_req:
        case TcpPduType::capsule_resp:
        case TcpPduType::c2h_data:
        case TcpPduType::r2t:
            return role == TcpRole::host;
        case TcpPduType::ic_req:
        case TcpPduType::h2c_term_req:
        case TcpPduType::capsule_cmd:
        case TcpPduType::h2c_data:
            return role == TcpRole::controller;
    }
    return false;
}

bool carries_data(TcpPduType type) noexcept {
    return type == TcpPduType::capsule_cmd || type == TcpPduType::h2c_data ||
           type == TcpPduType::c2h_data;
}

}  // namespace

std::uint8_t tcp_header_length(std::uint8_t type) noexcept {
    switch (static_cast<TcpPduType>(type)) {
        case TcpPduType::ic_req:
            return sizeof(TcpIcReq);
        case TcpPduType::ic_resp:
            return sizeof(TcpIcResp);
        case TcpPduType::h2c_term_req:
        case TcpPduType::c2h_term_req:
            return sizeof(TcpTermReq);
        case TcpPduType::capsule_cmd:
            return sizeof(TcpCapsuleCmd);
        case TcpPduType::capsule_resp:
            return sizeof(TcpCapsuleResp);
        case TcpPduType::h2c_data:
        case TcpPduType::c2h_data:
            return sizeof(TcpDataHeader);
        case TcpPduType::r2t:
            return sizeof(TcpR2t);
    }
    return 0;
}

std::string_view tcp_pdu_type_name(std::uint8_t type) noexcept {
    switch (static_cast<TcpPduType>(type)) {
        case TcpPduType::ic_req:
            return "ICReq";
        case TcpPduType::ic_resp:
            return "ICResp";
        case TcpPduType::h2c_term_req:
            return "H2CTermReq";
        case TcpPduType::c2h_term_req:
            return "C2HTermReq";
        case TcpPduType::capsule_cmd:
            return "CapsuleCmd";
        case TcpPduType::capsule_resp:
            return "CapsuleResp";
        case TcpPduType::h2c_data:
            return "H2CData";
        case TcpPduType::c2h_data:
            return "C2HData";
        case TcpPduType::r2t:
            return "R2T";
    }
    return "unknown PDU type";
}

std::string_view tcp_fatal_error_name(std::uint16_t fes) noexcept {
    switch (static_cast<TcpFatalError>(fes)) {
        case TcpFatalError::none:
            return "no error";
        case TcpFatalError::invalid_header_field:
            return "Invalid PDU Header Field";
        case TcpFatalError::pdu_sequence_error:
            return "PDU Sequence Error";
        case TcpFatalError::header_digest_error:
            return "Header Digest Error";
        case TcpFatalError::data_out_of_range:
            return "Data Transfer Out of Range";
        case TcpFatalError::data_limit_exceeded:
            return "Data Transfer Limit Exceeded";
        case TcpFatalError::unsupported_parameter:
            return "Unsupported Parameter";
    }
    return "unknown fatal error status";
}

TcpPduLayout tcp_pdu_layout(std::uint8_t hlen, TcpDigests digests, std::uint32_t data_bytes,
                            std::uint8_t pda) noexcept {
    TcpPduLayout layout;
    layout.header_bytes = hlen + digests.header_bytes();
    layout.data_bytes = data_bytes;
    if (data_bytes == 0) {
        layout.plen = layout.header_bytes;
        return layout;
    }
    layout.pdo = round_up(layout.header_bytes, alignment_bytes(pda));
    layout.plen = layout.pdo + data_bytes + digests.data_bytes();
    return layout;
}

TcpIcReq tcp_ic_req(std::uint8_t hpda, TcpDigests digests, std::uint32_t maxr2t) noexcept {
    TcpIcReq pdu{};
    pdu.ch = TcpCommonHeader{static_cast<std::uint8_t>(TcpPduType::ic_req), 0, sizeof(TcpIcReq), 0,
                             sizeof(TcpIcReq)};
    pdu.pfv = kTcpPfv10;
    pdu.hpda = hpda;
    pdu.dgst = digests.dgst();
    pdu.maxr2t = maxr2t;
    return pdu;
}

TcpIcResp tcp_ic_resp(std::uint8_t cpda, TcpDigests digests, std::uint32_t maxh2cdata) noexcept {
    TcpIcResp pdu{};
    pdu.ch = TcpCommonHeader{static_cast<std::uint8_t>(TcpPduType::ic_resp), 0, sizeof(TcpIcResp),
                             0, sizeof(TcpIcResp)};
    pdu.pfv = kTcpPfv10;
    pdu.cpda = cpda;
    pdu.dgst = digests.dgst();
    pdu.maxh2cdata = maxh2cdata;
    return pdu;
}

TcpCapsuleCmd tcp_capsule_cmd(const Sqe& sqe, std::uint32_t in_capsule_bytes, TcpDigests digests,
                              std::uint8_t cpda) noexcept {
    const TcpPduLayout layout =
        tcp_pdu_layout(sizeof(TcpCapsuleCmd), digests, in_capsule_bytes, cpda);
    return TcpCapsuleCmd{
        common_header(TcpPduType::capsule_cmd, digest_flags(digests, in_capsule_bytes != 0),
                      sizeof(TcpCapsuleCmd), layout),
        sqe};
}

TcpCapsuleResp tcp_capsule_resp(const Cqe& cqe, TcpDigests digests) noexcept {
    const TcpPduLayout layout = tcp_pdu_layout(sizeof(TcpCapsuleResp), digests, 0, 0);
    return TcpCapsuleResp{common_header(TcpPduType::capsule_resp, digest_flags(digests, false),
                                        sizeof(TcpCapsuleResp), layout),
                          cqe};
}

TcpDataHeader tcp_h2c_data(std::uint16_t cccid, std::uint16_t ttag, std::uint32_t datao,
                           std::uint32_t datal, bool last, TcpDigests digests,
                           std::uint8_t cpda) noexcept {
    const TcpPduLayout layout = tcp_pdu_layout(sizeof(TcpDataHeader), digests, datal, cpda);
    const auto flags =
        static_cast<std::uint8_t>(digest_flags(digests, true) | (last ? kTcpFlagLastPdu : 0));
    TcpDataHeader pdu{};
    pdu.ch = common_header(TcpPduType::h2c_data, flags, sizeof(TcpDataHeader), layout);
    pdu.cccid = cccid;
    pdu.ttag = ttag;
    pdu.datao = datao;
    pdu.datal = datal;
    return pdu;
}

TcpDataHeader tcp_c2h_data(std::uint16_t cccid, std::uint32_t datao, std::uint32_t datal, bool last,
                           bool success, TcpDigests digests, std::uint8_t hpda) noexcept {
    const TcpPduLayout layout = tcp_pdu_layout(sizeof(TcpDataHeader), digests, datal, hpda);
    const auto flags =
        static_cast<std::uint8_t>(digest_flags(digests, true) | (last ? kTcpFlagLastPdu : 0) |
                                  (last && success ? kTcpFlagSuccess : 0));
    TcpDataHeader pdu{};
    pdu.ch = common_header(TcpPduType::c2h_data, flags, sizeof(TcpDataHeader), layout);
    pdu.cccid = cccid;
    pdu.datao = datao;
    pdu.datal = datal;
    return pdu;
}

TcpR2t tcp_r2t(std::uint16_t cccid, std::uint16_t ttag, std::uint32_t r2to, std::uint32_t r2tl,
               TcpDigests digests) noexcept {
    const TcpPduLayout layout = tcp_pdu_layout(sizeof(TcpR2t), digests, 0, 0);
    TcpR2t pdu{};
    pdu.ch = common_header(TcpPduType::r2t, digest_flags(digests, false), sizeof(TcpR2t), layout);
    pdu.cccid = cccid;
    pdu.ttag = ttag;
    pdu.r2to = r2to;
    pdu.r2tl = r2tl;
    return pdu;
}

TcpTermReq tcp_term_req(TcpPduType type, TcpFatalError fes, std::uint32_t fei,
                        std::uint32_t header_copy_bytes) noexcept {
    constexpr std::uint32_t kMaxCopy = kTcpTermReqMaxLength - sizeof(TcpTermReq);
    const std::uint32_t copy = header_copy_bytes < kMaxCopy ? header_copy_bytes : kMaxCopy;
    TcpTermReq pdu{};
    pdu.ch = TcpCommonHeader{static_cast<std::uint8_t>(type), 0, sizeof(TcpTermReq), 0,
                             static_cast<std::uint32_t>(sizeof(TcpTermReq)) + copy};
    pdu.fes = static_cast<std::uint16_t>(fes);
    pdu.fei_low = static_cast<std::uint16_t>(fei & 0xFFFF);
    pdu.fei_high = static_cast<std::uint16_t>(fei >> 16);
    return pdu;
}

std::uint32_t tcp_digest(const void* data, std::size_t length, std::uint32_t crc) noexcept {
    return crc32c(crc, data, length);
}

TcpPduFault check_tcp_common_header(const TcpCommonHeader& ch, const TcpReceiveState& state,
                                    TcpPduExpect& expect) noexcept {
    const std::uint8_t hlen = tcp_header_length(ch.type);
    if (hlen == 0) {
        return fault(TcpFatalError::invalid_header_field, kFeiType, "PDU-Type is no NVMe/TCP PDU");
    }
    const auto type = static_cast<TcpPduType>(ch.type);
    if (!receives(state.role, type)) {
        return fault(TcpFatalError::invalid_header_field, kFeiType,
                     state.role == TcpRole::host ? "PDU-Type is one a controller never sends"
                                                 : "PDU-Type is one a host never sends");
    }
    const bool initialization = type == TcpPduType::ic_req || type == TcpPduType::ic_resp;
    if (initialization == state.initialized) {
        return fault(TcpFatalError::pdu_sequence_error, kFeiType,
                     initialization ? "ICReq/ICResp after the connection was initialized"
                                    : "a PDU before ICReq/ICResp initialized the connection");
    }
    if (ch.hlen != hlen) {
        return fault(TcpFatalError::invalid_header_field, kFeiHlen,
                     "HLEN is not this PDU type's header length");
    }
    const bool term = type == TcpPduType::h2c_term_req || type == TcpPduType::c2h_term_req;
    expect.type = type;
    if (initialization || term) {
        // Never digested; a TermReq's data is the header in error, PDO unused.
        if ((ch.flags & (kTcpFlagHeaderDigest | kTcpFlagDataDigest)) != 0) {
            return fault(TcpFatalError::invalid_header_field, kFeiFlags,
                         "FLAGS asks for a digest on a PDU that has none");
        }
        const bool plen_ok =
            term ? ch.plen >= hlen && ch.plen <= kTcpTermReqMaxLength : ch.plen == hlen;
        if (!plen_ok) {
            return fault(TcpFatalError::invalid_header_field, kFeiPlen,
                         term ? "PLEN of a TermReq outside 24 to 152 bytes"
                              : "PLEN of ICReq/ICResp is not 128");
        }
        if (!term && ch.pdo != 0) {
            return fault(TcpFatalError::invalid_header_field, kFeiPdo,
                         "PDO of ICReq/ICResp is not 0");
        }
        expect.header_bytes = hlen;
        expect.pdo = 0;
        expect.data_bytes = ch.plen - hlen;  // a TermReq's copy of the header in error
        expect.plen = ch.plen;
        expect.data_digest = false;
        return {};
    }
    if (((ch.flags & kTcpFlagHeaderDigest) != 0) != state.digests.header) {
        return fault(TcpFatalError::invalid_header_field, kFeiFlags,
                     state.digests.header ? "HDGSTF is clear but header digests were negotiated"
                                          : "HDGSTF is set but header digests were not negotiated");
    }
    const std::uint32_t header_bytes = hlen + state.digests.header_bytes();
    expect.header_bytes = header_bytes;
    expect.plen = ch.plen;
    const bool data_digest = (ch.flags & kTcpFlagDataDigest) != 0;
    if (!carries_data(type) || (type == TcpPduType::capsule_cmd && ch.plen == header_bytes)) {
        if (data_digest) {
            return fault(TcpFatalError::invalid_header_field, kFeiFlags,
                         "DDGSTF is set on a PDU without data");
        }
        if (ch.pdo != 0) {
            return fault(TcpFatalError::invalid_header_field, kFeiPdo,
                         "PDO is not 0 on a PDU without data");
        }
        if (ch.plen != header_bytes) {
            return fault(TcpFatalError::invalid_header_field, kFeiPlen,
                         "PLEN is not the header's length on a PDU without data");
        }
        expect.pdo = 0;
        expect.data_bytes = 0;
        expect.data_digest = false;
        return {};
    }
    if (data_digest != state.digests.data) {
        return fault(TcpFatalError::invalid_header_field, kFeiFlags,
                     state.digests.data ? "DDGSTF is clear but data digests were negotiated"
                                        : "DDGSTF is set but data digests were not negotiated");
    }
    if (ch.pdo < header_bytes) {
        return fault(TcpFatalError::invalid_header_field, kFeiPdo,
                     "PDO points inside the PDU header");
    }
    if (ch.pdo % alignment_bytes(state.pda) != 0) {
        return fault(TcpFatalError::invalid_header_field, kFeiPdo,
                     "PDO is not aligned as the receiver's PDA asked");
    }
    const std::uint32_t digest_bytes = state.digests.data_bytes();
    if (ch.plen < std::uint64_t{ch.pdo} + digest_bytes + 1) {
        return fault(TcpFatalError::invalid_header_field, kFeiPlen,
                     "PLEN leaves no data after PDO");
    }
    const std::uint32_t data_bytes = ch.plen - ch.pdo - digest_bytes;
    if (data_bytes > state.max_data_bytes) {
        return fault(TcpFatalError::data_limit_exceeded, kFeiPlen,
                     "PLEN carries more data than the receiver takes in one PDU");
    }
    expect.pdo = ch.pdo;
    expect.data_bytes = data_bytes;
    expect.data_digest = data_digest;
    return {};
}

TcpPduFault check_tcp_ic_req(const TcpIcReq& pdu) noexcept {
    if (pdu.pfv != kTcpPfv10) {
        return fault(TcpFatalError::unsupported_parameter, offsetof(TcpIcReq, pfv),
                     "ICReq PFV is not 1.0");
    }
    if (pdu.hpda > kTcpMaxPda) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpIcReq, hpda),
                     "ICReq HPDA is above 31");
    }
    if ((pdu.dgst & ~(kTcpDigestHeaderEnable | kTcpDigestDataEnable)) != 0) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpIcReq, dgst),
                     "ICReq DGST has reserved bits set");
    }
    return {};
}

TcpPduFault check_tcp_ic_resp(const TcpIcResp& pdu, TcpDigests asked) noexcept {
    if (pdu.pfv != kTcpPfv10) {
        return fault(TcpFatalError::unsupported_parameter, offsetof(TcpIcResp, pfv),
                     "ICResp PFV is not 1.0");
    }
    if (pdu.cpda > kTcpMaxPda) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpIcResp, cpda),
                     "ICResp CPDA is above 31");
    }
    if ((pdu.dgst & ~asked.dgst()) != 0) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpIcResp, dgst),
                     "ICResp DGST enables a digest the host did not ask for");
    }
    if (pdu.maxh2cdata < kTcpMinMaxH2cData || pdu.maxh2cdata % 4 != 0) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpIcResp, maxh2cdata),
                     "ICResp MAXH2CDATA is below 4096 or not a multiple of 4");
    }
    return {};
}

TcpPduFault check_tcp_data_header(const TcpDataHeader& pdu, const TcpPduExpect& expect) noexcept {
    if (pdu.datal != expect.data_bytes) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpDataHeader, datal),
                     "DATAL is not the data PLEN and PDO leave");
    }
    const bool success = (pdu.ch.flags & kTcpFlagSuccess) != 0;
    if (success && (expect.type != TcpPduType::c2h_data || (pdu.ch.flags & kTcpFlagLastPdu) == 0)) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpCommonHeader, flags),
                     "SUCCESS is set on a PDU that is not a command's last C2HData");
    }
    if (std::uint64_t{pdu.datao} + pdu.datal > UINT32_MAX) {
        return fault(TcpFatalError::data_out_of_range, offsetof(TcpDataHeader, datao),
                     "DATAO + DATAL overflows");
    }
    return {};
}

TcpPduFault check_tcp_h2c_data_in_r2t(const TcpDataHeader& pdu, const TcpR2tWindow& r2t) noexcept {
    const std::uint64_t end = std::uint64_t{r2t.offset} + r2t.length;
    if (pdu.datao < r2t.offset || pdu.datao >= end) {
        return fault(TcpFatalError::data_out_of_range, offsetof(TcpDataHeader, datao),
                     "H2CData DATAO lies outside its R2T");
    }
    if (std::uint64_t{pdu.datao} + pdu.datal > end) {
        return fault(TcpFatalError::data_out_of_range, offsetof(TcpDataHeader, datal),
                     "H2CData DATAO + DATAL runs past its R2T");
    }
    if (pdu.datao != std::uint64_t{r2t.offset} + r2t.received) {
        return fault(TcpFatalError::data_out_of_range, offsetof(TcpDataHeader, datao),
                     "H2CData DATAO is not where its R2T's data continues");
    }
    // The field in error is FLAGS, so Invalid PDU Header Field names it (FreeBSD's
    // nvmft answers PDU Sequence Error, whose FEI is reserved).
    const bool ends = std::uint64_t{pdu.datao} + pdu.datal == end;
    if (((pdu.ch.flags & kTcpFlagLastPdu) != 0) != ends) {
        return fault(TcpFatalError::invalid_header_field, kFeiFlags,
                     ends ? "H2CData ends its R2T's data without LAST_PDU"
                          : "H2CData sets LAST_PDU before its R2T's data ends");
    }
    return {};
}

TcpPduFault check_tcp_r2t(const TcpR2t& pdu) noexcept {
    if (pdu.r2tl == 0) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpR2t, r2tl), "R2TL is 0");
    }
    if (std::uint64_t{pdu.r2to} + pdu.r2tl > UINT32_MAX) {
        return fault(TcpFatalError::data_out_of_range, offsetof(TcpR2t, r2to),
                     "R2TO + R2TL overflows");
    }
    return {};
}

TcpPduFault check_tcp_term_req(const TcpTermReq& pdu) noexcept {
    if (pdu.fes == 0 ||
        pdu.fes > static_cast<std::uint16_t>(TcpFatalError::unsupported_parameter)) {
        return fault(TcpFatalError::invalid_header_field, offsetof(TcpTermReq, fes),
                     "TermReq FES is no fatal error status");
    }
    return {};
}

TcpPduFault tcp_header_digest_fault(const void* header, std::uint8_t hlen,
                                    std::uint32_t received) noexcept {
    if (tcp_digest(header, hlen) != received) {
        return fault(TcpFatalError::header_digest_error, hlen, "HDGST does not match the header");
    }
    return {};
}

}  // namespace nvmeof::wire
