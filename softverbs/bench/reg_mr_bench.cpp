// Cost of registering memory per I/O (a program, not a test): what an
// initiator would pay to expose only each I/O's buffer to the target (one
// ibv_reg_mr before the command, ibv_dereg_mr after its completion) instead
// of one registration of the whole arena. SECURITY.md.
//
//   softverbs-run build/softverbs/bench/reg_mr_bench      (the software device)
//   build/softverbs/bench/reg_mr_bench                     (the first real RDMA device)
//
// Prints, per buffer size, the time of one registration + deregistration pair.
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace {

constexpr double kRunSeconds = 0.5;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

}  // namespace

int main() {
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr || count == 0) {
    std::fprintf(stderr, "reg_mr_bench: no RDMA device (run it under softverbs-run)\n");
    return 1;
  }
  ibv_context* context = ibv_open_device(devices[0]);
  ibv_pd* pd = context != nullptr ? ibv_alloc_pd(context) : nullptr;
  if (pd == nullptr) {
    std::fprintf(stderr, "reg_mr_bench: cannot open %s\n", ibv_get_device_name(devices[0]));
    return 1;
  }
  std::printf("device %s: one ibv_reg_mr + ibv_dereg_mr per I/O buffer\n", ibv_get_device_name(devices[0]));
  std::printf("%10s %14s %12s\n", "bytes", "pairs", "us per pair");
  for (const std::size_t bytes : {std::size_t{4096}, std::size_t{128} << 10, std::size_t{1} << 20}) {
    void* buffer = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer == MAP_FAILED) {
      std::perror("reg_mr_bench: mmap");
      return 1;
    }
    std::memset(buffer, 1, bytes);  // resident, as an I/O buffer is
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(kRunSeconds);
    long pairs = 0;
    auto now = start;
    while (now < end) {
      for (int i = 0; i < 64; ++i, ++pairs) {
        ibv_mr* mr = ibv_reg_mr(pd, buffer, bytes, kAccess);
        if (mr == nullptr || ibv_dereg_mr(mr) != 0) {
          std::perror("reg_mr_bench: ibv_reg_mr/ibv_dereg_mr");
          return 1;
        }
      }
      now = std::chrono::steady_clock::now();
    }
    const double us = std::chrono::duration<double, std::micro>(now - start).count() / static_cast<double>(pairs);
    std::printf("%10zu %14ld %12.2f\n", bytes, pairs, us);
    munmap(buffer, bytes);
  }
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  ibv_free_device_list(devices);
  return 0;
}
