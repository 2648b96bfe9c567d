// GPU write+read with data checked, for a GPU machine (tests/gpu/device-check.sh):
//   gpu_io_check ADDR PORT NQN [GPU]
// Prints the driver, the RDMA device ranking for the GPU, the registration path,
// then two round trips through the target, GPU memory to GPU memory:
//  1. a pattern copied in from the host, read back and compared on the host;
//  2. a pattern written by a GPU kernel, read back into other GPU memory and
//     compared by a GPU kernel (no host copy of the data at all), with a
//     negative control proving the comparison kernel sees a difference.
// The kernels are PTX that the driver compiles (cuModuleLoadData), so no CUDA
// compiler or runtime is needed. Exit 0 only when every comparison matches.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "nvmeof/gpu.hpp"
#include "nvmeof/nvmeof.hpp"

#ifdef NVMEOF_HAVE_CUDA
#include <cuda.h>

namespace {

// fill_pattern(out, words, seed): out[i] = (i * 0x9E3779B1) ^ seed.
// count_mismatches(a, b, words, count): ++*count for every i with a[i] != b[i].
constexpr const char* kPtx = R"(
.version 7.0
.target sm_52
.address_size 64

.visible .entry fill_pattern(.param .u64 p_out, .param .u32 p_words, .param .u32 p_seed)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p_out];
    ld.param.u32 %r1, [p_words];
    ld.param.u32 %r2, [p_seed];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.u32 %r6, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r6, %r1;
    @%p1 bra FILL_DONE;
    mul.lo.u32 %r7, %r6, 0x9E3779B1;
    xor.b32 %r7, %r7, %r2;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r6, 4;
    add.u64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r7;
FILL_DONE:
    ret;
}

.visible .entry count_mismatches(.param .u64 p_a, .param .u64 p_b, .param .u32 p_words, .param .u64 p_count)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [p_a];
    ld.param.u64 %rd2, [p_b];
    ld.param.u32 %r1, [p_words];
    ld.param.u64 %rd3, [p_count];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.u32 %r6, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r6, %r1;
    @%p1 bra CMP_DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r6, 4;
    add.u64 %rd8, %rd4, %rd7;
    add.u64 %rd9, %rd5, %rd7;
    ld.global.u32 %r7, [%rd8];
    ld.global.u32 %r8, [%rd9];
    setp.eq.u32 %p2, %r7, %r8;
    @%p2 bra CMP_DONE;
    atom.global.add.u32 %r9, [%rd6], 1;
CMP_DONE:
    ret;
}
)";

// The few driver entry points the kernels need, from the library libnvmeof loads.
struct KernelDriver {
    decltype(&::cuModuleLoadDataEx) module_load_data = nullptr;
    decltype(&::cuModuleGetFunction) module_get_function = nullptr;
    decltype(&::cuLaunchKernel) launch_kernel = nullptr;
    decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
    decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
    decltype(&::cuMemFree_v2) mem_free = nullptr;
    decltype(&::cuMemsetD32_v2) memset_d32 = nullptr;
    decltype(&::cuMemcpyDtoH_v2) memcpy_dtoh = nullptr;
    CUfunction fill = nullptr;
    CUfunction compare = nullptr;
};

