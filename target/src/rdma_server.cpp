#include "rdma_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/rdma_cm.hpp"

namespace nvmeof::target {
namespace {

constexpr int kListenBacklog = 128;               // as nvmet
constexpr std::uint32_t kMaxQueueEntries = 1024;  // nvmet's port limit on HSQSIZE + 1
constexpr std::uint8_t kRnrRetryForever = 7;
constexpr auto kIdleSpin = std::chrono::microseconds(50);  // busy-poll this long before sleeping
constexpr auto kMaxSleep =
    std::chrono::milliseconds(100);  // timers are checked at least this often
constexpr auto kTimerPeriod = std::chrono::milliseconds(50);
constexpr auto kDisconnectGrace = std::chrono::seconds(2);  // then a silent peer's queue is freed
constexpr auto kShutdownWait = std::chrono::milliseconds(1000);

std::string event_text(const rdma_cm_event& event) {
    return verbs::cm_event_name(event.event);
}

}  // namespace

RdmaServer::RdmaServer(CommandCore& core, const TargetConfig& config, Stats& stats)
    : core_(core), config_(config), stats_(stats), channel_(verbs::EventChannel::create()) {}

RdmaServer::~RdmaServer() {
    queues_.clear();
    listeners_.clear();
}

std::vector<std::uint16_t> RdmaServer::listen() {
    std::vector<std::uint16_t> asked{config_.port};
    asked.insert(asked.end(), config_.more_ports.begin(), config_.more_ports.end());
    std::vector<std::uint16_t> ports;
    for (const std::uint16_t port : asked) {
        Listener listener;
        listener.id = bind_listener(port, listener.port);
        ports.push_back(listener.port);
        listeners_.push_back(std::move(listener));
    }
    // The discovery log names the first port.
    core_.set_listen_address(config_.listen_address, ports.front());
    return ports;
}

verbs::CmId RdmaServer::bind_listener(std::uint16_t wanted_port, std::uint16_t& real_port) {
    verbs::CmId listener = verbs::CmId::create(channel_, nullptr);
    addrinfo hints{};
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_NUMERICHOST;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(wanted_port);
    if (const int rc = getaddrinfo(config_.listen_address.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
        throw std::system_error(EINVAL, std::generic_category(),
                                "--listen " + config_.listen_address + ": " + gai_strerror(rc));
    }
    const int bound = rdma_bind_addr(listener.get(), found->ai_addr);
    const int error = errno;
    freeaddrinfo(found);
    if (bound != 0) {
        verbs::throw_error(error, "rdma_bind_addr " + config_.listen_address + ":" + port);
    }
    if (rdma_listen(listener.get(), kListenBacklog) != 0) {
        verbs::throw_errno("rdma_listen");
    }
    real_port = ntohs(rdma_get_src_port(listener.get()));
    return listener;
}

void RdmaServer::drop_connections(std::uint16_t only_port, const char* why) {
    for (auto& queue : queues_) {
        if (only_port == 0 || ntohs(rdma_get_src_port(queue->id())) == only_port) {
            queue->begin_disconnect(why);
        }
    }
}

void RdmaServer::stop_listening(std::size_t port_index) {
    listeners_[port_index].id.reset();
}

void RdmaServer::listen_again(std::size_t port_index) {
    std::uint16_t port = 0;
    listeners_[port_index].id = bind_listener(listeners_[port_index].port, port);
}

Device& RdmaServer::device_for(ibv_context* context) {
    auto& slot = devices_[context];
    if (!slot) {
        auto device = std::make_unique<Device>();
        device->context = context;
        if (ibv_query_device(context, &device->attr) != 0) {
            verbs::throw_errno("ibv_query_device");
        }
        device->pd = verbs::alloc_pd(context);
        device->channel = verbs::create_comp_channel(context);
        const int flags = fcntl(device->channel->fd, F_GETFL);
        if (flags < 0 || fcntl(device->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
            verbs::throw_errno("making the completion channel non-blocking");
        }
        slot = std::move(device);
    }
    return *slot;
}

RdmaServer::AfterAck RdmaServer::reject(rdma_cm_id* id, std::uint16_t status,
                                        const std::string& why) {
    std::fprintf(stderr, "nvmeof-target: rejecting a connection: %s (status 0x%02x, %s)\n",
                 why.c_str(), status, std::string(wire::reject_status_name(status)).c_str());
    wire::RdmaCmReject rej{};
    rej.recfmt = wire::kRdmaCmRecordFormat;
    rej.status = status;
    rdma_reject(id, &rej, static_cast<std::uint8_t>(sizeof rej));
    return AfterAck{nullptr, id};
}

RdmaServer::AfterAck RdmaServer::on_connect_request(const rdma_cm_event& event) {
    using wire::RdmaCmRejectStatus;
    rdma_cm_id* id = event.id;
    const rdma_conn_param& param = event.param.conn;
    if (const auto status = config_.faults.reject_connect) {
        ++stats_.faults_injected;
        std::fprintf(stderr, "nvmeof-target: fault: reject-connect=%u\n",
                     static_cast<unsigned>(*status));
        return reject(id, *status, "reject-connect fault");
    }
    // Real IB zero-pads the private data, so only a short one is wrong.
    const auto request = wire::parse_rdma_cm_request(param.private_data, param.private_data_len);
    if (!request) {
        return reject(id,
                      static_cast<std::uint16_t>(RdmaCmRejectStatus::invalid_private_data_length),
                      "private data of " + std::to_string(param.private_data_len) + " bytes");
    }
    if (request->recfmt != wire::kRdmaCmRecordFormat) {
        return reject(id, static_cast<std::uint16_t>(RdmaCmRejectStatus::invalid_record_format),
                      "RECFMT " + std::to_string(request->recfmt));
    }
    const std::uint32_t entries = request->hsqsize + 1u;
    if ((request->qid == 0 && entries > wire::kAdminQueueSize) || entries > kMaxQueueEntries) {
        return reject(
            id, static_cast<std::uint16_t>(RdmaCmRejectStatus::invalid_host_sq_size),
            "QID " + std::to_string(request->qid) + " HSQSIZE " + std::to_string(request->hsqsize));
    }

    std::unique_ptr<RdmaQueue> queue;
    std::uint32_t read_depth = 0;
    try {
        Device& device = device_for(id->verbs);
        read_depth = std::min<std::uint32_t>(
            param.initiator_depth, static_cast<std::uint32_t>(device.attr.max_qp_init_rd_atom));
        QueueSizes sizes;
        sizes.receive_count = entries;
        // The admin queue takes in-capsule data as large as IOCCSZ too, as
        // SPDK's target does: SPDK's host sends admin data in-capsule (Host
        // Behavior Support's 512 bytes) by the I/O queues' IOCCSZ.
        sizes.receive_size = config_.limits.ioccsz * wire::kCapsuleUnit;
        sizes.read_depth = std::max<std::uint32_t>(read_depth, 1);
        queue = std::make_unique<RdmaQueue>(id, device, request->qid, request->hsqsize, sizes,
                                            QueueContext{core_, stats_, config_, faults_});
    } catch (const std::system_error& e) {
        return reject(id, static_cast<std::uint16_t>(RdmaCmRejectStatus::no_resources),
                      "cannot set up QID " + std::to_string(request->qid) + ": " + e.what());
    }

    const wire::RdmaCmReply reply =
        wire::rdma_cm_reply(config_.limits.crqsize.value_or(static_cast<std::uint16_t>(entries)));
    rdma_conn_param accept{};
    accept.private_data = &reply;
    accept.private_data_len = static_cast<std::uint8_t>(sizeof reply);
    accept.initiator_depth = static_cast<std::uint8_t>(read_depth);
    accept.responder_resources = 0;  // the host never reads from the target
    accept.rnr_retry_count = kRnrRetryForever;
    accept.flow_control = 1;
    for (std::size_t i = 0; i < listeners_.size(); ++i) {
        if (listeners_[i].id && listeners_[i].id.get() == event.listen_id) {
            queue->nvme().port_index = i;  // its ANA state applies
        }
    }
    RdmaQueue* raw = queue.get();
    queues_.push_back(std::move(queue));
    if (rdma_accept(id, &accept) != 0) {
        std::fprintf(stderr, "nvmeof-target: rdma_accept of QID %u failed: %s\n",
                     static_cast<unsigned>(request->qid), std::strerror(errno));
        return AfterAck{raw, nullptr};
    }
    return AfterAck{};
}

RdmaServer::AfterAck RdmaServer::on_event(const rdma_cm_event& event) {
    if (event.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        return on_connect_request(event);
    }
    // Listeners are created with a null context; accepted ids carry their queue.
    auto* queue = event.id != nullptr ? static_cast<RdmaQueue*>(event.id->context) : nullptr;
    if (queue == nullptr) {
        std::fprintf(stderr, "nvmeof-target: CM event %s on the listener\n",
                     event_text(event).c_str());
        return AfterAck{};
    }
    switch (event.event) {
        case RDMA_CM_EVENT_ESTABLISHED:
            queue->established();
            return AfterAck{};
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        case RDMA_CM_EVENT_REJECTED:
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            queue->close();
            return AfterAck{queue, nullptr};
        default:
            std::fprintf(stderr, "nvmeof-target: QID %u: CM event %s ignored\n",
                         static_cast<unsigned>(queue->nvme().qid), event_text(event).c_str());
            return AfterAck{};
    }
}

int RdmaServer::drain_cm_events() {
    int handled = 0;
    while (auto event = channel_.wait(std::chrono::milliseconds(0))) {
        const AfterAck after = on_event(*event->get());
        event->reset();  // acknowledge before destroying its id
        if (after.remove != nullptr) {
            remove_queue(after.remove);
        }
        if (after.destroy != nullptr) {
            rdma_destroy_id(after.destroy);
        }
        ++handled;
    }
    return handled;
}

void RdmaServer::remove_queue(RdmaQueue* queue) {
    const auto it = std::find_if(queues_.begin(), queues_.end(),
                                 [&](const auto& q) { return q.get() == queue; });
    if (it == queues_.end()) {
        return;
    }
    QueueState& nvme = queue->nvme();
    const bool admin_connected = nvme.connected && nvme.qid == 0;
    const std::uint16_t cntlid = nvme.cntlid;
    core_.queue_disconnected(nvme);
    disconnecting_since_.erase(queue);
    std::unique_ptr<RdmaQueue> owned = std::move(*it);
    queues_.erase(it);
    owned.reset();
    if (admin_connected) {
        disconnect_controller(cntlid, "its admin queue is gone");
    }
}

void RdmaServer::disconnect_controller(std::uint16_t cntlid, const char* why) {
    for (auto& queue : queues_) {
        if (queue->nvme().connected && queue->nvme().cntlid == cntlid) {
            queue->begin_disconnect(why);
        }
    }
}

void RdmaServer::reap_stuck_queues(Clock::time_point now) {
    std::vector<RdmaQueue*> stuck;
    for (auto& queue : queues_) {
        if (queue->state() != RdmaQueue::State::disconnecting) {
            continue;
        }
        const auto [it, inserted] = disconnecting_since_.emplace(queue.get(), now);
        if (!inserted && now - it->second > kDisconnectGrace) {
            stuck.push_back(queue.get());
        }
    }
    for (RdmaQueue* queue : stuck) {
        queue->close();
        remove_queue(queue);
    }
}

void RdmaServer::drain_completion_channels() {
    for (auto& [context, device] : devices_) {
        drain_completion_channel(*device);
    }
}

void RdmaServer::sleep_until_work(Clock::time_point deadline) {
    for (auto& queue : queues_) {
        queue->arm_cq();
    }
    // A completion that landed before arming would not wake the channel.
    for (auto& queue : queues_) {
        if (queue->poll() > 0) {
            return;
        }
    }
    std::vector<pollfd> fds;
    fds.push_back(pollfd{channel_.fd(), POLLIN, 0});
    for (auto& [context, device] : devices_) {
        fds.push_back(pollfd{device->channel->fd, POLLIN, 0});
    }
    const auto now = Clock::now();
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min(deadline, now + kMaxSleep) - now);
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<std::int64_t>(wait.count(), 0)));
    drain_completion_channels();
}

