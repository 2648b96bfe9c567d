// register_gpu and the GPU ordering calls against nvmeof-target over softverbs,
// with the fake CUDA driver (fake_cuda.cpp) standing in for a GPU: its "device
// memory" is host memory, so the data can be checked, and the ordering calls
// are observed twice: through a recording GpuOrdering the test injects, and
// through the fake driver's log for the default CUDA ordering.
// Without the fake (NVMEOF_CUDA_LIBRARY unset or pointing nowhere) only the
// "no driver" / "built without CUDA" tests run.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "nvmeof/gpu.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;

namespace {

bool fake_driver() {
    const char* lib = std::getenv("NVMEOF_CUDA_LIBRARY");
    return lib != nullptr && std::strstr(lib, "fake_cuda") != nullptr;
}

#define REQUIRE_FAKE() \
    if (!fake_driver()) GTEST_SKIP() << "needs the fake CUDA driver (NVMEOF_CUDA_LIBRARY)"

// The fake driver's own entry points, from the very library libnvmeof loaded.
struct Fake {
    void* handle = dlopen(std::getenv("NVMEOF_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    template <typename F>
    F get(const char* name) {
        F f = nullptr;
        void* p = handle != nullptr ? dlsym(handle, name) : nullptr;
        std::memcpy(&f, &p, sizeof f);
        return f;
    }
    std::string log() { return get<const char* (*)()>("fake_cuda_log")(); }
    void clear() { get<void (*)()>("fake_cuda_clear_log")(); }
    void set_current(void* context) { get<int (*)(void*)>("cuCtxSetCurrent")(context); }
};

// Records the ordering calls, and what the target could see at each.
struct Recorder : GpuOrdering {
    std::vector<std::string> calls;
    std::byte* buffer = nullptr;
    std::size_t bytes = 0;
    std::byte fill_on_write{0};      // "the kernel finishing": written during before_write
    std::vector<std::byte> expected_on_read;  // the target's data must be there at after_read
    int read_data_ok = -1;
    int fail_after_read = 0;
    int before_write() noexcept override {
        calls.push_back("before_write");
        if (fill_on_write != std::byte{0}) {
            std::memset(buffer, static_cast<int>(fill_on_write), bytes);
        }
        return 0;
    }
    int after_read() noexcept override {
        calls.push_back("after_read");
        if (!expected_on_read.empty()) {
            read_data_ok = std::memcmp(buffer, expected_on_read.data(), expected_on_read.size()) == 0;
        }
        return fail_after_read;
    }
};

TEST(GpuRegister, WithoutADriverSaysSo) {
    if (fake_driver()) GTEST_SKIP() << "runs without the fake driver";
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    std::vector<std::byte> host(4096);
    try {
        ctrl.register_gpu(host.data(), host.size());
        FAIL() << "register_gpu succeeded without a driver";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_TRUE(m.find("no CUDA driver") != std::string::npos ||
                    m.find("built without CUDA support") != std::string::npos) << m;
    }
}

TEST(GpuRegister, FallsBackToPeermemAndReportsThePath) {
    REQUIRE_FAKE();
    const GpuDriverInfo info = gpu_driver_info();
    ASSERT_TRUE(info.loaded) << info.error;
    EXPECT_EQ(info.version, 12080);
    EXPECT_EQ(gpu_pci_address(0), "0000:17:00.0");
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    GpuBuffer gpu = GpuBuffer::allocate(0, 1 << 20);
    auto* p = static_cast<std::byte*>(gpu.data()) + 4096;
    MemoryRegion mr = ctrl.register_gpu(p, 8192);
    EXPECT_EQ(mr.kind(), MemoryKind::gpu);
    EXPECT_EQ(mr.device_ordinal(), 0);
    // softverbs refuses dma-buf, so the peermem path (ibv_reg_mr on the pointer) is taken.
    EXPECT_EQ(mr.registration_path(), "peermem");
    EXPECT_EQ(mr.data(), p);
    EXPECT_EQ(mr.size(), 8192u);
    MemoryRegion host = ctrl.allocate(4096);
    EXPECT_EQ(host.kind(), MemoryKind::host);
    EXPECT_EQ(host.registration_path(), "host");
    EXPECT_EQ(host.device_ordinal(), -1);
}

TEST(GpuRegister, RefusesHostMemoryRangesPastTheAllocationAndAForeignContext) {
    REQUIRE_FAKE();
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    std::vector<std::byte> host(4096);
    try {
        ctrl.register_gpu(host.data(), host.size());
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not CUDA device memory"), std::string::npos) << e.what();
    }
    GpuBuffer gpu = GpuBuffer::allocate(0, 65536);
    EXPECT_THROW(ctrl.register_gpu(gpu.data(), 65536 * 2), InvalidArgument);
    Fake fake;
    fake.set_current(nullptr);
    try {
        ctrl.register_gpu(gpu.data(), 4096);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is not current on this thread"), std::string::npos) << e.what();
    }
    gpu.make_current();
    EXPECT_NO_THROW(ctrl.register_gpu(gpu.data(), 4096));
}

TEST(GpuOrdering, BlockingWriteSynchronisesBeforePostingAndReadFlushesBeforeReturning) {
    REQUIRE_FAKE();
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    GpuBuffer gpu = GpuBuffer::allocate(0, 1 << 20);
    const std::size_t bytes = 16 * ns.lba_size();
    auto recorder = std::make_shared<Recorder>();
    recorder->buffer = static_cast<std::byte*>(gpu.data());
    recorder->bytes = bytes;
    MemoryRegion mr = ctrl.register_gpu(gpu.data(), bytes, recorder);

    // The buffer only holds 0x5a once before_write ran: the target must see 0x5a.
    recorder->fill_on_write = std::byte{0x5a};
    ns.write(mr, 0, 16);
    ASSERT_EQ(recorder->calls, std::vector<std::string>{"before_write"});
    MemoryRegion check = ctrl.allocate(bytes);
    ns.read(check, 0, 16);
    EXPECT_EQ(recorder->calls.size(), 1u) << "host-memory I/O must not call the GPU ordering";
    EXPECT_EQ(check.data()[0], std::byte{0x5a});
    EXPECT_EQ(check.data()[bytes - 1], std::byte{0x5a});

    // Read into "GPU" memory: the data is there when after_read runs, and
    // after_read runs before read() returns.
    recorder->fill_on_write = std::byte{0};
    std::memset(check.data(), 0xc3, bytes);
    ns.write(check, 0, 16);
    std::memset(gpu.data(), 0, bytes);
    recorder->expected_on_read.assign(bytes, std::byte{0xc3});
    recorder->calls.clear();
    ns.read(mr, 0, 16);
    EXPECT_EQ(recorder->calls, std::vector<std::string>{"after_read"});
    EXPECT_EQ(recorder->read_data_ok, 1);

    // A failing flush fails the read.
    recorder->fail_after_read = 700;
    EXPECT_THROW(ns.read(mr, 0, 16), TransportError);
}

TEST(GpuOrdering, PollFlushesOncePerBatchBeforeHandingReadsBack) {
    REQUIRE_FAKE();
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    auto q = ctrl.io(0);
    GpuBuffer gpu = GpuBuffer::allocate(0, 1 << 20);
    const std::size_t block = ns.lba_size();
    auto recorder = std::make_shared<Recorder>();
    MemoryRegion mr = ctrl.register_gpu(gpu.data(), 8 * block, recorder);
    for (std::uint64_t i = 0; i < 4; ++i) {
        ASSERT_EQ(q.submit(ns, Transfer{.op = Op::read, .slba = i, .blocks = 1, .memory = &mr,
                                        .offset = i * block, .user_data = i},
                           Post::deferred),
                  SubmitResult::queued);
    }
    EXPECT_TRUE(recorder->calls.empty()) << "reads need nothing before posting";
    q.commit();
    std::vector<Completion> out(8);
    std::size_t got = 0;
    std::size_t flushes_before = 0;
    while (got < 4) {
        const std::size_t n = q.poll(std::span(out).subspan(0, 4 - got));
        if (n != 0) {
            // Every batch handed back was flushed first, once.
            EXPECT_EQ(recorder->calls.size(), flushes_before + 1);
            flushes_before = recorder->calls.size();
        }
        for (std::size_t i = 0; i < n; ++i) {
            EXPECT_TRUE(out[i].status.ok()) << describe(out[i].status);
        }
        got += n;
    }
    // Writes: before_write at submit, before the (deferred) post.
    recorder->calls.clear();
    ASSERT_EQ(q.submit(ns, Transfer{.op = Op::write, .slba = 0, .blocks = 2, .memory = &mr}, Post::deferred),
              SubmitResult::queued);
    EXPECT_EQ(recorder->calls, std::vector<std::string>{"before_write"});
    EXPECT_EQ(q.deferred(), 1u);
    q.commit();
    while (q.poll(out) == 0) {
    }
    EXPECT_EQ(recorder->calls.size(), 1u) << "writes need nothing after completion";
}

TEST(GpuOrdering, DefaultCudaOrderingCallsTheDriver) {
    REQUIRE_FAKE();
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    GpuBuffer gpu = GpuBuffer::allocate(0, 1 << 20);
    MemoryRegion mr = ctrl.register_gpu(gpu.data(), 4 * ns.lba_size());
    Fake fake;
    fake.clear();
    ns.write(mr, 0, 4);
    EXPECT_EQ(fake.log(), "cuCtxSynchronize\n");
    fake.clear();
    ns.read(mr, 0, 4);
    // TARGET_CURRENT_CTX (0), TO_OWNER (100).
    EXPECT_EQ(fake.log(), "cuFlushGPUDirectRDMAWrites(0,100)\n");
    // Another thread's context current: the owner is pushed around the call.
    fake.set_current(nullptr);
    fake.clear();
    ns.read(mr, 0, 4);
    EXPECT_EQ(fake.log(), "cuCtxPushCurrent\ncuFlushGPUDirectRDMAWrites(0,100)\ncuCtxPopCurrent\n");
    gpu.make_current();
    fake.clear();
    MemoryRegion host = ctrl.allocate(4 * ns.lba_size());
    ns.write(host, 0, 4);
    ns.read(host, 0, 4);
    EXPECT_EQ(fake.log(), "") << "host-memory I/O must not touch CUDA";
}

}  // namespace
