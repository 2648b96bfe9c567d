// A tiny NVMe-oF/RDMA host for the target's own smoke tests: RDMA-CM connect,
// Fabrics Connect (keyed on the admin queue, in-capsule on the I/O queue),
// Property Get/Set, Identify, Write then Read of 4 KiB (keyed and in-capsule)
// with the data checked, shutdown and disconnect.
//
//   smoke_client ADDR PORT SUBNQN [both|write|verify]
// "write" writes the pattern (and reads it back), "verify" only reads and checks
// it (for the restart test), "both" is the default. "kato" connects with a 1 s
// KATO and expects to be disconnected; "reject STS" expects the CM connect to
// be rejected with STS; "connect-status SCT/SC" expects the admin Connect to
// fail with that status and DNR.
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/rdma_cm.hpp"
#include "nvmeof/wire/registers.hpp"
#include "nvmeof/wire/status.hpp"
#include "verbs/resources.hpp"

namespace {

using namespace nvmeof;
using std::chrono::milliseconds;

constexpr milliseconds kCmTimeout{5000};
constexpr auto kCommandTimeout = std::chrono::seconds(10);
constexpr std::uint16_t kQueueSize = 32;
constexpr std::size_t kIoSize = 4096;
constexpr char kHostnqn[] = "nqn.2014-08.org.nvmexpress:uuid:smoke-client";
constexpr std::uint64_t kKeyedLba = 8;
constexpr std::uint64_t kInCapsuleLba = 64;
constexpr std::uint64_t kLargeLba = 1024;
constexpr std::size_t kLargeSize = 128 * 1024;    // the default MDTS
constexpr std::size_t kLargeOffset = 128 * 1024;  // in HostMemory
constexpr int kAllAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

void check(bool ok, const std::string& what) {
    if (!ok) {
        throw std::runtime_error(what);
    }
}

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::uint8_t>(seed ^ (i * 13) ^ (i >> 8));
    }
    return bytes;
}

class Queue {
  public:
    // With expect_reject, the CM connect must be rejected with that NVMe/RDMA status.
    Queue(const verbs::EventChannel& channel, verbs::ProtectionDomain& pd, const sockaddr_in& dst,
          std::uint16_t qid, std::uint16_t cntlid, std::optional<std::uint16_t> expect_reject = {})
        : channel_(channel), qid_(qid) {
        id_ = verbs::CmId::create(channel);
        check(rdma_resolve_addr(id_.get(), nullptr,
                                reinterpret_cast<sockaddr*>(const_cast<sockaddr_in*>(&dst)),
                                static_cast<int>(kCmTimeout.count())) == 0,
              "rdma_resolve_addr");
        expect(RDMA_CM_EVENT_ADDR_RESOLVED);
        if (!pd) {
            pd = verbs::alloc_pd(id_->verbs);
        }
        cq_ = verbs::create_cq(id_->verbs, 4 * kQueueSize + 1);
        ibv_qp_init_attr attr{};
        attr.send_cq = cq_.get();
        attr.recv_cq = cq_.get();
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_wr = 2 * kQueueSize;
        attr.cap.max_recv_wr = kQueueSize + 1;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        id_.create_qp(pd.get(), attr);
        check(rdma_resolve_route(id_.get(), static_cast<int>(kCmTimeout.count())) == 0,
              "rdma_resolve_route");
        expect(RDMA_CM_EVENT_ROUTE_RESOLVED);

        responses_.resize(kQueueSize);
        response_mr_ = verbs::register_memory(pd.get(), responses_.data(),
                                              responses_.size() * sizeof(wire::Cqe), kAllAccess);
        capsule_.resize(wire::kSqeSize + kIoSize);
        capsule_mr_ =
            verbs::register_memory(pd.get(), capsule_.data(), capsule_.size(), kAllAccess);
        for (std::uint32_t i = 0; i < kQueueSize; ++i) {
            post_receive(i);
        }
        const wire::RdmaCmRequest request = wire::rdma_cm_request(qid, kQueueSize, cntlid);
        rdma_conn_param param{};
        param.private_data = &request;
        param.private_data_len = sizeof request;
        param.responder_resources = 1;  // the target RDMA-READs our data
        param.initiator_depth = 0;
        param.retry_count = 7;
        param.rnr_retry_count = 7;
        param.flow_control = 1;
        check(rdma_connect(id_.get(), &param) == 0, "rdma_connect");
        verbs::CmEvent event = channel_.expect(kCmTimeout, "ESTABLISHED");
        if (expect_reject) {
            check(event->event == RDMA_CM_EVENT_REJECTED,
                  std::string("expected REJECTED, got ") + verbs::cm_event_name(event->event));
            const auto rej = wire::parse_rdma_cm_reject(event->param.conn.private_data,
                                                        event->param.conn.private_data_len);
            check(rej && rej->status == *expect_reject,
                  "reject status " + std::to_string(rej ? rej->status : -1));
            rejected_ = true;
            return;
        }
        check(event->event == RDMA_CM_EVENT_ESTABLISHED, std::string("QID ") + std::to_string(qid) +
                                                             ": expected ESTABLISHED, got " +
                                                             verbs::cm_event_name(event->event));
        const auto reply = wire::parse_rdma_cm_reply(event->param.conn.private_data,
                                                     event->param.conn.private_data_len);
        check(reply && reply->crqsize == kQueueSize, "REP CRQSIZE is the queue size");
    }