bool load_kernels(KernelDriver& k, std::string& why) {
    const char* name = std::getenv("NVMEOF_CUDA_LIBRARY");
    void* lib = dlopen(name != nullptr && *name != '\0' ? name : "libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) {
        why = dlerror();
        return false;
    }
    auto find = [&](auto& slot, const char* symbol) {
        slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(lib, symbol));
        if (slot == nullptr && why.empty()) {
            why = std::string("driver has no ") + symbol;
        }
    };
    find(k.module_load_data, "cuModuleLoadDataEx");
    find(k.module_get_function, "cuModuleGetFunction");
    find(k.launch_kernel, "cuLaunchKernel");
    find(k.ctx_synchronize, "cuCtxSynchronize");
    find(k.mem_alloc, "cuMemAlloc_v2");
    find(k.mem_free, "cuMemFree_v2");
    find(k.memset_d32, "cuMemsetD32_v2");
    find(k.memcpy_dtoh, "cuMemcpyDtoH_v2");
    if (!why.empty()) {
        return false;
    }
    CUmodule module = nullptr;  // lives as long as the process
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
    if (CUresult r = k.module_load_data(&module, kPtx, 2, options, values); r != CUDA_SUCCESS) {
        why = "cuModuleLoadDataEx (PTX JIT) failed: " + std::to_string(r) + ": " + log;
        return false;
    }
    if (k.module_get_function(&k.fill, module, "fill_pattern") != CUDA_SUCCESS ||
        k.module_get_function(&k.compare, module, "count_mismatches") != CUDA_SUCCESS) {
        why = "cuModuleGetFunction failed";
        return false;
    }
    return true;
}

constexpr unsigned kThreadsPerBlock = 256;

CUresult launch(const KernelDriver& k, CUfunction f, unsigned words, void** args) {
    const unsigned blocks = (words + kThreadsPerBlock - 1) / kThreadsPerBlock;
    return k.launch_kernel(f, blocks, 1, 1, kThreadsPerBlock, 1, 1, 0, nullptr, args, nullptr);
}

// Words of `a` and `b` that differ, counted on the GPU; -1 on a driver error.
long long gpu_mismatches(const KernelDriver& k, CUdeviceptr a, CUdeviceptr b, unsigned words) {
    CUdeviceptr count = 0;
    if (k.mem_alloc(&count, sizeof(std::uint32_t)) != CUDA_SUCCESS) {
        return -1;
    }
    std::uint32_t host = 0;
    void* args[] = {&a, &b, &words, &count};
    const bool ok = k.memset_d32(count, 0, 1) == CUDA_SUCCESS &&
                    launch(k, k.compare, words, args) == CUDA_SUCCESS &&
                    k.ctx_synchronize() == CUDA_SUCCESS &&
                    k.memcpy_dtoh(&host, count, sizeof host) == CUDA_SUCCESS;
    k.mem_free(count);
    return ok ? static_cast<long long>(host) : -1;
}

