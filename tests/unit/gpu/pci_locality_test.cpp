// RDMA device ranking by PCIe locality, on fake sysfs trees built in a temp dir:
// devices/pci<root>/<bridges>/<function> directories, bus/pci/devices and
// class/infiniband/<dev>/device symlinks, numa_node files, device/net/<if>.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "gpu/gpu_internal.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/gpu.hpp"

namespace fs = std::filesystem;
using namespace nvmeof;

namespace {

class FakeSysfs : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("nvmeof-sysfs-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_ / "bus/pci/devices");
        fs::create_directories(root_ / "class/infiniband");
    }
    void TearDown() override { fs::remove_all(root_); }

    // A PCI function at devices/<path> (path like "pci0000:00/0000:00:01.0/0000:01:00.0").
    fs::path pci(const std::string& path, int numa_node = 0) {
        const fs::path dir = root_ / "devices" / path;
        fs::create_directories(dir);
        std::ofstream(dir / "numa_node") << numa_node << "\n";
        fs::create_directory_symlink(dir, root_ / "bus/pci/devices" / dir.filename());
        return dir;
    }
    void rdma(const std::string& name, const fs::path& device, const std::string& netdev = "") {
        fs::create_directories(root_ / "class/infiniband" / name);
        fs::create_directory_symlink(device, root_ / "class/infiniband" / name / "device");
        if (!netdev.empty()) {
            fs::create_directories(device / "net" / netdev);
        }
    }
    std::vector<RdmaDeviceRank> rank(const std::string& gpu) {
        return rank_rdma_devices(gpu, root_.string());
    }

    fs::path root_;
};

// Socket 0: root complex pci0000:00 with a switch (01:00.0 → 02:08.0/02:10.0),
// root complex pci0000:40; socket 1: pci0000:80.
TEST_F(FakeSysfs, RanksSwitchThenRootComplexThenNodeThenOtherNode) {
    pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0", 0);  // GPU
    rdma("mlx5_sys", pci("pci0000:80/0000:80:01.0/0000:81:00.0", 1), "ib3");
    rdma("mlx5_node", pci("pci0000:40/0000:40:01.0/0000:41:00.0", 0), "ib2");
    rdma("mlx5_phb", pci("pci0000:00/0000:00:03.0/0000:05:00.0", 0), "ib1");
    rdma("mlx5_pix", pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0", 0),
         "ib0");
    const auto r = rank("0000:03:00.0");
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].device, "mlx5_pix");
    EXPECT_EQ(r[0].distance, PcieDistance::same_switch);
    EXPECT_EQ(r[0].pci_address, "0000:04:00.0");
    EXPECT_EQ(r[1].device, "mlx5_phb");
    EXPECT_EQ(r[1].distance, PcieDistance::same_root_complex);
    EXPECT_EQ(r[2].device, "mlx5_node");
    EXPECT_EQ(r[2].distance, PcieDistance::same_node);
    EXPECT_EQ(r[3].device, "mlx5_sys");
    EXPECT_EQ(r[3].distance, PcieDistance::other_node);
    EXPECT_EQ(r[3].numa_node, 1);
    std::map<std::string, std::string> ips{
        {"ib0", "10.0.0.1"}, {"ib1", "10.0.1.1"}, {"ib3", "10.0.3.1"}};
    std::string chosen;
    EXPECT_EQ(pick_source_address(
                  r, [&](const std::string& n) { return ips.count(n) ? ips[n] : ""; }, &chosen),
              "10.0.0.1");
    EXPECT_EQ(chosen, "mlx5_pix");
}

TEST_F(FakeSysfs, TiesAreBrokenByDeviceName) {
    pci("pci0000:00/0000:00:01.0/0000:01:00.0", 0);  // GPU
    rdma("mlx5_1", pci("pci0000:00/0000:00:02.0/0000:02:00.0", 0), "ib1");
    rdma("mlx5_0", pci("pci0000:00/0000:00:03.0/0000:03:00.0", 0), "ib0");
    const auto r = rank("0000:01:00.0");
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].device, "mlx5_0");
    EXPECT_EQ(r[1].device, "mlx5_1");
    EXPECT_EQ(r[0].distance, r[1].distance);
}

