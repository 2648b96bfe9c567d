// The NVMe/TCP faults of nvmeof-target (--fault reset-after, reset-mid-transfer,
// short-pdu, corrupt-pdu, r2t-delay-ms), each checked by what a host sees on
// the wire: the RST, the PDU cut short or broken, the wrong digest, the R2T
// that comes late; and the log line and the --stats count of each. Also
// drop-after-run, a fault of both transports, seen here on the wire (over
// RDMA: run_smoke.sh faults, and tests/e2e/fio_zoned.py).
#include "tcp_harness.hpp"

namespace {

using namespace tcp_test;

// Controller() sends three commands (the admin Connect, Property Set CC.EN and
// the I/O Connect): the first I/O command is command 4, I/O command 1.
constexpr int kSetupCommands = 3;

wire::Sqe keep_alive() {
    wire::Sqe sqe = wire::keep_alive_command();
    sqe.dptr = transport_sgl(0);
    return sqe;
}

// Writes 4096 bytes in-capsule at LBA 0 (one I/O command), checked.
void write_block(Host& io, std::uint8_t seed) {
    const auto data = pattern(4096, seed);
    const Exchange w =
        io.run(Host::rw(wire::IoOpcode::write, 0, data.size(), wire::in_capsule_data(0, 4096)),
               data, true);
    ASSERT_TRUE(w.answered);
    ASSERT_TRUE(w.status().ok());
}

// Sends a Read of 4096 bytes at LBA 0 and returns nothing: the test reads.
void send_read(Host& io, std::uint16_t cid) {
    wire::Sqe sqe = Host::rw(wire::IoOpcode::read, 0, 4096, transport_sgl(4096));
    sqe.command_id = cid;
    io.send_capsule(sqe);
}

std::uint32_t plen_of(const std::vector<std::uint8_t>& bytes) {
    wire::TcpCommonHeader ch{};
    std::memcpy(&ch, bytes.data(), sizeof ch);
    return ch.plen;
}

std::string tcp_stats(Target& target) {
    target.stop();
    const std::string stats = target.stats();
    const auto at = stats.find("\"tcp\": {");
    return at == std::string::npos ? stats : stats.substr(at, stats.find('}', at) - at + 1);
}

TEST(TcpFault, ResetAfterAnswersThenResets) {
    Target target({"--fault", "reset-after=" + std::to_string(kSetupCommands + 1)});
    Controller c(target.port(), {});
    write_block(c.io, 1);  // command 4: answered, then the RST
    const Host::Drained after = c.io.drain();
    EXPECT_TRUE(after.bytes.empty());
    EXPECT_EQ(after.error, ECONNRESET) << "eof " << after.eof;
    EXPECT_TRUE(target.log_has("nvmeof-target: fault: reset-after=4: TCP queue 1: CID "))
        << target.log();
    // The controller's admin queue is unaffected.
    EXPECT_TRUE(c.admin.run(keep_alive()).status().ok());
    EXPECT_NE(tcp_stats(target).find("\"faults\": 1}"), std::string::npos) << target.stats();
}

TEST(TcpFault, ResetMidTransferCutsAReadsData) {
    Target target({"--fault", "reset-mid-transfer=2"});
    Controller c(target.port(), {});
    write_block(c.io, 2);  // I/O command 1
    send_read(c.io, 40);   // I/O command 2
    const Host::Drained got = c.io.drain();
    EXPECT_EQ(got.error, ECONNRESET) << "eof " << got.eof;
    ASSERT_GE(got.bytes.size(), sizeof(wire::TcpCommonHeader));
    EXPECT_EQ(got.bytes[0], static_cast<std::uint8_t>(TcpPduType::c2h_data));
    const std::uint32_t plen = plen_of(got.bytes);
    EXPECT_EQ(plen, sizeof(wire::TcpDataHeader) + 4096);
    EXPECT_EQ(got.bytes.size(), plen / 2) << "half of the C2HData, then the RST";
    EXPECT_TRUE(
        target.log_has("nvmeof-target: fault: reset-mid-transfer=2: TCP queue 1: CID 40: "
                       "C2HData cut after 2060 of its 4120 bytes, then the connection "
                       "reset (RST)"))
        << target.log();
}

TEST(TcpFault, ResetMidTransferAfterAWritesR2t) {
    Target target({"--fault", "reset-mid-transfer=1"});
    Controller c(target.port(), {});
    wire::Sqe sqe = Host::rw(wire::IoOpcode::write, 0, 8192, transport_sgl(8192));
    sqe.command_id = 41;
    c.io.send_capsule(sqe);
    const auto r2t = c.io.read_raw_pdu();
    ASSERT_TRUE(r2t);
    EXPECT_EQ((*r2t)[0], static_cast<std::uint8_t>(TcpPduType::r2t));
    EXPECT_EQ(r2t->size(), sizeof(wire::TcpR2t));
    const Host::Drained after = c.io.drain();
    EXPECT_TRUE(after.bytes.empty());
    EXPECT_EQ(after.error, ECONNRESET) << "eof " << after.eof;
    EXPECT_TRUE(
        target.log_has("reset-mid-transfer=1: TCP queue 1: CID 41: R2T sent, then the "
                       "connection reset (RST)"))
        << target.log();
}

TEST(TcpFault, ShortPduThenStall) {
    Target target({"--fault", "short-pdu=2"});
    Controller c(target.port(), {});
    write_block(c.io, 3);
    send_read(c.io, 42);
    // Half of the C2HData's PLEN comes, then nothing, and the connection stays open.
    Host::Drained got = c.io.drain(500ms);
    while (got.open() && got.bytes.size() < 2060) {  // a slow target: wait for the rest
        const Host::Drained more = c.io.drain();
        got.bytes.insert(got.bytes.end(), more.bytes.begin(), more.bytes.end());
        got.eof = more.eof;
        got.error = more.error;
        if (more.bytes.empty()) {
            break;
        }
    }
    ASSERT_TRUE(got.open());
    ASSERT_GE(got.bytes.size(), sizeof(wire::TcpCommonHeader));
    EXPECT_EQ(got.bytes[0], static_cast<std::uint8_t>(TcpPduType::c2h_data));
    EXPECT_EQ(plen_of(got.bytes), 4120u);
    EXPECT_EQ(got.bytes.size(), 2060u);
    // Later commands on it are never answered.
    c.io.send_capsule(Host::rw(wire::IoOpcode::read, 0, 512, transport_sgl(512)));
    const Host::Drained later = c.io.drain(300ms);
    EXPECT_TRUE(later.open());
    EXPECT_TRUE(later.bytes.empty());
    EXPECT_TRUE(
        target.log_has("nvmeof-target: fault: short-pdu=2:stall: TCP queue 1: CID 42: "
                       "C2HData of PLEN 4120 cut after 2060 bytes; nothing more is sent "
                       "on this connection"))
        << target.log();
    EXPECT_TRUE(c.admin.run(keep_alive()).status().ok());
}

TEST(TcpFault, ShortPduThenClose) {
    Target target({"--fault", "short-pdu=1:close"});
    Controller c(target.port(), wire::TcpDigests{true, false});
    const auto data = pattern(4096, 4);
    wire::Sqe sqe = Host::rw(wire::IoOpcode::write, 0, data.size(), wire::in_capsule_data(0, 4096));
    sqe.command_id = 43;
    c.io.send_capsule(sqe, data);
    // The CapsuleResp (24 bytes + HDGST) cut to 14 bytes, then a FIN.
    const Host::Drained got = c.io.drain();
    EXPECT_TRUE(got.eof);
    EXPECT_EQ(got.error, 0);
    ASSERT_GE(got.bytes.size(), sizeof(wire::TcpCommonHeader));
    EXPECT_EQ(got.bytes[0], static_cast<std::uint8_t>(TcpPduType::capsule_resp));
    EXPECT_EQ(plen_of(got.bytes), 28u);
    EXPECT_EQ(got.bytes.size(), 14u);
    EXPECT_TRUE(
        target.log_has("short-pdu=1:close: TCP queue 1: CID 43: CapsuleResp of PLEN 28 "
                       "cut after 14 bytes; closing the connection"))
        << target.log();
}

// corrupt-pdu=1:FIELD on the CapsuleResp of an in-capsule write, header digests on.
class CorruptPdu : public testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Field, CorruptPdu, testing::Values("type", "hlen", "hdgst"),
                         [](const testing::TestParamInfo<const char*>& p) {
                             return std::string(p.param);
                         });

