#include "nvmeof/wire/rdma_cm.hpp"

#include <stdexcept>

namespace nvmeof::wire {
namespace {

template <typename T>
std::optional<T> parse_private_data(const void* data, std::size_t length) {
    if (data == nullptr || length < sizeof(T)) {
        return std::nullopt;
    }
    T value;
    std::memcpy(&value, data, sizeof value);
    return value;
}

}  // namespace

RdmaCmRequest rdma_cm_request(std::uint16_t qid, std::uint16_t queue_size, std::uint16_t cntlid) {
    // One slot always stays free, so a queue of one entry could carry nothing.
    if (queue_size < 2) {
        throw std::invalid_argument("NVMe/RDMA queue size must be at least 2");
    }
    RdmaCmRequest req{};
    req.recfmt = kRdmaCmRecordFormat;
    req.qid = qid;
    req.hrqsize = queue_size;
    req.hsqsize = static_cast<std::uint16_t>(queue_size - 1);
    req.cntlid = cntlid;
    return req;
}

RdmaCmReply rdma_cm_reply(std::uint16_t crqsize) {
    RdmaCmReply rep{};
    rep.recfmt = kRdmaCmRecordFormat;
    rep.crqsize = crqsize;
    return rep;
}

RdmaCmReject rdma_cm_reject(RdmaCmRejectStatus status) {
    return RdmaCmReject{kRdmaCmRecordFormat, static_cast<std::uint16_t>(status)};
}

std::optional<RdmaCmRequest> parse_rdma_cm_request(const void* data, std::size_t length) {
    return parse_private_data<RdmaCmRequest>(data, length);
}
std::optional<RdmaCmReply> parse_rdma_cm_reply(const void* data, std::size_t length) {
    return parse_private_data<RdmaCmReply>(data, length);
}
std::optional<RdmaCmReject> parse_rdma_cm_reject(const void* data, std::size_t length) {
    return parse_private_data<RdmaCmReject>(data, length);
}

std::string_view reject_status_name(std::uint16_t status) {
    switch (static_cast<RdmaCmRejectStatus>(status)) {
        case RdmaCmRejectStatus::invalid_private_data_length:
            return "Invalid Private Data Length";
        case RdmaCmRejectStatus::invalid_record_format:
            return "Invalid RECFMT";
        case RdmaCmRejectStatus::invalid_queue_id:
            return "Invalid QID";
        case RdmaCmRejectStatus::invalid_host_sq_size:
            return "Invalid HSQSIZE";
        case RdmaCmRejectStatus::invalid_host_rq_size:
            return "Invalid HRQSIZE";
        case RdmaCmRejectStatus::no_resources:
            return "No Resources";
        case RdmaCmRejectStatus::invalid_ird:
            return "Invalid IRD";
        case RdmaCmRejectStatus::invalid_ord:
            return "Invalid ORD";
        case RdmaCmRejectStatus::invalid_controller_id:
            return "Invalid CNTLID";
    }
    return "Unknown Reject Status";
}

}  // namespace nvmeof::wire
