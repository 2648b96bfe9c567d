// TcpQueue driven directly, without the host layer: against
// `nvmeof-target --transport tcp` (bring-up by hand: Fabrics Connect with its
// data in local memory, properties, Identify into local memory, an I/O queue,
// then transfers of every kind, with each digest combination, on a plain and
// a 512+8 PI namespace), and against fake controllers written here (an ICResp
// the host must refuse, a malformed PDU, a C2HTermReq, a peer closing in the
// middle of a read, a controller that never answers, a controller that reads
// slowly so sends are partial).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "memory/memory_record.hpp"
#include "nvmeof/base/log.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/registers.hpp"
#include "nvmeof/wire/sgl.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "target_process.hpp"
#include "transport/peer_address.hpp"
#include "transport/tcp_queue.hpp"

namespace {

using namespace nvmeof;
using namespace std::chrono_literals;
using detail::TcpQueue;
using nvmeof::test::TargetProcess;
using Clock = std::chrono::steady_clock;

constexpr char kHostNqn[] = "nqn.2014-08.org.nvmexpress:uuid:tcp-queue-test";
// The admin queue's entries (nvmet and the target take at most 32), an I/O queue's.
constexpr std::uint16_t kAdminQueueSize = 32;
constexpr std::uint16_t kIoQueueSize = 64;

constexpr std::uint16_t queue_size(std::uint16_t qid) {
    return qid == 0 ? kAdminQueueSize : kIoQueueSize;
}

// ---- helpers -----------------------------------------------------------------

// Log lines, to count how often a failure is reported.
struct LogCapture {
    std::mutex mutex;
    std::vector<std::string> lines;
    LogCapture() {
        set_log_sink(
            [](LogLevel level, std::string_view line, void* self) {
                if (level != LogLevel::error) {
                    return;
                }
                auto* capture = static_cast<LogCapture*>(self);
                const std::lock_guard lock(capture->mutex);
                capture->lines.emplace_back(line);
            },
            this);
    }
    ~LogCapture() { set_log_sink(nullptr, nullptr); }
    std::size_t count(const std::string& needle) {
        const std::lock_guard lock(mutex);
        return static_cast<std::size_t>(std::count_if(
            lines.begin(), lines.end(),
            [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
    }
};

detail::QueueConfig queue_config(std::uint16_t qid, std::uint16_t cntlid,
                                 std::chrono::milliseconds request_timeout = 10s) {
    detail::QueueConfig config;
    config.qid = qid;
    config.size = queue_size(qid);
    config.cntlid = cntlid;
    config.kind = qid == 0 ? wire::QueueKind::admin : wire::QueueKind::io;
    config.timeout = 2s;
    config.request_timeout = request_timeout;
    config.connect_deadline = detail::ConnectDeadline(10s);
    return config;
}

// Host memory as a transfer needs it: the record the data path reads, alive
// and owned by `owner` (what the queue's set_owner names).
class HostBuffer {
  public:
    HostBuffer(std::size_t bytes, const void* owner) : storage_(bytes + 4096) {
        auto record = std::make_shared<MemoryRecord>();
        auto base = reinterpret_cast<std::uintptr_t>(storage_.data());
        record->address = reinterpret_cast<std::byte*>((base + 4095) & ~std::uintptr_t{4095});
        record->length = bytes;
        record->owner = owner;
        record->host_owner = owner;
        record->registered = true;
        region_ = MemoryRegion(std::move(record));
    }
    const MemoryRegion& region() const { return region_; }
    std::uint8_t* data() const { return reinterpret_cast<std::uint8_t*>(region_.data()); }
    std::size_t size() const { return region_.size(); }
    void fill(std::uint32_t seed) const { test::fill(region_, seed); }
    void zero() const { std::memset(data(), 0, size()); }

  private:
    std::vector<std::byte> storage_;
    MemoryRegion region_;
};

// Waits for the socket (or a millisecond) when a poll found nothing.
void idle(const TcpQueue& q) {
    pollfd p{q.socket_fd(), POLLIN, 0};
    if (p.fd >= 0) {
        ::poll(&p, 1, 1);
    }
}

// A low-level command, polled to its answer.
Response run(TcpQueue& q, const wire::Sqe& command, std::chrono::milliseconds limit = 10s) {
    const std::uint16_t cid = q.submit_command(command);
    const auto deadline = Clock::now() + limit;
    while (!q.request_done(cid) && Clock::now() < deadline) {
        if (q.poll_cq() == 0) {
            idle(q);
        }
    }
    EXPECT_TRUE(q.request_done(cid)) << "no answer within " << limit.count() << " ms";
    Response response = q.request_response(cid);
    q.release_request(cid);
    return response;
}

// `count` completions taken (or fewer, once the limit passed).
std::vector<Completion> reap(TcpQueue& q, std::size_t count,
                             std::chrono::milliseconds limit = 20s) {
    std::vector<Completion> done;
    const auto deadline = Clock::now() + limit;
    Completion batch[32];
    while (done.size() < count && Clock::now() < deadline) {
        std::size_t failed = 0;
        const std::size_t n = q.take_completions(batch, failed);
        done.insert(done.end(), batch, batch + n);
        if (n == 0) {
            idle(q);
        }
    }
    return done;
}

Transfer transfer(Op op, std::uint64_t slba, std::uint64_t blocks, const HostBuffer* memory,
                  std::uint64_t offset, std::uint64_t user_data) {
    Transfer t;
    t.op = op;
    t.slba = slba;
    t.blocks = blocks;
    t.memory = memory != nullptr ? &memory->region() : nullptr;
    t.offset = offset;
    t.user_data = user_data;
    return t;
}

// One transfer submitted and reaped: its status.
CompletionStatus transfer_now(TcpQueue& q, const NamespaceRef& ns, const Transfer& t) {
    const SubmitResult submitted = q.submit(ns, t, Post::now);
    EXPECT_EQ(submitted, SubmitResult::queued);
    if (submitted != SubmitResult::queued) {
        return q.last_error();
    }
    const auto done = reap(q, 1);
    EXPECT_EQ(done.size(), 1u);
    return done.empty() ? CompletionStatus{} : done.front().status;
}

NamespaceRef plain_namespace(std::uint64_t size_lbas) {
    NamespaceRef ns;
    ns.nsid = 1;
    ns.lba_shift = 9;
    ns.size_lbas = size_lbas;
    ns.block_bytes_by_pract[0] = ns.block_bytes_by_pract[1] = 512;
    return ns;
}

// An association made by hand over TcpQueues: what the host layer does.
struct Association {
    std::unique_ptr<TcpQueue> admin;
    std::unique_ptr<TcpQueue> io;
    std::uint16_t cntlid = 0;
    wire::IdentifyController identify{};
    std::uint64_t max_transfer = 0;
    std::uint32_t io_in_capsule = 0;
    const char owner = 0;  // the "controller" that owns the test's memory
};

wire::Sqe connect_sqe(std::uint16_t qid, const wire::ConnectData& data, bool no_sq_flow_control) {
    wire::Sqe sqe = wire::connect_command(
        qid, queue_size(qid), 0,
        wire::keyed_data_block(reinterpret_cast<std::uint64_t>(&data), sizeof data, 0));
    if (no_sq_flow_control) {
        reinterpret_cast<std::uint8_t*>(&sqe)[offsetof(wire::ConnectCommand, cattr)] |= 1u << 2;
    }
    return sqe;
}

void connect_admin(Association& a, const TargetProcess& target, wire::TcpDigests digests) {
    const detail::PeerAddress peer = detail::resolve_peer(target.address(), target.port(), "");
    a.admin = std::make_unique<TcpQueue>(queue_config(0, 0), peer, detail::TcpSettings{digests});
    a.admin->connect(1 << 20, TcpQueue::kAdminInCapsuleBytes);
    ASSERT_EQ(a.admin->state(), detail::QueueState::connected);
    // Fabrics Connect, its data in this process's memory (a keyed SGL the
    // queue translates for TCP: in the capsule).
    const wire::ConnectData data = wire::connect_data({}, target.nqn(), kHostNqn, 0xFFFF);
    const Response connected = run(*a.admin, connect_sqe(0, data, false));
    ASSERT_TRUE(connected.status.ok()) << describe(connected.status);
    a.cntlid = wire::parse_connect_result(connected.cqe.dw0).cntlid;
    a.admin->mark_live();

    const Response cap =
        run(*a.admin, wire::property_get_command(static_cast<std::uint32_t>(wire::Property::cap),
                                                 wire::PropertySize::eight_bytes));
    ASSERT_TRUE(cap.status.ok()) << describe(cap.status);
    const wire::Capabilities capabilities{cap.cqe.result64()};
    EXPECT_GE(capabilities.max_queue_entries(), kIoQueueSize);
    wire::ControllerConfig::Fields cc;
    cc.enable = true;
    const Response enabled =
        run(*a.admin, wire::property_set_command(static_cast<std::uint32_t>(wire::Property::cc),
                                                 wire::ControllerConfig::make(cc).raw,
                                                 wire::PropertySize::four_bytes));
    ASSERT_TRUE(enabled.status.ok()) << describe(enabled.status);
    bool ready = false;
    for (int i = 0; i < 100 && !ready; ++i) {
        const Response csts = run(
            *a.admin, wire::property_get_command(static_cast<std::uint32_t>(wire::Property::csts),
                                                 wire::PropertySize::four_bytes));
        ASSERT_TRUE(csts.status.ok());
        ready = wire::ControllerStatus{csts.cqe.dw0}.ready();
    }
    ASSERT_TRUE(ready) << "CSTS.RDY never set";

    // Identify Controller into local memory: C2HData straight into it.
    std::memset(&a.identify, 0xA5, sizeof a.identify);
    const Response identified =
        run(*a.admin,
            wire::identify_command(
                wire::IdentifyCns::controller, 0,
                wire::keyed_data_block(reinterpret_cast<std::uint64_t>(&a.identify), 4096, 0)));
    ASSERT_TRUE(identified.status.ok()) << describe(identified.status);
    EXPECT_EQ(a.identify.subsystem_nqn(), target.nqn());
    a.max_transfer =
        a.identify.mdts == 0 ? (1u << 20) : capabilities.min_page_size() << a.identify.mdts;
    a.io_in_capsule = a.identify.ioccsz * 16 - 64;
}

void connect_io(Association& a, const TargetProcess& target, wire::TcpDigests digests,
                bool no_sq_flow_control = false) {
    const detail::PeerAddress peer = detail::resolve_peer(target.address(), target.port(), "");
    a.io =
        std::make_unique<TcpQueue>(queue_config(1, a.cntlid), peer, detail::TcpSettings{digests});
    a.io->connect(a.max_transfer, a.io_in_capsule);
    const wire::ConnectData data = wire::connect_data({}, target.nqn(), kHostNqn, a.cntlid);
    const Response connected = run(*a.io, connect_sqe(1, data, no_sq_flow_control));
    ASSERT_TRUE(connected.status.ok()) << describe(connected.status);
    a.io->mark_live();
    a.io->set_owner(&a.owner);
}

bool same(const HostBuffer& a, std::size_t a_offset, const HostBuffer& b, std::size_t b_offset,
          std::size_t bytes) {
    return std::memcmp(a.data() + a_offset, b.data() + b_offset, bytes) == 0;
}

bool all_zero(const HostBuffer& b, std::size_t offset, std::size_t bytes) {
    return std::all_of(b.data() + offset, b.data() + offset + bytes,
                       [](std::uint8_t x) { return x == 0; });
}

// ---- against nvmeof-target -----------------------------------------------------

TEST(TcpQueueTarget, BringUpByHandAndQueueState) {
    TargetProcess target({"--transport", "tcp"}, "ram:4M");
    Association a;
    connect_admin(a, target, {});
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(a.admin->state(), detail::QueueState::live);
    EXPECT_FALSE(a.admin->local_address().empty());
    EXPECT_EQ(a.admin->local_address().rfind("127.0.0.1:", 0), 0u) << a.admin->local_address();
    EXPECT_EQ(a.admin->max_h2c_data(), 128u * 1024);
    EXPECT_FALSE(a.admin->digests().header);
    EXPECT_GE(a.admin->socket_fd(), 0);
    EXPECT_EQ(a.io_in_capsule, 4096u);  // the target's IOCCSZ 260

    // Identify Namespace: the 4 MiB RAM namespace in 512-byte blocks.
    wire::IdentifyNamespace ns{};
    const Response r = run(
        *a.admin, wire::identify_command(
                      wire::IdentifyCns::namespace_data, 1,
                      wire::keyed_data_block(reinterpret_cast<std::uint64_t>(&ns), sizeof ns, 0)));
    ASSERT_TRUE(r.status.ok()) << describe(r.status);
    EXPECT_EQ(ns.nsze, 4u * 1024 * 1024 / 512);

    // Commands each cost one sendmsg, answers one recvmsg or so: the counts move.
    const TcpQueue::Counters& c = a.admin->counters();
    EXPECT_GE(c.sends, 6u);
    EXPECT_GE(c.pdus_sent, 6u);  // ICReq, Connect, 3+ properties, Identify
    EXPECT_GE(c.pdus_received, 6u);
    EXPECT_EQ(c.data_received_direct + c.data_copied, 4096u + sizeof ns);

    a.admin->disconnect();
    EXPECT_EQ(a.admin->state(), detail::QueueState::closed);
    EXPECT_THROW(run(*a.admin, wire::property_get_command(0, wire::PropertySize::eight_bytes)),
                 TransportError);
}

class TcpQueueDigests : public ::testing::TestWithParam<wire::TcpDigests> {};

TEST_P(TcpQueueDigests, TransfersOfEveryKind) {
    const wire::TcpDigests digests = GetParam();
    // MDTS 6 (256 KiB): one write of 256 KiB is R2T'd in two H2CData PDUs of
    // MAXH2CDATA (128 KiB); 1 MiB splits in four commands.
    TargetProcess target({"--transport", "tcp", "--mdts", "6"}, "ram:16M");
    Association a;
    connect_admin(a, target, digests);
    ASSERT_FALSE(HasFatalFailure());
    connect_io(a, target, digests);
    ASSERT_FALSE(HasFatalFailure());
    TcpQueue& q = *a.io;
    EXPECT_EQ(q.digests().header, digests.header);
    EXPECT_EQ(q.digests().data, digests.data);
    ASSERT_EQ(a.max_transfer, 256u * 1024);
    const NamespaceRef ns = plain_namespace(16u * 1024 * 1024 / 512);

    constexpr std::size_t kMiB = 1024 * 1024;
    HostBuffer out(2 * kMiB, &a.owner);
    HostBuffer in(2 * kMiB, &a.owner);
    out.fill(7);
    in.zero();

    // In the capsule (4 KiB, the I/O capsule's limit), then by R2T (4 KiB + 512).
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::write, 0, 8, &out, 0, 1)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::write, 8, 9, &out, 4096, 2)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 0, 17, &in, 0, 3)).ok());
    EXPECT_TRUE(same(in, 0, out, 0, 17 * 512));
    // 256 KiB: one command, H2CData in two pieces; read back in C2HData of 64 KiB.
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::write, 64, 512, &out, 64 * 512, 4)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 64, 512, &in, 64 * 512, 5)).ok());
    EXPECT_TRUE(same(in, 64 * 512, out, 64 * 512, 256 * 1024));
    // 1 MiB: split at MDTS into four commands.
    EXPECT_EQ(q.pieces(ns, transfer(Op::write, 1024, 2048, &out, kMiB, 6)), 4u);
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::write, 1024, 2048, &out, kMiB, 6)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 1024, 2048, &in, kMiB, 7)).ok());
    EXPECT_TRUE(same(in, kMiB, out, kMiB, kMiB));

    // QD 32: writes of new data to 16 regions and reads of 16 written above,
    // all in flight together, committed as one batch.
    HostBuffer out2(16 * 8192, &a.owner);
    HostBuffer in2(16 * 8192, &a.owner);
    out2.fill(99);
    in2.zero();
    for (std::uint64_t i = 0; i < 16; ++i) {
        ASSERT_EQ(q.submit(ns, transfer(Op::write, 8192 + i * 16, 16, &out2, i * 8192, 100 + i),
                           Post::deferred),
                  SubmitResult::queued);
        ASSERT_EQ(q.submit(ns, transfer(Op::read, 1024 + i * 16, 16, &in2, i * 8192, 200 + i),
                           Post::deferred),
                  SubmitResult::queued);
    }
    EXPECT_EQ(q.deferred(), 32u);
    const std::uint64_t sends_before = q.counters().sends;
    q.commit();
    EXPECT_EQ(q.counters().sends, sends_before + 1) << "a commit is one sendmsg";
    const auto done = reap(q, 32);
    ASSERT_EQ(done.size(), 32u);
    for (const Completion& c : done) {
        EXPECT_TRUE(c.status.ok()) << c.user_data << ": " << describe(c.status);
    }
    for (std::uint64_t i = 0; i < 16; ++i) {
        EXPECT_TRUE(same(in2, i * 8192, out, kMiB + i * 8192, 8192)) << "read " << i;
    }
    HostBuffer check(16 * 8192, &a.owner);
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 8192, 256, &check, 0, 300)).ok());
    EXPECT_TRUE(same(check, 0, out2, 0, 16 * 8192));

    // Flush, write zeroes, deallocate (its range in the capsule): read back as zeroes.
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::flush, 0, 0, nullptr, 0, 400)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::write_zeroes, 0, 8, nullptr, 0, 401)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::deallocate, 64, 16, nullptr, 0, 402)).ok());
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 0, 8, &in, 0, 403)).ok());
    EXPECT_TRUE(all_zero(in, 0, 8 * 512));
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 64, 16, &in, 64 * 512, 404)).ok());
    EXPECT_TRUE(all_zero(in, 64 * 512, 16 * 512));
    EXPECT_TRUE(transfer_now(q, ns, transfer(Op::read, 80, 8, &in, 80 * 512, 405)).ok());
    EXPECT_TRUE(same(in, 80 * 512, out, 80 * 512, 8 * 512)) << "past the deallocated range";

    // Every C2HData byte landed in place or was copied out of the receive
    // buffer, nothing else: 17 + 512 + 2048 + 16*16 + 256 + 8 + 16 + 8 blocks.
    const TcpQueue::Counters& c = q.counters();
    EXPECT_EQ(c.data_received_direct + c.data_copied,
              (17u + 512 + 2048 + 256 + 256 + 8 + 16 + 8) * 512);
    q.check_counters();
    a.io->disconnect();
    a.admin->disconnect();
    const std::string stats = target.stop();
    EXPECT_GE(TargetProcess::stat(stats, "tcp.r2t").value_or(0), 1u + 1 + 4 + 16);
    EXPECT_GE(TargetProcess::stat(stats, "tcp.h2c_data").value_or(0), 1u + 2 + 8 + 16);
    EXPECT_EQ(TargetProcess::stat(stats, "tcp.term_reqs").value_or(99), 0u);
}

