// NVMe/TCP PDUs: the builders' bytes against layouts worked out by hand from
// the NVMe/TCP transport specification, the digests' known answer, and one
// case per receive check, each naming the field (FEI) it found in error.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "nvmeof/wire/tcp.hpp"

namespace w = nvmeof::wire;
using w::TcpFatalError;

namespace {

template <typename T>
std::vector<std::uint8_t> bytes_of(const T& value) {
    std::vector<std::uint8_t> out(sizeof value);
    std::memcpy(out.data(), &value, sizeof value);
    return out;
}

constexpr w::TcpDigests kNoDigests{};
constexpr w::TcpDigests kBothDigests{true, true};

w::TcpReceiveState host_state(w::TcpDigests digests = kNoDigests, std::uint8_t hpda = 0) {
    return w::TcpReceiveState{w::TcpRole::host, true, digests, hpda, 1u << 20};
}
w::TcpReceiveState controller_state(w::TcpDigests digests = kNoDigests, std::uint8_t cpda = 0) {
    return w::TcpReceiveState{w::TcpRole::controller, true, digests, cpda, 8192};
}

w::TcpPduFault check(const w::TcpCommonHeader& ch, const w::TcpReceiveState& state) {
    w::TcpPduExpect expect;
    return w::check_tcp_common_header(ch, state, expect);
}

}  // namespace

TEST(TcpPdu, DigestIsCrc32c) {
    const char check[] = "123456789";
    EXPECT_EQ(w::tcp_digest(check, 9), 0xE3069283u);  // CRC-32C's check value
    // Continued over pieces, as data arrives.
    EXPECT_EQ(w::tcp_digest(check + 4, 5, w::tcp_digest(check, 4)), 0xE3069283u);
}

