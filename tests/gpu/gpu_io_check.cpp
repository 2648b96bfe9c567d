// GPU write+read with data checked, for a GPU machine (tests/gpu/device-check.sh):
//   gpu_io_check ADDR PORT NQN [GPU]
// Prints the driver, the RDMA device ranking for the GPU, the registration path,
// then writes a pattern from GPU memory, reads it back into other GPU memory and
// compares on the host. Exit 0 only when the data matches.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nvmeof/nvmeof.hpp"
#include "nvmeof/gpu.hpp"

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s ADDR PORT NQN [GPU]\n", argv[0]);
        return 2;
    }
    const int ordinal = argc > 4 ? std::atoi(argv[4]) : 0;
    try {
        const nvmeof::GpuDriverInfo info = nvmeof::gpu_driver_info();
        std::printf("driver: built=%d loaded=%d version=%d devices=%d library=%s %s\n", info.built,
                    info.loaded, info.version, info.devices, info.library.c_str(), info.error.c_str());
        if (!info.loaded) {
            return 1;
        }
        const std::string pci = nvmeof::gpu_pci_address(ordinal);
        std::printf("GPU %d at %s\n", ordinal, pci.c_str());
        for (const auto& r : nvmeof::rank_rdma_devices(pci)) {
            std::printf("  rdma %-12s %-14s %-24s node %d netdevs %zu %s\n", r.device.c_str(),
                        r.pci_address.c_str(), std::string(nvmeof::pcie_distance_name(r.distance)).c_str(),
                        r.numa_node, r.netdevs.size(), r.note.c_str());
        }
        std::string why;
        const std::string source = nvmeof::source_near_gpu(ordinal, &why);
        std::printf("source near GPU: '%s' (%s)\n", source.c_str(), why.c_str());

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
                    std::string(mr_in.registration_path()).c_str(), ctrl.limits().device_name.c_str());
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
        std::printf("GPU write+read of %zu bytes: %s\n", bytes, ok ? "data matches" : "DATA MISMATCH");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::printf("error: %s\n", e.what());
        return 1;
    }
}