INSTANTIATE_TEST_SUITE_P(Digests, TcpQueueDigests,
                         ::testing::Values(wire::TcpDigests{false, false},
                                           wire::TcpDigests{true, false},
                                           wire::TcpDigests{false, true},
                                           wire::TcpDigests{true, true}),
                         [](const ::testing::TestParamInfo<wire::TcpDigests>& param_info) {
                             return std::string(param_info.param.header ? "Header" : "NoHeader") +
                                    (param_info.param.data ? "Data" : "NoData");
                         });

TEST(TcpQueueTarget, ReadsEndWithSuccessWithoutCapsuleResp) {
    // SQ flow control off (Connect CATTR): the target ends a read with
    // C2HData SUCCESS and sends no CapsuleResp.
    TargetProcess target({"--transport", "tcp"}, "ram:4M");
    Association a;
    connect_admin(a, target, {true, true});
    ASSERT_FALSE(HasFatalFailure());
    connect_io(a, target, {true, true}, true);
    ASSERT_FALSE(HasFatalFailure());
    TcpQueue& q = *a.io;
    const NamespaceRef ns = plain_namespace(8192);
    HostBuffer out(64 * 1024, &a.owner);
    HostBuffer in(64 * 1024, &a.owner);
    out.fill(3);
    in.zero();
    ASSERT_TRUE(transfer_now(q, ns, transfer(Op::write, 0, 128, &out, 0, 1)).ok());
    const std::uint64_t received = q.counters().pdus_received;
    for (std::uint64_t i = 0; i < 8; ++i) {
        ASSERT_EQ(q.submit(ns, transfer(Op::read, i * 16, 16, &in, i * 8192, i), Post::now),
                  SubmitResult::queued);
    }
    const auto done = reap(q, 8);
    ASSERT_EQ(done.size(), 8u);
    for (const Completion& c : done) {
        EXPECT_TRUE(c.status.ok()) << describe(c.status);
    }
    EXPECT_TRUE(same(in, 0, out, 0, 64 * 1024));
    EXPECT_EQ(q.counters().pdus_received - received, 8u) << "one C2HData per read, nothing else";
}

