// Controller facade, memory registration, namespaces and blocking transfers.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <thread>

#include "gpu/gpu_registration.hpp"
#include "host/controller_impl.hpp"
#include "host/negotiation.hpp"
#include "host/process_guard.hpp"
#include "nvmeof/option_rules.hpp"
#include "nvmeof/wire.hpp"
#include "transport/transfer_split.hpp"

namespace nvmeof {

// ControllerImpl is nvmeof's, as the public headers name it; what it is made
// of (the host's helpers, the transport's queues) is nvmeof::detail's.
using namespace detail;

namespace detail {
NamespaceRef namespace_ref(const NamespaceInfo& info) noexcept {
    return {info.nsid,
            static_cast<std::uint32_t>(std::countr_zero(info.lba_size)),
            info.size_lbas,
            info.format,
            info.format.reftag_mask(),
            {info.format.transfer_block_bytes(false), info.format.transfer_block_bytes(true)},
            info.format.pi_type != PiType::none,
            info.zoned,
            info.zoned ? info.zones.zone_append_max_bytes : 0};
}
}  // namespace detail

void check_transfer(const NamespaceInfo& ns, const Transfer& t) {
    const std::string what = "namespace " + std::to_string(ns.nsid);
    if (t.protection.prinfo != 0 && ns.format.pi_type == PiType::none) {
        throw InvalidArgument(what +
                              " is formatted without protection information: PRACT and "
                              "PRCHK do not apply to it");
    }
    if ((t.protection.prinfo & ~(kPract | kPrchkAll | kCheckStorageTag)) != 0) {
        throw InvalidArgument(what + ": PRINFO " + std::to_string(t.protection.prinfo) +
                              " has bits beyond PRACT, PRCHK and the storage tag check (0-31)");
    }
    if ((t.protection.prinfo & kCheckStorageTag) != 0 && ns.format.storage_tag_bits == 0) {
        throw InvalidArgument(what + "'s format has no storage tag to check (STS 0)");
    }
    if (t.protection.storage_tag > ns.format.storage_tag_max()) {
        throw InvalidArgument(what + ": storage tag " + std::to_string(t.protection.storage_tag) +
                              " does not fit its format's " +
                              std::to_string(ns.format.storage_tag_bits) + "-bit storage tag");
    }
    if (!lba_range_fits(t.op, t.slba, t.blocks, ns.size_lbas)) {
        throw InvalidArgument(what + ": LBA range [" + std::to_string(t.slba) + ", +" +
                              std::to_string(t.blocks) + ") is outside the namespace (" +
                              std::to_string(ns.size_lbas) + " blocks)");
    }
    const std::uint32_t block_bytes = ns.buffer_block_bytes(t.protection);
    if (t.op == Op::zone_append) {
        check_zone_append(ns, t.slba, t.blocks, block_bytes);
    }
    if (!carries_data(t.op) || t.memory == nullptr) {
        return;  // a missing or closed region is the submission's to refuse
    }
    const std::uint64_t size = t.memory->size();
    if (!buffer_range_fits(t.blocks, block_bytes, t.offset, size)) {
        throw InvalidArgument(what + ": " + std::to_string(t.blocks) + " blocks of " +
                              std::to_string(block_bytes) + " bytes at buffer offset " +
                              std::to_string(t.offset) + " do not fit the " + std::to_string(size) +
                              "-byte memory region");
    }
}

void check_supported(const Limits& limits, Op op) {
    if (op == Op::compare && (limits.oncs & wire::kOncsCompare) == 0) {
        throw InvalidArgument(
            "Compare: the controller does not support it (Identify ONCS bit 0 is clear)");
    }
}

void ControllerImpl::require_open(const char* what) const {
    if (state_ == ControllerState::lost) {
        throw TransportError(
            TransportErrc::controller_lost, ENODEV,
            std::string(what) +
                ": the controller was given up after its outage: " + reconnect_stats_.lost_reason);
    }
    if (state_ != ControllerState::live) {
        throw TransportError(TransportErrc::closed, ESHUTDOWN,
                             std::string(what) + ": the controller is closed");
    }
}

HostQueue& ControllerImpl::io(std::size_t index) {
    if (!reconnecting()) {  // in an outage the queue answers for itself (busy, ENOLINK)
        require_open("io()");
    }
    if (index >= io_.size()) {
        throw InvalidArgument("I/O queue index " + std::to_string(index) + " is out of range (" +
                              std::to_string(io_.size()) + " queues)");
    }
    return *io_[index];
}

NamespaceInfo ControllerImpl::identify_namespace(std::uint32_t nsid) {
    require_open("namespace_at");
    const NamespaceInfo info = read_namespace(nsid);
    // Remembered, so a reconnect can check the namespace did not change under its users.
    const auto known = std::find_if(namespaces_.begin(), namespaces_.end(),
                                    [&](const NamespaceInfo& n) { return n.nsid == nsid; });
    if (known != namespaces_.end()) {
        *known = info;
    } else {
        namespaces_.push_back(info);
    }
    return info;
}

NamespaceInfo ControllerImpl::read_namespace(std::uint32_t nsid) {
    check_nsid(nsid);
    const std::string step = "Identify Namespace " + std::to_string(nsid);
    execute_ok(*admin_,
               wire::identify_command(wire::IdentifyCns::namespace_data, nsid,
                                      wire::keyed_data_block(scratch(kScratchIdentifyOffset,
                                                                     wire::kIdentifyDataSize))),
               step);
    wire::IdentifyNamespace id{};
    std::memcpy(&id, scratch_.get() + kScratchIdentifyOffset, sizeof id);
    if (id.nsze == 0) {
        // The caller's NSID names no namespace: a bad argument, as 0 is.
        throw InvalidArgument("namespace " + std::to_string(nsid) + " is not active on " +
                              options_.subsystem_nqn);
    }
    // The guard type of a PI format is in the NVM command set's namespace data,
    // read only from controllers that report extended LBA formats.
    std::optional<wire::IdentifyNvmNamespace> nvm;
    if (id.dps != 0 && extended_lba_formats_) {
        execute_ok(
            *admin_,
            wire::identify_command_set_namespace(
                nsid, wire::kCsiNvm,
                wire::keyed_data_block(scratch(kScratchIdentifyOffset, wire::kIdentifyDataSize))),
            "Identify Namespace " + std::to_string(nsid) + " (NVM command set)");
        nvm.emplace();
        std::memcpy(&*nvm, scratch_.get() + kScratchIdentifyOffset, sizeof *nvm);
    }
    wire::NamespaceGeometry geometry;
    try {
        geometry = wire::namespace_geometry(id, nvm ? &*nvm : nullptr);
    } catch (const std::exception& e) {
        throw Error("namespace " + std::to_string(nsid) + ": " + e.what());
    }
    NamespaceInfo info{nsid,
                       geometry.lba_size,
                       geometry.size_blocks,
                       geometry.capacity_blocks,
                       geometry.format,
                       geometry.storage_tag_mask};
    if (static_cast<std::uint64_t>(info.format.extended_bytes()) > limits_.max_transfer_bytes) {
        throw Error("namespace " + std::to_string(nsid) + ": one block of " +
                    std::to_string(info.format.extended_bytes()) +
                    " bytes is more than the controller's maximum transfer");
    }
    info.csi = namespace_command_set(nsid);
    if (info.csi == wire::kCsiZoned) {
        info.zoned = true;
        info.zones = read_zoned_namespace(nsid, id, info);
    } else if (info.csi != wire::kCsiNvm) {
        throw Error("namespace " + std::to_string(nsid) + " belongs to I/O command set " +
                    std::to_string(info.csi) +
                    " (CSI), which this host does not support (NVM and zoned only)");
    }
    return info;
}

MemoryRegion ControllerImpl::register_region(void* address, std::size_t length, void* owned) {
    auto record = std::make_shared<MemoryRecord>();
    record->owned = owned;  // freed by the record, also if registration throws
    record->address = static_cast<std::byte*>(address);
    record->length = length;
    require_open("register_memory");
    if (address == nullptr || length == 0) {
        throw InvalidArgument("cannot register an empty memory range");
    }
    transport_->register_memory(*record);
    return track(std::move(record));
}

MemoryRegion ControllerImpl::register_gpu(void* device_ptr, std::size_t bytes,
                                          std::shared_ptr<GpuOrdering> ordering) {
    require_open("register_gpu");
    return track(transport_->register_gpu(device_ptr, bytes, std::move(ordering)));
}

void ControllerImpl::retire_sends(void* controller) noexcept {
    auto* self = static_cast<ControllerImpl*>(controller);
    if (self->state_ != ControllerState::live) {
        return;  // queues down or going: drained, nothing left in a send queue
    }
    for (auto& queue : self->io_) {
        queue->retire_sends();
    }
}

MemoryRegion ControllerImpl::track(std::shared_ptr<MemoryRecord> record) {
    record->owner = this;
    record->retire_sends = &ControllerImpl::retire_sends;
    record->retire_context = this;
    record->host_owner = record->kind == MemoryKind::host ? this : nullptr;
    std::erase_if(memory_, [](const std::weak_ptr<MemoryRecord>& w) { return w.expired(); });
    memory_.push_back(record);
    return MemoryRegion(std::move(record));
}

bool ControllerImpl::keep_connected(std::string* why) noexcept {
    if (reconnect_enabled()) {
        if (!service_reconnect(Clock::now(), why)) {
            return false;
        }
        if (reconnecting()) {
            return true;
        }
        service_async_event(Clock::now());
        if (state_ == ControllerState::resetting) {
            // That poll saw a queue fail: tear down now, not on the next call.
            return service_reconnect(Clock::now(), why);
        }
        if (reconnecting()) {
            return true;  // an ANA change notice moved the controller off this path
        }
    }
    if (options_.keep_alive_ms != 0 && !open()) {
        if (why != nullptr) {
            *why = "the controller is closed";
        }
        return false;
    }
    if (!keep_alive_) {
        return true;
    }
    const bool alive = keep_alive_->service(KeepAlive::Clock::now());
    if (state_ == ControllerState::resetting) {
        return service_reconnect(Clock::now(), why);  // its poll saw a queue fail
    }
    if (!alive && reconnect_enabled()) {
        begin_outage(Clock::now(), keep_alive_->failure());
        return true;
    }
    if (!alive && why != nullptr) {
        *why = keep_alive_->failure();
    }
    return alive;
}

IdlePreparation ControllerImpl::prepare_idle_wait(std::chrono::steady_clock::time_point& wake,
                                                  int& fd) noexcept {
    if (state_ == ControllerState::waiting) {
        // Nothing to poll until the next attempt, or a timer that fails I/O.
        wake = std::min({wake, next_attempt_, lost_at_, fast_failed_ ? wake : fast_fail_at_});
        return IdlePreparation::sleep_only;
    }
    if (!open() || transport_->wakeup_fd() < 0) {
        return IdlePreparation::cannot_wait;
    }
    for (auto& queue : io_) {
        if (!queue->arm_if_quiet()) {
            return IdlePreparation::work_waiting;
        }
        wake = std::min(wake, queue->earliest_deadline());
    }
    if (keep_alive_) {
        wake = std::min(wake, keep_alive_->next_due());
    }
    fd = transport_->wakeup_fd();
    return IdlePreparation::armed;
}

bool ControllerImpl::take_wakeups() noexcept {
    return transport_ && transport_->take_wakeups();
}

// --- Controller -----------------------------------------------------------

Controller::Controller(std::unique_ptr<ControllerImpl> impl) : impl_(std::move(impl)) {}
Controller::Controller(Controller&&) noexcept = default;
Controller& Controller::operator=(Controller&&) noexcept = default;
Controller::~Controller() = default;

Controller Controller::connect(const Options& options, std::function<bool()> cancelled) {
    detail::claim_rdma_for_this_process();
    auto impl = std::make_unique<ControllerImpl>(options);
    impl->connect(std::move(cancelled));  // on a throw, ~ControllerImpl closes what was opened
    return Controller(std::move(impl));
}

void Controller::close() noexcept {
    if (impl_) {
        impl_->close();
    }
}

bool Controller::is_open() const noexcept {
    return impl_ && impl_->usable();
}

bool Controller::keep_connected(std::string* why) noexcept {
    if (!impl_) {
        if (why != nullptr) {
            *why = "controller was moved from";
        }
        return false;
    }
    return impl_->keep_connected(why);
}

bool Controller::is_reconnecting() const noexcept {
    return impl_ && impl_->reconnecting();
}

const ReconnectStats& Controller::reconnect_stats() const {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return impl_->reconnect_stats();
}

bool Controller::wait_for_completions(std::chrono::steady_clock::time_point until) noexcept {
    Controller* self = this;
    return nvmeof::wait_for_completions(std::span<Controller* const>(&self, 1), until);
}

bool wait_for_completions(std::span<Controller* const> controllers,
                          std::chrono::steady_clock::time_point until) noexcept {
    using Clock = std::chrono::steady_clock;
    // A fixed array: idle waiting allocates nothing either. Controllers past it
    // are still polled by the caller; only their wake-up is coarser.
    constexpr std::size_t kMaxWaited = 64;
    constexpr auto kCoarseWake = std::chrono::milliseconds(1);
    std::array<pollfd, kMaxWaited> fds{};
    std::array<ControllerImpl*, kMaxWaited> armed{};
    std::size_t count = 0;
    bool sleep_only = false;  // a controller waiting to reconnect: sleep even with nothing armed
    auto wake = until;
    for (Controller* controller : controllers) {
        ControllerImpl* impl = controller != nullptr ? controller->impl_.get() : nullptr;
        if (impl == nullptr) {
            continue;
        }
        if (count == kMaxWaited) {
            wake = std::min(wake, Clock::now() + kCoarseWake);
            break;
        }
        int fd = -1;
        switch (impl->prepare_idle_wait(wake, fd)) {
            case detail::IdlePreparation::work_waiting:
                return true;
            case detail::IdlePreparation::cannot_wait:
                continue;
            case detail::IdlePreparation::sleep_only:
                sleep_only = true;
                continue;
            case detail::IdlePreparation::armed:
                fds[count] = pollfd{fd, POLLIN, 0};
                armed[count] = impl;
                ++count;
                break;
        }
    }
    const auto now = Clock::now();
    if ((count == 0 && !sleep_only) || wake <= now) {
        return false;
    }
    constexpr auto kLongestSleep = std::chrono::milliseconds(std::numeric_limits<int>::max());
    const auto sleep =
        std::min(std::chrono::ceil<std::chrono::milliseconds>(wake - now), kLongestSleep);
    if (poll(fds.data(), count, static_cast<int>(sleep.count())) <= 0) {
        return false;  // woke for a deadline (or EINTR): the caller's poll checks deadlines
    }
    bool woke = false;
    for (std::size_t i = 0; i < count; ++i) {
        if ((fds[i].revents & POLLIN) != 0) {
            woke = armed[i]->take_wakeups() || woke;
        }
    }
    return woke;
}

const Limits& Controller::limits() const {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return impl_->limits();
}

Namespace Controller::namespace_at(std::uint32_t nsid) {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return Namespace(impl_.get(), impl_->identify_namespace(nsid));
}

MemoryRegion Controller::allocate(std::size_t bytes) {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return impl_->allocate(bytes);
}

MemoryRegion ControllerImpl::allocate(std::size_t bytes) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t rounded = (bytes + page - 1) / page * page;
    if (bytes == 0) {
        throw InvalidArgument("cannot allocate 0 bytes");
    }
    void* memory = std::aligned_alloc(page, rounded);
    if (memory == nullptr) {
        throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
    }
    std::memset(memory, 0, rounded);
    return register_region(memory, bytes, memory);
}

