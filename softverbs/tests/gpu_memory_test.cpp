// GPU memory served by softverbs: registrations of CUDA device memory (by
// address, the peermem way, and as a dma-buf export) answered with copies
// through the CUDA driver.  In CI it runs with the fake driver from
// tests/unit/gpu in opaque mode (SOFTVERBS_CUDA_LIBRARY, FAKE_CUDA_OPAQUE=1):
// its device addresses fault when touched from the CPU, so every byte checked
// here went through cuMemcpy, and its call log shows the engine's driver calls.
// On a GPU machine (tests/gpu/device-check.sh) it runs against libcuda.so.1,
// whose device memory the CPU cannot touch either; the log checks are skipped.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.h"

namespace svt {
namespace {

// The driver API entry points the test drives (no cuda.h needed).
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr CUresult kCudaSuccess = 0;
constexpr int kDmaBufHandle = 1;  // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
constexpr std::size_t kDeviceBytes = 1 << 20;
constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct Driver {
  void* lib = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*primary_ctx_retain)(void**, int) = nullptr;
  CUresult (*ctx_set_current)(void*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*get_dmabuf)(void*, CUdeviceptr, std::size_t, int, unsigned long long) = nullptr;
  const char* (*log_other_threads)() = nullptr;
  void (*clear_log)() = nullptr;

  template <typename Fn>
  void bind(Fn* fn, const char* name) {
    void* p = lib ? dlsym(lib, name) : nullptr;
    std::memcpy(fn, &p, sizeof p);
  }
  Driver() {
    const char* path = std::getenv("SOFTVERBS_CUDA_LIBRARY");
    lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    bind(&init, "cuInit");
    bind(&primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    bind(&ctx_set_current, "cuCtxSetCurrent");
    bind(&mem_alloc, "cuMemAlloc_v2");
    bind(&mem_free, "cuMemFree_v2");
    bind(&memcpy_htod, "cuMemcpyHtoD_v2");
    bind(&memcpy_dtoh, "cuMemcpyDtoH_v2");
    bind(&get_dmabuf, "cuMemGetHandleForAddressRange");
    bind(&log_other_threads, "fake_cuda_log_other_threads");
    bind(&clear_log, "fake_cuda_clear_log");
  }
  bool usable() const {
    return init && primary_ctx_retain && ctx_set_current && mem_alloc && mem_free && memcpy_htod && memcpy_dtoh &&
           get_dmabuf;
  }
  bool fake() const { return log_other_threads && clear_log; }
  void clear() const {
    if (fake()) clear_log();
  }
  // What softverbs' progress thread asked of the fake driver (the test thread's own calls excluded).
  std::string engine_calls() const { return log_other_threads(); }
};

Driver& driver() {
  static Driver d;
  return d;
}

void fill(std::vector<uint8_t>& b, std::size_t off, std::size_t len, uint8_t seed) {
  for (std::size_t i = 0; i < len; ++i) b[off + i] = static_cast<uint8_t>(seed + i * 13);
}

// Device memory from the driver, freed at scope exit.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  explicit DeviceBuffer(std::size_t bytes) { EXPECT_EQ(driver().mem_alloc(&ptr, bytes), kCudaSuccess); }
  ~DeviceBuffer() { driver().mem_free(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* address(std::size_t off = 0) const { return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr + off)); }
  std::vector<uint8_t> read(std::size_t off, std::size_t len) const {
    std::vector<uint8_t> out(len);
    EXPECT_EQ(driver().memcpy_dtoh(out.data(), ptr + off, len), kCudaSuccess);
    return out;
  }
  void write(std::size_t off, const std::vector<uint8_t>& from, std::size_t from_off, std::size_t len) const {
    EXPECT_EQ(driver().memcpy_htod(ptr + off, from.data() + from_off, len), kCudaSuccess);
  }
};

class GpuMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!driver().usable()) GTEST_SKIP() << "needs a CUDA driver (SOFTVERBS_CUDA_LIBRARY or libcuda.so.1)";
    ASSERT_EQ(driver().init(0), kCudaSuccess);
    void* context = nullptr;
    ASSERT_EQ(driver().primary_ctx_retain(&context, 0), kCudaSuccess);
    ASSERT_EQ(driver().ctx_set_current(context), kCudaSuccess);
    ASSERT_TRUE(p.connect());
    driver().clear();
  }
  void TearDown() override {
    for (ibv_mr* mr : mrs)
      if (mr) ibv_dereg_mr(mr);
  }
  ibv_mr* reg(ibv_pd* pd, const DeviceBuffer& d, std::size_t bytes) {
    mrs.push_back(ibv_reg_mr(pd, d.address(), bytes, static_cast<int>(kAccess)));
    return mrs.back();
  }
  void expect_ok(ibv_cq* cq, ibv_wc_opcode opcode) {
    auto wc = poll_n(cq, 1);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[0].status);
    EXPECT_EQ(wc[0].opcode, opcode);
  }
  Pair p;
  std::vector<ibv_mr*> mrs;
};

