// register_gpu and the GPU ordering calls against nvmeof-target over softverbs,
// with the fake CUDA driver (fake_cuda.cpp) standing in for a GPU: its "device
// memory" is host memory, so the data can be checked, and the ordering calls
// are observed twice: through a recording GpuOrdering the test injects, and
// through the fake driver's log for the default CUDA ordering.
// Without the fake (NVMEOF_CUDA_LIBRARY unset or pointing nowhere) only the
// "no driver" / "built without CUDA" tests run.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "nvmeof/gpu.hpp"
#include "nvmeof/nvmeof.hpp"
#include "target_process.hpp"

using namespace nvmeof;
using nvmeof::test::TargetProcess;

namespace {

bool fake_driver() {
    const char* lib = std::getenv("NVMEOF_CUDA_LIBRARY");
    return lib != nullptr && std::strstr(lib, "fake_cuda") != nullptr;
}

#define REQUIRE_FAKE()  \
    if (!fake_driver()) \
    GTEST_SKIP() << "needs the fake CUDA driver (NVMEOF_CUDA_LIBRARY)"

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
    // Whether the fake still knows the device address (cuPointerGetAttribute succeeds).
    bool knows(const void* device_ptr) {
        unsigned int type = 0;
        return get<int (*)(void*, int, unsigned long long)>("cuPointerGetAttribute")(
                   &type, kPointerAttributeMemoryType,
                   static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(device_ptr))) ==
               0;
    }
    static constexpr int kPointerAttributeMemoryType =
        2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE (no cuda.h here)
};

// Sets an environment variable (nullptr: unsets it) for one scope; the fake
// driver and libnvmeof read theirs at call time.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name); old != nullptr) {
            old_ = old;
        }
        if (value != nullptr) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }
    ~ScopedEnv() {
        if (old_) {
            setenv(name_, old_->c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
    std::optional<std::string> old_;
};

// Whether each of `calls` is in `log`, each after the one before.
bool logged_in_order(const std::string& log, const std::vector<std::string>& calls) {
    std::size_t at = 0;
    for (const std::string& call : calls) {
        at = log.find(call, at);
        if (at == std::string::npos) {
            return false;
        }
        at += call.size();
    }
    return true;
}

// Records the ordering calls, and what the target could see at each.
struct Recorder : GpuOrdering {
    std::vector<std::string> calls;
    std::byte* buffer = nullptr;
    std::size_t bytes = 0;
    std::byte fill_on_write{0};               // "the kernel finishing": written during before_write
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
            read_data_ok =
                std::memcmp(buffer, expected_on_read.data(), expected_on_read.size()) == 0;
        }
        return fail_after_read;
    }
};