void RdmaServer::run(const volatile std::sig_atomic_t& stop) {
    auto next_timers = Clock::now();
    auto idle_since = Clock::now();
    while (stop == 0) {
        int work = drain_cm_events();
        for (std::size_t i = 0; i < queues_.size(); ++i) {
            work += queues_[i]->poll();
            work += queues_[i]->deliver_async_events();
        }
        const auto now = Clock::now();
        auto next_due = Clock::time_point::max();
        for (auto& queue : queues_) {
            next_due = std::min(next_due, queue->flush_delayed(now));
        }
        if (faults_.drop_requested && !faults_.drop_done) {
            faults_.drop_done = true;
            ++stats_.faults_injected;
            std::fprintf(stderr,
                         "nvmeof-target: fault: drop-after=%llu: disconnecting all queues\n",
                         static_cast<unsigned long long>(*config_.faults.drop_after));
            for (auto& queue : queues_) {
                queue->begin_disconnect("drop-after fault");
            }
        }
        if (faults_.run_then_drop && faults_.run_then_drop->ran && !faults_.run_then_drop->done) {
            faults_.run_then_drop->done = true;
            drop_connections(0, "drop-after-run fault");
        }
        // Every pass, not on the timer: a fast host runs hundreds of commands
        // in one timer period, and the fault must land after the Nth.
        listener_faults_.run(faults_, stats_, core_, *this, now);
        if (now >= next_timers) {
            next_timers = now + kTimerPeriod;
            for (const std::uint16_t cntlid : core_.expired_controllers(now)) {
                disconnect_controller(cntlid, "keep-alive timeout");
            }
            reap_stuck_queues(now);
        }
        if (work > 0) {
            idle_since = now;
            continue;
        }
        if (now - idle_since < kIdleSpin) {
            continue;
        }
        sleep_until_work(std::min(next_due, next_timers));
    }
}

void RdmaServer::shutdown() {
    for (auto& queue : queues_) {
        queue->begin_disconnect("target stopping");
    }
    const auto deadline = Clock::now() + kShutdownWait;
    while (!queues_.empty() && Clock::now() < deadline) {
        if (drain_cm_events() == 0) {
            for (auto& queue : queues_) {
                queue->poll();
            }
            if (auto event = channel_.wait(std::chrono::milliseconds(10))) {
                const AfterAck after = on_event(*event->get());
                event->reset();
                if (after.remove != nullptr) {
                    remove_queue(after.remove);
                }
                if (after.destroy != nullptr) {
                    rdma_destroy_id(after.destroy);
                }
            }
        }
    }
    while (!queues_.empty()) {
        queues_.back()->close();
        remove_queue(queues_.back().get());
    }
}

}  // namespace nvmeof::target