TEST_F(GpuMemory, RemoteWriteAndReadOfADeviceAddressRegistrationGoThroughTheDriver) {
  DeviceBuffer device(kDeviceBytes);
  ibv_mr* mr = reg(p.server.pd, device, kDeviceBytes);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  constexpr uint32_t kLen = 192 * 1024;  // above the direct-read size: big payloads too go through copies
  const uint64_t raddr = reinterpret_cast<uintptr_t>(device.address(4096));

  fill(p.client.buf, 0, kLen, 1);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 1, 0, kLen, raddr, mr->rkey), 0);
  expect_ok(p.client.cq, IBV_WC_RDMA_WRITE);
  // The completion came after the data landed and the copies were settled.
  EXPECT_EQ(device.read(4096, kLen), std::vector<uint8_t>(p.client.buf.begin(), p.client.buf.begin() + kLen));
  if (driver().fake()) {
    std::string calls = driver().engine_calls();
    EXPECT_NE(calls.find("cuMemcpyHtoD"), std::string::npos) << calls;
    EXPECT_NE(calls.find("cuCtxSynchronize"), std::string::npos) << calls;
    EXPECT_NE(calls.find("cuCtxPushCurrent"), std::string::npos) << "the engine thread has no context of its own";
  }

  std::vector<uint8_t> pattern(kLen);
  fill(pattern, 0, kLen, 2);
  device.write(4096, pattern, 0, kLen);
  driver().clear();
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_READ, 2, 300000, kLen, raddr, mr->rkey), 0);
  expect_ok(p.client.cq, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(p.client.buf.data() + 300000, pattern.data(), kLen), 0);
  if (driver().fake()) {
    EXPECT_NE(driver().engine_calls().find("cuMemcpyDtoH"), std::string::npos);
  }
}

TEST_F(GpuMemory, DmaBufRegistrationFindsTheMemoryByItsIovaAndHoldsTheBuffer) {
  ASSERT_EQ(setenv("FAKE_CUDA_DMABUF", "1", 1), 0);
  DeviceBuffer device(kDeviceBytes);
  int fd = -1;
  if (CUresult r = driver().get_dmabuf(&fd, device.ptr, kDeviceBytes, kDmaBufHandle, 0); r != kCudaSuccess)
    GTEST_SKIP() << "the driver exports no dma-buf for this memory (CUDA error " << r << ")";
  ASSERT_GE(fd, 0);
  ibv_mr* mr = ibv_reg_dmabuf_mr(p.server.pd, 0, kDeviceBytes, device.ptr, fd, static_cast<int>(kAccess));
  mrs.push_back(mr);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  EXPECT_EQ(mr->addr, nullptr) << "rdma-core reports a dma-buf MR's offset as its addr";
  EXPECT_EQ(mr->length, kDeviceBytes);
  ::close(fd);  // the MR keeps its own reference, as the kernel does

  constexpr uint32_t kLen = 8192;
  fill(p.client.buf, 0, kLen, 3);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 1, 0, kLen, device.ptr + kDeviceBytes - kLen, mr->rkey), 0);
  expect_ok(p.client.cq, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(device.read(kDeviceBytes - kLen, kLen),
            std::vector<uint8_t>(p.client.buf.begin(), p.client.buf.begin() + kLen));
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_READ, 2, 65536, kLen, device.ptr + kDeviceBytes - kLen, mr->rkey), 0);
  expect_ok(p.client.cq, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(p.client.buf.data() + 65536, p.client.buf.data(), kLen), 0);
  // One byte past the registration is a remote access error, as for host memory.
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 3, 0, 2, device.ptr + kDeviceBytes - 1, mr->rkey), 0);
  auto wc = poll_n(p.client.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  unsetenv("FAKE_CUDA_DMABUF");
}

