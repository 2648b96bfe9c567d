// Writes the seed corpora of tests/fuzz (docs/testing.md, "Fuzzing"): real inputs built
// with the wire layer's builders, and the pages, logs and completions the
// target's command core really answers with.
//   make-fuzz-corpus DIR   (DIR/<target>/<seed>; existing seeds are overwritten)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "auth/dhchap_crypto.hpp"
#include "auth/dhchap_transaction.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/discovery.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/rdma_cm.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "nvmeof/wire/zns.hpp"
#include "target_driver.hpp"
#include "wire.h"

namespace wire = nvmeof::wire;
namespace fz = nvmeof::fuzz;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::filesystem::path g_root;

template <typename T>
void append(Bytes& out, const T& value) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof value);
}
void append(Bytes& out, const Bytes& more) {
    out.insert(out.end(), more.begin(), more.end());
}

void write_seed(const std::string& target, const std::string& name, const Bytes& bytes) {
    const auto dir = g_root / target;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

wire::SglDescriptor keyed(std::uint32_t length) {
    return wire::keyed_data_block(fz::kHostAddress, length, fz::kRkey);
}

wire::Cqe with_cid(wire::Cqe cqe, std::uint16_t cid) {
    cqe.command_id = cid;
    return cqe;
}

void cqe_status(const wire::Cqe& connect_ok) {
    Bytes b{31, 4, 0x7F, 0};  // 32 CIDs, 0..3 outstanding, Fabrics opcode, admin
    append(b, with_cid(connect_ok, 0));
    wire::Cqe c{};
    c.status =
        wire::Status::fabrics(wire::FabricsStatus::connect_invalid_parameters, true).cqe_field();
    c.dw0 = wire::connect_invalid_parameter_result(true, 256);
    append(b, with_cid(c, 1));
    c = {};
    c.status = wire::Status::generic(wire::GenericStatus::invalid_field, true).cqe_field();
    append(b, with_cid(c, 2));
    append(b, with_cid(c, 2));  // a duplicate completion
    c = {};
    c.dw0 = wire::number_of_queues_value({4, 4});
    c.dw1 = 8;
    append(b, with_cid(c, 3));
    write_seed("cqe_status", "connect-errors-duplicate", b);
    Bytes io{127, 100, 0x02, 1};  // an I/O queue, Read
    c = {};
    c.status = wire::Status::make(wire::StatusCodeType::media, 0x81, false, true, 1).cqe_field();
    append(io, with_cid(c, 7));
    c.status = wire::Status::make(wire::StatusCodeType::path, 0x00).cqe_field();
    append(io, with_cid(c, 200));
    write_seed("cqe_status", "io-media-and-path", io);
}

void rdma_cm() {
    auto seed = [](std::uint8_t selector, const auto& value, const std::string& name) {
        Bytes b{selector};
        append(b, value);
        write_seed("rdma_cm_private_data", name, b);
    };
    seed(0, wire::rdma_cm_request(0, 32, 0xFFFF), "request-admin");
    seed(0, wire::rdma_cm_request(3, 128, 1), "request-io");
    seed(1, wire::rdma_cm_reply(32), "reply");
    seed(2, wire::rdma_cm_reject(wire::RdmaCmRejectStatus::invalid_host_sq_size), "reject");
    write_seed("rdma_cm_private_data", "reject-short", Bytes{2, 0});
}

// NVMe/TCP PDU streams as each side receives them (tcp_pdu.cpp's setup byte:
// bit 0 controller, bit 1 header digest, bit 2 data digest, bit 3 initialized,
// bit 7 digests taken as matching).
void tcp_seeds() {
    const wire::TcpDigests none{};
    const wire::TcpDigests both{true, true};
    auto with_data = [](Bytes b, std::uint32_t pad, std::uint32_t data, std::uint32_t digest) {
        b.resize(b.size() + pad + data + digest, 0x5A);
        return b;
    };
    // The host: ICResp, then a read's C2HData with SUCCESS, a write's R2T, a CapsuleResp.
    Bytes host{0x00};
    append(host, wire::tcp_ic_resp(0, none, 131072));
    wire::Cqe cqe{};
    cqe.command_id = 1;
    Bytes c2h;
    append(c2h, wire::tcp_c2h_data(1, 0, 4096, true, true, none, 0));
    append(host, with_data(c2h, 0, 4096, 0));
    append(host, wire::tcp_r2t(2, 7, 0, 8192, none));
    append(host, wire::tcp_capsule_resp(cqe, none));
    write_seed("tcp_pdu", "host-read-write", host);
    // The same after ICResp, both digests (taken as matching).
    Bytes host_digests{0x8E};
    Bytes c2h_digests;
    append(c2h_digests, wire::tcp_c2h_data(1, 0, 512, true, false, both, 0));
    append(host_digests, with_data(c2h_digests, 4, 512, 4));
    Bytes resp;
    append(resp, wire::tcp_capsule_resp(cqe, both));
    append(host_digests, with_data(resp, 4, 0, 0));
    write_seed("tcp_pdu", "host-digests", host_digests);
    Bytes term{0x08};
    append(term, wire::tcp_term_req(wire::TcpPduType::c2h_term_req,
                                    wire::TcpFatalError::header_digest_error, 72, 24));
    append(term, wire::tcp_capsule_resp(cqe, none));
    write_seed("tcp_pdu", "host-term-req", term);
    // The controller: ICReq, a write capsule with 4 KiB in it, H2CData.
    Bytes controller{0x01};
    append(controller, wire::tcp_ic_req(0, none, 0));
    Bytes cmd;
    append(cmd, wire::tcp_capsule_cmd(wire::make_sqe(0x01, 1), 4096, none, 0));
    append(controller, with_data(cmd, 0, 4096, 0));
    Bytes h2c;
    append(h2c, wire::tcp_h2c_data(2, 7, 0, 8192, true, none, 0));
    append(controller, with_data(h2c, 0, 8192, 0));
    write_seed("tcp_pdu", "controller-write", controller);
}

void identify_seed(const std::string& name, std::uint8_t selector, const Bytes& page) {
    Bytes b{selector, 0, 30, 0};  // MPSMIN 0, queue depth 32
    append(b, page);
    write_seed("identify", name, b);
}

Bytes capsule_of(const wire::Sqe& sqe) {
    Bytes b;
    append(b, sqe);
    return b;
}

// One target_commands record.
void record(Bytes& out, std::uint8_t route, const wire::Sqe& sqe, const Bytes& in_capsule = {},
            const Bytes& host_data = {}) {
    out.push_back(route);
    append(out, sqe);
    append(out, static_cast<std::uint16_t>(in_capsule.size()));
    append(out, in_capsule);
    append(out, static_cast<std::uint16_t>(host_data.size()));
    append(out, host_data);
}

Bytes pattern(std::size_t n) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i) {
        b[i] = static_cast<std::uint8_t>(i * 7 + 1);
    }
    return b;
}

