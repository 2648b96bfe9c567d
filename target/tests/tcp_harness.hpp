// The harness of the nvmeof-target NVMe/TCP tests: the target binary run as a
// subprocess (its stdout's "listening on" line, its stderr and --stats in
// files), and a raw NVMe/TCP host on one loopback connection that sends PDUs
// as built (or broken on purpose) and reads the target's, checking their
// digests.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/discovery.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/identify.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/registers.hpp"
#include "nvmeof/wire/sgl.hpp"
#include "nvmeof/wire/status.hpp"
#include "nvmeof/wire/tcp.hpp"

extern char** environ;

namespace tcp_test {

using namespace nvmeof;
using namespace std::chrono_literals;
using wire::TcpPduType;

inline constexpr char kSubnqn[] = "nqn.2024-01.io.nvmeof:tcp";
inline constexpr char kHostnqn[] = "nqn.2014-08.org.nvmexpress:uuid:tcp-host";
inline constexpr std::uint32_t kLba = 512;
inline constexpr auto kTimeout = 10s;

// The target binary, its stdout's "listening on" line, its stderr in a file.
class Target {
  public:
    explicit Target(const std::vector<std::string>& extra = {}) {
        const char* binary = std::getenv("NVMEOF_TARGET");
        if (binary == nullptr) {
            throw std::runtime_error("NVMEOF_TARGET is not set");
        }
        char log_template[] = "/tmp/tcp_target_test_XXXXXX";
        const int log_fd = mkstemp(log_template);
        log_path_ = log_template;
        stats_path_ = log_path_ + ".stats";
        int out[2];
        if (log_fd < 0 || pipe(out) != 0) {
            throw std::runtime_error("mkstemp/pipe");
        }
        std::vector<std::string> args{
            binary,    "--transport", "tcp",         "--listen", "127.0.0.1",   "--port", "0",
            "--stats", stats_path_,   "--subsystem", kSubnqn,    "--namespace", "ram:1M"};
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
        posix_spawn_file_actions_addclose(&actions, out[0]);
        if (posix_spawn(&pid_, binary, &actions, nullptr, argv.data(), environ) != 0) {
            throw std::runtime_error("posix_spawn");
        }
        posix_spawn_file_actions_destroy(&actions);
        close(out[1]);
        close(log_fd);
        std::string line;
        pollfd pfd{out[0], POLLIN, 0};
        while (line.find('\n') == std::string::npos && poll(&pfd, 1, 10000) > 0) {
            char buffer[256];
            const ssize_t n = read(out[0], buffer, sizeof buffer);
            if (n <= 0) {
                break;
            }
            line.append(buffer, static_cast<std::size_t>(n));
        }
        close(out[0]);
        const auto colon = line.rfind(':');
        if (line.rfind("listening on 127.0.0.1:", 0) != 0 || colon == std::string::npos) {
            throw std::runtime_error("no listening line: " + line + log());
        }
        port_ = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
    }
    ~Target() {
        stop();
        std::remove(log_path_.c_str());
        std::remove(stats_path_.c_str());
    }
    // SIGTERM and wait; returns the exit status.
    int stop() {
        if (pid_ <= 0) {
            return status_;
        }
        kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        return status_;
    }
    std::uint16_t port() const { return port_; }
    std::string log() const {
        std::ifstream file(log_path_);
        std::stringstream text;
        text << file.rdbuf();
        return text.str();
    }
    std::string stats() const {
        std::ifstream file(stats_path_);
        std::stringstream text;
        text << file.rdbuf();
        return text.str();
    }
    bool log_has(const std::string& needle) const {
        const auto deadline = std::chrono::steady_clock::now() + kTimeout;
        while (std::chrono::steady_clock::now() < deadline) {
            if (log().find(needle) != std::string::npos) {
                return true;
            }
            std::this_thread::sleep_for(10ms);
        }
        return false;
    }

  private:
    pid_t pid_ = -1;
    int status_ = 0;
    std::uint16_t port_ = 0;
    std::string log_path_;
    std::string stats_path_;
};

struct Pdu {
    wire::TcpCommonHeader ch{};
    std::vector<std::uint8_t> header;  // HLEN bytes
    std::vector<std::uint8_t> data;
    TcpPduType type() const { return static_cast<TcpPduType>(ch.type); }
    template <typename T>
    T as() const {
        T value{};
        std::memcpy(&value, header.data(), std::min(sizeof value, header.size()));
        return value;
    }
};

inline wire::SglDescriptor transport_sgl(std::uint32_t length) {
    wire::SglDescriptor d{};
    wire::store_le<std::uint32_t>(d.body, length);
    d.identifier = wire::sgl_identifier(wire::SglType::transport_data_block,
                                        wire::SglSubtype::transport_specific);
    return d;
}

inline std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint8_t seed) {
    std::vector<std::uint8_t> data(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        data[i] = static_cast<std::uint8_t>(i * 7 + seed + i / 4096);
    }
    return data;
}

