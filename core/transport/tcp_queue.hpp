// TcpQueue: one NVMe queue over one TCP connection (NVMe/TCP transport
// specification 1.0; internal). The TCP backend of a QueueCore
// (queue_core.hpp), as RdmaQueue is the RDMA one: the core keeps IDs,
// records, deadlines, the MDTS split and replay; this class carries the
// capsules as PDUs (nvmeof/wire/tcp.hpp) over a non-blocking socket
// (socket/stream_socket.hpp) and implements the core's transport operations.
//
// Setup (tcp_queue_setup.cpp): connect the socket, ICReq/ICResp (HPDA 0,
// MAXR2T 0, the digests asked; CPDA and MAXH2CDATA answered). The data path,
// with no allocation, no blocking and no exception per I/O:
//   send side (tcp_queue_output.cpp, inline parts in tcp_queue_command.hpp):
//     by command ID, a CapsuleCmd PDU buffer whose SQE is sqe(cid), filled in
//     place by the core. A command handed to the transport becomes an entry
//     of the output ring (its header, padding to CPDA, in-capsule data
//     gathered straight from the caller's memory, digests); every commit
//     sends what the ring holds with one sendmsg. What the kernel did not
//     take stays in the ring, the caller's memory still referenced (it is
//     the caller's until the command completes, which cannot happen before
//     its bytes left), and goes on with the next commit or poll. Writes
//     larger than the capsule take, and every controller's R2T, are served
//     by H2CData PDUs of at most MAXH2CDATA, made as the ring has room.
//   receive side (tcp_queue_receive.cpp): one recvmsg per poll (none while no command is out) into
//   a 64 KiB
//     receive buffer and, while a C2HData's data is due, straight into the
//     caller's memory first; every whole PDU received is handled in one pass
//     (CapsuleResp and C2HData with SUCCESS complete commands, R2T starts
//     H2CData, C2HTermReq or anything malformed ends the connection).
//   the core's steps instantiated (tcp_queue_datapath.cpp); commands built
//     off the common path (tcp_queue_dataless.cpp: flush, write zeroes,
//     deallocate, and a low-level command's keyed SGL translated for TCP).
// Failure (tcp_queue_recovery.cpp): the socket is shut down and the output
// dropped before the core fails or holds what is outstanding, so no memory
// of a caller is read or written once fail() returns.
#pragma once

#include <sys/uio.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/namespace_ref.hpp"
#include "nvmeof/base/response.hpp"
#include "nvmeof/base/transfer.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "socket/stream_socket.hpp"
#include "transport/host_queue.hpp"
#include "transport/invariant.hpp"
#include "transport/peer_address.hpp"

namespace nvmeof::detail {

// What the host asks of every NVMe/TCP connection of a controller.
struct TcpSettings {
    wire::TcpDigests digests;  // asked for in ICReq (Options::header_digest, data_digest)
};

class TcpQueue final : public HostQueue {
  public:
    // The NVMe/TCP admin queue's in-capsule data size (ICD of 8 KiB, fixed
    // by the transport specification).
    static constexpr std::uint32_t kAdminInCapsuleBytes = 8192;

    TcpQueue(const QueueConfig& config, const PeerAddress& peer, const TcpSettings& settings);
    ~TcpQueue() override;

    // Connects the socket and exchanges ICReq/ICResp within the config's
    // connect deadline; throws ConnectError naming the step. Sizes the core
    // (size_for) on the first connect. Writes of at most `in_capsule_bytes`
    // travel in the capsule (kAdminInCapsuleBytes on the admin queue, IOCCSZ's
    // on I/O queues), larger ones are sent on the controller's R2Ts.
    void connect(std::uint64_t max_transfer_bytes, std::uint32_t in_capsule_bytes);
    // The socket, for idle waits (readable: something to poll); -1 when closed.
    int socket_fd() const noexcept;
    // What ICResp granted (valid once connected).
    wire::TcpDigests digests() const noexcept;
    std::uint32_t max_h2c_data() const noexcept;

    // --- HostQueue ---
    SubmitResult submit(const NamespaceRef& ns, const Transfer& transfer,
                        Post post) noexcept override;
    SubmitResult submit_transfer(const NamespaceRef& ns, const Transfer& transfer, bool internal,
                                 std::uint32_t* tid, Post post = Post::now) noexcept override;
    std::size_t take_completions(std::span<Completion> out, std::size_t& failed) noexcept override;
    void commit() noexcept override;
    std::size_t deferred() const noexcept override;
    int poll_cq() noexcept override;
    std::uint16_t submit_command(const wire::Sqe& command,
                                 Deadline deadline = Deadline::request_timeout) override;
    std::size_t replay_held() noexcept override;
    bool arm_if_quiet() noexcept override;
    void retire_sends() noexcept override;
    void fail(TransportErrc code, int sys_errno, const char* why) noexcept override;
    void disconnect(bool wait_for_peer = true) noexcept override;
    void release() noexcept override;
    void reopen(const PeerAddress& peer, const ConnectDeadline& deadline,
                std::uint16_t cntlid) override;
    std::string local_address() const override;
    TransportCounters transport_counters() const noexcept override;
    void check_counters() const noexcept override;

