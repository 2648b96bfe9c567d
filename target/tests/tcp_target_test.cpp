// nvmeof-target --transport tcp, run as a subprocess and driven with raw
// NVMe/TCP PDUs over loopback sockets: initialization, Connect, Identify, the
// discovery log, writes in-capsule and through R2T/H2CData, reads through
// C2HData with and without SUCCESS, each with digests off and on; MAXH2CDATA,
// --c2h-pdu-bytes and --no-c2h-success; and the host's faults that end a
// connection with a C2HTermReq (its FES/FEI, the header copied and the log
// line: a bad header field or digest, H2CData breaking its R2T's rules), a
// data digest error, a host vanishing mid-PDU, a silent connection beside a
// working one. The target's own NVMe/TCP faults: tcp_faults_test.cpp.
#include <tuple>

#include "tcp_harness.hpp"

namespace {

using namespace tcp_test;

std::string digest_name(const testing::TestParamInfo<int>& param) {
    static const char* names[] = {"none", "header", "data", "both"};
    return names[param.param];
}

class TcpTarget : public testing::TestWithParam<int> {
  protected:
    wire::TcpDigests digests() const {
        return wire::TcpDigests{(GetParam() & 1) != 0, (GetParam() & 2) != 0};
    }
};

INSTANTIATE_TEST_SUITE_P(Digests, TcpTarget, testing::Values(0, 1, 2, 3), digest_name);

TEST_P(TcpTarget, IcRespAnswersWhatTheHostAsked) {
    Target target;
    Host host(target.port(), digests(), 3);
    EXPECT_EQ(host.icresp().ch.type, static_cast<std::uint8_t>(TcpPduType::ic_resp));
    EXPECT_EQ(host.icresp().pfv, 0);
    EXPECT_EQ(host.icresp().cpda, 0);
    EXPECT_EQ(host.icresp().dgst, digests().dgst());
    EXPECT_EQ(host.icresp().maxh2cdata, 128u * 1024);
}

TEST_P(TcpTarget, ConnectAndIdentifyAdvertiseTcp) {
    Target target;
    Host admin(target.port(), digests());
    EXPECT_NE(admin.connect(0), 0);
    admin.enable();
    const wire::IdentifyController id = admin.identify();
    EXPECT_EQ(id.sgls, 0x00100001u);  // SGLs, offset in-capsule data; no keyed SGLs
    EXPECT_EQ(id.ioccsz, 260u);
    EXPECT_EQ(id.iorcsz, 1u);
    EXPECT_EQ(id.maxcmd, 128);
    EXPECT_EQ(id.msdbd, 1);
    EXPECT_EQ(std::string(id.subnqn, std::strlen(kSubnqn)), kSubnqn);
}

TEST_P(TcpTarget, DiscoveryLogNamesTcp) {
    Target target;
    Host host(target.port(), digests());
    host.connect(0, wire::kDynamicControllerId, wire::kDiscoveryNqn);
    host.enable();
    const Exchange x =
        host.run(wire::get_log_page_command(wire::LogPageId::discovery, 0, transport_sgl(2048)));
    ASSERT_TRUE(x.status().ok());
    ASSERT_EQ(x.data.size(), 2048u);
    const auto records = wire::parse_discovery_log(x.data.data(), x.data.size());
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].transport, wire::TransportType::tcp);
    EXPECT_EQ(records[0].family, wire::AddressFamily::ipv4);
    EXPECT_EQ(records[0].address, "127.0.0.1");
    EXPECT_EQ(records[0].service_id, std::to_string(target.port()));
    EXPECT_EQ(records[0].subsystem_nqn, kSubnqn);
    wire::DiscoveryLogEntry entry{};
    std::memcpy(&entry, x.data.data() + wire::kDiscoveryRecordSize, sizeof entry);
    const auto* tsas = reinterpret_cast<const std::uint8_t*>(&entry.tsas);
    EXPECT_EQ(tsas[0], 0) << "TSAS SECTYPE: none";
}