TEST(TcpQueueTarget, LargeReadsLandInTheCallersMemory) {
    // 4 MiB read as 32 commands of 128 KiB (two C2HData of 64 KiB each, the
    // target's largest, as large as the receive buffer): after the first, each
    // PDU's data is received in place but for what came with its header (at
    // most kReceiveTail bytes).
    TargetProcess target({"--transport", "tcp"}, "ram:8M");
    Association a;
    connect_admin(a, target, {});
    ASSERT_FALSE(HasFatalFailure());
    connect_io(a, target, {});
    ASSERT_FALSE(HasFatalFailure());
    TcpQueue& q = *a.io;
    const NamespaceRef ns = plain_namespace(16384);
    constexpr std::size_t kBytes = 4 * 1024 * 1024;
    HostBuffer out(kBytes, &a.owner);
    HostBuffer in(kBytes, &a.owner);
    out.fill(5);
    in.zero();
    ASSERT_TRUE(transfer_now(q, ns, transfer(Op::write, 0, kBytes / 512, &out, 0, 1)).ok());
    const TcpQueue::Counters before = q.counters();
    ASSERT_TRUE(transfer_now(q, ns, transfer(Op::read, 0, kBytes / 512, &in, 0, 2)).ok());
    EXPECT_TRUE(same(in, 0, out, 0, kBytes));
    const TcpQueue::Counters& after = q.counters();
    const std::uint64_t direct = after.data_received_direct - before.data_received_direct;
    const std::uint64_t copied = after.data_copied - before.data_copied;
    EXPECT_EQ(direct + copied, kBytes);
    EXPECT_LT(copied, kBytes / 8) << "a large read's data is copied out of the receive buffer";
    RecordProperty("direct_bytes", std::to_string(direct));
    RecordProperty("copied_bytes", std::to_string(copied));
    RecordProperty("recvmsg_calls", std::to_string(after.receives - before.receives));
    RecordProperty("sendmsg_calls", std::to_string(after.sends - before.sends));
}