MemoryRegion Controller::register_memory(void* address, std::size_t length) {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return impl_->register_region(address, length, nullptr);
}

MemoryRegion Controller::register_gpu(void* device_ptr, std::size_t bytes,
                                      std::shared_ptr<GpuOrdering> ordering) {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return impl_->register_gpu(device_ptr, bytes, std::move(ordering));
}

IoQueue Controller::io(std::size_t index) {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    return IoQueue(&impl_->io(index));
}

std::size_t Controller::io_queue_count() const noexcept {
    return impl_ ? impl_->io_count() : 0;
}

IoQueue Controller::admin() {
    if (!impl_) {
        throw Error("controller was moved from");
    }
    impl_->require_open("admin()");
    return IoQueue(&impl_->admin());
}

// --- Namespace ------------------------------------------------------------

Namespace::Namespace(ControllerImpl* controller, NamespaceInfo info)
    : ref_(namespace_ref(info)), controller_(controller), info_(info) {}

namespace {
std::uint64_t default_blocks(const MemoryRegion& buffer, std::uint64_t offset, std::uint32_t lba,
                             std::optional<std::uint64_t> blocks) {
    if (blocks) {
        return *blocks;
    }
    const std::uint64_t n = offset < buffer.size() ? (buffer.size() - offset) / lba : 0;
    if (n == 0) {
        throw InvalidArgument("the buffer holds no whole block after offset " +
                              std::to_string(offset));
    }
    return n;
}
}  // namespace

