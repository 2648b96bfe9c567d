// NVMe/RDMA private data carried in the RDMA-CM REQ, REP and REJ messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "nvmeof/wire/common.hpp"

namespace nvmeof::wire {

// librdmacm port space RDMA_PS_TCP: NVMe/RDMA connects with it, so the IB/RoCE
// service ID is 0x0000000001060000 + port (ULP byte 0x01, protocol byte 0x06).
inline constexpr std::uint16_t kRdmaPortSpaceTcp = 0x0106;
inline constexpr unsigned kServiceIdPortSpaceShift = 16;

constexpr std::uint64_t rdma_cm_service_id(std::uint16_t port) {
    return (static_cast<std::uint64_t>(kRdmaPortSpaceTcp) << kServiceIdPortSpaceShift) | port;
}

inline constexpr std::uint16_t kRdmaCmRecordFormat = 0;
inline constexpr std::size_t kRdmaCmPrivateDataSize = 32;  // REQ and REP
inline constexpr std::size_t kRdmaCmRejectDataSize = 4;

// Host → target, in the CM REQ. HRQSIZE is a count, HSQSIZE is 0's based.
struct RdmaCmRequest {
    std::uint16_t recfmt;
    std::uint16_t qid;
    std::uint16_t hrqsize;  // response buffers the host keeps posted (1's based)
    std::uint16_t hsqsize;  // = Connect SQSIZE (queue entries − 1)
    std::uint16_t cntlid;   // admin CNTLID on I/O queues; 0 for the admin queue
    std::uint8_t reserved[22];
};
static_assert(sizeof(RdmaCmRequest) == kRdmaCmPrivateDataSize);
static_assert(offsetof(RdmaCmRequest, recfmt) == 0);
static_assert(offsetof(RdmaCmRequest, qid) == 2);
static_assert(offsetof(RdmaCmRequest, hrqsize) == 4);
static_assert(offsetof(RdmaCmRequest, hsqsize) == 6);
static_assert(offsetof(RdmaCmRequest, cntlid) == 8);
static_assert(offsetof(RdmaCmRequest, reserved) == 10);

// Target → host, in the CM REP.
struct RdmaCmReply {
    std::uint16_t recfmt;
    std::uint16_t crqsize;  // command buffers the target keeps posted (1's based)
    std::uint8_t reserved[28];
};
static_assert(sizeof(RdmaCmReply) == kRdmaCmPrivateDataSize);
static_assert(offsetof(RdmaCmReply, recfmt) == 0);
static_assert(offsetof(RdmaCmReply, crqsize) == 2);
static_assert(offsetof(RdmaCmReply, reserved) == 4);

enum class RdmaCmRejectStatus : std::uint16_t {
    invalid_private_data_length = 0x01,
    invalid_record_format = 0x02,
    invalid_queue_id = 0x03,
    invalid_host_sq_size = 0x04,
    invalid_host_rq_size = 0x05,
    no_resources = 0x06,
    invalid_ird = 0x07,
    invalid_ord = 0x08,
    invalid_controller_id = 0x09,
};

// Target → host, in the CM REJ.
struct RdmaCmReject {
    std::uint16_t recfmt;
    std::uint16_t status;  // RdmaCmRejectStatus
};
static_assert(sizeof(RdmaCmReject) == kRdmaCmRejectDataSize);
static_assert(offsetof(RdmaCmReject, recfmt) == 0);
static_assert(offsetof(RdmaCmReject, status) == 2);

// Private data for a queue of `queue_size` entries (HRQSIZE = size, HSQSIZE =
// size − 1). Throws std::invalid_argument for a size below 2.
RdmaCmRequest rdma_cm_request(std::uint16_t qid, std::uint16_t queue_size, std::uint16_t cntlid);
RdmaCmReply rdma_cm_reply(std::uint16_t crqsize);
RdmaCmReject rdma_cm_reject(RdmaCmRejectStatus status);

// Parsers of received private data. Real IB/RoCE zero-pads private data to the
// transport maximum, so a length above the structure size is normal; a shorter
// one is not. nullopt when too short.
std::optional<RdmaCmRequest> parse_rdma_cm_request(const void* data, std::size_t length);
std::optional<RdmaCmReply> parse_rdma_cm_reply(const void* data, std::size_t length);
std::optional<RdmaCmReject> parse_rdma_cm_reject(const void* data, std::size_t length);

// "Invalid HSQSIZE", or "Unknown reject status" for codes the table lacks.
std::string_view reject_status_name(std::uint16_t status);

}  // namespace nvmeof::wire
