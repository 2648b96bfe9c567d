// The public IoQueue / Request facade over a controller's queues, whatever
// their transport (transport/queue_dispatch.hpp).
#include <charconv>
#include <string>

#include "memory/memory_record.hpp"
#include "nvmeof/namespace.hpp"
#include "nvmeof/queue.hpp"
#include "transport/queue_dispatch.hpp"

namespace nvmeof {
namespace {

// Off the data path: through HostQueue (its virtual functions, or the core's).
// (A reference cast: a pointer cast would test for null.)
detail::HostQueue& host(QueueImpl* queue) noexcept {
    return static_cast<detail::HostQueue&>(*queue);
}

std::string hex(std::uint64_t value) {
    char digits[16];
    const auto end = std::to_chars(digits, digits + sizeof digits, value, 16).ptr;
    return "0x" + std::string(digits, end);
}

// The target reaches a keyed SGL's memory by RDMA while the command runs, so
// that memory must be the data owner's, which the caller keeps registered
// until the command is done: a command pointing anywhere else could have its
// memory deregistered under it (failing the queue) or reach memory it was
// never meant to.
void check_data_owner(const wire::SglDescriptor& sgl, const MemoryRegion* data_owner) {
    if (!sgl.is_keyed() || sgl.keyed_length() == 0) {
        return;
    }
    const std::uint64_t length = sgl.keyed_length();
    // Built only for a refusal: a command that passes allocates nothing.
    const auto data = [&] {
        return "data_owner: the command's data (" + std::to_string(length) + " bytes at " +
               hex(sgl.address) + ", rkey " + hex(sgl.keyed_key()) + ")";
    };
    if (data_owner == nullptr) {
        throw InvalidArgument(data() + " is registered memory, but no data_owner names it");
    }
    if (data_owner->record()->staging) {
        // The transport would move the bytes at the device address itself.
        throw InvalidArgument(data() +
                              " is GPU memory, which NVMe/TCP reaches only through the host copy "
                              "transfers make; use a transfer (Namespace, IoQueue::submit with a "
                              "Transfer) or host memory");
    }
    const wire::RemoteBuffer owner = data_owner->remote();
    if (sgl.keyed_key() != owner.rkey) {
        throw InvalidArgument(data() + " is not under the data_owner's rkey " + hex(owner.rkey));
    }
    if (sgl.address < owner.address || sgl.address - owner.address > owner.length ||
        length > owner.length - (sgl.address - owner.address)) {
        throw InvalidArgument(data() + " is outside the data_owner's " +
                              std::to_string(owner.length) + " bytes at " + hex(owner.address));
    }
}

}  // namespace

Request::Request(Request&& other) noexcept
    : queue_(std::exchange(other.queue_, nullptr)), cid_(other.cid_) {}

Request& Request::operator=(Request&& other) noexcept {
    if (this != &other) {
        release();
        queue_ = std::exchange(other.queue_, nullptr);
        cid_ = other.cid_;
    }
    return *this;
}

Request::~Request() {
    release();
}

void Request::release() noexcept {
    if (queue_ != nullptr) {
        host(queue_).release_request(cid_);
        queue_ = nullptr;
    }
}

bool Request::done() const noexcept {
    return queue_ != nullptr && host(queue_).request_done(cid_);
}

const Response& Request::response() const {
    if (!done()) {
        throw Error("request " + std::to_string(cid_) + " is not done yet");
    }
    return host(queue_).request_response(cid_);
}

SubmitResult IoQueue::submit(const Namespace& ns, const Transfer& transfer, Post post) noexcept {
    return detail::on_queue(queue_,
                            [&](auto& queue) { return queue.submit(ns.ref(), transfer, post); });
}

void IoQueue::commit() noexcept {
    detail::on_queue(queue_, [](auto& queue) { queue.commit(); });
}
std::size_t IoQueue::deferred() const noexcept {
    return detail::on_queue(queue_, [](auto& queue) { return queue.deferred(); });
}

std::size_t IoQueue::poll(std::span<Completion> out) noexcept {
    std::size_t failed = 0;
    return poll(out, failed);
}
std::size_t IoQueue::poll(std::span<Completion> out, std::size_t& failed) noexcept {
    return detail::on_queue(queue_,
                            [&](auto& queue) { return queue.take_completions(out, failed); });
}

const CompletionStatus& IoQueue::last_error() const noexcept {
    return host(queue_).last_error();
}

Request IoQueue::submit(const wire::Sqe& command, const MemoryRegion* data_owner) {
    if (data_owner != nullptr && !data_owner->valid()) {
        throw InvalidArgument("the data owner memory region is not registered");
    }
    check_data_owner(command.dptr, data_owner);
    return Request(queue_, host(queue_).submit_command(command));
}

void IoQueue::make_progress() noexcept {
    detail::on_queue(queue_, [](auto& queue) { queue.poll_cq(); });
}

std::uint16_t IoQueue::qid() const noexcept {
    return host(queue_).qid();
}
std::size_t IoQueue::capacity() const noexcept {
    return host(queue_).capacity();
}
std::size_t IoQueue::free_slots() const noexcept {
    return host(queue_).free_cids();
}
std::size_t IoQueue::in_flight() const noexcept {
    return host(queue_).in_flight();
}
std::size_t IoQueue::near_completion() const noexcept {
    return host(queue_).transfers_near_completion();
}
std::size_t IoQueue::held() const noexcept {
    return host(queue_).held();
}
std::size_t IoQueue::finished() const noexcept {
    return host(queue_).finished();
}
bool IoQueue::failed() const noexcept {
    return host(queue_).failed();
}

TransportCounters IoQueue::transport_counters() const noexcept {
    return host(queue_).transport_counters();
}

std::size_t IoQueue::pieces(const Namespace& ns, const Transfer& transfer) const noexcept {
    return host(queue_).pieces(ns.ref(), transfer);
}

}  // namespace nvmeof
