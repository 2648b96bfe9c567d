// The default GpuOrdering: the owning context's work is done before a write
// is posted; inbound GPUDirect writes are flushed before a read is handed back,
// where the device does not order them to the owner natively.
#include "gpu/cuda_ordering.hpp"

namespace nvmeof::detail::gpu {
namespace {

class CudaOrdering final : public GpuOrdering {
  public:
    CudaOrdering(const CudaDriver* cu, CUcontext context, bool flush)
        : cu_(cu), context_(context), flush_(flush) {}

    int before_write() noexcept override {
        return in_context(*cu_, context_, [this] { return cu_->ctx_synchronize(); });
    }
    int after_read() noexcept override {
        if (!flush_) {
            return 0;  // the device orders GPUDirect writes to the owner natively
        }
        return in_context(*cu_, context_, [this] {
            return cu_->flush_gpu_direct_rdma_writes(
                CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER);
        });
    }

  private:
    const CudaDriver* cu_;
    CUcontext context_;
    bool flush_;
};

}  // namespace

std::shared_ptr<GpuOrdering> make_cuda_ordering(const CudaDriver& cu, CUcontext context,
                                                CUdevice device) {
    int options = 0;
    int native = 0;
    cu.device_get_attribute(&options, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
                            device);
    cu.device_get_attribute(&native, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, device);
    const bool flush = (options & CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST) != 0 ||
                       native < CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER;
    return std::make_shared<CudaOrdering>(&cu, context, flush);
}

}  // namespace nvmeof::detail::gpu