    ~Queue() {
        if (id_ && !rejected_) {
            rdma_disconnect(id_.get());
            channel_.wait(milliseconds(1000));  // DISCONNECTED, if it comes
        }
        id_.destroy_qp();  // before the CQ it uses
    }

    // Sends one command (with optional in-capsule data) and waits for its response.
    wire::Cqe submit(wire::Sqe sqe, const std::vector<std::uint8_t>& in_capsule = {}) {
        sqe.command_id = ++next_cid_;
        std::memcpy(capsule_.data(), &sqe, sizeof sqe);
        if (!in_capsule.empty()) {
            std::memcpy(capsule_.data() + wire::kSqeSize, in_capsule.data(), in_capsule.size());
        }
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(capsule_.data()),
                    static_cast<std::uint32_t>(wire::kSqeSize + in_capsule.size()),
                    capsule_mr_->lkey};
        ibv_send_wr wr{};
        wr.wr_id = kSendId;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        check(ibv_post_send(id_.qp(), &wr, &bad) == 0, "ibv_post_send");
        bool sent = false;
        std::optional<wire::Cqe> response;
        const auto deadline = std::chrono::steady_clock::now() + kCommandTimeout;
        while (!sent || !response) {
            check(std::chrono::steady_clock::now() < deadline, "command timed out");
            ibv_wc wc{};
            const int n = ibv_poll_cq(cq_.get(), 1, &wc);
            check(n >= 0, "ibv_poll_cq");
            if (n == 0) {
                continue;
            }
            check(wc.status == IBV_WC_SUCCESS,
                  std::string("work completion: ") + ibv_wc_status_str(wc.status));
            if (wc.wr_id == kSendId) {
                sent = true;
                continue;
            }
            const auto slot = static_cast<std::uint32_t>(wc.wr_id);
            check(wc.byte_len == sizeof(wire::Cqe), "16-byte response");
            response = responses_[slot];
            post_receive(slot);
        }
        check(response->command_id == sqe.command_id, "response CID matches");
        check(response->sq_id == qid_, "response SQID matches");
        return *response;
    }

    wire::Cqe submit_ok(const wire::Sqe& sqe, const char* what,
                        const std::vector<std::uint8_t>& in_capsule = {}) {
        const wire::Cqe cqe = submit(sqe, in_capsule);
        const auto status = wire::Status::from_cqe_field(cqe.status);
        check(status.ok(), std::string(what) + " failed: " + wire::describe(status));
        return cqe;
    }

  private:
    static constexpr std::uint64_t kSendId = 0xFFFFFFFFull + 1;

    void expect(rdma_cm_event_type type) {
        verbs::CmEvent event = channel_.expect(kCmTimeout, verbs::cm_event_name(type));
        check(event->event == type, std::string("expected ") + verbs::cm_event_name(type) +
                                        ", got " + verbs::cm_event_name(event->event));
    }

    void post_receive(std::uint32_t slot) {
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(&responses_[slot]),
                    static_cast<std::uint32_t>(sizeof(wire::Cqe)), response_mr_->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = slot;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        check(ibv_post_recv(id_.qp(), &wr, &bad) == 0, "ibv_post_recv");
    }

    const verbs::EventChannel& channel_;
    std::uint16_t qid_;
    verbs::CmId id_;
    verbs::CompletionQueue cq_;
    std::vector<wire::Cqe> responses_;
    verbs::MemoryRegion response_mr_;
    std::vector<std::uint8_t> capsule_;
    verbs::MemoryRegion capsule_mr_;
    std::uint16_t next_cid_ = 0;
    bool rejected_ = false;
};

