// Named limits and defaults of the software device.  Values mirror what a
// mid-range RoCE HCA reports, so code sized for real hardware also fits here.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sv {

// Device capabilities reported by ibv_query_device (caps can lower some, see faults).
inline constexpr int kMaxQp = 4096;
inline constexpr int kMaxQpWr = 4096;
inline constexpr int kMaxSge = 16;
inline constexpr int kMaxCq = 4096;
inline constexpr int kMaxCqe = 65536;
inline constexpr int kMaxMr = 65536;
inline constexpr int kMaxPd = 4096;
// RDMA READs in flight per QP, as Soft-RoCE (rxe) reports it (a ConnectX
// says 16). A READ round trip here costs thread wake-ups on both ends, so 16
// READs of 128 KiB (an NVMe-oF target fetching split 1 MiB writes) left the
// pipe half empty: split/unsplit write bandwidth 0.82 at 16, 0.92 at 128.
inline constexpr int kMaxRdAtom = 128;
inline constexpr uint32_t kMaxInlineData = 1024;
inline constexpr uint64_t kMaxMrSize = uint64_t{1} << 40;
inline constexpr uint32_t kMaxMsgSize = uint32_t{1} << 31;
inline constexpr uint64_t kPageSizeCap = 0xfffff000;
inline constexpr uint32_t kVendorId = 0x5356;  // "SV"

// IB limits on CM private data; longer data is EINVAL, shorter is zero-padded.
inline constexpr std::size_t kConnectPrivateMax = 56;
inline constexpr std::size_t kAcceptPrivateMax = 196;
inline constexpr std::size_t kRejectPrivateMax = 148;

// Reject reasons as IB CM reports them in rdma_cm_event.status.
inline constexpr int kRejInvalidServiceId = 8;  // nobody listens on that port
inline constexpr int kRejConsumerDefined = 28;  // the application called rdma_reject

// rnr_retry value meaning "retry forever" (NVMe-oF default): park, never fail.
inline constexpr uint8_t kRnrRetryInfinite = 7;
// Time one RNR retry waits before the next; real HW uses min_rnr_timer (~ms range).
inline constexpr int kRnrRetryIntervalMs = 20;

// RC transport retries: a request the peer does not acknowledge within
// (retry_cnt + 1) x 4.096 us x 2^timeout fails with IBV_WC_RETRY_EXC_ERR and the
// connection is lost, as on an RNIC whose peer stopped (a stalled or dead node).
// The default timeout (unless ibv_modify_qp IBV_QP_TIMEOUT or rdma_set_option
// RDMA_OPTION_ID_ACK_TIMEOUT set one) stands in for a fabric's: 18 is about
// 1.07 s per try, 8.6 s with 7 retries. Timeout 0 means wait forever (IB).
inline constexpr uint8_t kDefaultAckTimeout = 18;
inline constexpr int64_t kAckTimeoutUnitNs = 4096;
inline constexpr uint8_t kMaxAckTimeout = 31;  // a 5-bit field
// The retry window is checked this many times over its length, so a lost peer
// is declared within an eighth of a window after the window.
inline constexpr int kAckChecksPerWindow = 8;

// Default bound for a CM request to be answered before UNREACHABLE.
inline constexpr int kDefaultCmTimeoutMs = 3000;
// TIMEWAIT_EXIT follows DISCONNECTED after this delay on ids that have a QP.
inline constexpr int kTimewaitMs = 10;
// rdma_destroy_id waits at most this long for unacked events before giving up loudly.
inline constexpr int kDestroyIdWaitMs = 5000;

// Engine I/O sizing.
inline constexpr std::size_t kInStagingBytes = 64 * 1024;  // small-message receive batch
inline constexpr std::size_t kDirectReadMin = 16 * 1024;   // payloads this big bypass staging
// After a large payload, reads ahead stop at this many bytes: enough for the
// small messages (responses, ACKs, commands) and the next header between two
// large payloads, little of the next payload (what staging takes of it is copied twice).
inline constexpr std::size_t kBulkReadAhead = 1024;
inline constexpr int kMaxIovPerWrite = 64;
inline constexpr std::size_t kOutBatchMessages = 32;     // queued messages that force a write
inline constexpr std::size_t kOutKeepBytes = 64 * 1024;  // larger copy buffers are freed on reuse
inline constexpr int kEpollBatch = 64;
inline constexpr int kEngineMaxSleepMs = 1000;                    // upper bound on one epoll_wait
inline constexpr std::size_t kReadBudgetBytes = 4 * 1024 * 1024;  // fairness between conns
inline constexpr int kListenBacklog = 128;

inline constexpr uint32_t kFirstQpNum = 0x100;
inline constexpr uint8_t kPortNum = 1;
inline constexpr uint32_t kPortMtu = 4096;

}  // namespace sv