TEST(TcpQueueTarget, ProtectionInformationTravelsWithTheData) {
    // 512+8 with type 1 PI: without PRACT the 8 bytes travel after each block.
    TargetProcess target({"--transport", "tcp"}, "ram:4M:512+8:pi1");
    Association a;
    connect_admin(a, target, {});
    ASSERT_FALSE(HasFatalFailure());
    connect_io(a, target, {});
    ASSERT_FALSE(HasFatalFailure());
    TcpQueue& q = *a.io;
    NamespaceRef ns = plain_namespace(8192);
    ns.format.data_bytes = 512;
    ns.format.metadata_bytes = 8;
    ns.format.pi_type = wire::PiType::type1;
    ns.reftag_mask = ns.format.reftag_mask();
    ns.block_bytes_by_pract[0] = 520;
    ns.block_bytes_by_pract[1] = 512;
    ns.pi = true;
    HostBuffer out(64 * 520, &a.owner);
    HostBuffer in(64 * 520, &a.owner);
    out.fill(11);
    in.zero();
    // No checks asked (PRCHK 0), no PRACT: the blocks and their metadata as given.
    ASSERT_TRUE(transfer_now(q, ns, transfer(Op::write, 0, 64, &out, 0, 1)).ok());
    ASSERT_TRUE(transfer_now(q, ns, transfer(Op::read, 0, 64, &in, 0, 2)).ok());
    EXPECT_TRUE(same(in, 0, out, 0, 64 * 520));
    // PRACT: the controller makes and strips the PI, 512 bytes a block travel.
    Transfer write = transfer(Op::write, 128, 16, &out, 0, 3);
    write.protection.prinfo = kPract;
    in.zero();
    Transfer read = transfer(Op::read, 128, 16, &in, 0, 4);
    read.protection.prinfo = kPract;
    ASSERT_TRUE(transfer_now(q, ns, write).ok());
    ASSERT_TRUE(transfer_now(q, ns, read).ok());
    EXPECT_TRUE(same(in, 0, out, 0, 16 * 512));
}