    // --- the transport operations (QueueBackend, queue_core.hpp) ---
    // Inline ones in tcp_queue_command.hpp. Every command ID has its place in
    // the output ring, so the ring never refuses a command: send_room() is
    // the command slots not queued for sending (never fewer than the free
    // command IDs).
    std::uint32_t send_room() const noexcept { return command_slots_ - capsules_queued_; }
    // (deferred(): the commands built and not yet handed to the output ring,
    // Post::deferred; commit() hands them over; poll_cq(), fail(): above.)
    // Commands built since connect (0 again after a reconnect: reset_for_reopen).
    std::uint32_t commands_built() const noexcept { return commands_built_; }
    wire::Sqe& sqe(std::uint16_t cid) noexcept { return commands_[cid].capsule.pdu.sqe; }
    // A read's data comes in C2HData; a write's or compare's rides in the
    // capsule up to the in-capsule limit, else waits for the controller's R2Ts.
    [[gnu::always_inline]] inline void set_data(std::uint16_t cid, wire::Sqe& sqe,
                                                std::uint64_t address, std::uint32_t bytes,
                                                std::uint32_t rkey, std::uint32_t lkey) noexcept;
    // A caller's low-level command (tcp_queue_dataless.cpp): its keyed SGL
    // names memory of this process, which the queue sends or receives itself.
    void set_no_data(std::uint16_t cid) noexcept;
    // Flush, write zeroes or deallocate (its range in the cid's DSM buffer, in
    // the capsule).
    void build_dataless(std::uint16_t cid, Op op, std::uint32_t nsid, std::uint64_t slba,
                        std::uint64_t blocks) noexcept;
    // A replayed in-capsule write whose reconnected controller takes less in
    // the capsule waits for R2Ts instead.
    void rebuild_as_built(std::uint16_t cid) noexcept;
    [[gnu::always_inline]] inline SubmitResult send(std::uint16_t cid, Post post) noexcept;
    // Queues cid's capsule behind those deferred.
    [[gnu::always_inline]] inline void defer(std::uint16_t cid) noexcept;

    // System calls and PDUs over the queue's life (every connection), for
    // "system calls per I/O".
    struct Counters {
        std::uint64_t sends = 0;          // sendmsg calls
        std::uint64_t partial_sends = 0;  // of those, the kernel took less than offered
        std::uint64_t receives = 0;       // recvmsg calls
        std::uint64_t pdus_sent = 0;
        std::uint64_t pdus_received = 0;
        std::uint64_t data_received_direct = 0;  // C2HData bytes received in the caller's memory
        std::uint64_t data_copied = 0;           // C2HData bytes copied out of the receive buffer
    };
    const Counters& counters() const noexcept { return counters_; }

    // The work of one poll: at most this many completions; what else has
    // arrived waits in the receive buffer for the next.
    static constexpr int kPollBatch = 64;
    static constexpr std::size_t kReceiveBytes = 64 * 1024;
    // Of it, what a receive that lands a C2HData's rest in place offers after
    // that rest (the next PDU headers, and small PDUs whole), and all that a
    // receive takes while large C2HData PDUs are coming.
    static constexpr std::size_t kReceiveTail = 4 * 1024;
    static_assert(kReceiveTail >= wire::kTcpTermReqMaxLength && kReceiveTail <= kReceiveBytes);
    // A C2HData's rest shorter than this is not received in place but copied
    // with the headers after it: a recvmsg costs more than copying 16 KiB,
    // and one in place takes at most kReceiveTail bytes besides.
    static constexpr std::uint32_t kDirectReceiveMin = 16 * 1024;
    static_assert(kDirectReceiveMin < kReceiveBytes);
    // H2CData PDUs made ahead of the socket (their data is the caller's: the
    // headers are what they cost).
    static constexpr std::uint32_t kMaxH2cInRing = 64;
    // iovecs per sendmsg: every PDU is at most four (header, pad, data, digest).
    static constexpr std::size_t kMaxIovecs = 256;
    static constexpr std::chrono::milliseconds kMaxDrainWait{5000};

