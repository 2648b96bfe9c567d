// GPU memory: what a registration is, the CUDA ordering seam, the run-time
// CUDA driver, and the choice of RDMA device (HCA) by PCIe locality.
//
//   auto ctrl = nvmeof::Controller::connect({.target = ip, .subsystem_nqn = nqn,
//                                            .source = nvmeof::source_near_gpu(0)});
//   auto mr = ctrl.register_gpu(device_ptr, bytes);  // registration_path(): dma-buf, peermem
//   ns.read(mr, 0, 8);                               // GPUDirect writes flushed before return
//
// libnvmeof never links libcuda: the driver API is loaded at run time
// (dlopen("libcuda.so.1"); NVMEOF_CUDA_LIBRARY names another file, for tests),
// so the library loads on machines without a driver or without CUDA at all.
//
// The base layer's: the GPU layer defines these, and the memory layer's record
// keeps a region's kind, path and ordering. Programs include nvmeof/gpu.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace nvmeof {

enum class MemoryKind : std::uint8_t { host, gpu };

// How a region was registered with the transport.
enum class RegistrationPath : std::uint8_t {
    host,     // ibv_reg_mr on host memory
    dma_buf,  // cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr (iova = device address)
    peermem,  // ibv_reg_mr on the device pointer, served by the nvidia_peermem module
    staging,  // NVMe/TCP: a pinned host copy of the region, moved by cuMemcpy around each I/O
};
// "host", "dma-buf", "peermem", "staging".
std::string_view registration_path_name(RegistrationPath path) noexcept;

// Ordering between the GPU and the RDMA device, per registered GPU region. The
// library calls it at fixed points on the datapath; the CUDA implementation is
// the default and tests inject a recording fake (Controller::register_gpu).
// Both calls run on the thread driving the queue, must not allocate, and return
// 0 or a nonzero driver error code (the I/O then fails with EIO).
class GpuOrdering {
  public:
    virtual ~GpuOrdering() = default;
    // Before a write from GPU memory is posted (the target may read the MR as
    // soon as the command leaves): the owning context's work is complete
    // (cuCtxSynchronize).
    virtual int before_write() noexcept = 0;
    // After a read into GPU memory has completed and before it is handed back
    // (blocking Namespace::read returns, IoQueue::poll reports it): inbound
    // GPUDirect RDMA writes are visible to the owner
    // (cuFlushGPUDirectRDMAWrites(TARGET_CURRENT_CTX, TO_OWNER)).
    virtual int after_read() noexcept = 0;
};

// --- the CUDA driver, loaded at run time ---------------------------------

struct GpuDriverInfo {
    bool built = false;   // libnvmeof was built with CUDA support (cuda.h found)
    bool loaded = false;  // the driver library was found and initialised (cuInit)
    int version = 0;      // cuDriverGetVersion, e.g. 12080
    int devices = 0;      // cuDeviceGetCount
    std::string library;  // the file loaded
    std::string error;    // why not loaded: "built without CUDA support", "libcuda.so.1: ..."
};
// Loads the driver on first use (once per process) and reports it. Never throws.
GpuDriverInfo gpu_driver_info();
// Whether GPU memory can be used at all, without initialising CUDA (safe in a
// process that forks afterwards, like fio's parent): built with CUDA support and
// the driver library loads. `why` says what is missing. Never throws.
bool gpu_driver_present(std::string* why = nullptr) noexcept;

// --- HCA choice by PCIe locality --------------------------------------------

// Closest first, the way nvidia-smi topo counts it.
enum class PcieDistance : std::uint8_t {
    same_switch = 0,        // a common PCIe bridge below the root port (PIX/PXB)
    same_root_complex = 1,  // the same host bridge (PHB)
    same_node = 2,          // different host bridges, the same NUMA node (NODE)
    other_node = 3,         // across the socket interconnect (SYS)
    unknown = 4,            // the device's PCI path could not be read
};
std::string_view pcie_distance_name(PcieDistance distance) noexcept;

struct RdmaDeviceRank {
    std::string device;       // "mlx5_0"
    std::string pci_address;  // "0000:17:00.0" ("" when unknown)
    PcieDistance distance = PcieDistance::unknown;
    int numa_node = -1;
    std::vector<std::string> netdevs;  // interfaces under device/net/
    std::string note;                  // why unknown
};

