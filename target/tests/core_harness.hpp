// A stand-in transport for CommandCore unit tests: runs plan → (data in) →
// execute → make_cqe the way the RDMA transport does, with host memory as a
// plain vector.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/registers.hpp"

namespace nvmeof::target::testing {

inline constexpr char kSubnqn[] = "nqn.2024-01.io.nvmeof:test";
inline constexpr char kHostnqn[] = "nqn.2014-08.org.nvmexpress:uuid:host-a";
inline constexpr std::uint64_t kHostAddress = 0x10000;  // fake remote address
inline constexpr std::uint32_t kRkey = 0x1234;

struct Result {
    wire::Cqe cqe{};
    std::vector<std::uint8_t> data;  // controller→host bytes
    DataPlan plan;
    wire::Status status() const { return wire::Status::from_cqe_field(cqe.status); }
};

inline TargetConfig default_config() {
    TargetConfig config;
    SubsystemConfig subsystem;
    subsystem.nqn = kSubnqn;
    NamespaceConfig ns;
    ns.size_bytes = 1 << 20;  // 2048 blocks of 512
    subsystem.namespaces.push_back(ns);
    config.subsystems.push_back(subsystem);
    return config;
}

class CoreHarness {
  public:
    explicit CoreHarness(const TargetConfig& config = default_config())
        : core_(std::make_unique<CommandCore>(config, stats_)) {}

    CommandCore& core() { return *core_; }
    Stats& stats() { return stats_; }
    void reset_core(const TargetConfig& config) {
        core_.reset();
        core_ = std::make_unique<CommandCore>(config, stats_);
    }

    static QueueState new_queue(std::uint16_t qid, std::uint32_t ioccsz_units = 260) {
        QueueState q;
        q.qid = qid;
        q.sqsize = qid == 0 ? 31 : 127;
        q.in_capsule_capacity = ioccsz_units * 16 - 64;  // the admin queue's too (rdma_server.cpp)
        return q;
    }

    // host_data: what the host's buffer holds (host→controller), or is sized
    // for (controller→host). in_capsule: bytes that follow the SQE.
    Result run(QueueState& q, const wire::Sqe& sqe, std::vector<std::uint8_t> host_data = {},
               const std::vector<std::uint8_t>& in_capsule = {}) {
        Result r;
        r.plan = core_->plan(q, sqe, in_capsule.size());
        std::vector<std::uint8_t> buffer(r.plan.status.ok() ? r.plan.length : 0);
        if (r.plan.status.ok() && r.plan.direction == wire::DataDirection::host_to_controller) {
            if (r.plan.source == DataSource::keyed) {
                EXPECT_GE(host_data.size(), r.plan.length);
                std::memcpy(buffer.data(), host_data.data(), r.plan.length);
            } else if (r.plan.source == DataSource::in_capsule) {
                std::memcpy(buffer.data(), in_capsule.data() + r.plan.in_capsule_offset,
                            r.plan.length);
            }
        }
        if (r.plan.hold) {
            return r;
        }
        const Completion done = core_->execute(q, sqe, r.plan, buffer);
        r.cqe = core_->make_cqe(q, sqe, done);
        if (done.status.ok()) {
            r.data.assign(buffer.begin(), buffer.begin() + done.data_length);
        }
        return r;
    }

    static wire::SglDescriptor keyed(std::size_t length) {
        return wire::keyed_data_block(kHostAddress, static_cast<std::uint32_t>(length), kRkey);
    }

    static std::vector<std::uint8_t> connect_bytes(const char* subnqn, const char* hostnqn,
                                                   std::uint16_t cntlid) {
        wire::HostId host_id{};
        host_id[0] = 0xAB;
        const wire::ConnectData cd = wire::connect_data(host_id, subnqn, hostnqn, cntlid);
        std::vector<std::uint8_t> bytes(sizeof cd);
        std::memcpy(bytes.data(), &cd, sizeof cd);
        return bytes;
    }

    Result connect(QueueState& q, const char* subnqn = kSubnqn, const char* hostnqn = kHostnqn,
                   std::uint16_t cntlid = wire::kDynamicControllerId, std::uint16_t queue_size = 32,
                   std::uint32_t kato = 0) {
        const auto sqe = wire::connect_command(q.qid, queue_size, kato, keyed(1024));
        return run(q, sqe, connect_bytes(subnqn, hostnqn, cntlid));
    }

    Result property_get(QueueState& q, wire::Property p) {
        return run(q, wire::property_get_command(p));
    }
    Result property_set(QueueState& q, wire::Property p, std::uint64_t value) {
        return run(q, wire::property_set_command(p, value));
    }
    void enable(QueueState& admin) {
        const auto cc = wire::ControllerConfig::make({.enable = true});
        ASSERT_TRUE(property_set(admin, wire::Property::cc, cc.raw).status().ok());
    }

    // An admin queue connected and enabled; returns the CNTLID.
    std::uint16_t bring_up(QueueState& admin, const char* subnqn = kSubnqn,
                           std::uint32_t kato = 0) {
        const Result r = connect(admin, subnqn, kHostnqn, wire::kDynamicControllerId, 32, kato);
        EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
        enable(admin);
        return static_cast<std::uint16_t>(r.cqe.dw0);
    }

    // Admin + one I/O queue connected.
    QueueState bring_up_io(QueueState& admin) {
        const std::uint16_t cntlid = bring_up(admin);
        QueueState io = new_queue(1);
        const Result r = connect(io, kSubnqn, kHostnqn, cntlid, 128);
        EXPECT_TRUE(r.status().ok()) << wire::describe(r.status());
        return io;
    }

  private:
    Stats stats_;
    std::unique_ptr<CommandCore> core_;
};

inline wire::Status generic(wire::GenericStatus s) {
    return wire::Status::generic(s, true);
}
inline wire::Status fabrics(wire::FabricsStatus s) {
    return wire::Status::fabrics(s, true);
}

}  // namespace nvmeof::target::testing