TEST_F(GpuMemory, LocalSgesInDeviceMemorySendReceiveAndRead) {
  DeviceBuffer client_device(kDeviceBytes);
  DeviceBuffer server_device(kDeviceBytes);
  ibv_mr* client_mr = reg(p.client.pd, client_device, kDeviceBytes);
  ibv_mr* server_mr = reg(p.server.pd, server_device, kDeviceBytes);
  ASSERT_NE(client_mr, nullptr);
  ASSERT_NE(server_mr, nullptr);
  constexpr uint32_t kHostPart = 100;
  constexpr uint32_t kDevicePart = 3000;
  fill(p.client.buf, 0, kHostPart, 4);
  std::vector<uint8_t> device_bytes(kDevicePart);
  fill(device_bytes, 0, kDevicePart, 5);
  client_device.write(0, device_bytes, 0, kDevicePart);

  // RECV into device memory; SEND gathers one host and one device SGE.
  ibv_sge recv_sge{reinterpret_cast<uintptr_t>(server_device.address(8192)), kHostPart + kDevicePart, server_mr->lkey};
  ASSERT_EQ(post_recv_sges(p.server.qp(), 11, &recv_sge, 1), 0);
  ibv_sge sg[2] = {{p.client.addr(0), kHostPart, p.client.mr->lkey},
                   {reinterpret_cast<uintptr_t>(client_device.address()), kDevicePart, client_mr->lkey}};
  ASSERT_EQ(post_sges(p.client.qp(), IBV_WR_SEND, 12, sg, 2), 0);
  expect_ok(p.server.cq, IBV_WC_RECV);
  expect_ok(p.client.cq, IBV_WC_SEND);
  std::vector<uint8_t> got = server_device.read(8192, kHostPart + kDevicePart);
  EXPECT_EQ(std::memcmp(got.data(), p.client.buf.data(), kHostPart), 0);
  EXPECT_EQ(std::memcmp(got.data() + kHostPart, device_bytes.data(), kDevicePart), 0);

  // READ from the server's host buffer into the client's device memory.
  fill(p.server.buf, 0, kDevicePart, 6);
  ibv_sge read_sge{reinterpret_cast<uintptr_t>(client_device.address(65536)), kDevicePart, client_mr->lkey};
  ASSERT_EQ(post_sges(p.client.qp(), IBV_WR_RDMA_READ, 13, &read_sge, 1, p.server.addr(0), p.server.mr->rkey), 0);
  expect_ok(p.client.cq, IBV_WC_RDMA_READ);
  EXPECT_EQ(client_device.read(65536, kDevicePart),
            std::vector<uint8_t>(p.server.buf.begin(), p.server.buf.begin() + kDevicePart));
}

TEST_F(GpuMemory, RefusesWhatItCannotServeAndLeavesHostMemoryAlone) {
  DeviceBuffer device(kDeviceBytes);
  // Past the end of the allocation: the "HCA" cannot pin it.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(p.server.pd, device.address(4096), kDeviceBytes, static_cast<int>(kAccess)), nullptr);
  EXPECT_EQ(errno, EFAULT);
  // A dma-buf whose iova is not device memory, and a dead fd.
  int fd = ::dup(0);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(ibv_reg_dmabuf_mr(p.server.pd, 0, 4096, p.server.addr(), fd, static_cast<int>(kAccess)), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ::close(fd);
  errno = 0;
  EXPECT_EQ(ibv_reg_dmabuf_mr(p.server.pd, 0, 4096, device.ptr, fd, static_cast<int>(kAccess)), nullptr);
  EXPECT_EQ(errno, EBADF);
  // Host memory in a process with a CUDA driver loaded is still read and written directly.
  driver().clear();
  fill(p.client.buf, 0, 4096, 7);
  ASSERT_EQ(p.client.post(IBV_WR_RDMA_WRITE, 1, 0, 4096, p.server.addr(0), p.server.mr->rkey), 0);
  expect_ok(p.client.cq, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(p.server.buf.data(), p.client.buf.data(), 4096), 0);
  if (driver().fake()) {
    EXPECT_EQ(driver().engine_calls(), "");
  }
}

}  // namespace
}  // namespace svt