TEST_P(CorruptPdu, BreaksTheFirstPduSent) {
    const std::string field = GetParam();
    Target target({"--fault", "corrupt-pdu=1:" + field});
    Controller c(target.port(), wire::TcpDigests{true, false});
    const auto data = pattern(4096, 5);
    wire::Sqe sqe = Host::rw(wire::IoOpcode::write, 0, data.size(), wire::in_capsule_data(0, 4096));
    sqe.command_id = 44;
    c.io.send_capsule(sqe, data);
    const auto pdu = c.io.read_raw_pdu();
    ASSERT_TRUE(pdu);
    ASSERT_EQ(pdu->size(), sizeof(wire::TcpCapsuleResp) + 4);  // header and HDGST
    wire::TcpCapsuleResp resp{};
    std::memcpy(&resp, pdu->data(), sizeof resp);
    std::uint32_t hdgst = 0;
    std::memcpy(&hdgst, pdu->data() + sizeof resp, sizeof hdgst);
    const bool digest_right = hdgst == wire::tcp_digest(pdu->data(), sizeof resp);
    EXPECT_EQ(resp.cqe.command_id, 44);
    EXPECT_EQ(resp.ch.type, field == "type" ? 0xFF : 0x05);
    EXPECT_EQ(resp.ch.hlen, field == "hlen" ? 25 : 24);
    EXPECT_EQ(digest_right, field != "hdgst") << "HDGST over the header as sent";
    EXPECT_TRUE(
        target.log_has("nvmeof-target: fault: corrupt-pdu=1:" + field + ": TCP queue 1: CID 44: "))
        << target.log();
    // The connection lives on: it is the host's to end it.
    const Exchange next = c.io.run(keep_alive());
    EXPECT_TRUE(next.answered);
}

