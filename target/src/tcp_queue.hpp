// One NVMe queue on one NVMe/TCP connection: the PDU receive state machine
// (ICReq, CapsuleCmd, H2CData, H2CTermReq), the data path (in-capsule data,
// R2T then H2CData for the rest of host→controller data, C2HData for
// controller→host data), digests, and the C2HTermReq that ends a connection
// over a malformed PDU. The socket is non-blocking: the queue buffers what it
// cannot send yet, and stops taking PDUs in while too much waits to go out.
// Receiving and running commands: tcp_queue.cpp; sending: tcp_queue_send.cpp;
// the NVMe/TCP faults of --fault (reset, short or corrupted PDUs):
// tcp_queue_faults.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core.hpp"
#include "nvmeof/wire/tcp.hpp"
#include "queue_context.hpp"

namespace nvmeof::target {

// The Linux host sends admin commands up to 8 KiB of in-capsule data
// (NVME_TCP_ADMIN_CCSZ) whatever IOCCSZ says; IOCCSZ is the I/O queues' size.
inline constexpr std::uint32_t kTcpAdminInCapsuleBytes = 8192;

class TcpQueue {
  public:
    enum class State : std::uint8_t { live, closing, closed };

    // Owns `fd` (connected, non-blocking).
    TcpQueue(int fd, std::size_t port_index, std::uint16_t local_port, std::string local_address,
             QueueContext context);
    ~TcpQueue();
    TcpQueue(const TcpQueue&) = delete;
    TcpQueue& operator=(const TcpQueue&) = delete;

    int fd() const { return fd_; }
    State state() const { return state_; }
    QueueState& nvme() { return nvme_; }
    std::uint16_t local_port() const { return local_port_; }

    // Reads what the socket has and runs every whole PDU; returns the bytes read.
    std::size_t on_readable();
    // Runs PDUs already buffered (held back while output was piling up).
    int pump();
    // Sends what waits; returns the bytes sent.
    std::size_t flush();
    bool wants_read() const { return state_ == State::live && !output_full(); }
    bool wants_write() const { return out_.size() > out_sent_; }

    // Admin queue: completes held Asynchronous Event Requests with the events
    // the core has for its controller; returns how many.
    int deliver_async_events();
    // Sends responses and R2Ts whose delay (delay-ms, r2t-delay-ms) has
    // passed; returns the earliest still pending, or time_point::max().
    Clock::time_point flush_delayed(Clock::time_point now);
    // Stops taking commands, sends what waits, then closes (logged once).
    void begin_close(const char* why);
    // A closing connection whose peer does not read gets this long.
    bool close_overdue(Clock::time_point now) const;
    // Closes the socket: with a RST (SO_LINGER 0) where a fault reset it.
    void close();

  private:
    // One command from its capsule to its response.
    struct Command {
        wire::Sqe sqe{};
        DataPlan plan;
        Completion done;
        wire::Cqe cqe{};
        std::vector<std::uint8_t> buffer;  // the data, unless it was in the capsule
        std::uint16_t ttag = 0;
        std::uint32_t received = 0;  // host→controller bytes in through H2CData
        bool data_digest_error = false;
        Clock::time_point due{};
        // An NVMe/TCP fault for this I/O command's PDUs, until it fires.
        const FaultConfig::Tcp::CommandFault* fault = nullptr;
    };

    // One PDU at in_[in_start_...]; false when it is not all here yet.
    bool take_pdu();
    void on_ic_req(const std::uint8_t* pdu);
    void on_capsule(const std::uint8_t* pdu, const wire::TcpPduExpect& expect);
    void on_h2c_data(const std::uint8_t* pdu, const wire::TcpPduExpect& expect);
    void on_h2c_term_req(const std::uint8_t* pdu);
    bool data_digest_ok(const std::uint8_t* pdu, const wire::TcpPduExpect& expect) const;
    // C2HTermReq with the fault's FES/FEI and up to 128 bytes of the header
    // in error, one log line, then the connection closes.
    void terminate(const wire::TcpPduFault& fault, const std::uint8_t* header,
                   std::size_t header_bytes);

    void start(std::unique_ptr<Command> cmd, std::span<std::uint8_t> in_capsule,
               bool data_digest_error);
    void run(std::unique_ptr<Command> cmd, std::span<std::uint8_t> data);
    void finish(std::unique_ptr<Command> cmd, const Completion& done);
    void send_response(Command& cmd);
    // The one R2T for all of a write's data (never more than one outstanding
    // per command, within any MAXR2T).
    void send_r2t(std::unique_ptr<Command> cmd);
    // Appends one of cmd's PDUs (R2T, C2HData, CapsuleResp) and applies
    // cmd's fault to it where it is the PDU the fault acts on.
    void append_command_pdu(Command& cmd, const void* header, std::size_t hlen,
                            std::span<const std::uint8_t> data);
    // Appends a PDU: its header (and header digest), then its data at the
    // header's PDO (and data digest), as negotiated.
    void append_pdu(const void* header, std::size_t hlen, std::span<const std::uint8_t> data,
                    bool digests);
    bool output_full() const;
    std::string where() const;

    // NVMe/TCP faults (tcp_queue_faults.cpp): the fault of the Nth I/O
    // command, its effect on the PDU at out_[start...], reset-after, and the
    // RST that ends a connection (sent once what waits has gone out).
    void pick_fault(Command& cmd, std::uint64_t io_number) const;
    void inject(Command& cmd, std::size_t start, std::size_t hlen, bool with_data);
    void check_reset_after(std::uint16_t cid);
    void begin_reset();
    void log_fault(const std::string& spec, const std::string& what) const;

    int fd_ = -1;
    QueueContext ctx_;
    QueueState nvme_;
    std::uint16_t local_port_ = 0;
    State state_ = State::live;
    Clock::time_point closing_since_{};

    wire::TcpReceiveState receive_;  // what the next common header is checked against
    std::uint8_t hpda_ = 0;          // the host's alignment for C2HData

    std::vector<std::uint8_t> in_;
    std::size_t in_start_ = 0;  // bytes of in_ already taken as PDUs
    std::vector<std::uint8_t> out_;
    std::size_t out_sent_ = 0;
    bool muted_ = false;  // a fault cut the output: nothing more is appended
    bool reset_ = false;  // close with a RST

    std::map<std::uint16_t, std::unique_ptr<Command>> awaiting_data_;  // by TTAG
    std::uint16_t next_ttag_ = 0;
    std::deque<std::unique_ptr<Command>> held_async_events_;
    std::deque<std::unique_ptr<Command>> delayed_;
    std::deque<std::unique_ptr<Command>> delayed_r2ts_;  // r2t-delay-ms
    std::uint32_t in_flight_ = 0;                        // received and not yet answered
};

}  // namespace nvmeof::target
