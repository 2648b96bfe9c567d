// Fuzz target: the Fabrics Connect command and its 1024 bytes of Connect data
// on nvmeof-target, for the admin queue (no controller yet) and for an I/O
// queue of a live controller, delivered keyed or in-capsule as the SGL says.
// Input: [selector][64-byte SQE][1024 bytes of Connect data]; the data also
// serves as in-capsule bytes on the I/O queue.
#include "target_driver.hpp"

namespace wire = nvmeof::wire;
namespace target = nvmeof::target;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    const auto selector = in.take<std::uint8_t>();
    std::vector<std::uint8_t> capsule(sizeof(wire::Sqe));
    in.fill(capsule);
    std::vector<std::uint8_t> connect_data(wire::kConnectDataSize);
    in.fill(connect_data);

    nvmeof::fuzz::TargetUnderTest t;
    target::QueueState admin = nvmeof::fuzz::new_queue(0, t.config());
    target::QueueState* queue = &admin;
    target::QueueState io =
        nvmeof::fuzz::new_queue(static_cast<std::uint16_t>(1 + (selector >> 1) % 3), t.config());
    if ((selector & 1) != 0) {
        const auto up =
            t.connect(admin, wire::kDynamicControllerId, nvmeof::fuzz::kAdminHsqsize + 1);
        require(up.answered && up.cqe.status == 0, "the admin Connect failed");
        require(t.enable(admin), "CC.EN = 1 failed");
        queue = &io;
        // In-capsule Connect data on an I/O queue (the admin queue takes none).
        if ((selector & 0x80) != 0) {
            capsule.insert(capsule.end(), connect_data.begin(), connect_data.end());
        }
    }
    const auto result = t.run(*queue, capsule, connect_data);
    if (result.answered && result.cqe.status == 0 && queue->connected) {
        require(t.core().controller_exists(queue->cntlid),
                "a connected queue without its controller");
    }
    // The new controller's queues answer or refuse, never crash.
    const auto second = t.run(*queue, capsule, connect_data);
    (void)second;
    return 0;
}