  private:
    // What a command's data does on the wire.
    enum class Flow : std::uint8_t {
        none,        // no data
        in_capsule,  // host to controller, after the capsule's header
        r2t,         // host to controller, in H2CData PDUs the controller asks for
        c2h,         // controller to host, in C2HData PDUs
    };
    // A PDU header and its digest, contiguous: one iovec.
    struct CapsuleHeader {
        wire::TcpCapsuleCmd pdu;
        std::uint32_t digest;  // HDGST, when negotiated
    };
    struct DataHeader {
        wire::TcpDataHeader pdu;
        std::uint32_t digest;
    };
    // By cid: the capsule and what its data does, on cache lines of its own.
    struct alignas(64) Command {
        CapsuleHeader capsule{};
        std::uint64_t address = 0;  // the data in this process (caller's, Connect data, DSM range)
        std::uint32_t bytes = 0;
        // C2H: bytes placed so far; R2T: bytes asked for by R2Ts so far.
        std::uint32_t done = 0;
        // The R2T being served: the next byte to queue as H2CData, its end, its tag.
        std::uint32_t h2c_next = 0;
        std::uint32_t h2c_end = 0;
        std::uint16_t ttag = 0;
        std::uint16_t out_pdus = 0;  // output ring entries that point at it
        Flow flow = Flow::none;
        bool armed = false;         // in the output ring or sent, not yet answered
        bool serving_r2t = false;   // an R2T whose H2CData is not all queued yet
        bool digest_error = false;  // a C2HData's DDGST did not match: it fails
    };
    // One PDU in the output ring.
    struct OutPdu {
        const void* header = nullptr;  // with its digest
        const void* data = nullptr;
        std::uint32_t header_bytes = 0;
        std::uint32_t pad_bytes = 0;  // to PDO
        std::uint32_t data_bytes = 0;
        std::uint32_t digest = 0;  // DDGST
        std::uint16_t cid = 0;
        std::uint8_t digest_bytes = 0;
        bool h2c = false;  // an H2CData (its header below), else the cid's capsule
        DataHeader h2c_header{};
        std::uint64_t bytes() const noexcept {
            return std::uint64_t{header_bytes} + pad_bytes + data_bytes + digest_bytes;
        }
    };
    enum class ReceiveState : std::uint8_t { header, pad, data, digest };

    // --- setup (tcp_queue_setup.cpp) ---
    void allocate();
    void open_socket();
    // ICReq out, ICResp in and checked; throws ConnectError naming the field.
    void initialize_connection();
    void send_all(const void* data, std::size_t bytes, const std::string& step);
    void receive_exact(void* data, std::size_t bytes, const std::string& step);
    // A connection's fresh state: empty rings and buffers, counts from 0.
    void reset_connection() noexcept;
    // Waits for the output to leave (bounded by `deadline`); false if it did not.
    bool drain_output(Clock::time_point deadline) noexcept;

    // --- the send side (tcp_queue_output.cpp, inline parts in tcp_queue_command.hpp) ---
    // A write's data path: in the capsule if it fits, else by R2T.
    [[gnu::always_inline]] inline void route_to_controller(Command& c, wire::Sqe& sqe) noexcept;
    // Command cid's capsule PDU into the output ring (its header finished now).
    [[gnu::always_inline]] inline void queue_capsule(std::uint16_t cid) noexcept;
    OutPdu& ring_push() noexcept {
        NVMEOF_INVARIANT(out_count_ <= out_mask_, "the output ring overflows");
        OutPdu& e = out_[(out_head_ + out_count_) & out_mask_];
        ++out_count_;
        return e;
    }
    bool output_pending() const noexcept { return out_count_ != 0 || h2c_waiting_ != 0; }
    // H2CData PDUs for the R2Ts being served, as far as the ring has room.
    void make_h2c_data() noexcept;
    // One sendmsg of what the ring holds (H2CData made first); fails the queue
    // if the connection is gone.
    void push_output() noexcept;
    // iovecs of the ring from its unsent head, at most kMaxIovecs; the bytes.
    std::uint64_t gather(iovec* iov, std::size_t& count) const noexcept;
    void retire_output(std::uint64_t bytes) noexcept;