TEST_P(TcpTarget, InCapsuleWriteThenReadThroughC2hData) {
    Target target;
    Controller c(target.port(), digests());
    const auto data = pattern(4096, 1);
    const Exchange w =
        c.io.run(Host::rw(wire::IoOpcode::write, 8, data.size(), wire::in_capsule_data(0, 4096)),
                 data, true);
    ASSERT_TRUE(w.answered);
    EXPECT_TRUE(w.status().ok());
    EXPECT_EQ(w.r2ts, 0);
    const Exchange r =
        c.io.run(Host::rw(wire::IoOpcode::read, 8, data.size(), transport_sgl(4096)));
    ASSERT_TRUE(r.answered);
    EXPECT_TRUE(r.status().ok());
    EXPECT_FALSE(r.success_flag);  // SQ flow control on: the CapsuleResp carries SQHD
    EXPECT_EQ(r.c2h_pdus, 1);
    EXPECT_EQ(r.data, data);
}

TEST_P(TcpTarget, LargeWriteThroughR2tAndSplitRead) {
    Target target;
    Controller c(target.port(), digests(), 0, 7);  // HPDA 7: C2HData at 32-byte PDO
    const auto data = pattern(128 * 1024, 2);
    const Exchange w =
        c.io.run(Host::rw(wire::IoOpcode::write, 64, data.size(), transport_sgl(128 * 1024)), data);
    ASSERT_TRUE(w.answered);
    EXPECT_TRUE(w.status().ok());
    EXPECT_EQ(w.r2ts, 1);
    const Exchange r =
        c.io.run(Host::rw(wire::IoOpcode::read, 64, data.size(), transport_sgl(128 * 1024)));
    ASSERT_TRUE(r.answered);
    EXPECT_TRUE(r.status().ok());
    EXPECT_EQ(r.c2h_pdus, 2);  // 64 KiB per C2HData
    EXPECT_EQ(r.data, data);
    target.stop();
    const std::string stats = target.stats();
    EXPECT_NE(stats.find("\"r2t\": 1,"), std::string::npos) << stats;
    EXPECT_NE(stats.find("\"h2c_data\": 8,"), std::string::npos) << stats;
    EXPECT_NE(stats.find("\"c2h_data\": 2,"), std::string::npos) << stats;
}

TEST_P(TcpTarget, ReadWithSuccessFlagWhenSqFlowControlIsOff) {
    Target target;
    Controller c(target.port(), digests(), 1u << 2);  // CATTR DISSQFC
    const auto data = pattern(8192, 3);
    ASSERT_TRUE(c.io.run(Host::rw(wire::IoOpcode::write, 0, data.size(), transport_sgl(8192)), data)
                    .status()
                    .ok());
    const Exchange r =
        c.io.run(Host::rw(wire::IoOpcode::read, 0, data.size(), transport_sgl(8192)));
    ASSERT_TRUE(r.answered);
    EXPECT_TRUE(r.success_flag);
    EXPECT_EQ(r.data, data);
    // No CapsuleResp trails it: the next PDU answers the next command.
    const Exchange after = c.io.run(Host::rw(wire::IoOpcode::read, 0, 512, transport_sgl(512)));
    EXPECT_TRUE(after.success_flag);
    EXPECT_EQ(after.data, std::vector<std::uint8_t>(data.begin(), data.begin() + 512));
}

// ---- NVMe/TCP settings ----

TEST_P(TcpTarget, MaxH2cDataSplitsTheHostsData) {
    Target target({"--maxh2cdata", "8192"});
    Controller c(target.port(), digests());
    EXPECT_EQ(c.io.icresp().maxh2cdata, 8192u);
    const auto data = pattern(32768, 8);
    const Exchange w =
        c.io.run(Host::rw(wire::IoOpcode::write, 16, data.size(), transport_sgl(32768)), data,
                 false, c.io.icresp().maxh2cdata);
    ASSERT_TRUE(w.answered);
    EXPECT_TRUE(w.status().ok());
    EXPECT_EQ(w.r2ts, 1);  // one R2T, its data in four H2CData PDUs
    const Exchange r =
        c.io.run(Host::rw(wire::IoOpcode::read, 16, data.size(), transport_sgl(32768)));
    EXPECT_EQ(r.data, data);
    target.stop();
    EXPECT_NE(target.stats().find("\"h2c_data\": 4,"), std::string::npos) << target.stats();
}