TEST(TcpQueueTarget, ReopenConnectsAgain) {
    TargetProcess target({"--transport", "tcp"}, "ram:4M");
    Association a;
    connect_admin(a, target, {});
    ASSERT_FALSE(HasFatalFailure());
    TcpQueue& q = *a.admin;
    const detail::PeerAddress peer = detail::resolve_peer(target.address(), target.port(), "");
    q.reopen(peer, detail::ConnectDeadline(5s), 0);
    EXPECT_EQ(q.state(), detail::QueueState::resolved);
    EXPECT_EQ(q.socket_fd(), -1);
    q.connect(1 << 20, TcpQueue::kAdminInCapsuleBytes);
    const wire::ConnectData data = wire::connect_data({}, target.nqn(), kHostNqn, 0xFFFF);
    const Response connected = run(q, connect_sqe(0, data, false));
    EXPECT_TRUE(connected.status.ok()) << describe(connected.status);
}

TEST(TcpQueueTarget, ConnectToNothingIsNoListener) {
    // A port nothing listens on: bound and closed again.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
    ::close(fd);
    const auto peer = detail::resolve_peer("127.0.0.1", ntohs(address.sin_port), "");
    TcpQueue q(queue_config(0, 0), peer, {});
    try {
        q.connect(1 << 20, TcpQueue::kAdminInCapsuleBytes);
        FAIL() << "connected to a port nothing listens on";
    } catch (const ConnectError& e) {
        EXPECT_EQ(e.cause(), ConnectFailure::no_listener) << e.what();
        EXPECT_EQ(e.sys_errno(), ECONNREFUSED);
        EXPECT_EQ(e.step(), "TCP connect");
    }
}

