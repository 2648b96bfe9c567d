#include "verbs/diagnostics.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace nvmeof::verbs {
namespace {

constexpr std::uint64_t kKiB = 1024;

// "VmLck:      12 kB" → bytes; nullopt when the line has another key.
std::optional<std::uint64_t> status_kib(const std::string& line, std::string_view key) {
    if (line.compare(0, key.size(), key) != 0) {
        return std::nullopt;
    }
    return std::strtoull(line.c_str() + key.size(), nullptr, 10) * kKiB;
}

}  // namespace

std::string cm_unavailable_text(int error) {
    std::string text = std::strerror(error);
    if (error == ENODEV || error == ENOENT || error == ENXIO || error == ENOSYS) {
        text = "no RDMA device: RDMA-CM is not available (" + text +
               "); is an RDMA driver loaded (e.g. mlx5_ib), Soft-RoCE or siw configured "
               "(`rdma link add rxe0 type rxe netdev eth0`), or the program started under "
               "softverbs-run?";
    } else if (error == EACCES || error == EPERM) {
        text = "RDMA-CM refused access (" + text +
               "); /dev/infiniband/rdma_cm must be readable and writable by this user";
    }
    return text;
}

std::string_view cm_reject_reason_name(int status) {
    switch (status) {
        case 1:
            return "no QP available";
        case 2:
            return "no EEC available";
        case 3:
            return "no resources available";
        case 4:
            return "timeout";
        case 5:
            return "unsupported request";
        case 6:
            return "invalid communication ID";
        case 7:
            return "invalid communication instance";
        case 8:
            return "invalid service ID: nothing listens there";
        case 9:
            return "invalid transport service type";
        case 10:
            return "stale connection";
        case 11:
            return "RDC does not exist";
        case 24:
            return "port redirection";
        case 26:
            return "invalid path MTU";
        case 27:
            return "insufficient responder resources";
        case 28:
            return "consumer-defined reject";
        case 29:
            return "invalid RNR NAK retry count";
        case 30:
            return "duplicate local communication ID";
        case 31:
            return "unsupported class version";
        default:
            return "unknown CM reject reason";
    }
}

std::optional<std::uint64_t> locked_and_pinned_bytes() {
    std::ifstream status("/proc/self/status");
    if (!status) {
        return std::nullopt;
    }
    std::optional<std::uint64_t> locked;
    std::optional<std::uint64_t> pinned;
    for (std::string line; std::getline(status, line);) {
        if (auto v = status_kib(line, "VmLck:")) {
            locked = v;
        } else if (auto p = status_kib(line, "VmPin:")) {
            pinned = p;
        }
    }
    if (!locked && !pinned) {
        return std::nullopt;
    }
    return locked.value_or(0) + pinned.value_or(0);
}

std::string memlock_explanation(int error, std::size_t length, const MemlockState& state) {
    if ((error != ENOMEM && error != EPERM && error != EAGAIN) || state.unlimited) {
        return "";
    }
    const std::string limit = std::to_string(state.limit);
    if (!state.in_use) {
        return "the locked-memory limit RLIMIT_MEMLOCK is " + limit +
               " bytes and this process's locked memory could not be read: if it is reached, "
               "raise it with `ulimit -l unlimited` or memlock in /etc/security/limits.conf";
    }
    const std::uint64_t after = *state.in_use + length;
    const std::string in_use = std::to_string(*state.in_use);
    if (after > state.limit) {
        return "it would exceed the locked-memory limit RLIMIT_MEMLOCK of " + limit + " bytes (" +
               in_use +
               " bytes already locked or pinned); raise it with `ulimit -l unlimited` "
               "or memlock in /etc/security/limits.conf";
    }
    return "not the locked-memory limit: " + in_use + " of " + limit +
           " bytes RLIMIT_MEMLOCK in use, this registration fits";
}

}  // namespace nvmeof::verbs
