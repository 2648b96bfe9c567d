// Drives nvmeof-target's command core the way its RDMA transport does
// (target/src/rdma_queue.cpp: start_command, post_read, finish), without verbs:
// a capsule (SQE + in-capsule bytes, in an allocation of exactly its length)
// goes through plan → data → execute → make_cqe; keyed host→controller data
// comes from the fuzz input, as an RDMA READ of the host's memory would.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "core.hpp"
#include "fuzz_bytes.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/registers.hpp"

namespace nvmeof::fuzz {

inline constexpr char kSubnqn[] = "nqn.2026-12.io.nvmeof:fuzz";
inline constexpr char kRestrictedSubnqn[] = "nqn.2026-12.io.nvmeof:fuzz-restricted";
inline constexpr char kHostnqn[] = "nqn.2014-08.org.nvmexpress:uuid:fuzz-host";
inline constexpr std::uint64_t kHostAddress = 0x10000;
inline constexpr std::uint32_t kRkey = 0x1234;
inline constexpr std::uint16_t kAdminHsqsize = 31;
inline constexpr std::uint16_t kIoHsqsize = 127;
inline constexpr std::uint32_t kMaxKeyedLength = 0xFFFFFF;  // 24-bit length field

// Two subsystems (one open to any host, one to kHostnqn only), namespaces of
// 512- and 4096-byte blocks, small enough that LBA ranges hit their ends, and
// a zoned one (NSID 3: 8 zones of 8 KiB, the first conventional, two open and
// three active at most).
inline target::TargetConfig fuzz_config() {
    target::TargetConfig config;
    target::SubsystemConfig open;
    open.nqn = kSubnqn;
    target::NamespaceConfig small;
    small.size_bytes = 64 * 1024;
    open.namespaces.push_back(small);
    target::NamespaceConfig large_blocks;
    large_blocks.size_bytes = 64 * 1024;
    large_blocks.lba_size = 4096;
    open.namespaces.push_back(large_blocks);
    target::NamespaceConfig zoned;
    zoned.size_bytes = 64 * 1024;
    zoned.zoned = target::ZonedConfig{.zone_bytes = 8 * 1024,
                                      .capacity_bytes = 6 * 1024,
                                      .max_open = 2,
                                      .max_active = 3,
                                      .conventional = 1};
    open.namespaces.push_back(zoned);
    config.subsystems.push_back(open);
    target::SubsystemConfig restricted;
    restricted.nqn = kRestrictedSubnqn;
    restricted.namespaces.push_back(small);
    restricted.allowed_hosts.push_back(kHostnqn);
    config.subsystems.push_back(restricted);
    config.limits.max_io_queues = 2;
    return config;
}

// A queue as the transport sets it up after the CM REQ (HSQSIZE, receive size).
inline target::QueueState new_queue(std::uint16_t qid, const target::TargetConfig& config) {
    target::QueueState queue;
    queue.qid = qid;
    queue.sqsize = qid == 0 ? kAdminHsqsize : kIoHsqsize;
    queue.in_capsule_capacity = qid == 0 ? 0
                                         : config.limits.ioccsz * wire::kCapsuleUnit -
                                               static_cast<std::uint32_t>(wire::kSqeSize);
    return queue;
}

struct CapsuleResult {
    bool answered = false;  // false: held (Asynchronous Event Request)
    wire::Cqe cqe{};
    target::Completion done;
    std::vector<std::uint8_t> data;  // controller→host bytes
};

class TargetUnderTest {
  public:
    TargetUnderTest() : config_(fuzz_config()), core_(config_, stats_) {}

    target::CommandCore& core() { return core_; }
    const target::TargetConfig& config() const { return config_; }

