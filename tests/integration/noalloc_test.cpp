// Evidence that steady-state submit/poll allocates nothing: operator new and
// malloc are counted on this thread while the loop runs, split by the library
// that called them. The verbs provider is not ours (softverbs, a C++ library,
// allocates inside ibv_post_send); every other caller, libnvmeof and this
// test included, must allocate nothing.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

extern "C" void* __libc_malloc(std::size_t size);  // glibc
extern "C" void __libc_free(void* p);

namespace {
thread_local bool counting = false;
thread_local std::size_t new_calls = 0;       // from our code
thread_local std::size_t malloc_calls = 0;    // from our code
thread_local std::size_t provider_calls = 0;  // from libibverbs/librdmacm (the device)

// True when the caller is the verbs provider rather than our code.
bool from_provider(void* caller) {
    counting = false;  // dladdr must not count itself
    Dl_info info{};
    const bool provider = dladdr(caller, &info) != 0 && info.dli_fname != nullptr &&
                          (std::strstr(info.dli_fname, "libibverbs") != nullptr ||
                           std::strstr(info.dli_fname, "librdmacm") != nullptr);
    counting = true;
    return provider;
}
}  // namespace

void* operator new(std::size_t size) {
    if (counting) {
        if (from_provider(__builtin_return_address(0)))
            ++provider_calls;
        else
            ++new_calls;
    }
    if (void* p = __libc_malloc(size == 0 ? 1 : size))
        return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    return operator new(size);
}
void operator delete(void* p) noexcept {
    __libc_free(p);
}
void operator delete[](void* p) noexcept {
    __libc_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    __libc_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    __libc_free(p);
}

extern "C" void* malloc(std::size_t size) {
    if (counting) {
        if (from_provider(__builtin_return_address(0)))
            ++provider_calls;
        else
            ++malloc_calls;
    }
    return __libc_malloc(size);
}

using namespace nvmeof;

// `transfers` 4 KiB reads and writes alternating over a 64-slot arena, as
// many in flight as the queue takes, polled until all are done; `post`
// deferred: sent in batches by commit(), as the fio engine drives NVMe/TCP.
void run_transfers(IoQueue& io, const Namespace& ns, const MemoryRegion& arena, int transfers,
                   Post post = Post::now) {
    const std::uint64_t blocks = 4096 / ns.lba_size();
    Completion done[32];
    int submitted = 0, finished = 0;
    while (finished < transfers) {
        while (submitted < transfers) {
            const auto slot = static_cast<std::uint64_t>(submitted % 64);
            const Transfer t{
                submitted % 2 ? Op::read : Op::write, slot * blocks, blocks, &arena, slot * 4096,
                static_cast<std::uint64_t>(submitted)};
            if (io.submit(ns, t, post) != SubmitResult::queued)
                break;
            ++submitted;
        }
        if (post == Post::deferred) {
            io.commit();
        }
        const std::size_t n = io.poll(done);
        for (std::size_t i = 0; i < n; ++i) {
            ASSERT_TRUE(done[i].status.ok()) << describe(done[i].status);
        }
        finished += static_cast<int>(n);
    }
}

TEST(NoAllocation, SteadyStateSubmitAndPoll) {
    test::TargetProcess target({}, "ram:16M");
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto arena = ctrl.allocate(64 * 4096);
    auto io = ctrl.io();
    auto run = [&](int transfers) { run_transfers(io, ns, arena, transfers); };
    run(256);  // warm-up
    counting = true;
    run(2000);
    counting = false;
    EXPECT_EQ(new_calls, 0u);
    EXPECT_EQ(malloc_calls, 0u);
    std::printf(
        "2000 transfers: %zu operator new / %zu malloc calls from libnvmeof and the test, "
        "%zu from the verbs provider\n",
        new_calls, malloc_calls, provider_calls);
}

// Over NVMe/TCP as the fio engine drives it: transfers deferred and sent in
// batches by commit(), reads and in-capsule writes, polled until done. The
// socket, the output ring and the receive buffer are the queue's from
// connect on.
TEST(NoAllocation, SteadyStateOverTcp) {
    if (!test::TargetProcess::serves_tcp()) {
        GTEST_SKIP() << "the external target has no NVMe/TCP port (NVMEOF_TEST_TCP_TARGET)";
    }
    test::TargetProcess target({"--transport", "tcp"}, "ram:16M");
    Options o = target.options();
    o.transport = Transport::tcp;
    auto ctrl = Controller::connect(o);
    auto ns = ctrl.namespace_at(1);
    auto arena = ctrl.allocate(64 * 4096);
    auto io = ctrl.io();
    auto run = [&](int transfers) { run_transfers(io, ns, arena, transfers, Post::deferred); };
    run(256);  // warm-up
    counting = true;
    run(2000);
    counting = false;
    EXPECT_EQ(new_calls, 0u);
    EXPECT_EQ(malloc_calls, 0u);
    const TransportCounters c = io.transport_counters();
    EXPECT_GT(c.send_calls, 0u);
    EXPECT_GT(c.receive_calls, 0u);
    EXPECT_GE(c.pdus_sent, 2256u);  // every capsule counted
    std::printf(
        "2000 transfers over NVMe/TCP: %zu operator new / %zu malloc calls; %llu sendmsg, "
        "%llu recvmsg, %llu bytes copied\n",
        new_calls, malloc_calls, static_cast<unsigned long long>(c.send_calls),
        static_cast<unsigned long long>(c.receive_calls),
        static_cast<unsigned long long>(c.bytes_copied));
}

// Transfers of more pieces than the queue holds: the waiting pieces live in
// preallocated per-queue records, so queueing them in parts allocates nothing.
TEST(NoAllocation, TransfersQueuedInParts) {
    test::TargetProcess target({"--mqes", "7", "--mdts", "1"}, "ram:16M");  // 7 slots, 8 KiB pieces
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto arena = ctrl.allocate(4 * 256 * 1024);
    auto io = ctrl.io();
    const std::uint64_t blocks = 256 * 1024 / ns.lba_size();  // 32 pieces each
    Completion done[8];
    auto run = [&](int transfers) {
        int submitted = 0, finished = 0;
        while (finished < transfers) {
            while (submitted < transfers) {
                const auto slot = static_cast<std::uint64_t>(submitted % 4);
                const Transfer t{submitted % 2 ? Op::read : Op::write,
                                 slot * blocks,
                                 blocks,
                                 &arena,
                                 slot * blocks * ns.lba_size(),
                                 static_cast<std::uint64_t>(submitted)};
                if (io.submit(ns, t) != SubmitResult::queued)
                    break;
                ++submitted;
            }
            const std::size_t n = io.poll(done);
            for (std::size_t i = 0; i < n; ++i) {
                ASSERT_TRUE(done[i].status.ok()) << describe(done[i].status);
            }
            finished += static_cast<int>(n);
        }
    };
    run(16);  // warm-up
    counting = true;
    run(64);
    counting = false;
    EXPECT_EQ(new_calls, 0u);
    EXPECT_EQ(malloc_calls, 0u);
    std::printf(
        "64 transfers of 32 pieces on 7 slots: %zu operator new / %zu malloc calls from "
        "libnvmeof and the test, %zu from the verbs provider\n",
        new_calls, malloc_calls, provider_calls);
}