// Host memory the target reaches by RDMA.
struct HostMemory {
    std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(512 * 1024);
    verbs::MemoryRegion mr;
    wire::SglDescriptor keyed(std::size_t offset, std::size_t length) const {
        return wire::keyed_data_block(reinterpret_cast<std::uintptr_t>(bytes.data() + offset),
                                      static_cast<std::uint32_t>(length), mr->rkey);
    }
    wire::RemoteBuffer remote(std::size_t offset, std::size_t length) const {
        return wire::RemoteBuffer{reinterpret_cast<std::uintptr_t>(bytes.data() + offset), length,
                                  mr->rkey};
    }
};

int run(const char* address, std::uint16_t port, const std::string& subnqn, const std::string& mode,
        const std::string& arg) {
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    check(inet_pton(AF_INET, address, &dst.sin_addr) == 1, "bad address");

    const verbs::EventChannel channel = verbs::EventChannel::create();
    verbs::ProtectionDomain pd;
    if (mode == "reject") {
        Queue refused(channel, pd, dst, 0, 0,
                      static_cast<std::uint16_t>(std::stoul(arg, nullptr, 0)));
        std::printf("smoke: rejected as expected\n");
        return 0;
    }
    Queue admin(channel, pd, dst, 0, 0);
    HostMemory host;
    host.mr = verbs::register_memory(pd.get(), host.bytes.data(), host.bytes.size(), kAllAccess);

    // Fabrics Connect, the data through a keyed SGL (nvmet's admin buffers are 64 bytes).
    wire::HostId host_id{};
    host_id[0] = 0x5A;
    wire::ConnectData data =
        wire::connect_data(host_id, subnqn, kHostnqn, wire::kDynamicControllerId);
    std::memcpy(host.bytes.data(), &data, sizeof data);
    const std::uint32_t kato = mode == "kato" ? 1000 : 0;
    const auto connect_sqe = wire::connect_command(0, kQueueSize, kato, host.keyed(0, sizeof data));
    if (mode == "connect-status") {
        const auto status = wire::Status::from_cqe_field(admin.submit(connect_sqe).status);
        check(status.do_not_retry() && std::to_string(static_cast<unsigned>(status.type())) + "/" +
                                               std::to_string(status.code()) ==
                                           arg,
              "Connect status " + wire::describe(status) + ", expected " + arg);
        std::printf("smoke: Connect failed as expected: %s\n", wire::describe(status).c_str());
        return 0;
    }
    const wire::Cqe connected = admin.submit_ok(connect_sqe, "admin Connect");
    const auto cntlid = wire::parse_connect_result(connected.dw0).cntlid;
    std::printf("smoke: admin queue connected, CNTLID %u\n", static_cast<unsigned>(cntlid));

    const wire::Capabilities cap{
        admin.submit_ok(wire::property_get_command(wire::Property::cap), "Get CAP").result64()};
    check(cap.mqes() >= kQueueSize - 1, "CAP.MQES");
    check(cap.supports_nvm_command_set(), "CAP.CSS NVM");
    admin.submit_ok(wire::property_set_command(wire::Property::cc,
                                               wire::ControllerConfig::make({.enable = true}).raw),
                    "Set CC.EN");
    const wire::ControllerStatus csts{
        admin.submit_ok(wire::property_get_command(wire::Property::csts), "Get CSTS").dw0};
    check(csts.ready(), "CSTS.RDY");
    if (mode == "kato") {
        admin.submit_ok(wire::keep_alive_command(), "Keep Alive");
        // No more keep-alives: the target must drop the association.
        const auto event = channel.wait(std::chrono::milliseconds(5000));
        check(event && (*event)->event == RDMA_CM_EVENT_DISCONNECTED,
              "the target did not disconnect after the keep-alive timeout");
        std::printf("smoke: disconnected after the keep-alive timeout\n");
        return 0;
    }

    admin.submit_ok(wire::identify_command(wire::IdentifyCns::controller, 0, host.keyed(0, 4096)),
                    "Identify controller");
    wire::IdentifyController id;
    std::memcpy(&id, host.bytes.data(), sizeof id);
    check(id.cntlid == cntlid, "Identify CNTLID equals the Connect CNTLID");
    check(id.subsystem_nqn() == subnqn, "Identify SUBNQN");
    check((id.sgls & wire::kSglsKeyedDataBlock) != 0 && id.icdoff == 0 && id.kas != 0,
          "SGLS/ICDOFF/KAS");
    admin.submit_ok(
        wire::identify_command(wire::IdentifyCns::namespace_data, 1, host.keyed(0, 4096)),
        "Identify namespace");
    wire::IdentifyNamespace ns;
    std::memcpy(&ns, host.bytes.data(), sizeof ns);
    const std::uint32_t lba = wire::namespace_geometry(ns).lba_size;
    std::printf("smoke: Identify OK: %llu blocks of %u bytes\n",
                static_cast<unsigned long long>(ns.nsze), lba);
    admin.submit_ok(wire::set_number_of_queues_command({1, 1}), "Set Features number of queues");

    {
        Queue io(channel, pd, dst, 1, cntlid);
        std::vector<std::uint8_t> capsule_data(sizeof data);
        data.cntlid = cntlid;
        std::memcpy(capsule_data.data(), &data, sizeof data);
        io.submit_ok(wire::connect_command(1, kQueueSize, 0, wire::in_capsule_data(0, sizeof data)),
                     "I/O Connect (in-capsule)", capsule_data);

        const auto keyed_data = pattern(kIoSize, 0x11);
        const auto capsule_pattern = pattern(kIoSize, 0x77);
        const auto blocks = static_cast<std::uint32_t>(kIoSize / lba);
        if (mode != "verify") {
            std::memcpy(host.bytes.data() + 8192, keyed_data.data(), kIoSize);
            io.submit_ok(wire::rw_command(wire::IoOpcode::write, 1, kKeyedLba, blocks,
                                          host.remote(8192, kIoSize), lba),
                         "keyed Write");
            auto in_capsule = wire::rw_command(wire::IoOpcode::write, 1, kInCapsuleLba, blocks,
                                               host.remote(0, kIoSize), lba);
            in_capsule.dptr = wire::in_capsule_data(0, kIoSize);
            io.submit_ok(in_capsule, "in-capsule Write", capsule_pattern);
        }
        std::fill(host.bytes.begin() + 16384, host.bytes.begin() + 16384 + kIoSize, 0);
        io.submit_ok(wire::rw_command(wire::IoOpcode::read, 1, kKeyedLba, blocks,
                                      host.remote(16384, kIoSize), lba),
                     "Read");
        check(std::memcmp(host.bytes.data() + 16384, keyed_data.data(), kIoSize) == 0,
              "data read back equals the keyed write");
        io.submit_ok(wire::rw_command(wire::IoOpcode::read, 1, kInCapsuleLba, blocks,
                                      host.remote(16384, kIoSize), lba),
                     "Read");
        check(std::memcmp(host.bytes.data() + 16384, capsule_pattern.data(), kIoSize) == 0,
              "data read back equals the in-capsule write");
        // One transfer at the default MDTS, both directions.
        const auto large = pattern(kLargeSize, 0x3C);
        const auto large_blocks = static_cast<std::uint32_t>(kLargeSize / lba);
        if (mode != "verify") {
            std::memcpy(host.bytes.data() + kLargeOffset, large.data(), kLargeSize);
            io.submit_ok(wire::rw_command(wire::IoOpcode::write, 1, kLargeLba, large_blocks,
                                          host.remote(kLargeOffset, kLargeSize), lba),
                         "128 KiB Write");
        }
        std::fill(host.bytes.begin() + kLargeOffset * 2,
                  host.bytes.begin() + kLargeOffset * 2 + kLargeSize, 0);
        io.submit_ok(wire::rw_command(wire::IoOpcode::read, 1, kLargeLba, large_blocks,
                                      host.remote(kLargeOffset * 2, kLargeSize), lba),
                     "128 KiB Read");
        check(std::memcmp(host.bytes.data() + kLargeOffset * 2, large.data(), kLargeSize) == 0,
              "128 KiB read back equals the write");
        io.submit_ok(wire::flush_command(1), "Flush");
        std::printf("smoke: I/O queue: write/read of %zu bytes verified\n", kIoSize);
    }  // I/O queue disconnected first, like Linux

    admin.submit_ok(wire::property_set_command(
                        wire::Property::cc,
                        wire::ControllerConfig::make(
                            {.enable = true, .shutdown = wire::ShutdownNotification::normal})
                            .raw),
                    "Set CC.SHN");
    const wire::ControllerStatus after{
        admin.submit_ok(wire::property_get_command(wire::Property::csts), "Get CSTS").dw0};
    check(after.shutdown_status() == wire::ShutdownStatus::complete, "CSTS.SHST complete");
    std::printf("smoke: OK\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr,
                     "usage: smoke_client ADDR PORT SUBNQN [both|write|verify|kato|reject STS|"
                     "connect-status SCT/SC]\n");
        return 2;
    }
    try {
        return run(argv[1], static_cast<std::uint16_t>(std::stoul(argv[2])), argv[3],
                   argc > 4 ? argv[4] : "both", argc > 5 ? argv[5] : "");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "smoke_client: %s\n", e.what());
        return 1;
    }
}
