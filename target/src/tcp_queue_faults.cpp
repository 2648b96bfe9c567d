// The NVMe/TCP faults of docs/target-cli.md on one queue: which I/O command a
// fault names, what it does to the first PDU it acts on (cut it short, break a
// header field or a digest, reset the connection), reset-after, and the RST.
#include "tcp_queue.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace nvmeof::target {
namespace {

using Action = FaultConfig::Tcp::Action;

// corrupt-pdu=N:type writes this PDU-Type: no NVMe/TCP PDU has it.
constexpr std::uint8_t kNoPduType = 0xFF;

// A PDU cut short keeps its common header, so the host learns the PLEN it will
// never get, and half of what PLEN promised.
std::size_t cut_point(std::size_t pdu_bytes) {
    return std::max(sizeof(wire::TcpCommonHeader), pdu_bytes / 2);
}

}  // namespace

void TcpQueue::pick_fault(Command& cmd, std::uint64_t io_number) const {
    for (const auto& fault : ctx_.config.faults.tcp.commands) {
        if (fault.nth == io_number) {
            cmd.fault = &fault;
            return;
        }
    }
}

void TcpQueue::log_fault(const std::string& spec, const std::string& what) const {
    std::fprintf(stderr, "nvmeof-target: fault: %s: %s: %s\n", spec.c_str(), where().c_str(),
                 what.c_str());
}

void TcpQueue::inject(Command& cmd, std::size_t start, std::size_t hlen, bool with_data) {
    const FaultConfig::Tcp::CommandFault& fault = *cmd.fault;
    std::uint8_t* pdu = out_.data() + start;
    const std::size_t bytes = out_.size() - start;
    const auto type = static_cast<wire::TcpPduType>(pdu[offsetof(wire::TcpCommonHeader, type)]);
    const std::string name(wire::tcp_pdu_type_name(pdu[offsetof(wire::TcpCommonHeader, type)]));
    const std::string spec = tcp_fault_spec(fault);
    const std::string cid = "CID " + std::to_string(cmd.sqe.command_id) + ": ";
    if (fault.action == Action::corrupt_ddgst && !with_data) {
        if (type == wire::TcpPduType::capsule_resp) {  // the command's last PDU
            cmd.fault = nullptr;
            log_fault(spec, cid + "not injected: the command sent no C2HData");
        }
        return;  // otherwise it waits for the command's first C2HData
    }
    cmd.fault = nullptr;
    // A header field changed after the header digest was computed gets a new
    // digest, so the host finds the field wrong and not the digest.
    const auto redigest = [&] {
        if (receive_.digests.header) {
            const std::uint32_t digest = wire::tcp_digest(pdu, hlen);
            std::memcpy(pdu + hlen, &digest, sizeof digest);
        }
    };
    std::string what;
    switch (fault.action) {
        case Action::reset_mid_transfer:
            if (type == wire::TcpPduType::c2h_data) {
                const std::size_t keep = cut_point(bytes);
                out_.resize(start + keep);
                what = name + " cut after " + std::to_string(keep) + " of its " +
                       std::to_string(bytes) + " bytes";
            } else if (type == wire::TcpPduType::r2t) {
                what = "R2T sent";
            } else {
                out_.resize(start);
                what = name + " not sent";
            }
            log_fault(spec, cid + what + ", then the connection reset (RST)");
            begin_reset();
            break;
        case Action::short_stall:
        case Action::short_close: {
            const std::size_t keep = cut_point(bytes);
            out_.resize(start + keep);
            muted_ = true;
            const bool close_it = fault.action == Action::short_close;
            log_fault(spec, cid + name + " of PLEN " + std::to_string(bytes) + " cut after " +
                                std::to_string(keep) + " bytes; " +
                                (close_it ? "closing the connection"
                                          : "nothing more is sent on this connection"));
            if (close_it) {
                begin_close(nullptr);
            }
            break;
        }
        case Action::corrupt_type:
            pdu[offsetof(wire::TcpCommonHeader, type)] = kNoPduType;
            redigest();
            log_fault(spec, cid + name + " sent with PDU-Type 0xff");
            break;
        case Action::corrupt_hlen:
            ++pdu[offsetof(wire::TcpCommonHeader, hlen)];
            redigest();
            log_fault(spec, cid + name + " sent with HLEN " + std::to_string(hlen + 1) +
                                " instead of " + std::to_string(hlen));
            break;
        case Action::corrupt_hdgst:
            if (!receive_.digests.header) {
                log_fault(spec, cid + "not injected: header digests are off on this connection");
                return;
            }
            pdu[hlen] ^= 1;  // bit 0 of HDGST (little endian)
            log_fault(spec, cid + name + " sent with a wrong HDGST");
            break;
        case Action::corrupt_ddgst:
            if (!receive_.digests.data) {
                log_fault(spec, cid + "not injected: data digests are off on this connection");
                return;
            }
            pdu[bytes - wire::kTcpDigestBytes] ^= 1;  // bit 0 of DDGST
            log_fault(spec, cid + name + " sent with a wrong DDGST");
            break;
    }
    ++ctx_.stats.faults_injected;
    ++ctx_.stats.tcp_faults;
}

void TcpQueue::check_reset_after(std::uint16_t cid) {
    for (const std::uint64_t nth : ctx_.config.faults.tcp.reset_after) {
        if (nth == ctx_.faults.commands && state_ == State::live) {
            log_fault("reset-after=" + std::to_string(nth),
                      "CID " + std::to_string(cid) + ": command " + std::to_string(nth) +
                          " taken; what was sent for it goes out, then the connection is reset "
                          "(RST)");
            ++ctx_.stats.faults_injected;
            ++ctx_.stats.tcp_faults;
            begin_reset();
            return;
        }
    }
}

void TcpQueue::begin_reset() {
    muted_ = true;
    reset_ = true;
    if (state_ == State::live) {
        state_ = State::closing;
        closing_since_ = Clock::now();
    }
    flush();  // closes, with the RST, once out_ has gone
}

}  // namespace nvmeof::target