// Normalises "00000000:17:00.0" / "0000:17:00.0" / "17:00.0" to "0000:17:00.0";
// returns "" for anything else.
std::string normalize_pci_address(std::string_view address);

// Every RDMA device under <sysfs_root>/class/infiniband, ranked by PCIe distance
// from the PCI function `pci_address` (<sysfs_root>/bus/pci/devices/<address>):
// closest first, ties by device name. Throws InvalidArgument when the address is
// malformed or not present under sysfs_root.
std::vector<RdmaDeviceRank> rank_rdma_devices(std::string_view pci_address,
                                              const std::string& sysfs_root = "/sys");

// The IPv4 address of an interface (getifaddrs), "" if it has none.
std::string interface_ipv4(const std::string& interface);

// The first IPv4 address of the closest ranked device that has one; "" when none
// does. `ipv4_of` looks an interface up (tests pass a table).
std::string pick_source_address(
    const std::vector<RdmaDeviceRank>& ranked,
    const std::function<std::string(const std::string&)>& ipv4_of = interface_ipv4,
    std::string* chosen_device = nullptr);

// The source address to bind RDMA-CM to for I/O into GPU `ordinal`: the
// closest RDMA device's IPv4 (cuDeviceGetPCIBusId + rank_rdma_devices), or ""
// when there is at most one RDMA device, no driver, or no device has an address.
// `why` (optional) says which device was chosen and at what distance, or why none.
std::string source_near_gpu(int ordinal, std::string* why = nullptr,
                            const std::string& sysfs_root = "/sys");

}  // namespace nvmeof

namespace nvmeof {

// --- device memory for the fio engine, examples and device checks -------------

// Visible GPUs (0 without a driver or without CUDA support). Never throws.
int gpu_count() noexcept;
// cuDeviceGetPCIBusId, normalised ("0000:17:00.0"). Throws Error.
std::string gpu_pci_address(int ordinal);

// Device memory on GPU `ordinal`, with its primary context, which allocate()
// makes current on the calling thread. Move-only; frees on reset().
// Where the device supports GPUDirect RDMA on VMM memory, allocate() uses the
// VMM API (cuMemCreate with gpuDirectRDMACapable, mapped into a reserved
// range), which some platforms need before dma-buf or peermem will register
// it; elsewhere cuMemAlloc. NVMEOF_GPU_ALLOCATOR=vmm or =cuMemAlloc forces one.
class GpuBuffer {
  public:
    GpuBuffer() = default;
    static GpuBuffer allocate(int ordinal, std::size_t bytes);  // throws Error
    GpuBuffer(GpuBuffer&& other) noexcept;
    GpuBuffer& operator=(GpuBuffer&& other) noexcept;
    GpuBuffer(const GpuBuffer&) = delete;
    GpuBuffer& operator=(const GpuBuffer&) = delete;
    ~GpuBuffer();

    void* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    int ordinal() const noexcept { return ordinal_; }
    // "vmm" or "cuMemAlloc": how the memory was allocated ("" when empty).
    std::string_view allocator() const noexcept {
        return data_ == nullptr ? "" : vmm_ ? "vmm" : "cuMemAlloc";
    }
    // Synchronous copies (cuMemcpyHtoD / cuMemcpyDtoH); 0 or a driver error code,
    // so the fio hot path need not throw.
    int copy_from_host(std::size_t offset, const void* source, std::size_t bytes) const noexcept;
    int copy_to_host(std::size_t offset, void* destination, std::size_t bytes) const noexcept;
    // Makes the owning context current on this thread.
    void make_current() const;
    void reset() noexcept;

  private:
    void* data_ = nullptr;
    std::size_t size_ = 0;
    int ordinal_ = -1;
    void* context_ = nullptr;  // CUcontext (primary, retained)
    bool vmm_ = false;         // mapped VMM memory (unmapped and its range freed) or cuMemAlloc'd
    // The VMM range reserved and mapped: size_ rounded to the granularity.
    std::size_t reserved_ = 0;
};

}  // namespace nvmeof
