// QD1 4 KiB reads per second through the C++ API: the baseline that
// python/bench/qd1.py measures the Python binding's overhead against.
//   qd1_read TARGET_ADDR SUBSYSTEM_NQN PORT SECONDS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "nvmeof/nvmeof.hpp"

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s TARGET_ADDR SUBSYSTEM_NQN PORT SECONDS\n", argv[0]);
        return 2;
    }
    constexpr std::size_t kReadBytes = 4096;
    try {
        auto ctrl =
            nvmeof::Controller::connect({.target = argv[1],
                                         .subsystem_nqn = argv[2],
                                         .port = static_cast<std::uint16_t>(std::atoi(argv[3])),
                                         .random_host_id = true});
        auto ns = ctrl.namespace_at(1);
        auto block = ctrl.allocate(kReadBytes);
        const std::uint64_t blocks = kReadBytes / ns.lba_size();
        const auto span = std::chrono::duration<double>(std::atof(argv[4]));
        const auto start = std::chrono::steady_clock::now();
        std::uint64_t reads = 0;
        while (std::chrono::steady_clock::now() - start < span) {
            ns.read(block, (reads * blocks) % (ns.size_lbas() - blocks + 1), blocks);
            ++reads;
        }
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        std::printf("%.0f\n", static_cast<double>(reads) / took.count());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qd1_read: %s\n", e.what());
        return 1;
    }
}
