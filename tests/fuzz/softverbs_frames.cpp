// Fuzz target: softverbs' own wire protocol, as a peer on the TCP stream sends
// it: the incremental frame parser (engine_io.cpp), the CM messages and the
// responder (SEND, WRITE, READ with rkey/bounds checks), in the real engine
// and its progress thread. The application side is one passive RC QP with a
// 64 KiB memory region at a fixed address (so inputs can aim RDMA at it) and
// receives always posted.
// Input: [mode][stream bytes]. Mode bit 0 clear: this harness does the CM
// handshake (REQ, REP, RTU) first, so the bytes hit an established QP; set:
// the bytes are the whole stream, CM messages included.
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_bytes.hpp"
#include "wire.h"

using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::finding;
using nvmeof::fuzz::require;

namespace {

constexpr std::size_t kRegionBytes = 64 * 1024;
// Fixed, so inputs (and the seeds) can name it as raddr: in x86-64's high
// application range, clear of ASan's allocator (0x600000000000) and shadow.
constexpr std::uintptr_t kRegionAddress = 0x500000000000;
constexpr std::size_t kReceiveBytes = 1024;
constexpr int kReceives = 32;  // the first 32 KiB of the region
constexpr std::uint32_t kPrivateDataBytes = 32;
constexpr int kWaitMs = 2000;

struct Application {
    rdma_event_channel* channel = nullptr;
    rdma_cm_id* listener = nullptr;
    std::uint16_t port = 0;
    ibv_context* verbs = nullptr;
    ibv_pd* pd = nullptr;
    ibv_mr* mr = nullptr;
    std::uint8_t* region = nullptr;
};

Application& application() {
    static Application app = [] {
        Application a;
        a.channel = rdma_create_event_channel();
        require(a.channel != nullptr, "rdma_create_event_channel failed");
        const int flags = fcntl(a.channel->fd, F_GETFL);
        require(fcntl(a.channel->fd, F_SETFL, flags | O_NONBLOCK) == 0, "event channel O_NONBLOCK");
        require(rdma_create_id(a.channel, &a.listener, nullptr, RDMA_PS_TCP) == 0,
                "rdma_create_id failed");
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        require(rdma_bind_addr(a.listener, reinterpret_cast<sockaddr*>(&address)) == 0,
                "rdma_bind_addr failed");
        require(rdma_listen(a.listener, 16) == 0, "rdma_listen failed");
        a.port = ntohs(rdma_get_src_port(a.listener));
        void* fixed =
            mmap(reinterpret_cast<void*>(kRegionAddress), kRegionBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        require(fixed == reinterpret_cast<void*>(kRegionAddress),
                "the fixed region address is taken");
        a.region = static_cast<std::uint8_t*>(fixed);
        return a;
    }();
    return app;
}

// Memory region and PD, created once on the device the first connection uses.
void ensure_region(Application& app, ibv_context* verbs) {
    if (app.verbs == verbs) {
        return;
    }
    require(app.verbs == nullptr, "connections arrived on two devices");
    app.verbs = verbs;
    app.pd = ibv_alloc_pd(verbs);
    require(app.pd != nullptr, "ibv_alloc_pd failed");
    app.mr = ibv_reg_mr(app.pd, app.region, kRegionBytes,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    require(app.mr != nullptr, "ibv_reg_mr failed");
}

struct Connection {
    rdma_cm_id* id = nullptr;
    ibv_cq* cq = nullptr;
    bool has_qp = false;
    bool ended = false;  // its last CM event (DISCONNECTED, CONNECT_ERROR, ...) arrived
};

void post_receive(Application& app, ibv_qp* qp, std::uint64_t slot) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(app.region) + slot * kReceiveBytes;
    sge.length = kReceiveBytes;
    sge.lkey = app.mr->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    (void)ibv_post_recv(qp, &wr, &bad);
}

void accept_connection(Application& app, rdma_cm_id* id, std::vector<Connection>& connections) {
    ensure_region(app, id->verbs);
    Connection c;
    c.id = id;
    c.cq = ibv_create_cq(id->verbs, 4 * kReceives, nullptr, nullptr, 0);
    require(c.cq != nullptr, "ibv_create_cq failed");
    ibv_qp_init_attr attr{};
    attr.send_cq = c.cq;
    attr.recv_cq = c.cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 4;
    attr.cap.max_recv_wr = kReceives;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    if (rdma_create_qp(id, app.pd, &attr) == 0) {
        c.has_qp = true;
        for (int i = 0; i < kReceives; ++i) {
            post_receive(app, id->qp, static_cast<std::uint64_t>(i));
        }
        rdma_conn_param param{};
        param.responder_resources = 16;
        param.initiator_depth = 16;
        param.rnr_retry_count = 7;
        // Refused when the peer is already gone: no further event comes.
        c.ended = rdma_accept(id, &param) != 0;
    } else {
        (void)rdma_reject(id, nullptr, 0);
        c.ended = true;
    }
    connections.push_back(c);
}

// Handles every pending CM event; returns how many arrived.
int drain_events(Application& app, std::vector<Connection>& connections) {
    int events = 0;
    rdma_cm_event* event = nullptr;
    while (rdma_get_cm_event(app.channel, &event) == 0) {
        ++events;
        rdma_cm_id* id = event->id;
        const rdma_cm_event_type type = event->event;
        rdma_ack_cm_event(event);
        if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
            accept_connection(app, id, connections);
        } else if (type != RDMA_CM_EVENT_ESTABLISHED) {
            for (Connection& c : connections) {
                c.ended = c.ended || c.id == id;
            }
        }
    }
    return events;
}

// Completions re-post their receive, so the peer's SENDs keep finding one.
void poll_completions(Application& app, std::vector<Connection>& connections) {
    for (Connection& c : connections) {
        ibv_wc wc[16];
        int n = 0;
        while ((n = ibv_poll_cq(c.cq, 16, wc)) > 0) {
            for (int i = 0; i < n; ++i) {
                if ((wc[i].opcode & IBV_WC_RECV) != 0 && wc[i].status == IBV_WC_SUCCESS &&
                    c.has_qp && wc[i].wr_id < kReceives) {
                    post_receive(app, c.id->qp, wc[i].wr_id);
                }
            }
        }
    }
}

void tear_down(std::vector<Connection>& connections) {
    for (Connection& c : connections) {
        if (c.has_qp) {
            rdma_destroy_qp(c.id);
        }
        ibv_destroy_cq(c.cq);
        rdma_destroy_id(c.id);
    }
    connections.clear();
}

void send_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
        const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
        if (n <= 0) {
            return;  // the engine closed the stream: it refused something
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

// Runs the engine until it closed the stream (it read our EOF or refused the
// input), answering CM events and re-posting receives meanwhile.
void run_until_closed(Application& app, int fd, std::vector<Connection>& connections,
                      std::size_t stop_after_bytes = SIZE_MAX) {
    std::size_t received = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd fds[2] = {{fd, POLLIN, 0}, {app.channel->fd, POLLIN, 0}};
        (void)poll(fds, 2, 1);
        drain_events(app, connections);
        poll_completions(app, connections);
        if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            std::uint8_t sink[4096];
            const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
            if (n <= 0) {
                return;
            }
            received += static_cast<std::size_t>(n);
            if (received >= stop_after_bytes) {
                return;
            }
        }
    }
}