TEST(TcpFault, CorruptDataDigestOnC2hData) {
    Target target({"--c2h-pdu-bytes", "2048", "--fault", "corrupt-pdu=2:ddgst"});
    Controller c(target.port(), wire::TcpDigests{false, true});
    write_block(c.io, 6);
    send_read(c.io, 45);
    const auto expected = pattern(4096, 6);
    for (int piece = 0; piece < 2; ++piece) {
        const auto pdu = c.io.read_raw_pdu();
        ASSERT_TRUE(pdu);
        wire::TcpDataHeader h{};
        std::memcpy(&h, pdu->data(), sizeof h);
        ASSERT_EQ(h.ch.type, static_cast<std::uint8_t>(TcpPduType::c2h_data));
        ASSERT_EQ(h.datal, 2048u);
        const std::uint8_t* data = pdu->data() + h.ch.pdo;
        EXPECT_EQ(std::memcmp(data, expected.data() + h.datao, h.datal), 0) << "the data is right";
        std::uint32_t ddgst = 0;
        std::memcpy(&ddgst, data + h.datal, sizeof ddgst);
        EXPECT_EQ(ddgst == wire::tcp_digest(data, h.datal), piece == 1)
            << "only the first C2HData's DDGST is wrong";
    }
    const auto resp = c.io.read_pdu();
    ASSERT_TRUE(resp && resp->type() == TcpPduType::capsule_resp);
    EXPECT_TRUE(
        target.log_has("corrupt-pdu=2:ddgst: TCP queue 1: CID 45: C2HData sent with a "
                       "wrong DDGST"))
        << target.log();
    EXPECT_NE(tcp_stats(target).find("\"faults\": 1}"), std::string::npos) << target.stats();
}

