// Reads into GPU memory (GpuOrdering): the flush that makes the data visible
// to the GPU before a transfer is handed back. Off the host-memory path.
#include "base/log.hpp"
#include "transport/rdma_queue.hpp"
#include "transport/rdma_queue_completion.hpp"

namespace nvmeof::detail {

void RdmaQueue::gpu_read_failed(CompletionStatus& status, int result) noexcept {
    if (status.ok()) {
        status.transport = TransportErrc::queue_error;
        status.sys_errno = EIO;
        status.opcode = static_cast<std::uint8_t>(opcode_of(Op::read));
        status.queue = wire::QueueKind::io;
    }
    log_error("cuFlushGPUDirectRDMAWrites after a read into GPU memory failed (CUDA error %d)",
              result);
}

// Before the first `count` finished transfers are handed back: one flush per
// ordering (normally one per batch), for the reads into GPU memory among them.
void RdmaQueue::flush_gpu_reads(std::size_t count) noexcept {
    GpuOrdering* last = nullptr;
    int result = 0;
    for (std::size_t i = 0; i < count; ++i) {
        TransferRecord& record = transfers_[finished_[(finished_head_ + i) & ring_mask_]];
        if (record.gpu_read == nullptr) {
            continue;
        }
        if (record.gpu_read != last) {
            last = record.gpu_read;
            result = last->after_read();
        }
        if (result != 0) {
            gpu_read_failed(record.status, result);
        }
        record.gpu_read = nullptr;
        NVMEOF_INVARIANT(gpu_reads_finished_ > 0, "a finished GPU read was counted");
        --gpu_reads_finished_;
    }
}

}  // namespace nvmeof::detail
