#include "target_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace nvmeof::test {
namespace {

const std::vector<std::string> kTcp = {"--transport", "tcp"};

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

}  // namespace

bool TargetProcess::external() {
    return !env("NVMEOF_TEST_TARGET").empty();
}

bool TargetProcess::serves_tcp() {
    return !external() || !env("NVMEOF_TEST_TCP_TARGET").empty();
}

TargetProcess::TargetProcess(std::vector<std::string> extra, std::string ns, std::uint16_t port) {
    if (external()) {
        const bool tcp =
            std::search(extra.begin(), extra.end(), kTcp.begin(), kTcp.end()) != extra.end();
        if (tcp && !serves_tcp()) {
            throw std::runtime_error(
                "the external target has no NVMe/TCP port: set NVMEOF_TEST_TCP_TARGET");
        }
        const std::string t = env(tcp ? "NVMEOF_TEST_TCP_TARGET" : "NVMEOF_TEST_TARGET");
        const auto colon = t.rfind(':');
        address_ = t.substr(0, colon);
        port_ = static_cast<std::uint16_t>(std::stoul(t.substr(colon + 1)));
        ports_ = {port_};
        nqn_ = env("NVMEOF_TEST_NQN");
        return;
    }
    std::string bin = env("NVMEOF_TARGET_BIN");
#ifdef NVMEOF_TARGET_BIN_DEFAULT
    if (bin.empty()) {
        bin = NVMEOF_TARGET_BIN_DEFAULT;
    }
#endif
    if (bin.empty()) {
        throw std::runtime_error("NVMEOF_TARGET_BIN is not set");
    }
    nqn_ = kTestNqn;
    char tmpl[] = "/tmp/nvmeof-stats-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) {
        ::close(fd);
    }
    stats_path_ = tmpl;
    std::vector<std::string> args = {
        bin,       "--listen",  "127.0.0.1",   "--port", std::to_string(port),
        "--stats", stats_path_, "--subsystem", nqn_,     "--namespace",
        ns};
    args.insert(args.end(), extra.begin(), extra.end());

    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe failed");
    }
    pid_ = fork();
    if (pid_ == 0) {
        dup2(out[1], STDOUT_FILENO);
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    ::close(out[1]);
    // Read one "listening on ADDR:PORT" line per --port, with a deadline.
    const auto lines_wanted =
        static_cast<std::size_t>(1 + std::count(extra.begin(), extra.end(), std::string("--port")));
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) < lines_wanted) {
        pollfd pfd{out[0], POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
            break;
        }
        char buf[256];
        const ssize_t n = read(out[0], buf, sizeof buf);
        if (n <= 0)
            break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    const std::string prefix = "listening on ";
    for (std::size_t start = 0; ports_.size() < lines_wanted;) {
        const auto end = text.find('\n', start);
        const std::string line = text.substr(start, end == std::string::npos ? end : end - start);
        const auto at = line.find(prefix);
        const auto colon = line.rfind(':');
        if (at == std::string::npos || colon == std::string::npos) {
            stop();
            throw std::runtime_error("nvmeof-target did not print 'listening on ADDR:PORT' (got '" +
                                     text + "')");
        }
        address_ = line.substr(at + prefix.size(), colon - at - prefix.size());
        ports_.push_back(static_cast<std::uint16_t>(std::stoul(line.substr(colon + 1))));
        if (end == std::string::npos) {
            break;
        }
        start = end + 1;
    }
    if (ports_.size() < lines_wanted) {
        stop();
        throw std::runtime_error("nvmeof-target printed " + std::to_string(ports_.size()) +
                                 " 'listening on' lines, not " + std::to_string(lines_wanted));
    }
    port_ = ports_.front();
}

TargetProcess::~TargetProcess() {
    stop();
}

Options TargetProcess::options(std::chrono::milliseconds timeout) const {
    Options o;
    o.target = address_;
    o.subsystem_nqn = nqn_;
    o.port = port_;
    o.timeout = timeout;
    return o;
}

std::string TargetProcess::stop() {
    if (pid_ <= 0) {
        return {};
    }
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; ++i) {  // 10 s, then force
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            break;
        }
        usleep(50000);
    }
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
    }
    std::ifstream in(stats_path_);
    std::stringstream text;
    text << in.rdbuf();
    unlink(stats_path_.c_str());
    return text.str();
}

std::optional<std::uint64_t> TargetProcess::stat(const std::string& json, const std::string& path) {
    // Good enough for the flat two-level stats object of docs/target-cli.md.
    std::size_t from = 0;
    std::string rest = path;
    for (;;) {
        const auto dot = rest.find('.');
        const std::string key = "\"" + rest.substr(0, dot) + "\"";
        from = json.find(key, from);
        if (from == std::string::npos) {
            return std::nullopt;
        }
        from += key.size();
        if (dot == std::string::npos) {
            break;
        }
        rest = rest.substr(dot + 1);
    }
    const auto colon = json.find(':', from);
    if (colon == std::string::npos) {
        return std::nullopt;
    }
    return std::strtoull(json.c_str() + colon + 1, nullptr, 10);
}

}  // namespace nvmeof::test
