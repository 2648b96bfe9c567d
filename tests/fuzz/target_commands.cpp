// Fuzz target: nvmeof-target's whole command path on the admin and I/O queues
// of a controller that really connected (dynamic Connect, CC.EN = 1, an I/O
// queue connected to it): capsule → plan → data → execute → completion, as
// the RDMA transport drives it (target_driver.hpp).
// Input: records of [route][64-byte SQE][u16 in-capsule length + bytes]
// [u16 host data length + bytes]; route picks the admin queue, the I/O queue,
// an I/O queue never connected, or a transport event (queue lost, keep-alive
// expiry) instead of a capsule.
#include <chrono>

#include "target_driver.hpp"

namespace wire = nvmeof::wire;
namespace target = nvmeof::target;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

namespace {

constexpr std::size_t kMaxHostData = 16 * 1024;

enum class Route : std::uint8_t { admin, io, unconnected_io, transport_event };

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    nvmeof::fuzz::TargetUnderTest t;
    target::QueueState admin = nvmeof::fuzz::new_queue(0, t.config());
    const auto admin_up =
        t.connect(admin, wire::kDynamicControllerId, nvmeof::fuzz::kAdminHsqsize + 1);
    require(admin_up.answered && admin_up.cqe.status == 0, "the admin Connect failed");
    require(t.enable(admin), "CC.EN = 1 failed");
    const auto cntlid = static_cast<std::uint16_t>(admin_up.cqe.dw0);
    target::QueueState io = nvmeof::fuzz::new_queue(1, t.config());
    const auto io_up = t.connect(io, cntlid, nvmeof::fuzz::kIoHsqsize + 1);
    require(io_up.answered && io_up.cqe.status == 0, "the I/O queue Connect failed");
    target::QueueState unconnected = nvmeof::fuzz::new_queue(2, t.config());

    ByteReader in(data, size);
    while (!in.empty()) {
        const auto route = static_cast<Route>(in.take<std::uint8_t>() % 4);
        if (route == Route::transport_event) {
            switch (in.take<std::uint8_t>() % 3) {
                case 0:
                    t.core().queue_disconnected(io);
                    break;
                case 1:
                    t.core().queue_disconnected(admin);
                    break;
                default:
                    // The transport tears down the queues of an expired controller.
                    for (const std::uint16_t expired : t.core().expired_controllers(
                             target::Clock::now() + std::chrono::hours(1))) {
                        if (expired == admin.cntlid) {
                            t.core().queue_disconnected(io);
                            t.core().queue_disconnected(admin);
                        }
                    }
                    break;
            }
            continue;
        }
        target::QueueState& queue = route == Route::admin ? admin
                                    : route == Route::io  ? io
                                                          : unconnected;
        std::vector<std::uint8_t> capsule = in.take_bytes(sizeof(wire::Sqe));
        capsule.resize(sizeof(wire::Sqe), 0);
        const std::size_t in_capsule =
            std::min<std::size_t>(in.take<std::uint16_t>(), queue.in_capsule_capacity);
        const std::vector<std::uint8_t> extra = in.take_bytes(in_capsule);
        capsule.insert(capsule.end(), extra.begin(), extra.end());
        const std::vector<std::uint8_t> host_data =
            in.take_bytes(std::min<std::size_t>(in.take<std::uint16_t>(), kMaxHostData));
        (void)t.run(queue, capsule, host_data);
    }
    t.core().flush_all();
    return 0;
}
