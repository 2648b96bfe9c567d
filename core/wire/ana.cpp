#include "nvmeof/wire/ana.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace nvmeof::wire {
namespace {

constexpr AnaState kAllAnaStates[] = {AnaState::optimized, AnaState::non_optimized,
                                      AnaState::inaccessible, AnaState::persistent_loss,
                                      AnaState::change};

}  // namespace

std::string_view ana_state_name(AnaState state) {
    switch (state) {
        case AnaState::optimized:
            return "optimized";
        case AnaState::non_optimized:
            return "non-optimized";
        case AnaState::inaccessible:
            return "inaccessible";
        case AnaState::persistent_loss:
            return "persistent-loss";
        case AnaState::change:
            return "change";
    }
    return "unknown";
}

bool parse_ana_state(std::string_view text, AnaState& state) {
    for (const AnaState candidate : kAllAnaStates) {
        if (text == ana_state_name(candidate)) {
            state = candidate;
            return true;
        }
    }
    return false;
}

const AnaGroup* AnaLog::group_of(std::uint32_t nsid) const {
    for (const AnaGroup& group : groups) {
        for (const std::uint32_t member : group.nsids) {
            if (member == nsid) {
                return &group;
            }
        }
    }
    return nullptr;
}

Sqe ana_log_page_command(std::uint64_t offset, const SglDescriptor& data, bool groups_only) {
    Sqe sqe = get_log_page_command(LogPageId::ana, offset, data);
    if (groups_only) {
        sqe.cdw10 |= kAnaLogReturnGroupsOnly;
    }
    return sqe;
}

std::size_t ana_log_size(std::span<const AnaGroup> groups, bool groups_only) {
    std::size_t size = sizeof(AnaLogHeader);
    for (const AnaGroup& group : groups) {
        size += sizeof(AnaGroupDescriptor) +
                (groups_only ? 0 : group.nsids.size() * sizeof(std::uint32_t));
    }
    return size;
}

std::vector<std::uint8_t> ana_log(std::uint64_t change_count, std::span<const AnaGroup> groups,
                                  bool groups_only) {
    std::vector<std::uint8_t> page;
    page.reserve(ana_log_size(groups, groups_only));
    const auto append = [&page](const void* bytes, std::size_t length) {
        const auto* first = static_cast<const std::uint8_t*>(bytes);
        page.insert(page.end(), first, first + length);
    };
    AnaLogHeader header{};
    header.change_count = change_count;
    header.groups = static_cast<std::uint16_t>(groups.size());
    append(&header, sizeof header);
    for (const AnaGroup& group : groups) {
        AnaGroupDescriptor descriptor{};
        descriptor.group_id = group.id;
        descriptor.nsid_count = groups_only ? 0 : static_cast<std::uint32_t>(group.nsids.size());
        descriptor.change_count = group.change_count;
        descriptor.state = static_cast<std::uint8_t>(group.state);
        append(&descriptor, sizeof descriptor);
        if (!groups_only) {
            append(group.nsids.data(), group.nsids.size() * sizeof(std::uint32_t));
        }
    }
    return page;
}

AnaLog parse_ana_log(std::span<const std::uint8_t> page) {
    if (page.size() < sizeof(AnaLogHeader)) {
        throw std::runtime_error("ANA log page of " + std::to_string(page.size()) +
                                 " bytes is shorter than its header");
    }
    AnaLogHeader header{};
    std::memcpy(&header, page.data(), sizeof header);
    AnaLog log;
    log.change_count = header.change_count;
    std::size_t at = sizeof header;
    for (unsigned i = 0; i < header.groups; ++i) {
        if (page.size() - at < sizeof(AnaGroupDescriptor)) {
            throw std::runtime_error("ANA log page: group descriptor " + std::to_string(i) +
                                     " of " + std::to_string(header.groups) +
                                     " runs past the page");
        }
        AnaGroupDescriptor descriptor{};
        std::memcpy(&descriptor, page.data() + at, sizeof descriptor);
        at += sizeof descriptor;
        const auto state = static_cast<AnaState>(descriptor.state & kAnaStateMask);
        if (ana_state_name(state) == "unknown") {
            throw std::runtime_error("ANA log page: group " + std::to_string(descriptor.group_id) +
                                     " has the unknown state " +
                                     std::to_string(descriptor.state & kAnaStateMask));
        }
        if ((page.size() - at) / sizeof(std::uint32_t) < descriptor.nsid_count) {
            throw std::runtime_error("ANA log page: group " + std::to_string(descriptor.group_id) +
                                     " lists " + std::to_string(descriptor.nsid_count) +
                                     " namespaces, more than the page holds");
        }
        AnaGroup group;
        group.id = descriptor.group_id;
        group.change_count = descriptor.change_count;
        group.state = state;
        group.nsids.resize(descriptor.nsid_count);
        if (!group.nsids.empty()) {
            std::memcpy(group.nsids.data(), page.data() + at,
                        group.nsids.size() * sizeof(std::uint32_t));
        }
        at += group.nsids.size() * sizeof(std::uint32_t);
        log.groups.push_back(std::move(group));
    }
    return log;
}

bool AsyncEvent::is_ana_change() const {
    return type == AsyncEventType::notice && info == kAsyncNoticeAnaChange &&
           log_page == static_cast<std::uint8_t>(LogPageId::ana);
}

Sqe async_event_request_command() {
    return make_sqe(static_cast<std::uint8_t>(AdminOpcode::async_event_request));
}

std::uint32_t async_event_result(const AsyncEvent& event) {
    return (static_cast<std::uint32_t>(event.type) & kAsyncEventTypeMask) |
           (static_cast<std::uint32_t>(event.info) << kAsyncEventInfoShift) |
           (static_cast<std::uint32_t>(event.log_page) << kAsyncEventLogPageShift);
}

AsyncEvent parse_async_event(std::uint32_t dw0) {
    AsyncEvent event;
    event.type = static_cast<AsyncEventType>(dw0 & kAsyncEventTypeMask);
    event.info = static_cast<std::uint8_t>((dw0 >> kAsyncEventInfoShift) & kAsyncEventByteMask);
    event.log_page =
        static_cast<std::uint8_t>((dw0 >> kAsyncEventLogPageShift) & kAsyncEventByteMask);
    return event;
}

AsyncEvent ana_change_event() {
    return AsyncEvent{AsyncEventType::notice, kAsyncNoticeAnaChange,
                      static_cast<std::uint8_t>(LogPageId::ana)};
}

}  // namespace nvmeof::wire