void Namespace::read(const MemoryRegion& buffer, std::uint64_t slba,
                     std::optional<std::uint64_t> blocks, std::uint64_t buffer_offset,
                     const Protection& protection) {
    const std::uint32_t block_bytes = info_.buffer_block_bytes(protection);
    controller_->run_transfer(
        info_, {Op::read, slba, default_blocks(buffer, buffer_offset, block_bytes, blocks), &buffer,
                buffer_offset, 0, protection});
}

void Namespace::write(const MemoryRegion& buffer, std::uint64_t slba,
                      std::optional<std::uint64_t> blocks, std::uint64_t buffer_offset,
                      const Protection& protection) {
    const std::uint32_t block_bytes = info_.buffer_block_bytes(protection);
    controller_->run_transfer(
        info_, {Op::write, slba, default_blocks(buffer, buffer_offset, block_bytes, blocks),
                &buffer, buffer_offset, 0, protection});
}

bool Namespace::compare(const MemoryRegion& buffer, std::uint64_t slba,
                        std::optional<std::uint64_t> blocks, std::uint64_t buffer_offset,
                        const Protection& protection) {
    const std::uint32_t block_bytes = info_.buffer_block_bytes(protection);
    return controller_->run_transfer(
        info_, {Op::compare, slba, default_blocks(buffer, buffer_offset, block_bytes, blocks),
                &buffer, buffer_offset, 0, protection});
}

void Namespace::flush() {
    controller_->run_transfer(info_, {Op::flush, 0, 0, nullptr, 0, 0});
}

bool Namespace::run(const Transfer& transfer, const BetweenPolls& between_polls) {
    return controller_->run_transfer(info_, transfer, between_polls);
}

void Namespace::write_zeroes(std::uint64_t slba, std::uint64_t blocks,
                             const Protection& protection) {
    controller_->run_transfer(info_, {Op::write_zeroes, slba, blocks, nullptr, 0, 0, protection});
}

void Namespace::deallocate(std::uint64_t slba, std::uint64_t blocks) {
    controller_->run_transfer(info_, {Op::deallocate, slba, blocks, nullptr, 0, 0});
}

}  // namespace nvmeof
