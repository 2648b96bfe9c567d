// The snippet of issue 5: connect, write a block, read it back, check it.
//   read_write TARGET_ADDR SUBSYSTEM_NQN [PORT]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nvmeof/nvmeof.hpp"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s TARGET_ADDR SUBSYSTEM_NQN [PORT]\n", argv[0]);
        return 2;
    }
    try {
        auto ctrl = nvmeof::Controller::connect(
            {.target = argv[1],
             .subsystem_nqn = argv[2],
             .port = static_cast<std::uint16_t>(argc > 3 ? std::atoi(argv[3]) : 4420)});
        const nvmeof::Limits& limits = ctrl.limits();
        std::printf("connected to %s via %s (%s): controller %u, queue %u, MDTS %llu bytes\n",
                    limits.target_address.c_str(), limits.source_address.c_str(),
                    limits.device_name.c_str(), limits.cntlid, limits.queue_size,
                    static_cast<unsigned long long>(limits.mdts_bytes));

        auto ns = ctrl.namespace_at(1);
        auto block = ctrl.allocate(ns.lba_size());
        std::memset(block.data(), 0xA5, block.size());
        ns.write(block, /*slba=*/0, /*blocks=*/1);
        std::memset(block.data(), 0, block.size());
        ns.read(block, /*slba=*/0, /*blocks=*/1);

        // The low-level path, as in the Python package.
        auto io = ctrl.io();
        auto request = io.submit(nvmeof::wire::flush_command(ns.nsid()));
        while (!request.done()) {
            io.make_progress();
        }
        request.response().raise_for_status();

        for (std::size_t i = 0; i < block.size(); ++i) {
            if (block.data()[i] != std::byte{0xA5}) {
                std::fprintf(stderr, "data mismatch at byte %zu\n", i);
                return 1;
            }
        }
        std::printf("namespace %u: %llu blocks of %u bytes; write/read/flush OK\n", ns.nsid(),
                    static_cast<unsigned long long>(ns.size_lbas()), ns.lba_size());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