// ---- against fake controllers --------------------------------------------------

// A one-connection NVMe/TCP "controller" on loopback, its script run on a
// thread with blocking reads and writes.
class FakeController {
  public:
    using Script = std::function<void(int fd)>;
    explicit FakeController(Script script) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(listener_, 1) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            throw std::runtime_error("fake controller: cannot listen");
        }
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this, script = std::move(script)] {
            const int fd = ::accept(listener_, nullptr, nullptr);
            if (fd >= 0) {
                script(fd);
                ::close(fd);
            }
            finished_ = true;
        });
    }
    ~FakeController() {
        ::shutdown(listener_, SHUT_RDWR);
        if (thread_.joinable()) {
            thread_.join();
        }
        ::close(listener_);
    }
    detail::PeerAddress peer() const { return detail::resolve_peer("127.0.0.1", port_, ""); }
    void join() { thread_.join(); }

    // Blocking helpers for scripts.
    static bool read_exact(int fd, void* data, std::size_t bytes) {
        auto* p = static_cast<std::uint8_t*>(data);
        while (bytes != 0) {
            const ssize_t n = ::recv(fd, p, bytes, 0);
            if (n <= 0) {
                return false;
            }
            p += n;
            bytes -= static_cast<std::size_t>(n);
        }
        return true;
    }
    static void write_all(int fd, const void* data, std::size_t bytes) {
        const auto* p = static_cast<const std::uint8_t*>(data);
        while (bytes != 0) {
            const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
            if (n <= 0) {
                return;
            }
            p += n;
            bytes -= static_cast<std::size_t>(n);
        }
    }
    // ICReq in, the given ICResp out; the ICReq read.
    static wire::TcpIcReq initialize(int fd, const wire::TcpIcResp& resp) {
        wire::TcpIcReq req{};
        read_exact(fd, &req, sizeof req);
        write_all(fd, &resp, sizeof resp);
        return req;
    }
    static wire::TcpIcResp good_ic_resp() { return wire::tcp_ic_resp(0, {}, 128 * 1024); }
    // One CapsuleCmd (header and in-capsule data, no digests).
    static bool read_capsule(int fd, wire::TcpCapsuleCmd& capsule,
                             std::vector<std::uint8_t>* data) {
        if (!read_exact(fd, &capsule, sizeof capsule)) {
            return false;
        }
        std::vector<std::uint8_t> rest(capsule.ch.plen - sizeof capsule);
        if (!read_exact(fd, rest.data(), rest.size())) {
            return false;
        }
        if (data != nullptr) {
            *data = std::move(rest);
        }
        return true;
    }
    // Everything until the host closes.
    static std::vector<std::uint8_t> read_to_end(int fd) {
        std::vector<std::uint8_t> all;
        std::uint8_t buffer[4096];
        for (;;) {
            const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0) {
                return all;
            }
            all.insert(all.end(), buffer, buffer + n);
        }
    }

  private:
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::atomic<bool> finished_{false};
};

// The queue connected to a fake controller, state connected (no Fabrics
// Connect: the fakes answer what the test sends).
std::unique_ptr<TcpQueue> connect_to(const FakeController& fake,
                                     std::chrono::milliseconds request_timeout = 10s) {
    auto q = std::make_unique<TcpQueue>(queue_config(0, 0, request_timeout), fake.peer(),
                                        detail::TcpSettings{});
    q->connect(1 << 20, TcpQueue::kAdminInCapsuleBytes);
    return q;
}

TEST(TcpQueueFake, IcReqAsksWhatTheHostWantsAndABadIcRespIsRefused) {
    wire::TcpIcReq seen{};
    std::vector<std::uint8_t> after;
    FakeController fake([&](int fd) {
        seen = FakeController::initialize(fd, wire::tcp_ic_resp(0, {}, 100));  // MAXH2CDATA < 4096
        after = FakeController::read_to_end(fd);
    });
    TcpQueue q(queue_config(0, 0), fake.peer(), detail::TcpSettings{{true, false}});
    try {
        q.connect(1 << 20, TcpQueue::kAdminInCapsuleBytes);
        FAIL() << "an ICResp with MAXH2CDATA 100 was taken";
    } catch (const ConnectError& e) {
        EXPECT_EQ(e.cause(), ConnectFailure::negotiation);
        EXPECT_NE(std::string(e.what()).find("MAXH2CDATA"), std::string::npos) << e.what();
    }
    q.release();
    fake.join();
    EXPECT_EQ(seen.ch.type, static_cast<std::uint8_t>(wire::TcpPduType::ic_req));
    EXPECT_EQ(seen.pfv, 0);
    EXPECT_EQ(seen.hpda, 0);
    EXPECT_EQ(seen.maxr2t, 0u);
    EXPECT_EQ(seen.dgst, wire::kTcpDigestHeaderEnable);
    // An H2CTermReq told the controller why (FES Invalid PDU Header Field, FEI of MAXH2CDATA).
    ASSERT_GE(after.size(), sizeof(wire::TcpTermReq));
    wire::TcpTermReq term{};
    std::memcpy(&term, after.data(), sizeof term);
    EXPECT_EQ(term.ch.type, static_cast<std::uint8_t>(wire::TcpPduType::h2c_term_req));
    EXPECT_EQ(term.fes, static_cast<std::uint16_t>(wire::TcpFatalError::invalid_header_field));
    EXPECT_EQ(term.fei(), offsetof(wire::TcpIcResp, maxh2cdata));
}