TEST_P(TcpTarget, C2hPduBytesSplitsReads) {
    Target target({"--c2h-pdu-bytes", "1000"});
    Controller c(target.port(), digests(), 1u << 2, 3);  // DISSQFC; HPDA 3: 16-byte PDO
    const auto data = pattern(4096, 9);
    ASSERT_TRUE(
        c.io.run(Host::rw(wire::IoOpcode::write, 8, data.size(), wire::in_capsule_data(0, 4096)),
                 data, true)
            .status()
            .ok());
    const Exchange r =
        c.io.run(Host::rw(wire::IoOpcode::read, 8, data.size(), transport_sgl(4096)));
    ASSERT_TRUE(r.answered);
    EXPECT_EQ(r.c2h_pdus, 5);  // 4 × 1000 + 96, each DATAO where the last ended
    EXPECT_TRUE(r.success_flag);
    EXPECT_EQ(r.data, data);
}

TEST_P(TcpTarget, NoC2hSuccessEndsReadsWithCapsuleResp) {
    Target target({"--no-c2h-success"});
    Controller c(target.port(), digests(), 1u << 2);  // CATTR DISSQFC
    const auto data = pattern(8192, 10);
    ASSERT_TRUE(c.io.run(Host::rw(wire::IoOpcode::write, 0, data.size(), transport_sgl(8192)), data)
                    .status()
                    .ok());
    const Exchange r =
        c.io.run(Host::rw(wire::IoOpcode::read, 0, data.size(), transport_sgl(8192)));
    ASSERT_TRUE(r.answered);
    EXPECT_FALSE(r.success_flag);  // a CapsuleResp answered it
    EXPECT_TRUE(r.status().ok());
    EXPECT_EQ(r.data, data);
}

// ---- faults ----

TEST(TcpTargetFault, BadHlenEndsTheConnection) {
    Target target;
    Host host(target.port());
    wire::Sqe sqe = wire::keep_alive_command();
    wire::TcpCapsuleCmd cmd = wire::tcp_capsule_cmd(sqe, 0, {}, 0);
    cmd.ch.hlen = 70;
    host.send_raw(&cmd, sizeof cmd);
    const auto term = expect_term_req(host);
    ASSERT_TRUE(term);
    EXPECT_EQ(term->pdu.fes, static_cast<std::uint16_t>(wire::TcpFatalError::invalid_header_field));
    EXPECT_EQ(term->pdu.fei(), 2u);  // HLEN's offset
    ASSERT_GE(term->copy.size(), 8u);
    EXPECT_EQ(term->copy[2], 70) << "the header in error follows the TermReq";
    EXPECT_TRUE(
        target.log_has("nvmeof-target: TCP queue 0: HLEN is not this PDU type's header "
                       "length: C2HTermReq FES 0x1"))
        << target.log();
}

TEST(TcpTargetFault, WrongHeaderDigestEndsTheConnection) {
    Target target;
    Host admin(target.port(), wire::TcpDigests{true, false});
    admin.connect(0);
    wire::Sqe sqe = wire::keep_alive_command();
    sqe.dptr = transport_sgl(0);
    admin.send_capsule(sqe, {}, true);
    const auto term = expect_term_req(admin);
    ASSERT_TRUE(term);
    EXPECT_EQ(term->pdu.fes, static_cast<std::uint16_t>(wire::TcpFatalError::header_digest_error));
    EXPECT_EQ(term->pdu.fei(), sizeof(wire::TcpCapsuleCmd));  // where HDGST sits
    EXPECT_TRUE(target.log_has(
        "nvmeof-target: TCP queue 0: HDGST does not match the header: C2HTermReq FES 0x3"))
        << target.log();
}