TEST(GpuRegister, WithoutADriverSaysSo) {
    if (fake_driver())
        GTEST_SKIP() << "runs without the fake driver";
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    std::vector<std::byte> host(4096);
    try {
        ctrl.register_gpu(host.data(), host.size());
        FAIL() << "register_gpu succeeded without a driver";
    } catch (const Error& e) {
        const std::string m = e.what();
#ifdef NVMEOF_TEST_HAVE_CUDA
        EXPECT_NE(m.find("no CUDA driver"), std::string::npos) << m;
#else
        EXPECT_NE(m.find("built without CUDA support"), std::string::npos) << m;
#endif
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
        EXPECT_NE(std::string(e.what()).find("not CUDA device memory"), std::string::npos)
            << e.what();
    }
    GpuBuffer gpu = GpuBuffer::allocate(0, 65536);
    EXPECT_THROW(ctrl.register_gpu(gpu.data(), 65536 * 2), InvalidArgument);
    Fake fake;
    fake.set_current(nullptr);
    try {
        ctrl.register_gpu(gpu.data(), 4096);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is not current on this thread"), std::string::npos)
            << e.what();
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
        ASSERT_EQ(q.submit(ns,
                           Transfer{.op = Op::read,
                                    .slba = i,
                                    .blocks = 1,
                                    .memory = &mr,
                                    .offset = i * block,
                                    .user_data = i},
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
    ASSERT_EQ(q.submit(ns, Transfer{.op = Op::write, .slba = 0, .blocks = 2, .memory = &mr},
                       Post::deferred),
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
    // The log counts the library's driver calls alone: an in-capsule SEND would
    // have softverbs (the NIC here) copy the GPU data on this thread, logged too.
    Options options = target.options();
    options.in_capsule_writes = false;
    auto ctrl = Controller::connect(options);
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

// --- GPU memory over NVMe/TCP: the bytes go through the region's host copy ---

Options tcp_options(const TargetProcess& target) {
    Options options = target.options();
    options.transport = Transport::tcp;
    return options;
}

std::vector<std::byte> pattern_of(std::size_t bytes, unsigned seed) {
    std::vector<std::byte> out(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        out[i] = static_cast<std::byte>((i * 13 + seed) & 0xff);
    }
    return out;
}

// Opaque device addresses (a CPU access faults): data crosses only if the
// library copies it through the driver, device → host copy before a write
// leaves, host copy → device before a read returns.
TEST(GpuStaging, BlockingWriteAndReadGoThroughTheHostCopyOverTcp) {
    REQUIRE_FAKE();
    ScopedEnv opaque("FAKE_CUDA_OPAQUE", "1");
    TargetProcess target({"--transport", "tcp"});
    auto ctrl = Controller::connect(tcp_options(target));
    auto ns = ctrl.namespace_at(1);
    constexpr std::uint64_t kBlocks = 16;
    const std::size_t bytes = kBlocks * ns.lba_size();
    GpuBuffer gpu = GpuBuffer::allocate(0, bytes);
    Fake fake;
    fake.clear();
    MemoryRegion mr = ctrl.register_gpu(gpu.data(), bytes);
    EXPECT_EQ(mr.registration_path(), "staging");
    EXPECT_EQ(mr.kind(), MemoryKind::gpu);
    EXPECT_EQ(mr.data(), gpu.data()) << "data() stays the device address";
    EXPECT_NE(fake.log().find("cuMemHostRegister"), std::string::npos) << "the copy is page-locked";

    const std::vector<std::byte> pattern = pattern_of(bytes, 1);
    ASSERT_EQ(gpu.copy_from_host(0, pattern.data(), bytes), 0);
    fake.clear();
    ns.write(mr, 0, kBlocks);
    EXPECT_TRUE(logged_in_order(fake.log(), {"cuCtxSynchronize", "cuMemcpyDtoH"})) << fake.log();
    MemoryRegion check = ctrl.allocate(bytes);
    ns.read(check, 0, kBlocks);
    EXPECT_EQ(std::memcmp(check.data(), pattern.data(), bytes), 0) << "GPU → target";

    // Part of the region, at an offset: only that range moves.
    const std::vector<std::byte> other = pattern_of(bytes, 7);
    std::memcpy(check.data(), other.data(), bytes);
    ns.write(check, 0, kBlocks);
    fake.clear();
    ns.read(mr, 4, 8, 4 * ns.lba_size());
    EXPECT_EQ(fake.log(), "cuMemcpyHtoD\n");
    std::vector<std::byte> back(bytes);
    ASSERT_EQ(gpu.copy_to_host(0, back.data(), bytes), 0);
    const std::size_t lba = ns.lba_size();
    EXPECT_EQ(std::memcmp(back.data(), pattern.data(), 4 * lba), 0) << "before the range";
    EXPECT_EQ(std::memcmp(back.data() + 4 * lba, other.data() + 4 * lba, 8 * lba), 0)
        << "target → GPU";
    EXPECT_EQ(std::memcmp(back.data() + 12 * lba, pattern.data() + 12 * lba, 4 * lba), 0)
        << "after the range";

    // From a thread where the owner's context is not current: pushed around the copy.
    fake.set_current(nullptr);
    fake.clear();
    ns.read(mr, 0, 4);
    EXPECT_EQ(fake.log(), "cuCtxPushCurrent\ncuMemcpyHtoD\ncuCtxPopCurrent\n");
    gpu.make_current();

    // A low-level command cannot name it: the transport would move the bytes
    // at the device address.
    const wire::Sqe read_command =
        wire::rw_command(wire::IoOpcode::read, ns.nsid(), 0, 1, mr.remote(0, lba), ns.lba_size());
    try {
        ctrl.io(0).submit(read_command, &mr);
        FAIL() << "a low-level command named staged GPU memory";
    } catch (const InvalidArgument& error) {
        EXPECT_NE(std::string(error.what()).find("NVMe/TCP reaches only through the host copy"),
                  std::string::npos)
            << error.what();
    }
    mr.reset();
    EXPECT_NE(fake.log().find("cuMemHostUnregister"), std::string::npos);
}

// Reads handed back by poll: each one's range copied to the device before it
// is handed back, nothing flushed (the copy orders it), nothing else touched.
TEST(GpuStaging, PollCopiesEachReadBeforeHandingItBack) {
    REQUIRE_FAKE();
    ScopedEnv opaque("FAKE_CUDA_OPAQUE", "1");
    TargetProcess target({"--transport", "tcp"}, "ram:1M");
    auto ctrl = Controller::connect(tcp_options(target));
    auto ns = ctrl.namespace_at(1);
    auto q = ctrl.io(0);
    const std::size_t block = ns.lba_size();
    constexpr std::uint64_t kReads = 6;
    GpuBuffer gpu = GpuBuffer::allocate(0, (kReads + 1) * block);
    MemoryRegion mr = ctrl.register_gpu(gpu.data(), (kReads + 1) * block);
    const std::vector<std::byte> pattern = pattern_of(kReads * block, 3);
    MemoryRegion host = ctrl.allocate(kReads * block);
    std::memcpy(host.data(), pattern.data(), pattern.size());
    ns.write(host, 0, kReads);
    const std::vector<std::byte> marker(block, std::byte{0xee});
    ASSERT_EQ(gpu.copy_from_host(kReads * block, marker.data(), block), 0);

    Fake fake;
    fake.clear();
    // Block i lands at offset (kReads - 1 - i): reversed, so a wrong range shows.
    for (std::uint64_t i = 0; i < kReads; ++i) {
        ASSERT_EQ(q.submit(ns,
                           Transfer{.op = Op::read,
                                    .slba = i,
                                    .blocks = 1,
                                    .memory = &mr,
                                    .offset = (kReads - 1 - i) * block,
                                    .user_data = i},
                           Post::deferred),
                  SubmitResult::queued);
    }
    q.commit();
    std::vector<Completion> out(8);
    std::size_t got = 0;
    std::size_t copies_before = 0;
    while (got < kReads) {
        const std::size_t n = q.poll(out);
        const std::string log = fake.log();
        std::size_t copies = 0;
        for (std::size_t at = log.find("cuMemcpyHtoD"); at != std::string::npos;
             at = log.find("cuMemcpyHtoD", at + 1)) {
            ++copies;
        }
        EXPECT_EQ(copies, copies_before + n) << "one copy per read handed back";
        copies_before = copies;
        for (std::size_t i = 0; i < n; ++i) {
            EXPECT_TRUE(out[i].status.ok()) << describe(out[i].status);
        }
        got += n;
    }
    EXPECT_EQ(fake.log().find("cuFlushGPUDirectRDMAWrites"), std::string::npos);
    std::vector<std::byte> back((kReads + 1) * block);
    ASSERT_EQ(gpu.copy_to_host(0, back.data(), back.size()), 0);
    for (std::uint64_t i = 0; i < kReads; ++i) {
        EXPECT_EQ(
            std::memcmp(back.data() + (kReads - 1 - i) * block, pattern.data() + i * block, block),
            0)
            << "block " << i;
    }
    EXPECT_EQ(std::memcmp(back.data() + kReads * block, marker.data(), block), 0);
}

// --- GpuBuffer's VMM allocator (FAKE_CUDA_VMM=1: the device supports it) ---

constexpr std::size_t kGranularity = std::size_t{2}
                                     << 20;  // the fake's cuMemGetAllocationGranularity

TEST(GpuBufferVmm, ChosenWhereTheDeviceSupportsGpuDirectRdmaOnVmm) {
    REQUIRE_FAKE();
    ScopedEnv allocator("NVMEOF_GPU_ALLOCATOR", nullptr);
    Fake fake;
    {
        ScopedEnv vmm("FAKE_CUDA_VMM", nullptr);
        GpuBuffer plain = GpuBuffer::allocate(0, 1 << 20);
        EXPECT_EQ(plain.allocator(), "cuMemAlloc") << "the device does not report VMM support";
    }
    ScopedEnv vmm("FAKE_CUDA_VMM", "1");
    fake.clear();
    // Not a multiple of the granularity: rounded up for the mapping, not for size().
    const std::size_t bytes = kGranularity + 4096 + 3;
    GpuBuffer gpu = GpuBuffer::allocate(0, bytes);
    EXPECT_EQ(gpu.allocator(), "vmm");
    EXPECT_EQ(gpu.size(), bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(gpu.data()) % kGranularity, 0u);
    const std::string log = fake.log();
    EXPECT_TRUE(logged_in_order(
        log, {"cuMemGetAllocationGranularity", "cuMemCreate(gpuDirectRDMACapable=1)",
              "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess(3)", "cuMemRelease"}))
        << log;
    EXPECT_EQ(log.find("cuMemUnmap"), std::string::npos) << log;
    // The whole size() is mapped: the last byte round-trips through the driver.
    const std::byte last{0x7e};
    ASSERT_EQ(gpu.copy_from_host(bytes - 1, &last, 1), 0);
    std::byte back{0};
    ASSERT_EQ(gpu.copy_to_host(bytes - 1, &back, 1), 0);
    EXPECT_EQ(back, last);

    ScopedEnv forced("NVMEOF_GPU_ALLOCATOR", "cuMemAlloc");
    fake.clear();
    GpuBuffer forced_plain = GpuBuffer::allocate(0, 1 << 20);
    EXPECT_EQ(forced_plain.allocator(), "cuMemAlloc");
    EXPECT_EQ(fake.log().find("cuMemCreate"), std::string::npos) << fake.log();
}

TEST(GpuBufferVmm, ForcedOnADeviceWithoutSupportSaysWhichAttributeIsMissing) {
    REQUIRE_FAKE();
    ScopedEnv vmm("FAKE_CUDA_VMM", nullptr);
    {
        ScopedEnv forced("NVMEOF_GPU_ALLOCATOR", "vmm");
        Fake fake;
        fake.clear();
        try {
            GpuBuffer::allocate(0, 1 << 20);
            FAIL() << "allocated VMM memory on a device without VMM support";
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find("NVMEOF_GPU_ALLOCATOR=vmm"), std::string::npos) << m;
            EXPECT_NE(m.find("CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"),
                      std::string::npos)
                << m;
        }
        EXPECT_EQ(fake.log().find("cuMemCreate"), std::string::npos) << fake.log();
    }
    ScopedEnv bogus("NVMEOF_GPU_ALLOCATOR", "cudaMalloc");
    EXPECT_THROW(GpuBuffer::allocate(0, 1 << 20), InvalidArgument);
}

TEST(GpuBufferVmm, ResetUnmapsAndFreesTheRangeOnceWhateverWasMoved) {
    REQUIRE_FAKE();
    ScopedEnv vmm("FAKE_CUDA_VMM", "1");
    ScopedEnv allocator("NVMEOF_GPU_ALLOCATOR", nullptr);
    Fake fake;
    GpuBuffer gpu = GpuBuffer::allocate(0, 1 << 20);
    void* const address = gpu.data();
    ASSERT_TRUE(fake.knows(address));
    GpuBuffer moved(std::move(gpu));
    GpuBuffer assigned;
    assigned = std::move(moved);
    EXPECT_EQ(gpu.allocator(), "");
    EXPECT_EQ(moved.allocator(), "");
    EXPECT_EQ(assigned.allocator(), "vmm");
    EXPECT_EQ(assigned.data(), address);
    fake.clear();
    gpu.reset();
    moved.reset();
    EXPECT_EQ(fake.log(), "") << "a moved-from buffer owns nothing";
    assigned.reset();
    // The handle was released at allocation: unmapping frees the memory.
    EXPECT_EQ(fake.log(), "cuMemUnmap\ncuMemAddressFree\n");
    EXPECT_EQ(assigned.data(), nullptr);
    EXPECT_EQ(assigned.allocator(), "");
    EXPECT_FALSE(fake.knows(address));
    // Assigning over a VMM buffer frees it too.
    GpuBuffer first = GpuBuffer::allocate(0, 1 << 20);
    fake.clear();
    first = GpuBuffer::allocate(0, 1 << 20);
    EXPECT_TRUE(logged_in_order(fake.log(), {"cuMemCreate", "cuMemUnmap", "cuMemAddressFree"}))
        << fake.log();
}

TEST(GpuBufferVmm, AFailedStepUndoesTheStepsBeforeIt) {
    REQUIRE_FAKE();
    ScopedEnv vmm("FAKE_CUDA_VMM", "1");
    ScopedEnv allocator("NVMEOF_GPU_ALLOCATOR", nullptr);
    Fake fake;
    struct Case {
        const char* failing;
        std::vector<std::string> undone;  // logged after the failure, in this order
    };
    const Case cases[] = {
        {"cuMemCreate", {}},
        {"cuMemAddressReserve", {"cuMemRelease"}},
        {"cuMemMap", {"cuMemAddressFree", "cuMemRelease"}},
        {"cuMemSetAccess", {"cuMemUnmap", "cuMemAddressFree", "cuMemRelease"}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.failing);
        ScopedEnv fail("FAKE_CUDA_VMM_FAIL", c.failing);
        fake.clear();
        try {
            GpuBuffer::allocate(0, 1 << 20);
            ADD_FAILURE() << "allocated although " << c.failing << " failed";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(c.failing) + " of"), std::string::npos)
                << e.what();
        }
        const std::string log = fake.log();
        std::vector<std::string> undone;
        for (const char* step : {"cuMemUnmap", "cuMemAddressFree", "cuMemRelease"}) {
            if (log.find(step) != std::string::npos) {
                undone.emplace_back(step);
            }
        }
        EXPECT_EQ(undone, c.undone) << log;
        EXPECT_TRUE(logged_in_order(log, c.undone)) << log;
    }
    // Nothing was left behind that stops the next allocation.
    GpuBuffer gpu = GpuBuffer::allocate(0, 1 << 20);
    EXPECT_EQ(gpu.allocator(), "vmm");
}

// VMM memory registers by either path, and data written from it and read into
// it crosses the target intact. The device addresses are opaque (a CPU access
// would fault), so the data moves only through the driver.
TEST(GpuBufferVmm, RegistersByDmaBufAndPeermemAndRoundTripsData) {
    REQUIRE_FAKE();
    ScopedEnv vmm("FAKE_CUDA_VMM", "1");
    ScopedEnv opaque("FAKE_CUDA_OPAQUE", "1");
    ScopedEnv allocator("NVMEOF_GPU_ALLOCATOR", nullptr);
    TargetProcess target;
    auto ctrl = Controller::connect(target.options());
    auto ns = ctrl.namespace_at(1);
    constexpr std::uint64_t kBlocks = 16;
    const std::size_t bytes = kBlocks * ns.lba_size();
    std::uint64_t slba = 0;
    for (const char* path : {"dma-buf", "peermem"}) {
        SCOPED_TRACE(path);
        const bool dmabuf = std::strcmp(path, "dma-buf") == 0;
        ScopedEnv export_dmabuf("FAKE_CUDA_DMABUF", dmabuf ? "1" : nullptr);
        ScopedEnv only("NVMEOF_GPU_REGISTRATION", path);
        GpuBuffer gpu = GpuBuffer::allocate(0, bytes);
        ASSERT_EQ(gpu.allocator(), "vmm");
        MemoryRegion mr = ctrl.register_gpu(gpu.data(), bytes);
        EXPECT_EQ(mr.registration_path(), path);

        std::vector<std::byte> pattern(bytes);
        for (std::size_t i = 0; i < bytes; ++i) {
            pattern[i] = static_cast<std::byte>((i * 7 + slba) & 0xff);
        }
        ASSERT_EQ(gpu.copy_from_host(0, pattern.data(), bytes), 0);
        ns.write(mr, slba, kBlocks);
        MemoryRegion check = ctrl.allocate(bytes);
        ns.read(check, slba, kBlocks);
        EXPECT_EQ(std::memcmp(check.data(), pattern.data(), bytes), 0) << "GPU → target";

        const std::vector<std::byte> zeros(bytes);
        ASSERT_EQ(gpu.copy_from_host(0, zeros.data(), bytes), 0);
        ns.read(mr, slba, kBlocks);
        std::vector<std::byte> back(bytes);
        ASSERT_EQ(gpu.copy_to_host(0, back.data(), bytes), 0);
        EXPECT_EQ(back, pattern) << "target → GPU";
        slba += kBlocks;
    }
}

}  // namespace