TEST(TcpQueueFake, AMalformedPduFailsTheQueueWithOneLine) {
    LogCapture log;
    std::vector<std::uint8_t> after;
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, FakeController::good_ic_resp());
        wire::TcpCapsuleCmd capsule{};
        FakeController::read_capsule(fd, capsule, nullptr);
        // A CapsuleResp whose HLEN is wrong.
        wire::TcpCapsuleResp resp = wire::tcp_capsule_resp(wire::Cqe{}, {});
        resp.cqe.command_id = capsule.sqe.command_id;
        resp.ch.hlen = 32;
        FakeController::write_all(fd, &resp, sizeof resp);
        after = FakeController::read_to_end(fd);
    });
    auto q = connect_to(fake);
    const Response r = run(*q, wire::property_get_command(0, wire::PropertySize::eight_bytes));
    EXPECT_EQ(r.status.transport, TransportErrc::protocol_error);
    EXPECT_EQ(r.status.sys_errno, EPROTO);
    EXPECT_EQ(q->failure(), TransportErrc::protocol_error);
    EXPECT_TRUE(q->failed());
    EXPECT_EQ(log.count("HLEN is not this PDU type's header length"), 1u);
    EXPECT_EQ(log.count("queue failed"), 1u);
    q->release();
    fake.join();
    ASSERT_GE(after.size(), sizeof(wire::TcpTermReq) + 8);
    wire::TcpTermReq term{};
    std::memcpy(&term, after.data(), sizeof term);
    EXPECT_EQ(term.ch.type, static_cast<std::uint8_t>(wire::TcpPduType::h2c_term_req));
    EXPECT_EQ(term.fes, static_cast<std::uint16_t>(wire::TcpFatalError::invalid_header_field));
    EXPECT_EQ(term.fei(), offsetof(wire::TcpCommonHeader, hlen));
    EXPECT_EQ(after[sizeof term], static_cast<std::uint8_t>(wire::TcpPduType::capsule_resp))
        << "the header in error follows the TermReq";
}

TEST(TcpQueueFake, AResponseForNoCommandIsAProtocolError) {
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, FakeController::good_ic_resp());
        wire::TcpCapsuleCmd capsule{};
        FakeController::read_capsule(fd, capsule, nullptr);
        wire::Cqe cqe{};
        cqe.command_id = 7;  // nothing sent at 7
        const wire::TcpCapsuleResp resp = wire::tcp_capsule_resp(cqe, {});
        FakeController::write_all(fd, &resp, sizeof resp);
        FakeController::read_to_end(fd);
    });
    auto q = connect_to(fake);
    const Response r = run(*q, wire::property_get_command(0, wire::PropertySize::eight_bytes));
    EXPECT_EQ(r.status.transport, TransportErrc::protocol_error);
    EXPECT_EQ(r.status.sys_errno, EPROTO);
}

TEST(TcpQueueFake, AC2HTermReqFailsTheQueueNamingTheFatalError) {
    LogCapture log;
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, FakeController::good_ic_resp());
        wire::TcpCapsuleCmd capsule{};
        FakeController::read_capsule(fd, capsule, nullptr);
        const wire::TcpTermReq term = wire::tcp_term_req(
            wire::TcpPduType::c2h_term_req, wire::TcpFatalError::header_digest_error, 72, 8);
        FakeController::write_all(fd, &term, sizeof term);
        FakeController::write_all(fd, &capsule, 8);
        FakeController::read_to_end(fd);
    });
    auto q = connect_to(fake);
    const Response r = run(*q, wire::property_get_command(0, wire::PropertySize::eight_bytes));
    EXPECT_EQ(r.status.transport, TransportErrc::protocol_error);
    EXPECT_EQ(log.count("C2HTermReq FES 0x3 (Header Digest Error), FEI 72"), 1u);
    EXPECT_EQ(log.count("CapsuleCmd"), 1u);
}