void target_side(fz::TargetUnderTest& t, nvmeof::target::QueueState& admin) {
    auto ask = [&](const wire::Sqe& sqe) { return t.run(admin, capsule_of(sqe), {}); };
    const auto id_ctrl = ask(wire::identify_command(wire::IdentifyCns::controller, 0, keyed(4096)));
    identify_seed("controller", 0, id_ctrl.data);
    identify_seed(
        "namespace-512", 1,
        ask(wire::identify_command(wire::IdentifyCns::namespace_data, 1, keyed(4096))).data);
    identify_seed(
        "namespace-4096", 1,
        ask(wire::identify_command(wire::IdentifyCns::namespace_data, 2, keyed(4096))).data);
    identify_seed(
        "descriptors", 2,
        ask(wire::identify_command(wire::IdentifyCns::namespace_descriptors, 1, keyed(4096))).data);
    identify_seed(
        "active-list", 3,
        ask(wire::identify_command(wire::IdentifyCns::active_namespace_list, 0, keyed(4096))).data);

    Bytes admin_seq;
    record(admin_seq, 0, wire::identify_command(wire::IdentifyCns::controller, 0, keyed(4096)));
    record(admin_seq, 0,
           wire::identify_command(wire::IdentifyCns::namespace_descriptors, 2, keyed(4096)));
    record(admin_seq, 0, wire::set_number_of_queues_command({2, 2}));
    record(admin_seq, 0, wire::get_features_command(wire::FeatureId::keep_alive_timer));
    record(admin_seq, 0, wire::set_keep_alive_timer_command(5000));
    record(admin_seq, 0, wire::keep_alive_command());
    record(admin_seq, 0,
           wire::get_log_page_command(wire::LogPageId::error_information, 0, keyed(64)));
    record(admin_seq, 0, wire::property_get_command(wire::Property::csts));
    record(admin_seq, 0, wire::make_sqe(0x0C));  // Asynchronous Event Request: held
    record(admin_seq, 3, wire::Sqe{});           // then keep-alive expiry
    write_seed("target_commands", "admin", admin_seq);

    Bytes io_seq;
    const wire::RemoteBuffer buffer{fz::kHostAddress, 8192, fz::kRkey};
    record(io_seq, 1, wire::rw_command(wire::IoOpcode::write, 1, 0, 8, buffer, 512), {},
           pattern(4096));
    record(io_seq, 1, wire::rw_command(wire::IoOpcode::read, 1, 0, 8, buffer, 512));
    wire::Sqe in_capsule_write = wire::rw_command(wire::IoOpcode::write, 2, 3, 1, buffer, 4096);
    in_capsule_write.dptr = wire::in_capsule_data(0, 4096);
    record(io_seq, 1, in_capsule_write, pattern(4096));
    record(io_seq, 1, wire::rw_command(wire::IoOpcode::read, 2, 15, 1, buffer, 4096));
    record(io_seq, 1, wire::write_zeroes_command(1, 100, 20));
    Bytes ranges;
    append(ranges, wire::DsmRange{0, 4, 10});
    append(ranges, wire::DsmRange{0, 1, 127});
    record(io_seq, 1, wire::dataset_management_command(1, 2, 4, {fz::kHostAddress, 32, fz::kRkey}),
           {}, ranges);
    record(io_seq, 1, wire::flush_command(1));
    record(io_seq, 2, wire::rw_command(wire::IoOpcode::read, 1, 0, 1, buffer, 512));  // unconnected
    record(io_seq, 3, wire::Sqe{});  // the I/O queue is lost
    record(io_seq, 1, wire::flush_command(1));
    write_seed("target_commands", "io", io_seq);

    // The zoned namespace (NSID 3): writes at the write pointer, an append, a
    // report, zone management.
    Bytes zoned_seq;
    record(zoned_seq, 1, wire::rw_command(wire::IoOpcode::write, 3, 16, 4, buffer, 512), {},
           pattern(2048));
    record(zoned_seq, 1, wire::zone_append_command(3, 16, 2, buffer, 512), {}, pattern(1024));
    record(zoned_seq, 1,
           wire::zone_management_receive_command(3, 0, wire::ZoneReceiveAction::report,
                                                 wire::ZoneReportFilter::all, true, keyed(256)));
    record(zoned_seq, 1, wire::zone_management_send_command(3, 32, wire::ZoneSendAction::open));
    record(zoned_seq, 1,
           wire::zone_management_send_command(3, 0, wire::ZoneSendAction::reset, true));
    record(zoned_seq, 1, wire::rw_command(wire::IoOpcode::read, 3, 0, 8, buffer, 512));
    write_seed("target_commands", "zoned", zoned_seq);
}