TEST_F(FakeSysfs, DeviceWithoutNetdevIsSkippedForTheSourceAddress) {
    pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0", 0);                     // GPU
    rdma("mlx5_near", pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0", 0));  // no netdev
    rdma("mlx5_far", pci("pci0000:80/0000:80:01.0/0000:81:00.0", 1), "ens1");
    const auto r = rank("0000:02:00.0");
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].device, "mlx5_near");
    EXPECT_TRUE(r[0].netdevs.empty());
    std::string chosen;
    EXPECT_EQ(pick_source_address(
                  r, [](const std::string& n) { return n == "ens1" ? "192.0.2.7" : ""; }, &chosen),
              "192.0.2.7");
    EXPECT_EQ(chosen, "mlx5_far");
    // No device has an address at all: nothing is chosen.
    EXPECT_EQ(pick_source_address(r, [](const std::string&) { return std::string(); }), "");
}

TEST_F(FakeSysfs, MultiFunctionNeighbourCountsAsSameSwitch) {
    pci("pci0000:00/0000:00:01.0/0000:01:00.0", 0);
    rdma("mlx5_0", pci("pci0000:00/0000:00:01.0/0000:01:00.1", 0), "ib0");
    EXPECT_EQ(rank("0000:01:00.0").at(0).distance, PcieDistance::same_switch);
}

TEST_F(FakeSysfs, MalformedTreeRanksBrokenDevicesLastWithANote) {
    pci("pci0000:00/0000:00:01.0/0000:01:00.0", 0);  // GPU
    rdma("mlx5_ok", pci("pci0000:40/0000:40:01.0/0000:41:00.0", 0), "ib0");
    // Dangling device link, a non-PCI device (like rxe/softverbs), no link at all.
    fs::create_directories(root_ / "class/infiniband/dangling");
    fs::create_directory_symlink(root_ / "devices/nowhere",
                                 root_ / "class/infiniband/dangling/device");
    fs::create_directories(root_ / "devices/virtual/net/eth0");
    rdma("rxe0", root_ / "devices/virtual/net/eth0");
    fs::create_directories(root_ / "class/infiniband/nolink");
    const auto r = rank("0000:01:00.0");
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].device, "mlx5_ok");
    EXPECT_EQ(r[0].distance, PcieDistance::same_node);
    for (std::size_t i = 1; i < r.size(); ++i) {
        EXPECT_EQ(r[i].distance, PcieDistance::unknown) << r[i].device;
        EXPECT_FALSE(r[i].note.empty()) << r[i].device;
    }
    // A missing numa_node file means "unknown node" (-1) and is not an error.
    fs::remove(root_ / "devices/pci0000:40/0000:40:01.0/0000:41:00.0/numa_node");
    EXPECT_EQ(rank("0000:01:00.0").at(0).distance, PcieDistance::other_node);
}

TEST_F(FakeSysfs, BadGpuAddressOrMissingTreeThrows) {
    EXPECT_THROW(rank("not-a-pci-address"), InvalidArgument);
    EXPECT_THROW(rank("0000:99:00.0"), InvalidArgument);  // not in the tree
    fs::remove_all(root_ / "class");
    pci("pci0000:00/0000:00:01.0/0000:01:00.0", 0);
    EXPECT_TRUE(rank("0000:01:00.0").empty());  // no RDMA devices at all
}

TEST(PciAddress, Normalises) {
    EXPECT_EQ(normalize_pci_address("00000000:17:00.0"), "0000:17:00.0");
    EXPECT_EQ(normalize_pci_address("0000:3B:00.1"), "0000:3b:00.1");
    EXPECT_EQ(normalize_pci_address("3b:00.0"), "0000:3b:00.0");
    EXPECT_EQ(normalize_pci_address("10001:3b:00.0"), "10001:3b:00.0");
    EXPECT_EQ(normalize_pci_address("0000:3b:00"), "");
    EXPECT_EQ(normalize_pci_address("pci0000:00"), "");
    EXPECT_EQ(normalize_pci_address(""), "");
}