    // One received capsule: `capsule` is what the RECV delivered (at most the
    // queue's receive size), `host_data` the host memory a keyed SGL points at.
    CapsuleResult run(target::QueueState& queue, std::span<const std::uint8_t> capsule,
                      std::span<const std::uint8_t> host_data) {
        CapsuleResult result;
        require(capsule.size() >= sizeof(wire::Sqe), "driver: capsule shorter than an SQE");
        // Exactly the received bytes: ASan flags any read of in-capsule data
        // past what arrived.
        std::vector<std::uint8_t> received(capsule.begin(), capsule.end());
        wire::Sqe sqe;
        std::memcpy(&sqe, received.data(), sizeof sqe);
        const std::size_t in_capsule_bytes = received.size() - sizeof sqe;

        const target::DataPlan plan = core_.plan(queue, sqe, in_capsule_bytes);
        if (plan.hold) {
            return result;
        }
        result.answered = true;
        if (!plan.status.ok()) {
            result.done = target::Completion{plan.status};
            result.cqe = core_.make_cqe(queue, sqe, result.done);
            check_cqe(sqe, result);
            return result;
        }
        std::vector<std::uint8_t> buffer;
        std::span<std::uint8_t> data;
        if (plan.source == target::DataSource::in_capsule) {
            require(plan.direction == wire::DataDirection::host_to_controller,
                    "in-capsule data planned for controller→host");
            require(std::uint64_t{plan.in_capsule_offset} + plan.length <= in_capsule_bytes,
                    "in-capsule data planned past the received bytes");
            data = std::span(received.data() + sizeof sqe + plan.in_capsule_offset, plan.length);
        } else {
            require(plan.length <= kMaxKeyedLength,
                    "a transfer longer than a keyed SGL can describe");
            buffer.assign(plan.length, 0);
            if (plan.source == target::DataSource::keyed &&
                plan.direction == wire::DataDirection::host_to_controller) {
                // The RDMA READ of the host's buffer (zeros past what the input holds).
                std::copy_n(host_data.begin(), std::min<std::size_t>(host_data.size(), plan.length),
                            buffer.begin());
            }
            data = buffer;
        }
        result.done = core_.execute(queue, sqe, plan, data);
        require(result.done.data_length <= plan.length, "execute() wrote past the planned length");
        result.cqe = core_.make_cqe(queue, sqe, result.done);
        check_cqe(sqe, result);
        if (plan.direction == wire::DataDirection::controller_to_host) {
            result.data.assign(data.begin(), data.begin() + result.done.data_length);
        }
        return result;
    }

    // Connect (with its 1024 bytes keyed) and, on the admin queue, CC.EN = 1.
    CapsuleResult connect(target::QueueState& queue, std::uint16_t cntlid, std::uint16_t queue_size,
                          const char* subnqn = kSubnqn) {
        wire::HostId host_id{};
        host_id[0] = 0xF2;
        const wire::ConnectData cd = wire::connect_data(host_id, subnqn, kHostnqn, cntlid);
        const wire::Sqe sqe = wire::connect_command(
            queue.qid, queue_size, 0, wire::keyed_data_block(kHostAddress, sizeof cd, kRkey));
        std::vector<std::uint8_t> capsule(sizeof sqe);
        std::memcpy(capsule.data(), &sqe, sizeof sqe);
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(&cd);
        return run(queue, capsule, std::span(bytes, sizeof cd));
    }
    bool enable(target::QueueState& admin) {
        const wire::Sqe sqe = wire::property_set_command(
            wire::Property::cc, wire::ControllerConfig::make({.enable = true}).raw);
        std::vector<std::uint8_t> capsule(sizeof sqe);
        std::memcpy(capsule.data(), &sqe, sizeof sqe);
        return run(admin, capsule, {}).cqe.status == 0;
    }

  private:
    static void check_cqe(const wire::Sqe& sqe, const CapsuleResult& result) {
        require(result.cqe.command_id == sqe.command_id, "a CQE carrying another command's CID");
    }

    target::TargetConfig config_;
    target::Stats stats_;
    target::CommandCore core_;
};

}  // namespace nvmeof::fuzz
