// setup()'s work against the targets: the probe, and the short-lived child
// that runs RDMA work for fio's parent with process jobs.
#include "probe.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "zoned.hpp"

namespace nvmeof::engine {

// The errno of a job's failure, for fio's job error.
int error_number(const std::exception& error) {
    if (const auto* e = dynamic_cast<const ProbeError*>(&error)) {
        return e->error_number();
    }
    if (const auto* e = dynamic_cast<const ConnectError*>(&error)) {
        return e->error_number();
    }
    if (const auto* e = dynamic_cast<const TransportError*>(&error)) {
        return e->sys_errno() != 0 ? e->sys_errno() : EIO;
    }
    if (dynamic_cast<const std::invalid_argument*>(&error) != nullptr) {
        return EINVAL;  // SpecError, InvalidArgument: a bad option or filename
    }
    return EIO;
}

// Runs `work`, which touches RDMA, and returns what it returned; its error
// comes back as the exception's one line. With process jobs it runs in a
// short-lived child: a real RDMA device must never be touched by fio's parent
// then, because librdmacm keeps the device contexts it opened for the life of
// the process, a forked job inherits them, and the kernel refuses every write()
// on a uverbs file opened under other credentials (EACCES; fork gives the child
// new creds), so the job's first ibv_post_send fails on rxe and other
// write()-path providers. With thread jobs it runs here, and so it does with
// create_serialize=0, where fio calls setup (and init) in the job itself.
std::string run_rdma_work(thread_data* td, const std::function<std::string()>& work) {
    if (td->o.use_thread || !td->o.create_serialize) {
        return work();
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    const pid_t pid = fork();
    if (pid < 0) {
        const int e = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(e));
    }
    if (pid == 0) {
        ::close(fds[0]);
        std::string reply;
        try {
            reply = 'K' + work();
        } catch (const std::exception& error) {
            reply = "E" + std::to_string(error_number(error)) + " " + error.what();
        }
        std::size_t sent = 0;
        while (sent < reply.size()) {
            const ssize_t n = ::write(fds[1], reply.data() + sent, reply.size() - sent);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                _exit(1);
            }
            sent += static_cast<std::size_t>(n);
        }
        _exit(0);
    }
    ::close(fds[1]);
    std::string reply;
    char buffer[4096];
    for (;;) {  // ends at EOF: the child wrote or died
        const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        reply.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (reply.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        throw std::runtime_error("the probe process died (status " + std::to_string(status) + ")");
    }
    if (reply.front() == 'E') {  // "E<errno> <what>"
        const std::size_t space = reply.find(' ');
        throw ProbeError(std::atoi(reply.c_str() + 1), reply.substr(space + 1));
    }
    return reply.substr(1);
}

namespace {

// Connect to each distinct controller once, read every file's namespace,
// choose its layout for the job's block sizes and check the options that
// depend on the controller, disconnect.
Probe probe(thread_data* td, const std::vector<TargetSpec>& specs, const EngineOptions& options) {
    if (specs.size() > kMaxFilesPerJob) {
        throw SpecError("filename: " + std::to_string(specs.size()) + " files; at most " +
                        std::to_string(kMaxFilesPerJob) + " per job");
    }
    Probe result{};
    result.file_count = static_cast<unsigned int>(specs.size());
    result.pieces_per_io_u = 1;
    std::vector<std::pair<std::string, Controller>> controllers;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const TargetSpec& spec = specs[i];
        const std::string key = controller_key(spec);
        auto it = std::find_if(controllers.begin(), controllers.end(),
                               [&](const auto& c) { return c.first == key; });
        if (it == controllers.end()) {
            controllers.emplace_back(
                key, Controller::connect(controller_options(spec, options, kProbeQueueDepth)));
            it = controllers.end() - 1;  // keep_alive_ms against KAS: the core's connect refuses it
        }
        Controller& controller = it->second;
        Namespace ns = controller.namespace_at(spec.nsid);
        const FileLayout layout = file_layout(td, options, spec, ns.format());
        result.file_size[i] = ns.size_lbas() * layout.block_bytes;
        result.format[i] = ns.format();
        result.zones[i] = zone_facts(ns, layout);
        if (options.initial_zone_reset != 0 && ns.info().zoned) {
            // SPDK's initial_zone_reset: every zone, once, before fio reads them.
            ns.zone_action(ZoneAction::reset, 0, ZoneSelect::all);
        }
        // Commands the largest I/O takes: whole blocks of what travels per command.
        const std::uint64_t per_command = controller.limits().max_transfer_bytes;
        const std::uint64_t blocks = td_max_bs(td) / layout.block_bytes;
        const std::uint64_t per_piece =
            per_command == 0 ? blocks
                             : std::max<std::uint64_t>(1, per_command / layout.wire_block_bytes);
        const auto pieces = static_cast<unsigned int>(
            per_piece == 0 ? 1 : std::max<std::uint64_t>(1, (blocks + per_piece - 1) / per_piece));
        result.pieces_per_io_u = std::max(result.pieces_per_io_u, pieces);
    }
    for (auto& c : controllers) {
        c.second.close();
    }
    return result;
}

}  // namespace

Probe probe_where_rdma_may_run(thread_data* td, const std::vector<TargetSpec>& specs,
                               const EngineOptions& options) {
    const std::string bytes = run_rdma_work(td, [&] {
        const Probe p = probe(td, specs, options);
        return std::string(reinterpret_cast<const char*>(&p), sizeof p);
    });
    Probe p{};
    if (bytes.size() != sizeof p) {
        throw std::runtime_error("the probe process sent " + std::to_string(bytes.size()) +
                                 " bytes, not " + std::to_string(sizeof p));
    }
    std::memcpy(&p, bytes.data(), sizeof p);
    return p;
}

}  // namespace nvmeof::engine
