// 4 KiB reads per second through the C++ API at QD 1, blocking
// (Namespace::read) and low level (submit, then poll until done), and at QD 32
// (the non-blocking transfer API, refilled as completions come): the
// baselines that python/bench/qd1.py and queues.py measure the Python
// binding against. Prints the three rates on one line.
//   qd1_read TARGET_ADDR SUBSYSTEM_NQN PORT SECONDS
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <stdexcept>

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
        const auto slba_of = [&](std::uint64_t n) {
            return (n * blocks) % (ns.size_lbas() - blocks + 1);
        };
        // Reads per second of `read_one` repeated for `span`.
        const auto rate = [&](auto&& read_one) {
            const auto start = std::chrono::steady_clock::now();
            std::uint64_t reads = 0;
            while (std::chrono::steady_clock::now() - start < span) {
                read_one(slba_of(reads));
                ++reads;
            }
            const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
            return static_cast<double>(reads) / took.count();
        };
        const double blocking = rate([&](std::uint64_t slba) { ns.read(block, slba, blocks); });
        auto io = ctrl.io();
        const double polled = rate([&](std::uint64_t slba) {
            auto request =
                io.submit(nvmeof::wire::rw_command(nvmeof::wire::IoOpcode::read, ns.nsid(), slba,
                                                   static_cast<std::uint32_t>(blocks),
                                                   block.remote(0, kReadBytes), ns.lba_size()),
                          &block);
            while (!request.done()) {
                io.make_progress();
            }
            request.response().raise_for_status();
        });
        constexpr std::size_t kDepth = 32;
        auto window = ctrl.allocate(kReadBytes * kDepth);
        std::uint64_t issued = 0;
        const auto submit_next = [&](std::uint64_t slot) {
            const nvmeof::Transfer t{nvmeof::Op::read, slba_of(issued++), blocks,
                                     &window,          slot * kReadBytes, slot};
            if (io.submit(ns, t) != nvmeof::SubmitResult::queued) {
                throw std::runtime_error(nvmeof::describe(io.last_error()));
            }
        };
        for (std::uint64_t slot = 0; slot < kDepth; ++slot) {
            submit_next(slot);
        }
        std::array<nvmeof::Completion, kDepth> done;
        std::uint64_t completed = 0;
        const auto start = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - start < span) {
            for (const auto& c : std::span(done.data(), io.poll(done))) {
                nvmeof::raise_for_status(c.status);
                ++completed;
                submit_next(c.user_data);
            }
        }
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        const double deep = static_cast<double>(completed) / took.count();
        while (io.in_flight() != 0) {
            io.poll(done);
        }
        std::printf("%.0f %.0f %.0f\n", blocking, polled, deep);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qd1_read: %s\n", e.what());
        return 1;
    }
}