// A blocking connect() that a signal interrupts (libFuzzer's timers) goes on in
// the background: wait for it to finish instead of taking EINTR as a failure.
// Returns 0 or the errno of the failure.
int connect_despite_signals(int fd, const sockaddr_in& address) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
        return 0;
    }
    if (errno != EINTR) {
        return errno;
    }
    pollfd writable{fd, POLLOUT, 0};
    while (::poll(&writable, 1, -1) < 0) {
        if (errno != EINTR) {
            return errno;
        }
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        return errno;
    }
    return error;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Application& app = application();
    ByteReader in(data, size);
    const auto mode = in.take<std::uint8_t>();
    const std::span<const std::uint8_t> stream = in.rest();

    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    require(fd >= 0, "socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(app.port);
    if (const int error = connect_despite_signals(fd, address); error != 0) {
        const std::string why =
            std::string("cannot reach the softverbs listener: ") + std::strerror(error);
        finding(why.c_str());
    }
    std::vector<Connection> connections;

    if ((mode & 1) == 0) {
        // The handshake the active side of softverbs sends (cm_conn.cpp).
        sv::CmPayload request{};
        request.initiator_depth = 16;
        request.responder_resources = 16;
        request.retry_count = 7;
        request.rnr_retry_count = static_cast<std::uint8_t>(mode >> 5);  // < 7: RNR gives up
        request.qp_num = 1;
        request.private_len = kPrivateDataBytes;
        sv::WireHdr header{};
        header.op = static_cast<std::uint8_t>(sv::Op::kCmReq);
        header.len =
            static_cast<std::uint32_t>(offsetof(sv::CmPayload, private_data) + kPrivateDataBytes);
        send_all(fd, &header, sizeof header);
        send_all(fd, &request, header.len);
        // The REP: a header and its CM payload.
        const std::size_t rep_bytes = sizeof(sv::WireHdr) + offsetof(sv::CmPayload, private_data);
        run_until_closed(app, fd, connections, rep_bytes);
        sv::WireHdr rtu{};
        rtu.op = static_cast<std::uint8_t>(sv::Op::kCmRtu);
        send_all(fd, &rtu, sizeof rtu);
    }
    send_all(fd, stream.data(), stream.size());
    ::shutdown(fd, SHUT_WR);
    run_until_closed(app, fd, connections);
    // Closed by reset: thousands of connections a second in TIME_WAIT would
    // use up the ephemeral ports.
    const linger reset{1, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
    // Each connection's last event (DISCONNECTED) before its id goes away.
    const auto all_ended = [&] {
        return std::all_of(connections.begin(), connections.end(),
                           [](const Connection& c) { return c.ended; });
    };
    for (int ms = 0; ms < kWaitMs && !all_ended(); ++ms) {
        pollfd event_fd{app.channel->fd, POLLIN, 0};
        (void)poll(&event_fd, 1, 1);
        drain_events(app, connections);
    }
    // However the stream ended, the application must learn that its
    // connection is gone; a silent close leaves its QP and WRs hanging.
    require(all_ended(), "a connection ended without its last CM event (DISCONNECTED)");
    poll_completions(app, connections);
    tear_down(connections);
    return 0;
}