    // --- the receive side (tcp_queue_receive.cpp) ---
    // One recvmsg into the receive buffer (and the caller's memory first while
    // a C2HData's data is due); false when nothing came in.
    bool receive() noexcept;
    // Before a live queue is closed: the answers already received complete
    // their requests, so that none is held and re-sent after it was answered
    // (on a zoned namespace the write pointer would refuse the second write).
    // Nothing is sent; a broken PDU or the connection's end fails the queue.
    void take_answers_in() noexcept;
    // Handles the whole PDUs received, up to `budget` completions; returns how
    // many it completed.
    int take_pdus(int budget) noexcept;
    int on_capsule_resp(const std::uint8_t* pdu) noexcept;
    void on_r2t(const std::uint8_t* pdu) noexcept;
    void on_c2h_data(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) noexcept;
    void on_c2h_term_req(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) noexcept;
    // Data of the C2HData being received, landed at rx_dest_.
    void placed(std::uint32_t bytes) noexcept;
    // The C2HData ended: its digest, and SUCCESS completes its command.
    int end_c2h_data() noexcept;
    // A command's answer (CapsuleResp, or C2HData with SUCCESS); false when
    // the queue failed.
    bool complete(std::uint16_t cid, wire::Cqe cqe) noexcept;
    // A malformed PDU: an H2CTermReq if the stream allows, then the queue
    // fails with protocol_error and one line naming the field.
    void protocol_fault(const wire::TcpPduFault& fault, const std::uint8_t* pdu,
                        std::size_t available) noexcept;
    void send_term_req(const wire::TcpPduFault& fault, const std::uint8_t* pdu,
                       std::size_t header_bytes) noexcept;

    // --- off the data path ---
    [[gnu::noinline]] SubmitResult submit_with_metadata(const NamespaceRef& ns, const Transfer& t,
                                                        Post post, std::uint32_t* tid) noexcept;
    void drop_output() noexcept;
    void check_transport_counters() const noexcept;  // tcp_queue_recovery.cpp

    PeerAddress peer_;
    TcpSettings settings_;
    sockets::StreamSocket socket_;
    Counters counters_;

    // What the connection negotiated (ICResp).
    wire::TcpDigests digests_;
    std::uint8_t cpda_ = 0;
    std::uint32_t max_h2c_data_ = 0;
    std::uint32_t in_capsule_limit_ = 0;
    // A capsule's common header without and with in-capsule data (PLEN is the
    // data's), worked out at connect.
    wire::TcpCommonHeader capsule_ch_{};
    wire::TcpCommonHeader capsule_data_ch_{};

    // By cid (the core's command IDs, the set-up command's last).
    std::unique_ptr<Command[]> commands_;
    std::unique_ptr<wire::DsmRange[]> dsm_ranges_;  // deallocate's range, in the capsule
    std::uint32_t command_slots_ = 0;
    std::uint32_t capsules_queued_ = 0;  // deferred or in the ring, not yet all sent
    std::uint32_t commands_built_ = 0;
    std::unique_ptr<std::uint16_t[]> deferred_cids_;
    std::uint32_t deferred_count_ = 0;

    // The output ring (a power of two entries: every cid's capsule and
    // kMaxH2cInRing H2CData PDUs).
    std::unique_ptr<OutPdu[]> out_;
    std::uint32_t out_mask_ = 0;
    std::uint32_t out_head_ = 0;
    std::uint32_t out_count_ = 0;
    std::uint64_t out_head_sent_ = 0;  // bytes of the head entry the kernel took
    std::uint32_t h2c_in_ring_ = 0;
    // Commands with an R2T whose H2CData is not all in the ring yet (FIFO).
    std::unique_ptr<std::uint16_t[]> h2c_queue_;
    std::uint32_t h2c_mask_ = 0;
    std::uint32_t h2c_head_ = 0;
    std::uint32_t h2c_waiting_ = 0;
    std::array<iovec, kMaxIovecs> iov_{};

    // The receive side.
    wire::TcpReceiveState receive_state_;
    std::unique_ptr<std::uint8_t[]> rx_;
    std::size_t rx_begin_ = 0;  // the first byte not yet handled
    std::size_t rx_end_ = 0;
    bool rx_ready_ = false;  // a poll's budget ran out with bytes not yet handled
    ReceiveState rx_state_ = ReceiveState::header;
    // The C2HData being received.
    std::uint16_t rx_cid_ = 0;
    bool rx_success_ = false;
    bool rx_data_digest_ = false;
    std::uint8_t* rx_dest_ = nullptr;
    std::uint32_t rx_left_ = 0;  // data still to come
    std::uint32_t rx_pad_left_ = 0;
    std::uint32_t rx_crc_ = 0;
    std::uint32_t rx_digest_got_ = 0;
    std::array<std::uint8_t, wire::kTcpDigestBytes> rx_digest_{};
    // The last C2HData carried at least kDirectReceiveMin bytes: the next
    // receive between PDUs takes at most kReceiveTail bytes, so that the next
    // such PDU's data lands in place rather than in the receive buffer.
    bool rx_large_data_ = false;
    // The line a failure logs (a C2HTermReq's or a malformed PDU's).
    std::array<char, 256> fail_text_{};
};

}  // namespace nvmeof::detail
