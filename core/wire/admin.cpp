#include "nvmeof/wire/admin.hpp"

#include <stdexcept>

namespace nvmeof::wire {

Sqe set_features_command(FeatureId fid, std::uint32_t cdw11) {
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(AdminOpcode::set_features));
    sqe.cdw10 = static_cast<std::uint32_t>(fid);
    sqe.cdw11 = cdw11;
    return sqe;
}

Sqe get_features_command(FeatureId fid, FeatureSelect select) {
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(AdminOpcode::get_features));
    sqe.cdw10 = static_cast<std::uint32_t>(fid) |
                (static_cast<std::uint32_t>(select) << kFeatureSelectShift);
    return sqe;
}

std::uint32_t number_of_queues_value(QueueCounts requested) {
    auto zero_based = [](std::uint32_t count) {
        if (count == 0 || count > kMaxQueuesPerController) {
            throw std::invalid_argument("number of queues must be 1 to 65535");
        }
        return count - 1;
    };
    return zero_based(requested.submission) | (zero_based(requested.completion) << kNcqrShift);
}

QueueCounts parse_number_of_queues(std::uint32_t value) {
    return QueueCounts{(value & kQueueCountMask) + 1,
                       ((value >> kNcqrShift) & kQueueCountMask) + 1};
}

Sqe set_number_of_queues_command(QueueCounts requested) {
    return set_features_command(FeatureId::number_of_queues, number_of_queues_value(requested));
}

Sqe set_host_behavior_support_command(const SglDescriptor& data) {
    Sqe sqe = set_features_command(FeatureId::host_behavior_support, 0);
    sqe.dptr = data;
    return sqe;
}

Sqe get_host_behavior_support_command(const SglDescriptor& data) {
    Sqe sqe = get_features_command(FeatureId::host_behavior_support);
    sqe.dptr = data;
    return sqe;
}

Sqe set_keep_alive_timer_command(std::uint32_t kato_ms) {
    return set_features_command(FeatureId::keep_alive_timer, kato_ms);
}

Sqe keep_alive_command() {
    return make_sqe(static_cast<std::uint8_t>(AdminOpcode::keep_alive));
}

Sqe get_log_page_command(LogPageId lid, std::uint64_t offset, const SglDescriptor& data,
                         std::uint32_t nsid, std::uint8_t csi) {
    const std::uint64_t length = data.length();
    if (length == 0 || length % kDwordSize != 0 || offset % kDwordSize != 0) {
        throw std::invalid_argument("Get Log Page length and offset must be whole dwords");
    }
    const std::uint64_t numd = length / kDwordSize - 1;  // 0's based dword count
    Sqe sqe = make_sqe(static_cast<std::uint8_t>(AdminOpcode::get_log_page), nsid);
    sqe.dptr = data;
    sqe.cdw10 = static_cast<std::uint32_t>(lid) |
                static_cast<std::uint32_t>((numd & kNumdPartMask) << kNumdlShift);
    sqe.cdw11 = static_cast<std::uint32_t>((numd >> kNumduShift) & kNumdPartMask);
    sqe.cdw12 = static_cast<std::uint32_t>(offset);
    sqe.cdw13 = static_cast<std::uint32_t>(offset >> 32);
    sqe.cdw14 = std::uint32_t{csi} << kLogPageCsiShift;
    return sqe;
}

LogPageRequest parse_get_log_page(const Sqe& sqe) {
    const std::uint64_t numd =
        ((sqe.cdw10 >> kNumdlShift) & kNumdPartMask) |
        (static_cast<std::uint64_t>(sqe.cdw11 & kNumdPartMask) << kNumduShift);
    return LogPageRequest{
        static_cast<LogPageId>(sqe.cdw10 & kLogPageIdMask),
        static_cast<std::uint64_t>(sqe.cdw12) | (static_cast<std::uint64_t>(sqe.cdw13) << 32),
        (numd + 1) * kDwordSize, static_cast<std::uint8_t>(sqe.cdw14 >> kLogPageCsiShift)};
}

}  // namespace nvmeof::wire