TEST(TcpTargetFault, WrongDataDigestFailsTheCommandOnly) {
    Target target;
    Controller c(target.port(), wire::TcpDigests{false, true});
    const auto data = pattern(1024, 4);
    wire::Sqe sqe = Host::rw(wire::IoOpcode::write, 0, data.size(), wire::in_capsule_data(0, 1024));
    sqe.command_id = 900;
    c.io.send_capsule(sqe, data, false, true);
    const auto pdu = c.io.read_pdu();
    ASSERT_TRUE(pdu && pdu->type() == TcpPduType::capsule_resp);
    const auto status = wire::Status::from_cqe_field(pdu->as<wire::TcpCapsuleResp>().cqe.status);
    EXPECT_EQ(status, wire::Status::generic(wire::GenericStatus::transient_transport_error, false));
    EXPECT_TRUE(target.log_has("nvmeof-target: TCP queue 1: CID 900: DDGST does not match"))
        << target.log();
    // The connection lives on.
    EXPECT_TRUE(
        c.io.run(Host::rw(wire::IoOpcode::write, 0, data.size(), wire::in_capsule_data(0, 1024)),
                 data, true)
            .status()
            .ok());
}

class H2cOutsideR2t : public testing::TestWithParam<int> {};
std::string field_name(const testing::TestParamInfo<int>& param) {
    return param.param == 0 ? "datao" : "datal";
}
INSTANTIATE_TEST_SUITE_P(Field, H2cOutsideR2t, testing::Values(0, 1), field_name);

TEST_P(H2cOutsideR2t, EndsTheConnection) {
    Target target;
    Controller c(target.port(), {});
    wire::Sqe sqe = Host::rw(wire::IoOpcode::write, 0, 8192, transport_sgl(8192));
    sqe.command_id = 77;
    c.io.send_capsule(sqe);
    const auto pdu = c.io.read_pdu();
    ASSERT_TRUE(pdu && pdu->type() == TcpPduType::r2t);
    const auto r2t = pdu->as<wire::TcpR2t>();
    EXPECT_EQ(r2t.r2to, 0u);
    EXPECT_EQ(r2t.r2tl, 8192u);
    const auto data = pattern(8192, 5);
    if (GetParam() == 0) {
        c.io.send_h2c(77, r2t.ttag, 8192, std::span(data).first(4096), true);
    } else {
        c.io.send_h2c(77, r2t.ttag, 4096, std::span(data), true);  // 4096 + 8192 > 8192
    }
    const auto term = expect_term_req(c.io);
    ASSERT_TRUE(term);
    EXPECT_EQ(term->pdu.fes, static_cast<std::uint16_t>(wire::TcpFatalError::data_out_of_range));
    EXPECT_EQ(term->pdu.fei(), GetParam() == 0 ? offsetof(wire::TcpDataHeader, datao)
                                               : offsetof(wire::TcpDataHeader, datal));
    EXPECT_TRUE(target.log_has(GetParam() == 0
                                   ? "nvmeof-target: TCP queue 1: H2CData DATAO lies outside its "
                                     "R2T: C2HTermReq FES 0x4"
                                   : "nvmeof-target: TCP queue 1: H2CData DATAO + DATAL runs past "
                                     "its R2T: C2HTermReq FES 0x4"))
        << target.log();
    // The controller's admin queue is unaffected.
    wire::Sqe keep_alive = wire::keep_alive_command();
    keep_alive.dptr = transport_sgl(0);
    EXPECT_TRUE(c.admin.run(keep_alive).status().ok());
}

// H2CData that breaks the R2T's rules, each answered with a C2HTermReq naming
// the field, the H2CData header in error copied after it.
struct H2cCase {
    const char* name;
    std::vector<std::string> options;
    // (DATAO, DATAL, LAST_PDU) of each H2CData sent for an R2T of 8192 bytes
    std::vector<std::tuple<std::uint32_t, std::uint32_t, bool>> pieces;
    wire::TcpFatalError fes;
    std::uint32_t fei;
    const char* why;
};

class H2cBreaksR2t : public testing::TestWithParam<H2cCase> {};

const H2cCase kH2cCases[] = {
    {"AboveMaxh2cdata",
     {"--maxh2cdata", "4096"},
     {{0, 8192, true}},
     wire::TcpFatalError::data_limit_exceeded,
     4,  // PLEN
     "PLEN carries more data than the receiver takes in one PDU"},
    {"LastPduMissing",
     {},
     {{0, 4096, false}, {4096, 4096, false}},
     wire::TcpFatalError::invalid_header_field,
     1,  // FLAGS
     "H2CData ends its R2T's data without LAST_PDU"},
    {"LastPduTooEarly",
     {},
     {{0, 4096, true}},
     wire::TcpFatalError::invalid_header_field,
     1,
     "H2CData sets LAST_PDU before its R2T's data ends"},
    {"OutOfOrder",
     {},
     {{4096, 4096, true}},
     wire::TcpFatalError::data_out_of_range,
     12,  // DATAO
     "H2CData DATAO is not where its R2T's data continues"},
    {"PastTheR2t",
     {},
     {{0, 4096, false}, {4096, 8192, true}},
     wire::TcpFatalError::data_out_of_range,
     16,  // DATAL
     "H2CData DATAO + DATAL runs past its R2T"},
};