TEST(TcpPdu, IcReqBytes) {
    const auto pdu = bytes_of(w::tcp_ic_req(0, kBothDigests, 3));
    const std::array<std::uint8_t, 16> head = {0x00, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00,
                                               0x00, 0x00, 0x00, 0x03, 0x03, 0x00, 0x00, 0x00};
    ASSERT_EQ(pdu.size(), 128u);
    EXPECT_TRUE(std::equal(head.begin(), head.end(), pdu.begin()));
    EXPECT_TRUE(std::all_of(pdu.begin() + 16, pdu.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST(TcpPdu, IcRespBytesAndChecks) {
    const w::TcpIcResp resp = w::tcp_ic_resp(1, w::TcpDigests{true, false}, 131072);
    const auto pdu = bytes_of(resp);
    const std::array<std::uint8_t, 16> head = {0x01, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00,
                                               0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x02, 0x00};
    EXPECT_TRUE(std::equal(head.begin(), head.end(), pdu.begin()));
    EXPECT_FALSE(w::check_tcp_ic_resp(resp, kBothDigests));
    // A digest the host did not ask for.
    const w::TcpPduFault more = w::check_tcp_ic_resp(resp, kNoDigests);
    EXPECT_EQ(more.fes, TcpFatalError::invalid_header_field);
    EXPECT_EQ(more.fei, 11u);
    w::TcpIcResp small = resp;
    small.maxh2cdata = 2048;
    EXPECT_EQ(w::check_tcp_ic_resp(small, kBothDigests).fei, 12u);
    w::TcpIcResp pfv = resp;
    pfv.pfv = 1;
    EXPECT_EQ(w::check_tcp_ic_resp(pfv, kBothDigests).fes, TcpFatalError::unsupported_parameter);
    w::TcpIcResp cpda = resp;
    cpda.cpda = 32;
    EXPECT_EQ(w::check_tcp_ic_resp(cpda, kBothDigests).fei, 10u);
}

TEST(TcpPdu, IcReqChecks) {
    EXPECT_FALSE(w::check_tcp_ic_req(w::tcp_ic_req(31, kBothDigests, 0)));
    w::TcpIcReq req = w::tcp_ic_req(0, kNoDigests, 0);
    req.dgst = 0x04;
    EXPECT_EQ(w::check_tcp_ic_req(req).fei, 11u);
    req = w::tcp_ic_req(32, kNoDigests, 0);
    EXPECT_EQ(w::check_tcp_ic_req(req).fei, 10u);
}

TEST(TcpPdu, CapsuleCmdLayout) {
    w::Sqe sqe = w::make_sqe(0x01, 1);
    sqe.command_id = 7;
    // No data, no digests: the header alone.
    w::TcpCapsuleCmd cmd = w::tcp_capsule_cmd(sqe, 0, kNoDigests, 0);
    EXPECT_EQ(cmd.ch.type, 0x04);
    EXPECT_EQ(cmd.ch.flags, 0);
    EXPECT_EQ(cmd.ch.hlen, 72);
    EXPECT_EQ(cmd.ch.pdo, 0);
    EXPECT_EQ(cmd.ch.plen, 72u);
    EXPECT_EQ(cmd.sqe.command_id, 7);
    // 4 KiB in the capsule with both digests: header, HDGST, data at 76, DDGST.
    cmd = w::tcp_capsule_cmd(sqe, 4096, kBothDigests, 0);
    EXPECT_EQ(cmd.ch.flags, w::kTcpFlagHeaderDigest | w::kTcpFlagDataDigest);
    EXPECT_EQ(cmd.ch.pdo, 76);
    EXPECT_EQ(cmd.ch.plen, 76u + 4096u + 4u);
    // The controller's CPDA 7 (32-byte alignment) moves the data to 96.
    cmd = w::tcp_capsule_cmd(sqe, 512, kNoDigests, 7);
    EXPECT_EQ(cmd.ch.pdo, 96);
    EXPECT_EQ(cmd.ch.plen, 96u + 512u);
    // A header digest but no data digest: DDGSTF stays clear without data.
    cmd = w::tcp_capsule_cmd(sqe, 0, kBothDigests, 0);
    EXPECT_EQ(cmd.ch.flags, w::kTcpFlagHeaderDigest);
    EXPECT_EQ(cmd.ch.plen, 76u);
}

TEST(TcpPdu, ReceivedHeadersOfEveryBuilderPass) {
    w::Sqe sqe = w::make_sqe(0x02, 1);
    w::Cqe cqe{};
    for (const w::TcpDigests digests : {kNoDigests, kBothDigests, w::TcpDigests{true, false}}) {
        w::TcpPduExpect expect;
        const w::TcpCapsuleCmd cmd = w::tcp_capsule_cmd(sqe, 4096, digests, 0);
        ASSERT_FALSE(w::check_tcp_common_header(cmd.ch, controller_state(digests), expect));
        EXPECT_EQ(expect.type, w::TcpPduType::capsule_cmd);
        EXPECT_EQ(expect.data_bytes, 4096u);
        EXPECT_EQ(expect.pdo, cmd.ch.pdo);
        EXPECT_EQ(expect.header_bytes, 72u + digests.header_bytes());

        const w::TcpCapsuleResp resp = w::tcp_capsule_resp(cqe, digests);
        ASSERT_FALSE(w::check_tcp_common_header(resp.ch, host_state(digests), expect));
        EXPECT_EQ(expect.data_bytes, 0u);
        EXPECT_EQ(expect.plen, 24u + digests.header_bytes());

        const w::TcpDataHeader c2h = w::tcp_c2h_data(3, 8192, 4096, true, true, digests, 0);
        ASSERT_FALSE(w::check_tcp_common_header(c2h.ch, host_state(digests), expect));
        EXPECT_EQ(expect.data_bytes, 4096u);
        EXPECT_FALSE(w::check_tcp_data_header(c2h, expect));

        const w::TcpDataHeader h2c = w::tcp_h2c_data(3, 9, 0, 8192, false, digests, 0);
        ASSERT_FALSE(w::check_tcp_common_header(h2c.ch, controller_state(digests), expect));
        EXPECT_FALSE(w::check_tcp_data_header(h2c, expect));

        const w::TcpR2t r2t = w::tcp_r2t(3, 9, 0, 65536, digests);
        ASSERT_FALSE(w::check_tcp_common_header(r2t.ch, host_state(digests), expect));
        EXPECT_FALSE(w::check_tcp_r2t(r2t));
    }
    w::TcpReceiveState before = host_state();
    before.initialized = false;
    w::TcpPduExpect expect;
    EXPECT_FALSE(
        w::check_tcp_common_header(w::tcp_ic_resp(0, kNoDigests, 8192).ch, before, expect));
    const w::TcpTermReq term =
        w::tcp_term_req(w::TcpPduType::c2h_term_req, TcpFatalError::header_digest_error, 72, 72);
    ASSERT_FALSE(w::check_tcp_common_header(term.ch, host_state(), expect));
    EXPECT_EQ(expect.data_bytes, 72u);
    EXPECT_FALSE(w::check_tcp_term_req(term));
    EXPECT_EQ(term.fei(), 72u);
}

TEST(TcpPdu, CommonHeaderFaultsNameTheField) {
    w::Cqe cqe{};
    const w::TcpCommonHeader resp = w::tcp_capsule_resp(cqe, kNoDigests).ch;
    struct Case {
        const char* what;
        w::TcpCommonHeader ch;
        w::TcpReceiveState state;
        TcpFatalError fes;
        std::uint32_t fei;
    };
    auto with = [&](auto change) {
        w::TcpCommonHeader ch = resp;
        change(ch);
        return ch;
    };
    w::TcpReceiveState uninitialized = host_state();
    uninitialized.initialized = false;
    const w::TcpDataHeader c2h = w::tcp_c2h_data(1, 0, 4096, true, false, kNoDigests, 0);
    auto c2h_with = [&](auto change) {
        w::TcpCommonHeader ch = c2h.ch;
        change(ch);
        return ch;
    };
    const Case cases[] = {
        {"type 8", with([](auto& c) { c.type = 8; }), host_state(),
         TcpFatalError::invalid_header_field, 0},
        {"a CapsuleCmd to the host", with([](auto& c) {
             c.type = 4;
             c.hlen = 72;
         }),
         host_state(), TcpFatalError::invalid_header_field, 0},
        {"CapsuleResp before ICResp", resp, uninitialized, TcpFatalError::pdu_sequence_error, 0},
        {"ICResp twice", w::tcp_ic_resp(0, kNoDigests, 8192).ch, host_state(),
         TcpFatalError::pdu_sequence_error, 0},
        {"HLEN", with([](auto& c) { c.hlen = 28; }), host_state(),
         TcpFatalError::invalid_header_field, 2},
        {"HDGSTF without header digests", with([](auto& c) {
             c.flags = 1;
             c.plen = 28;
         }),
         host_state(), TcpFatalError::invalid_header_field, 1},
        {"HDGSTF missing", resp, host_state(w::TcpDigests{true, false}),
         TcpFatalError::invalid_header_field, 1},
        {"DDGSTF without data", with([](auto& c) { c.flags = 2; }), host_state(kBothDigests),
         TcpFatalError::invalid_header_field, 1},
        {"PDO without data", with([](auto& c) { c.pdo = 24; }), host_state(),
         TcpFatalError::invalid_header_field, 3},
        {"PLEN without data", with([](auto& c) { c.plen = 32; }), host_state(),
         TcpFatalError::invalid_header_field, 4},
        {"PDO inside the header", c2h_with([](auto& c) { c.pdo = 20; }), host_state(),
         TcpFatalError::invalid_header_field, 3},
        {"PDO not at HPDA", c2h_with([](auto& c) {
             c.pdo = 28;
             c.plen = 28 + 4096;
         }),
         host_state(kNoDigests, 3), TcpFatalError::invalid_header_field, 3},
        {"PLEN before PDO", c2h_with([](auto& c) { c.plen = 24; }), host_state(),
         TcpFatalError::invalid_header_field, 4},
        {"more data than the receiver takes",
         c2h_with([](auto& c) { c.plen = 24 + (1u << 20) + 1; }), host_state(),
         TcpFatalError::data_limit_exceeded, 4},
        {"DDGSTF missing on data", c2h.ch, host_state(kBothDigests),
         TcpFatalError::invalid_header_field, 1},
        {"ICResp with PLEN 132",
         [] {
             auto ch = w::tcp_ic_resp(0, kNoDigests, 8192).ch;
             ch.plen = 132;
             return ch;
         }(),
         uninitialized, TcpFatalError::invalid_header_field, 4},
        {"a TermReq of 153 bytes",
         [] {
             auto ch = w::tcp_term_req(w::TcpPduType::c2h_term_req,
                                       TcpFatalError::pdu_sequence_error, 0, 0)
                           .ch;
             ch.plen = 153;
             return ch;
         }(),
         host_state(), TcpFatalError::invalid_header_field, 4},
    };
    for (const Case& c : cases) {
        const w::TcpPduFault f = check(c.ch, c.state);
        EXPECT_EQ(f.fes, c.fes) << c.what << ": " << (f.why ? f.why : "passed");
        EXPECT_EQ(f.fei, c.fei) << c.what;
        if (f) {
            EXPECT_NE(std::string(f.why), "") << c.what;
        }
    }
}

TEST(TcpPdu, DataHeaderFaults) {
    w::TcpPduExpect expect;
    w::TcpDataHeader c2h = w::tcp_c2h_data(1, 0, 4096, false, false, kNoDigests, 0);
    ASSERT_FALSE(w::check_tcp_common_header(c2h.ch, host_state(), expect));
    c2h.datal = 4095;
    EXPECT_EQ(w::check_tcp_data_header(c2h, expect).fei, 16u);
    c2h.datal = 4096;
    c2h.ch.flags = w::kTcpFlagSuccess;  // SUCCESS without LAST_PDU
    EXPECT_EQ(w::check_tcp_data_header(c2h, expect).fei, 1u);
    c2h.ch.flags = 0;
    c2h.datao = 0xFFFFF000;
    EXPECT_EQ(w::check_tcp_data_header(c2h, expect).fes, TcpFatalError::data_out_of_range);

    w::TcpR2t r2t = w::tcp_r2t(1, 2, 0, 0, kNoDigests);
    EXPECT_EQ(w::check_tcp_r2t(r2t).fei, 16u);
    w::TcpTermReq term = w::tcp_term_req(w::TcpPduType::c2h_term_req, TcpFatalError::none, 0, 0);
    EXPECT_EQ(w::check_tcp_term_req(term).fei, 8u);
}

TEST(TcpPdu, H2cDataAgainstItsR2t) {
    // An R2T for [4096, 12288), 4096 bytes of it in so far.
    const w::TcpR2tWindow r2t{4096, 8192, 4096};
    auto h2c = [](std::uint32_t datao, std::uint32_t datal, bool last) {
        return w::tcp_h2c_data(1, 2, datao, datal, last, kNoDigests, 0);
    };
    EXPECT_FALSE(w::check_tcp_h2c_data_in_r2t(h2c(8192, 2048, false), r2t));
    EXPECT_FALSE(w::check_tcp_h2c_data_in_r2t(h2c(8192, 4096, true), r2t));
    struct Case {
        const char* what;
        w::TcpDataHeader pdu;
        TcpFatalError fes;
        std::uint32_t fei;
    };
    const Case cases[] = {
        {"DATAO before the R2T", h2c(0, 4096, false), TcpFatalError::data_out_of_range, 12},
        {"DATAO past the R2T", h2c(12288, 4096, true), TcpFatalError::data_out_of_range, 12},
        {"DATAL past the R2T", h2c(8192, 8192, true), TcpFatalError::data_out_of_range, 16},
        {"DATAO out of order", h2c(10240, 2048, true), TcpFatalError::data_out_of_range, 12},
        {"the last PDU without LAST_PDU", h2c(8192, 4096, false),
         TcpFatalError::invalid_header_field, 1},
        {"LAST_PDU too early", h2c(8192, 2048, true), TcpFatalError::invalid_header_field, 1},
    };
    for (const Case& c : cases) {
        const w::TcpPduFault f = w::check_tcp_h2c_data_in_r2t(c.pdu, r2t);
        EXPECT_EQ(f.fes, c.fes) << c.what << ": " << (f.why ? f.why : "passed");
        EXPECT_EQ(f.fei, c.fei) << c.what;
    }
}

TEST(TcpPdu, HeaderDigest) {
    w::Cqe cqe{};
    cqe.command_id = 5;
    const w::TcpCapsuleResp resp = w::tcp_capsule_resp(cqe, kBothDigests);
    const std::uint32_t digest = w::tcp_digest(&resp, sizeof resp);
    EXPECT_FALSE(w::tcp_header_digest_fault(&resp, sizeof resp, digest));
    const w::TcpPduFault bad = w::tcp_header_digest_fault(&resp, sizeof resp, digest ^ 1);
    EXPECT_EQ(bad.fes, TcpFatalError::header_digest_error);
    EXPECT_EQ(bad.fei, 24u);
}

TEST(TcpPdu, Names) {
    EXPECT_EQ(w::tcp_pdu_type_name(0x07), "C2HData");
    EXPECT_EQ(w::tcp_pdu_type_name(0x08), "unknown PDU type");
    EXPECT_EQ(w::tcp_fatal_error_name(0x03), "Header Digest Error");
    EXPECT_EQ(w::tcp_header_length(0x09), 24);
    EXPECT_EQ(w::tcp_header_length(0x0A), 0);
}