void discovery(fz::TargetUnderTest& t) {
    nvmeof::target::QueueState admin = fz::new_queue(0, t.config());
    (void)t.connect(admin, wire::kDynamicControllerId, fz::kAdminHsqsize + 1, wire::kDiscoveryNqn);
    (void)t.enable(admin);
    const auto log = t.run(
        admin,
        capsule_of(wire::get_log_page_command(wire::LogPageId::discovery, 0, keyed(3 * 1024))), {});
    Bytes b{0x3F, 1, 0};  // 4 KiB chunks, 2 attempts, GENCTR steady
    append(b, log.data);
    write_seed("discovery_log", "target-log", b);
    Bytes moving{0, 3, 0x55};  // 64-byte chunks, GENCTR moving every other read
    append(moving, log.data);
    write_seed("discovery_log", "generation-moves", moving);
}

void connect_seeds() {
    wire::HostId host_id{};
    host_id[0] = 0xF2;
    auto seed = [&](std::uint8_t selector, std::uint16_t qid, std::uint16_t cntlid,
                    const char* subnqn, const std::string& name,
                    wire::SglDescriptor sgl = keyed(1024)) {
        Bytes b{selector};
        append(b, wire::connect_command(qid, 32, qid == 0 ? 15000 : 0, sgl));
        append(b, wire::connect_data(host_id, subnqn, fz::kHostnqn, cntlid));
        write_seed("target_connect", name, b);
    };
    seed(0, 0, wire::kDynamicControllerId, fz::kSubnqn, "admin");
    seed(0, 0, wire::kDynamicControllerId, fz::kRestrictedSubnqn, "admin-restricted");
    seed(0, 0, wire::kDynamicControllerId, wire::kDiscoveryNqn, "admin-discovery");
    seed(1, 1, 1, fz::kSubnqn, "io-keyed");
    seed(0x81, 1, 1, fz::kSubnqn, "io-in-capsule", wire::in_capsule_data(0, 1024));
    seed(3, 2, 7, fz::kSubnqn, "io-wrong-cntlid");
}