INSTANTIATE_TEST_SUITE_P(Rule, H2cBreaksR2t, testing::ValuesIn(kH2cCases),
                         [](const testing::TestParamInfo<H2cCase>& p) { return p.param.name; });

TEST_P(H2cBreaksR2t, EndsTheConnection) {
    const H2cCase& k = GetParam();
    Target target(k.options);
    Controller c(target.port(), {});
    wire::Sqe sqe = Host::rw(wire::IoOpcode::write, 0, 8192, transport_sgl(8192));
    sqe.command_id = 78;
    c.io.send_capsule(sqe);
    const auto pdu = c.io.read_pdu();
    ASSERT_TRUE(pdu && pdu->type() == TcpPduType::r2t);
    const auto r2t = pdu->as<wire::TcpR2t>();
    ASSERT_EQ(r2t.r2tl, 8192u);
    const auto data = pattern(16384, 11);
    wire::TcpDataHeader last{};
    for (const auto& [datao, datal, flag] : k.pieces) {
        c.io.send_h2c(78, r2t.ttag, datao, std::span(data).subspan(datao, datal), flag);
        last = wire::tcp_h2c_data(78, r2t.ttag, datao, datal, flag, {}, 0);
    }
    const auto term = expect_term_req(c.io);
    ASSERT_TRUE(term);
    EXPECT_EQ(term->pdu.fes, static_cast<std::uint16_t>(k.fes));
    EXPECT_EQ(term->pdu.fei(), k.fei);
    EXPECT_EQ(term->pdu.ch.plen, sizeof(wire::TcpTermReq) + term->copy.size());
    ASSERT_GE(term->copy.size(), sizeof last);
    EXPECT_EQ(std::memcmp(term->copy.data(), &last, sizeof last), 0)
        << "the H2CData header in error follows the TermReq";
    EXPECT_TRUE(target.log_has(std::string("nvmeof-target: TCP queue 1: ") + k.why +
                               ": C2HTermReq FES 0x" + std::to_string(static_cast<int>(k.fes))))
        << target.log();
}

TEST(TcpTargetFault, HostVanishingMidPduLeavesOthersServed) {
    Target target;
    {
        Host host(target.port());
        const wire::TcpCapsuleCmd cmd = wire::tcp_capsule_cmd(wire::keep_alive_command(), 0, {}, 0);
        host.send_raw(&cmd, 30);  // 30 of 72 bytes, then gone
    }
    EXPECT_TRUE(target.log_has("the host closed the connection 30 bytes into a PDU"))
        << target.log();
    Host admin(target.port());
    EXPECT_NE(admin.connect(0), 0);
}

TEST(TcpTargetFault, SilentConnectionDoesNotBlockOthers) {
    Target target;
    Host silent(target.port(), {}, 0, false);
    const wire::TcpIcReq req = wire::tcp_ic_req(0, {}, 0);
    silent.send_raw(&req, 10);  // part of an ICReq, the rest never comes
    Controller c(target.port(), {});
    const auto data = pattern(4096, 6);
    EXPECT_TRUE(c.io.run(Host::rw(wire::IoOpcode::write, 0, data.size(), transport_sgl(4096)), data)
                    .status()
                    .ok());
}

TEST(TcpTargetFault, KeyedSglIsRefused) {
    Target target;
    Controller c(target.port(), {});
    const Exchange r = c.io.run(
        Host::rw(wire::IoOpcode::read, 0, 4096, wire::keyed_data_block(0x1000, 4096, 0x12)));
    ASSERT_TRUE(r.answered);
    EXPECT_EQ(r.status(),
              wire::Status::generic(wire::GenericStatus::sgl_descriptor_type_invalid, true));
}

}  // namespace