bool gpu_fill(const KernelDriver& k, CUdeviceptr out, unsigned words, unsigned seed) {
    void* args[] = {&out, &words, &seed};
    return launch(k, k.fill, words, args) == CUDA_SUCCESS && k.ctx_synchronize() == CUDA_SUCCESS;
}

}  // namespace
#endif

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s ADDR PORT NQN [GPU]\n", argv[0]);
        return 2;
    }
    const int ordinal = argc > 4 ? std::atoi(argv[4]) : 0;
    try {
        const nvmeof::GpuDriverInfo info = nvmeof::gpu_driver_info();
        std::printf("driver: built=%d loaded=%d version=%d devices=%d library=%s %s\n", info.built,
                    info.loaded, info.version, info.devices, info.library.c_str(),
                    info.error.c_str());
        if (!info.loaded) {
            return 1;
        }
        const std::string pci = nvmeof::gpu_pci_address(ordinal);
        std::printf("GPU %d at %s\n", ordinal, pci.c_str());
        try {  // locality is reported, not required: the data test below still runs
            for (const auto& r : nvmeof::rank_rdma_devices(pci)) {
                std::printf("  rdma %-12s %-14s %-24s node %d netdevs %zu %s\n", r.device.c_str(),
                            r.pci_address.c_str(),
                            std::string(nvmeof::pcie_distance_name(r.distance)).c_str(),
                            r.numa_node, r.netdevs.size(), r.note.c_str());
            }
            std::string why;
            const std::string source = nvmeof::source_near_gpu(ordinal, &why);
            std::printf("source near GPU: '%s' (%s)\n", source.c_str(), why.c_str());
        } catch (const std::exception& e) {
            std::printf("RDMA device ranking for the GPU failed: %s\n", e.what());
        }
        nvmeof::Options options{.target = argv[1], .subsystem_nqn = argv[3]};
        options.port = static_cast<std::uint16_t>(std::atoi(argv[2]));
        auto ctrl = nvmeof::Controller::connect(options);
        auto ns = ctrl.namespace_at(1);
        const std::size_t bytes = 256 * 1024;
        const std::uint64_t blocks = bytes / ns.lba_size();
        nvmeof::GpuBuffer out = nvmeof::GpuBuffer::allocate(ordinal, bytes);
        nvmeof::GpuBuffer in = nvmeof::GpuBuffer::allocate(ordinal, bytes);
        auto mr_out = ctrl.register_gpu(out.data(), bytes);
        auto mr_in = ctrl.register_gpu(in.data(), bytes);
        std::printf("registered %zu bytes twice by %s / %s on %s\n", bytes,
                    std::string(mr_out.registration_path()).c_str(),
                    std::string(mr_in.registration_path()).c_str(),
                    ctrl.limits().device_name.c_str());
        std::vector<unsigned char> pattern(bytes), back(bytes, 0);
        for (std::size_t i = 0; i < bytes; ++i) {
            pattern[i] = static_cast<unsigned char>(i * 131 + 7);
        }
        if (out.copy_from_host(0, pattern.data(), bytes) != 0) {
            std::printf("cuMemcpyHtoD failed\n");
            return 1;
        }
        ns.write(mr_out, 0, blocks);
        ns.read(mr_in, 0, blocks);
        if (in.copy_to_host(0, back.data(), bytes) != 0) {
            std::printf("cuMemcpyDtoH failed\n");
            return 1;
        }
        const bool ok = std::memcmp(pattern.data(), back.data(), bytes) == 0;
        std::printf("GPU write+read of %zu bytes, compared on the host: %s\n", bytes,
                    ok ? "data matches" : "DATA MISMATCH");
#ifdef NVMEOF_HAVE_CUDA
        out.make_current();
        KernelDriver k;
        std::string kernel_why;
        if (!load_kernels(k, kernel_why)) {
            std::printf("GPU-side check: not run (%s)\n", kernel_why.c_str());
            return 1;
        }
        const auto words = static_cast<unsigned>(bytes / sizeof(std::uint32_t));
        const auto out_ptr = reinterpret_cast<CUdeviceptr>(out.data());
        const auto in_ptr = reinterpret_cast<CUdeviceptr>(in.data());
        constexpr unsigned kSeed = 0x5eed1234U;
        if (!gpu_fill(k, out_ptr, words, kSeed) || k.memset_d32(in_ptr, 0, words) != CUDA_SUCCESS ||
            k.ctx_synchronize() != CUDA_SUCCESS) {
            std::printf("GPU-side check: kernel launch failed\n");
            return 1;
        }
        // Another LBA range than the first round trip, so stale data cannot pass.
        ns.write(mr_out, blocks, blocks);
        ns.read(mr_in, blocks, blocks);
        const long long mismatches = gpu_mismatches(k, in_ptr, out_ptr, words);
        // Negative control: the kernel must see every word of a different pattern.
        if (!gpu_fill(k, out_ptr, words, kSeed + 1)) {
            std::printf("GPU-side check: kernel launch failed\n");
            return 1;
        }
        const long long control = gpu_mismatches(k, in_ptr, out_ptr, words);
        const bool gpu_ok = mismatches == 0 && control == words;
        std::printf(
            "GPU write+read of %zu bytes, pattern made and compared on the GPU: %lld of %u words "
            "differ "
            "(control with another pattern: %lld differ): %s\n",
            bytes, mismatches, words, control, gpu_ok ? "data matches" : "FAILED");
        return ok && gpu_ok ? 0 : 1;
#else
        return ok ? 0 : 1;
#endif
    } catch (const std::exception& e) {
        std::printf("error: %s\n", e.what());
        return 1;
    }
}