TEST(GpuRange, AlignsToGpuPagesInsideTheAllocation) {
    using detail::gpu::align_gpu_range;
    constexpr std::uint64_t base = 0x7f0000000000, mib = 1 << 20, k64 = 64 * 1024;
    auto r = align_gpu_range(base + 4096, 8192, base, 2 * mib, 4096);
    EXPECT_EQ(r.start, base);
    EXPECT_EQ(r.length, k64);
    r = align_gpu_range(base + k64 + 10, k64, base, 2 * mib, 4096);
    EXPECT_EQ(r.start, base + k64);
    EXPECT_EQ(r.length, 2 * k64);
    // An allocation ending off a GPU page: clipped to its host-page end.
    r = align_gpu_range(base, 100000, base, 100000, 4096);
    EXPECT_EQ(r.start, base);
    EXPECT_EQ(r.length, 102400u);
}

TEST(GpuRegistration, FailureMessageNamesEveryCause) {
    using detail::gpu::RegistrationAttempt;
    RegistrationAttempt dmabuf;
    dmabuf.step = "cuMemGetHandleForAddressRange";
    dmabuf.driver_error = "CUDA_ERROR_NOT_SUPPORTED";
    dmabuf.driver_not_supported = true;
    RegistrationAttempt peermem;
    peermem.step = "ibv_reg_mr";
    peermem.sys_errno = EFAULT;
    peermem.module_loaded = false;
    std::string m = detail::gpu::explain_registration_failure(dmabuf, peermem);
    EXPECT_NE(m.find("proprietary"), std::string::npos) << m;
    EXPECT_NE(m.find("nvidia_peermem module is not loaded"), std::string::npos) << m;
    dmabuf.driver_not_supported = false;
    dmabuf.driver_error = "CUDA_ERROR_INVALID_VALUE";
    m = detail::gpu::explain_registration_failure(dmabuf, peermem);
    EXPECT_NE(m.find("gpuDirectRDMACapable"), std::string::npos) << m;
    RegistrationAttempt refused;
    refused.step = "ibv_reg_dmabuf_mr";
    refused.sys_errno = EOPNOTSUPP;
    peermem.module_loaded = true;
    m = detail::gpu::explain_registration_failure(refused, peermem);
    EXPECT_NE(m.find("ibv_reg_dmabuf_mr failed"), std::string::npos) << m;
    EXPECT_EQ(m.find("modprobe"), std::string::npos) << m;
}

TEST(GpuDriver, ReportsWhyItIsUnavailable) {
    // Run with NVMEOF_CUDA_LIBRARY pointing nowhere (see meson.build).
    const GpuDriverInfo info = gpu_driver_info();
    EXPECT_FALSE(info.loaded);
    EXPECT_EQ(gpu_count(), 0);
#ifdef NVMEOF_TEST_HAVE_CUDA
    EXPECT_TRUE(info.built);
    EXPECT_NE(info.error.find("cannot be loaded"), std::string::npos) << info.error;
#else
    EXPECT_FALSE(info.built);
    EXPECT_NE(info.error.find("built without CUDA support"), std::string::npos) << info.error;
#endif
    std::string why;
    EXPECT_EQ(source_near_gpu(0, &why), "");
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(GpuBuffer::allocate(0, 4096), Error);
}

}  // namespace

#include "target_spec.hpp"

namespace {
using nvmeof::engine::gpu_for_job;
using nvmeof::engine::parse_gpu_option;
using nvmeof::engine::SpecError;

TEST(EngineGpuOption, ParsesAndPicksPerJob) {
    EXPECT_FALSE(parse_gpu_option("").enabled);
    const auto one = parse_gpu_option("1");
    EXPECT_TRUE(one.enabled);
    EXPECT_FALSE(one.round_robin);
    EXPECT_EQ(gpu_for_job(one, 5, 2), 1);
    EXPECT_THROW(gpu_for_job(one, 0, 1), SpecError);  // only GPU 0 visible
    const auto rr = parse_gpu_option("rr");
    EXPECT_TRUE(rr.round_robin);
    EXPECT_EQ(gpu_for_job(rr, 0, 4), 0);
    EXPECT_EQ(gpu_for_job(rr, 5, 4), 1);
    EXPECT_THROW(gpu_for_job(rr, 0, 0), SpecError);
    EXPECT_THROW(parse_gpu_option("-1"), SpecError);
    EXPECT_THROW(parse_gpu_option("gpu0"), SpecError);
    EXPECT_THROW(parse_gpu_option("1x"), SpecError);
}
}  // namespace