void softverbs_seeds() {
    constexpr std::uint64_t kRegion = 0x500000000000;
    constexpr std::uint32_t kFirstRkey = 1;
    auto header = [](sv::Op op, std::uint32_t len, std::uint32_t msn) {
        sv::WireHdr h{};
        h.op = static_cast<std::uint8_t>(op);
        h.len = len;
        h.msn = msn;
        return h;
    };
    Bytes established{0x40};  // harness handshake, RNR retry 2
    append(established, header(sv::Op::kSend, 64, 1));
    append(established, pattern(64));
    sv::WireHdr write = header(sv::Op::kWrite, 512, 2);
    write.raddr = kRegion + 40960;
    write.rkey = kFirstRkey;
    append(established, write);
    append(established, pattern(512));
    sv::WireHdr read = header(sv::Op::kReadReq, 0, 3);
    read.raddr = kRegion + 40960;
    read.rkey = kFirstRkey;
    read.rd_len = 256;
    append(established, read);
    sv::WireHdr imm = header(sv::Op::kWriteImm, 16, 4);
    imm.raddr = kRegion + 50000;
    imm.rkey = kFirstRkey;
    imm.imm = 0xABCD;
    append(established, imm);
    append(established, pattern(16));
    append(established, header(sv::Op::kAck, 0, 0));
    append(established, header(sv::Op::kCmDreq, 0, 0));
    write_seed("softverbs_frames", "established-ops", established);

    Bytes raw{0x01};  // the whole stream: CM REQ, RTU, a SEND
    sv::CmPayload cm{};
    cm.initiator_depth = 16;
    cm.responder_resources = 16;
    cm.retry_count = 7;
    cm.rnr_retry_count = 1;
    cm.qp_num = 9;
    cm.private_len = 32;
    const auto cm_len = static_cast<std::uint32_t>(offsetof(sv::CmPayload, private_data) + 32);
    append(raw, header(sv::Op::kCmReq, cm_len, 0));
    const auto* p = reinterpret_cast<const std::uint8_t*>(&cm);
    raw.insert(raw.end(), p, p + cm_len);
    append(raw, header(sv::Op::kCmRtu, 0, 0));
    append(raw, header(sv::Op::kSendImm, 8, 1));
    append(raw, pattern(8));
    write_seed("softverbs_frames", "raw-handshake-send", raw);
}

}  // namespace