TEST(TcpFault, CorruptDdgstWithoutC2hDataIsNotInjected) {
    Target target({"--fault", "corrupt-pdu=1:ddgst"});
    Controller c(target.port(), {});
    write_block(c.io, 7);  // answered as usual
    EXPECT_TRUE(target.log_has("nvmeof-target: fault: corrupt-pdu=1:ddgst: TCP queue 1: CID "))
        << target.log();
    EXPECT_TRUE(target.log_has(": not injected: the command sent no C2HData")) << target.log();
    EXPECT_NE(tcp_stats(target).find("\"faults\": 0}"), std::string::npos) << target.stats();
}

TEST(TcpFault, R2tDelayIsNotBeforeItsTime) {
    Target target({"--fault", "r2t-delay-ms=300"});
    Controller c(target.port(), {});
    const auto data = pattern(8192, 8);
    const auto sent = std::chrono::steady_clock::now();
    const Exchange w =
        c.io.run(Host::rw(wire::IoOpcode::write, 0, data.size(), transport_sgl(8192)), data);
    ASSERT_TRUE(w.answered);
    EXPECT_TRUE(w.status().ok());
    EXPECT_EQ(w.r2ts, 1);
    EXPECT_GE(std::chrono::steady_clock::now() - sent, 300ms);
    EXPECT_TRUE(
        target.log_has("nvmeof-target: fault: r2t-delay-ms=300: every R2T goes out 300 "
                       "ms after its command"))
        << target.log();
    EXPECT_EQ(c.io.run(Host::rw(wire::IoOpcode::read, 0, data.size(), transport_sgl(8192))).data,
              data);
    EXPECT_NE(tcp_stats(target).find("\"faults\": 1}"), std::string::npos) << target.stats();
}

TEST(TcpFault, DropAfterRunRunsTheCommandThenDropsEveryConnectionUnanswered) {
    Target target({"--fault", "drop-after-run=2"});
    const auto ran = pattern(4096, 9);
    {
        Controller c(target.port(), {});
        write_block(c.io, 1);  // I/O command 1: answered
        // I/O command 2 runs, unanswered; command 3, sent after it, never runs.
        wire::Sqe second =
            Host::rw(wire::IoOpcode::write, 0, ran.size(), wire::in_capsule_data(0, 4096));
        second.command_id = 50;
        c.io.send_capsule(second, ran);
        wire::Sqe third = Host::rw(wire::IoOpcode::write, 8, 4096, wire::in_capsule_data(0, 4096));
        third.command_id = 51;
        c.io.send_capsule(third, pattern(4096, 10));
        const Host::Drained io = c.io.drain();
        EXPECT_TRUE(io.bytes.empty()) << io.bytes.size() << " bytes came: an answer";
        EXPECT_TRUE(io.eof) << "error " << io.error;
        EXPECT_TRUE(c.admin.closed_by_target()) << "the admin queue stays connected";
    }
    EXPECT_TRUE(
        target.log_has("nvmeof-target: fault: drop-after-run=2: QID 1 CID 50 ran; its answer "
                       "is not sent and every connection is dropped"))
        << target.log();
    // The target takes connections again: command 2's data is there, command 3's is not.
    Controller again(target.port(), {});
    EXPECT_EQ(again.io.run(Host::rw(wire::IoOpcode::read, 0, 4096, transport_sgl(4096))).data, ran);
    EXPECT_EQ(again.io.run(Host::rw(wire::IoOpcode::read, 8, 4096, transport_sgl(4096))).data,
              std::vector<std::uint8_t>(4096, 0));
    target.stop();
    EXPECT_NE(target.stats().find("\"faults_injected\": 1,"), std::string::npos) << target.stats();
}

}  // namespace
