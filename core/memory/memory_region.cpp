#include "memory/memory_record.hpp"
#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/memory.hpp"

namespace nvmeof {

MemoryRegion::MemoryRegion(std::shared_ptr<MemoryRecord> record) : record_(std::move(record)) {}

MemoryRegion::~MemoryRegion() {
    reset();
}

std::byte* MemoryRegion::data() const noexcept {
    return record_ ? record_->address : nullptr;
}
std::size_t MemoryRegion::size() const noexcept {
    return record_ ? record_->length : 0;
}
bool MemoryRegion::valid() const noexcept {
    return record_ && record_->alive();
}
MemoryKind MemoryRegion::kind() const noexcept {
    return record_ ? record_->kind : MemoryKind::host;
}
int MemoryRegion::device_ordinal() const noexcept {
    return record_ ? record_->device_ordinal : -1;
}
std::string_view MemoryRegion::registration_path() const noexcept {
    return registration_path_name(record_ ? record_->path : RegistrationPath::host);
}

wire::RemoteBuffer MemoryRegion::remote(std::uint64_t offset) const {
    return remote(offset, offset <= size() ? size() - offset : 0);
}

wire::RemoteBuffer MemoryRegion::remote(std::uint64_t offset, std::uint64_t length) const {
    if (!valid()) {
        throw InvalidArgument("memory region is not registered (closed, reset or moved from)");
    }
    if (offset > size() || length > size() - offset) {
        throw InvalidArgument("range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                              ") is outside the " + std::to_string(size()) + "-byte memory region");
    }
    return {reinterpret_cast<std::uint64_t>(record_->address) + offset, length, record_->rkey};
}

std::uint32_t MemoryRegion::rkey() const noexcept {
    return valid() ? record_->rkey : 0;
}

std::uint32_t MemoryRegion::lkey() const noexcept {
    return valid() ? record_->lkey : 0;
}

void MemoryRegion::reset() noexcept {
    if (record_) {
        record_->close();
        record_.reset();
    }
}

}  // namespace nvmeof