// The messages of real DH-HMAC-CHAP transactions (host and controller with
// the keys the fuzz target uses): each parsed alone, and each side's input.
void auth_seeds() {
    namespace auth = nvmeof::auth;
    const auto key = [](std::uint8_t fill) {
        auth::Secret secret;
        secret.key.assign(32, fill);
        return secret;
    };
    const auto framed = [](Bytes& out, const Bytes& message) {
        append(out, static_cast<std::uint16_t>(message.size()));
        append(out, message);
    };
    for (const bool bidirectional : {false, true}) {
        auth::HostAuthConfig host_config;
        auth::ControllerAuthConfig controller_config;
        host_config.host_secret = controller_config.host_secret = key(0x11);
        if (bidirectional) {
            host_config.controller_secret = controller_config.controller_secret = key(0x22);
        }
        host_config.host_nqn = controller_config.host_nqn =
            "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000f022";
        host_config.subsystem_nqn = controller_config.subsystem_nqn = "nqn.2026-12.io.nvmeof:fuzz";
        auth::HostTransaction host(host_config);
        auth::ControllerTransaction controller(controller_config);
        const Bytes negotiate = host.negotiate();
        controller.on_send(negotiate);
        const Bytes challenge = controller.receive();
        const Bytes reply = host.reply_to(challenge);
        controller.on_send(reply);
        const Bytes success1 = controller.receive();
        const std::string mode = bidirectional ? "bi" : "uni";
        const auto hash = static_cast<std::uint8_t>(wire::parse_challenge(challenge).hash);
        const auto group = static_cast<std::uint8_t>(wire::parse_challenge(challenge).dh_group);
        for (const auto& [name, message] : {std::pair{"negotiate", negotiate},
                                            {"challenge", challenge},
                                            {"reply", reply},
                                            {"success1", success1}}) {
            Bytes b{0, static_cast<std::uint8_t>(hash - 1), group};
            append(b, message);
            write_seed("auth_messages", "parse-" + mode + "-" + name, b);
        }
        Bytes to_controller{static_cast<std::uint8_t>(bidirectional ? 0x11 : 0x01)};
        framed(to_controller, negotiate);
        framed(to_controller, reply);
        write_seed("auth_messages", "controller-" + mode, to_controller);
        Bytes to_host{static_cast<std::uint8_t>(bidirectional ? 0x12 : 0x02)};
        framed(to_host, challenge);
        append(to_host, success1);
        write_seed("auth_messages", "host-" + mode, to_host);
    }
    const std::string text = auth::format_secret(key(0x11));
    Bytes secret{3};
    secret.insert(secret.end(), text.begin(), text.end());
    write_seed("auth_messages", "secret", secret);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make-fuzz-corpus DIR\n");
        return 2;
    }
    g_root = argv[1];
    fz::TargetUnderTest t;
    nvmeof::target::QueueState admin = fz::new_queue(0, t.config());
    const auto connected = t.connect(admin, wire::kDynamicControllerId, fz::kAdminHsqsize + 1);
    (void)t.enable(admin);
    cqe_status(connected.cqe);
    rdma_cm();
    tcp_seeds();
    target_side(t, admin);
    discovery(t);
    connect_seeds();
    softverbs_seeds();
    auth_seeds();
    std::printf("make-fuzz-corpus: seeds written under %s\n", argv[1]);
    return 0;
}