// What one command brought back.
struct Exchange {
    wire::Cqe cqe{};
    bool answered = false;  // a CapsuleResp, or C2HData with SUCCESS
    std::vector<std::uint8_t> data;
    int r2ts = 0;
    int c2h_pdus = 0;
    bool success_flag = false;
    wire::Status status() const { return wire::Status::from_cqe_field(cqe.status); }
};

// A raw NVMe/TCP host on one connection.
class Host {
  public:
    Host(std::uint16_t port, wire::TcpDigests digests = {}, std::uint8_t hpda = 0,
         bool initialize = true)
        : digests_(digests), hpda_(hpda) {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            throw std::runtime_error("connect");
        }
        const int one = 1;
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (initialize) {
            const wire::TcpIcReq req = wire::tcp_ic_req(hpda, digests, 0);
            send_raw(&req, sizeof req);
            auto pdu = read_pdu();
            if (!pdu || pdu->type() != TcpPduType::ic_resp) {
                throw std::runtime_error("no ICResp");
            }
            icresp_ = pdu->as<wire::TcpIcResp>();
        }
    }
    ~Host() { close(fd_); }

    const wire::TcpIcResp& icresp() const { return icresp_; }
    wire::TcpDigests digests() const { return digests_; }

    void send_raw(const void* bytes, std::size_t length) {
        ASSERT_EQ(send(fd_, bytes, length, MSG_NOSIGNAL), static_cast<ssize_t>(length));
    }

    // Header (+HDGST) and data at the header's PDO (+DDGST); `bad_*` sends a
    // wrong digest.
    std::vector<std::uint8_t> encode(const void* header, std::size_t hlen,
                                     std::span<const std::uint8_t> data, bool bad_hdgst = false,
                                     bool bad_ddgst = false) const {
        const auto* h = static_cast<const std::uint8_t*>(header);
        std::vector<std::uint8_t> out(h, h + hlen);
        auto put = [&](std::uint32_t v) {
            const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
            out.insert(out.end(), b, b + 4);
        };
        if (digests_.header) {
            put(wire::tcp_digest(h, hlen) ^ (bad_hdgst ? 1u : 0u));
        }
        if (!data.empty()) {
            out.resize(static_cast<const wire::TcpCommonHeader*>(header)->pdo, 0);
            out.insert(out.end(), data.begin(), data.end());
            if (digests_.data) {
                put(wire::tcp_digest(data.data(), data.size()) ^ (bad_ddgst ? 1u : 0u));
            }
        }
        return out;
    }

    void send_capsule(const wire::Sqe& sqe, std::span<const std::uint8_t> in_capsule = {},
                      bool bad_hdgst = false, bool bad_ddgst = false) {
        const wire::TcpCapsuleCmd cmd = wire::tcp_capsule_cmd(
            sqe, static_cast<std::uint32_t>(in_capsule.size()), digests_, icresp_.cpda);
        const auto bytes = encode(&cmd, sizeof cmd, in_capsule, bad_hdgst, bad_ddgst);
        send_raw(bytes.data(), bytes.size());
    }

    void send_h2c(std::uint16_t cccid, std::uint16_t ttag, std::uint32_t datao,
                  std::span<const std::uint8_t> data, bool last) {
        const wire::TcpDataHeader h =
            wire::tcp_h2c_data(cccid, ttag, datao, static_cast<std::uint32_t>(data.size()), last,
                               digests_, icresp_.cpda);
        const auto bytes = encode(&h, sizeof h, data);
        send_raw(bytes.data(), bytes.size());
    }

    bool read_exact(void* into, std::size_t length, std::chrono::milliseconds timeout = kTimeout) {
        auto* p = static_cast<std::uint8_t*>(into);
        std::size_t got = 0;
        while (got < length) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) {
                return false;
            }
            const ssize_t n = recv(fd_, p + got, length - got, 0);
            if (n <= 0) {
                return false;
            }
            got += static_cast<std::size_t>(n);
        }
        return true;
    }

    // The next PDU with its digests checked; nullopt on EOF or timeout.
    std::optional<Pdu> read_pdu(std::chrono::milliseconds timeout = kTimeout) {
        Pdu pdu;
        if (!read_exact(&pdu.ch, sizeof pdu.ch, timeout)) {
            return std::nullopt;
        }
        std::vector<std::uint8_t> rest(pdu.ch.plen - sizeof pdu.ch);
        if (!read_exact(rest.data(), rest.size(), timeout)) {
            return std::nullopt;
        }
        std::vector<std::uint8_t> whole(sizeof pdu.ch);
        std::memcpy(whole.data(), &pdu.ch, sizeof pdu.ch);
        whole.insert(whole.end(), rest.begin(), rest.end());
        pdu.header.assign(whole.begin(), whole.begin() + pdu.ch.hlen);
        const bool hdgst = (pdu.ch.flags & wire::kTcpFlagHeaderDigest) != 0;
        const bool ddgst = (pdu.ch.flags & wire::kTcpFlagDataDigest) != 0;
        if (hdgst) {
            std::uint32_t received = 0;
            std::memcpy(&received, whole.data() + pdu.ch.hlen, 4);
            EXPECT_EQ(received, wire::tcp_digest(whole.data(), pdu.ch.hlen)) << "HDGST";
        }
        if (pdu.type() == TcpPduType::c2h_term_req) {
            pdu.data.assign(whole.begin() + pdu.ch.hlen, whole.end());
        } else if (pdu.ch.pdo != 0) {
            const std::size_t end = whole.size() - (ddgst ? 4 : 0);
            pdu.data.assign(whole.begin() + pdu.ch.pdo, whole.begin() + end);
            if (ddgst) {
                std::uint32_t received = 0;
                std::memcpy(&received, whole.data() + end, 4);
                EXPECT_EQ(received, wire::tcp_digest(pdu.data.data(), pdu.data.size())) << "DDGST";
            }
            EXPECT_EQ(pdu.ch.pdo % ((hpda_ + 1u) * 4), 0u) << "PDO ignores HPDA";
        }
        return pdu;
    }

    // True when the target closed the connection (EOF) within the timeout.
    bool closed_by_target() {
        std::uint8_t byte = 0;
        pollfd pfd{fd_, POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(std::chrono::milliseconds(kTimeout).count())) <= 0) {
            return false;
        }
        return recv(fd_, &byte, 1, 0) <= 0;
    }

    // One PDU as it came, by its PLEN, nothing checked; nullopt on EOF or timeout.
    std::optional<std::vector<std::uint8_t>> read_raw_pdu() {
        wire::TcpCommonHeader ch{};
        if (!read_exact(&ch, sizeof ch)) {
            return std::nullopt;
        }
        std::vector<std::uint8_t> bytes(std::max<std::size_t>(ch.plen, sizeof ch));
        std::memcpy(bytes.data(), &ch, sizeof ch);
        if (!read_exact(bytes.data() + sizeof ch, bytes.size() - sizeof ch)) {
            return std::nullopt;
        }
        return bytes;
    }

    // Everything the target sends until it closes the connection, or until
    // nothing came for `quiet`: the bytes, and how it ended.
    struct Drained {
        std::vector<std::uint8_t> bytes;
        bool eof = false;  // a FIN
        int error = 0;     // recv's errno: ECONNRESET for a RST
        bool open() const { return !eof && error == 0; }
    };
    Drained drain(std::chrono::milliseconds quiet = kTimeout) {
        Drained out;
        for (;;) {
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, static_cast<int>(quiet.count())) <= 0) {
                return out;
            }
            std::uint8_t buffer[4096];
            const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
            if (n == 0) {
                out.eof = true;
                return out;
            }
            if (n < 0) {
                out.error = errno;
                return out;
            }
            out.bytes.insert(out.bytes.end(), buffer, buffer + n);
        }
    }

    // Sends one command and answers R2Ts from `write` (H2CData of at most
    // `h2c_chunk` bytes) until its response.
    Exchange run(wire::Sqe sqe, std::span<const std::uint8_t> write = {}, bool in_capsule = false,
                 std::uint32_t h2c_chunk = 16384) {
        sqe.command_id = next_cid_++;
        Exchange x;
        if (in_capsule) {
            send_capsule(sqe, write);
        } else {
            send_capsule(sqe);
        }
        while (auto pdu = read_pdu()) {
            if (pdu->type() == TcpPduType::r2t) {
                const auto r2t = pdu->as<wire::TcpR2t>();
                EXPECT_EQ(r2t.cccid, sqe.command_id);
                ++x.r2ts;
                for (std::uint32_t off = 0; off < r2t.r2tl; off += h2c_chunk) {
                    const std::uint32_t n = std::min(h2c_chunk, r2t.r2tl - off);
                    send_h2c(r2t.cccid, r2t.ttag, r2t.r2to + off, write.subspan(r2t.r2to + off, n),
                             off + n == r2t.r2tl);
                }
            } else if (pdu->type() == TcpPduType::c2h_data) {
                const auto h = pdu->as<wire::TcpDataHeader>();
                EXPECT_EQ(h.cccid, sqe.command_id);
                EXPECT_EQ(h.datao, x.data.size());
                EXPECT_EQ(h.datal, pdu->data.size());
                x.data.insert(x.data.end(), pdu->data.begin(), pdu->data.end());
                ++x.c2h_pdus;
                if ((h.ch.flags & wire::kTcpFlagSuccess) != 0) {
                    EXPECT_NE(h.ch.flags & wire::kTcpFlagLastPdu, 0);
                    x.success_flag = true;
                    x.answered = true;
                    x.cqe.command_id = sqe.command_id;
                    return x;
                }
            } else if (pdu->type() == TcpPduType::capsule_resp) {
                x.cqe = pdu->as<wire::TcpCapsuleResp>().cqe;
                EXPECT_EQ(x.cqe.command_id, sqe.command_id);
                x.answered = true;
                return x;
            } else {
                ADD_FAILURE() << "unexpected " << wire::tcp_pdu_type_name(pdu->ch.type);
                return x;
            }
        }
        return x;
    }

    // Connect (its data in-capsule, as Linux sends it); returns the CNTLID.
    std::uint16_t connect(std::uint16_t qid, std::uint16_t cntlid = wire::kDynamicControllerId,
                          const char* subnqn = kSubnqn, std::uint8_t cattr = 0) {
        wire::Sqe sqe = wire::connect_command(qid, 32, qid == 0 ? 30000 : 0,
                                              wire::in_capsule_data(0, wire::kConnectDataSize));
        if (cattr != 0) {
            auto* bytes = reinterpret_cast<std::uint8_t*>(&sqe);
            bytes[offsetof(wire::ConnectCommand, cattr)] = cattr;
        }
        wire::HostId host_id{};
        host_id[0] = 0x5C;
        const wire::ConnectData cd = wire::connect_data(host_id, subnqn, kHostnqn, cntlid);
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(&cd);
        const Exchange x = run(sqe, std::span(bytes, sizeof cd), true);
        EXPECT_TRUE(x.answered && x.status().ok()) << "Connect QID " << qid;
        return static_cast<std::uint16_t>(x.cqe.dw0);
    }

    void enable() {
        wire::Sqe sqe = wire::property_set_command(
            wire::Property::cc, wire::ControllerConfig::make({.enable = true}).raw);
        sqe.dptr = transport_sgl(0);
        ASSERT_TRUE(run(sqe).status().ok());
    }

    wire::IdentifyController identify() {
        const Exchange x = run(wire::identify_command(wire::IdentifyCns::controller, 0,
                                                      transport_sgl(wire::kIdentifyDataSize)));
        EXPECT_TRUE(x.status().ok());
        wire::IdentifyController id{};
        EXPECT_EQ(x.data.size(), sizeof id);
        std::memcpy(&id, x.data.data(), std::min(x.data.size(), sizeof id));
        return id;
    }

    static wire::Sqe rw(wire::IoOpcode opcode, std::uint64_t slba, std::size_t bytes,
                        const wire::SglDescriptor& sgl) {
        wire::RemoteBuffer buffer{0, bytes, 0};
        wire::Sqe sqe = wire::rw_command(opcode, 1, slba, static_cast<std::uint32_t>(bytes / kLba),
                                         buffer, kLba);
        sqe.dptr = sgl;
        return sqe;
    }

  private:
    int fd_ = -1;
    wire::TcpDigests digests_;
    std::uint8_t hpda_ = 0;
    wire::TcpIcResp icresp_{};
    std::uint16_t next_cid_ = 1;
};

// An admin queue connected and enabled, and I/O queue 1 of its controller.
struct Controller {
    Host admin;
    Host io;
    Controller(std::uint16_t port, wire::TcpDigests digests, std::uint8_t io_cattr = 0,
               std::uint8_t hpda = 0)
        : admin(port, digests), io(port, digests, hpda) {
        const std::uint16_t cntlid = admin.connect(0);
        admin.enable();
        io.connect(1, cntlid, kSubnqn, io_cattr);
    }
};

struct TermReq {
    wire::TcpTermReq pdu{};
    std::vector<std::uint8_t> copy;
};

inline std::optional<TermReq> expect_term_req(Host& host) {
    auto pdu = host.read_pdu();
    if (!pdu || pdu->type() != TcpPduType::c2h_term_req) {
        ADD_FAILURE() << "no C2HTermReq";
        return std::nullopt;
    }
    TermReq term{pdu->as<wire::TcpTermReq>(), pdu->data};
    EXPECT_TRUE(host.closed_by_target()) << "the connection stays open";
    return term;
}

}  // namespace tcp_test