TEST(TcpQueueFake, APeerClosingMidReadFailsDisconnected) {
    wire::TcpCapsuleCmd seen{};
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, FakeController::good_ic_resp());
        FakeController::read_capsule(fd, seen, nullptr);
        // Half of the Identify data, then the connection ends.
        const wire::TcpDataHeader data =
            wire::tcp_c2h_data(seen.sqe.command_id, 0, 4096, true, false, {}, 0);
        FakeController::write_all(fd, &data, sizeof data);
        const std::vector<std::uint8_t> half(2048, 0x5A);
        FakeController::write_all(fd, half.data(), half.size());
    });
    auto q = connect_to(fake);
    std::vector<std::uint8_t> buffer(4096, 0);
    const Response r = run(
        *q, wire::identify_command(
                wire::IdentifyCns::controller, 0,
                wire::keyed_data_block(reinterpret_cast<std::uint64_t>(buffer.data()), 4096, 77)));
    EXPECT_EQ(r.status.transport, TransportErrc::disconnected);
    EXPECT_EQ(r.status.sys_errno, ECONNRESET);
    EXPECT_EQ(q->failure(), TransportErrc::disconnected);
    // The keyed SGL went out as a Transport SGL Data Block of the same length.
    EXPECT_EQ(seen.sqe.dptr.identifier, wire::kTransportDataBlock);
    EXPECT_EQ(seen.sqe.dptr.length(), 4096u);
    EXPECT_EQ(seen.sqe.dptr.address, 0u);
    EXPECT_EQ(buffer[0], 0x5A);  // what came was placed
}

TEST(TcpQueueFake, ADataDigestMismatchFailsTheCommandNotTheQueue) {
    LogCapture log;
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, wire::tcp_ic_resp(0, {false, true}, 128 * 1024));
        wire::TcpCapsuleCmd capsule{};
        FakeController::read_capsule(fd, capsule, nullptr);
        // 16 bytes with SUCCESS, and a DDGST that is not theirs.
        const wire::TcpDataHeader data =
            wire::tcp_c2h_data(capsule.sqe.command_id, 0, 16, true, true, {false, true}, 0);
        const std::uint8_t bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        const std::uint32_t wrong = ~wire::tcp_digest(bytes, sizeof bytes);
        FakeController::write_all(fd, &data, sizeof data);
        FakeController::write_all(fd, bytes, sizeof bytes);
        FakeController::write_all(fd, &wrong, sizeof wrong);
        FakeController::read_to_end(fd);
    });
    auto q = std::make_unique<TcpQueue>(queue_config(0, 0), fake.peer(),
                                        detail::TcpSettings{{false, true}});
    q->connect(1 << 20, TcpQueue::kAdminInCapsuleBytes);
    ASSERT_TRUE(q->digests().data);
    std::uint8_t buffer[16] = {};
    const Response r =
        run(*q, wire::identify_command(
                    wire::IdentifyCns::controller, 0,
                    wire::keyed_data_block(reinterpret_cast<std::uint64_t>(buffer), 16, 0)));
    EXPECT_EQ(r.status.transport, TransportErrc::none);
    EXPECT_TRUE(r.status.nvme.is(wire::GenericStatus::data_transfer_error)) << describe(r.status);
    EXPECT_FALSE(q->failed());
    EXPECT_EQ(log.count("C2HData DDGST does not match its data"), 1u);
}

TEST(TcpQueueFake, AControllerThatNeverAnswersTimesOut) {
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, FakeController::good_ic_resp());
        FakeController::read_to_end(fd);  // takes the capsule, answers nothing
    });
    auto q = connect_to(fake, 300ms);
    const auto start = Clock::now();
    const Response r = run(*q, wire::property_get_command(0, wire::PropertySize::eight_bytes), 5s);
    EXPECT_EQ(r.status.transport, TransportErrc::timeout);
    EXPECT_EQ(r.status.sys_errno, ETIMEDOUT);
    EXPECT_EQ(q->failure(), TransportErrc::timeout);
    EXPECT_LT(Clock::now() - start, 3s);
    q->disconnect();
}

TEST(TcpQueueFake, PartialSendsContinueUntilAllIsSent) {
    // A controller that reads slowly: a 16 MiB in-capsule write cannot leave
    // in one sendmsg; polling continues it, and every byte arrives in order.
    constexpr std::size_t kBytes = 16 * 1024 * 1024;
    std::vector<std::uint8_t> received;
    FakeController fake([&](int fd) {
        FakeController::initialize(fd, FakeController::good_ic_resp());
        std::this_thread::sleep_for(200ms);
        wire::TcpCapsuleCmd capsule{};
        if (!FakeController::read_capsule(fd, capsule, &received)) {
            return;
        }
        wire::Cqe cqe{};
        cqe.command_id = capsule.sqe.command_id;
        const wire::TcpCapsuleResp resp = wire::tcp_capsule_resp(cqe, {});
        FakeController::write_all(fd, &resp, sizeof resp);
        FakeController::read_to_end(fd);
    });
    auto q = std::make_unique<TcpQueue>(queue_config(1, 1), fake.peer(), detail::TcpSettings{});
    q->connect(kBytes, kBytes);  // this fake takes it all in the capsule
    q->mark_live();
    const char owner = 0;
    q->set_owner(&owner);
    HostBuffer out(kBytes, &owner);
    out.fill(42);
    const NamespaceRef ns = plain_namespace(kBytes / 512);
    const CompletionStatus status =
        transfer_now(*q, ns, transfer(Op::write, 0, kBytes / 512, &out, 0, 1));
    EXPECT_TRUE(status.ok()) << describe(status);
    EXPECT_GT(q->counters().partial_sends, 0u);
    q->disconnect();
    fake.join();
    ASSERT_EQ(received.size(), kBytes);
    EXPECT_EQ(std::memcmp(received.data(), out.data(), kBytes), 0);
}

}  // namespace
