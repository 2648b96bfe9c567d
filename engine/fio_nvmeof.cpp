// libfio_nvmeof.so: fio's ioengine_ops table, the engine options and the
// extern "C" trampolines. No exception crosses into fio: each hook catches,
// logs one line through fio's logging and returns fio's error convention.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>

#include "job.hpp"

#ifndef FIO_EXPECTED_VERSION
#error "FIO_EXPECTED_VERSION must name the fio release the headers come from"
#endif

namespace nvmeof::engine {
namespace {

constexpr unsigned int kDefaultConnectTimeoutMs = 30000;
constexpr unsigned int kDefaultIoTimeoutMs = 30000;
constexpr std::uint16_t kProbeQueueDepth = 2;  // setup() only reads the geometry

// fio refuses an empty value for string options it stores itself
// (FIO_OPT_STR_STORE), but the job files pass ${NVMEOF_TRSVCID} and friends,
// which are empty when unset and must then mean "default". So the string
// options are FIO_OPT_STR with a callback that stores any value, empty too.
template <std::size_t Offset>
int store_string(void* data, const char* value) {
    char* field = static_cast<char*>(data) + Offset;
    const std::size_t length = value != nullptr ? std::strlen(value) : 0;
    if (length >= kOptionTextSize) {
        log_err("nvmeof: option value \"%.40s...\" is longer than %zu bytes\n", value,
                kOptionTextSize - 1);
        return 1;
    }
    std::memcpy(field, value != nullptr ? value : "", length + 1);
    return 0;
}

template <std::size_t Offset>
void* string_callback() {
    int (*fn)(void*, const char*) = store_string<Offset>;
    void* cb = nullptr;
    static_assert(sizeof cb == sizeof fn);
    std::memcpy(&cb, &fn, sizeof cb);  // fio keeps callbacks as void*
    return cb;
}

#define NVMEOF_STRING_OPTION(option_name, field, help_text)                                         \
    fio_option {                                                                                    \
        .name = option_name, .lname = option_name, .type = FIO_OPT_STR,                              \
        .off1 = offsetof(EngineOptions, field),                                                     \
        .cb = string_callback<offsetof(EngineOptions, field)>(), .help = help_text,                \
        .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                                  \
    }

#define NVMEOF_INT_OPTION(option_name, field, help_text, default_value)                             \
    fio_option {                                                                                    \
        .name = option_name, .lname = option_name, .type = FIO_OPT_INT,                              \
        .off1 = offsetof(EngineOptions, field), .help = help_text, .def = default_value,            \
        .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                                  \
    }

fio_option engine_options[] = {
    NVMEOF_STRING_OPTION("traddr", traddr, "NVMe-oF/RDMA target address"),
    NVMEOF_STRING_OPTION("trsvcid", trsvcid, "Target RDMA-CM port (default 4420)"),
    NVMEOF_STRING_OPTION("subnqn", subnqn, "Subsystem NQN"),
    NVMEOF_STRING_OPTION("nsid", nsid, "Namespace ID (default 1)"),
    NVMEOF_STRING_OPTION("hostnqn", hostnqn,
                         "Host NQN (default /etc/nvme/hostnqn, else derived from the host ID)"),
    NVMEOF_STRING_OPTION("hostid", hostid,
                         "Host ID UUID (default /etc/nvme/hostid, else derived from "
                         "/etc/machine-id)"),
    NVMEOF_STRING_OPTION("host_traddr", host_traddr,
                         "Local source address: binds RDMA-CM and so picks the RDMA device"),
    NVMEOF_INT_OPTION("nr_io_queues", nr_io_queues, "I/O queues per job", "1"),
    NVMEOF_INT_OPTION("connect_timeout_ms", connect_timeout_ms,
                      "Deadline of the whole connect, every step together, in milliseconds",
                      "30000"),
    NVMEOF_INT_OPTION("io_timeout_ms", io_timeout_ms,
                      "Deadline of each I/O, in milliseconds; an I/O the target never answers "
                      "fails with ETIMEDOUT",
                      "30000"),
    NVMEOF_INT_OPTION("keep_alive_ms", keep_alive_ms,
                      "Keep-alive timeout (KATO) asked for in the admin Connect, in milliseconds; "
                      "0 disables keep-alive. Keep Alive goes out every half timeout while the "
                      "job polls, so a job idle longer than that (thinktime) may be dropped",
                      "0"),
    NVMEOF_INT_OPTION("poll_spin_us", poll_spin_us,
                      "How long a job waiting for completions polls before it sleeps on the "
                      "completion channel, in microseconds (0: sleep at once)",
                      "200"),
    NVMEOF_STRING_OPTION("gpu", gpu,
                         "I/O buffers in GPU memory: a GPU number, or rr (round-robin over the "
                         "visible GPUs by job); needs a CUDA build and driver"),
    fio_option{.name = nullptr},
};
static_assert(kDefaultConnectTimeoutMs == 30000 && kDefaultIoTimeoutMs == 30000,
              "keep the option defaults above in step");

EngineOptions& options_of(thread_data* td) { return *static_cast<EngineOptions*>(td->eo); }
Job* job_of(thread_data* td) { return static_cast<Job*>(td->io_ops_data); }

void report(thread_data* td, const char* hook, const std::exception& error) {
    log_err("nvmeof: %s: %s: %s\n", td->o.name, hook, error.what());
}

TargetSpec spec_of(thread_data* td, const fio_file* f) {
    return resolve_target(option_values(options_of(td)), f != nullptr ? f->file_name : "");
}

// What setup() learns from the target.
struct Probe {
    unsigned long long file_size;
    unsigned int pieces_per_io_u;
};

// Connect, read the namespace, check the block sizes, disconnect.
Probe probe(thread_data* td, const fio_file* f) {
    const TargetSpec spec = spec_of(td, f);
    const EngineOptions& options = options_of(td);
    Controller controller =
        Controller::connect(controller_options(spec, options, kProbeQueueDepth));
    Namespace ns = controller.namespace_at(spec.nsid);
    for (int d = DDIR_READ; d < DDIR_RWDIR_CNT; ++d) {
        for (unsigned long long bs : {td->o.min_bs[d], td->o.max_bs[d]}) {
            if (bs % ns.lba_size() != 0) {
                throw SpecError("block size " + std::to_string(bs) +
                                " is not a multiple of the namespace's " +
                                std::to_string(ns.lba_size()) + "-byte LBA size");
            }
        }
    }
    const std::uint64_t per_command = controller.limits().max_transfer_bytes;
    Probe result{ns.info().size_bytes(),
                 static_cast<unsigned int>(per_command == 0 ? 1 : (td_max_bs(td) + per_command - 1) /
                                                                      per_command)};
    controller.close();
    return result;
}

// The probe in a child process. A real RDMA device must never be touched by fio's parent
// when jobs are processes: librdmacm keeps the device contexts it opened for the life of
// the process, a forked job inherits them, and the kernel refuses every write() on a
// uverbs file opened under other credentials (EACCES; fork gives the child new creds), so
// the job's first ibv_post_send fails on rxe and other write()-path providers.
Probe probe_in_child(thread_data* td, const fio_file* f) {
    struct Reply {
        int ok;
        Probe probe;
        char error[512];
    };
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
        Reply reply{};
        try {
            reply.probe = probe(td, f);
            reply.ok = 1;
        } catch (const std::exception& error) {
            std::snprintf(reply.error, sizeof reply.error, "%s", error.what());
        }
        const ssize_t n = ::write(fds[1], &reply, sizeof reply);
        _exit(n == static_cast<ssize_t>(sizeof reply) ? 0 : 1);
    }
    ::close(fds[1]);
    Reply reply{};
    std::size_t got = 0;
    while (got < sizeof reply) {  // ends at EOF: the child wrote or died
        const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(&reply) + got, sizeof reply - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != sizeof reply) {
        throw std::runtime_error("the probe process died (status " + std::to_string(status) + ")");
    }
    if (reply.ok == 0) {
        reply.error[sizeof reply.error - 1] = '\0';
        throw std::runtime_error(reply.error);
    }
    return reply.probe;
}

// Runs in fio's parent, before any job forks: learns the namespace size and the number of
// commands per I/O. With process jobs the RDMA work happens in a short-lived child (see
// probe_in_child); with thread jobs in this process. No RDMA resource survives it.
int nvmeof_setup(thread_data* td) {
    try {
        if (td->o.nr_files > 1) {
            throw SpecError("one target per job: use one filename (or none) per job");
        }
        // gpu=: refused here, before any job starts, when it cannot work. Only
        // looked for, never initialised: CUDA does not survive fio's fork.
        if (const EngineOptions& o = options_of(td);
            parse_gpu_option(o.gpu).enabled) {
            std::string why;
            if (!gpu_driver_present(&why)) {
                throw SpecError("gpu=" + std::string(o.gpu) + ": " + why);
            }
        }
        fio_file* f = td->files != nullptr ? td->files[0] : nullptr;
        const Probe p = td->o.use_thread ? probe(td, f) : probe_in_child(td, f);
        options_of(td).pieces_per_io_u = p.pieces_per_io_u;
        if (f != nullptr) {
            f->real_file_size = p.file_size;
            fio_file_set_size_known(f);
        }
        return 0;
    } catch (const std::exception& error) {
        report(td, "setup", error);
        return 1;
    }
}

int nvmeof_init(thread_data* td) {
    try {
        const fio_file* f = td->files != nullptr ? td->files[0] : nullptr;
        td->io_ops_data = new Job(td, spec_of(td, f), options_of(td));
        return 0;
    } catch (const std::exception& error) {
        report(td, "init", error);
        return 1;
    }
}

int nvmeof_iomem_alloc(thread_data* td, std::size_t bytes) {
    try {
        td->orig_buffer = static_cast<char*>(job_of(td)->allocate_buffers(bytes));
        return 0;
    } catch (const std::exception& error) {
        report(td, "buffer registration", error);
        return 1;
    }
}

// fio frees the I/O buffers (this hook) before cleanup: stop every queue and
// deregister the arena now, so the target can never write into freed memory.
void nvmeof_iomem_free(thread_data* td) {
    if (Job* job = job_of(td)) {
        job->close();
    }
    td->orig_buffer = nullptr;
}

void nvmeof_cleanup(thread_data* td) {
    delete job_of(td);
    td->io_ops_data = nullptr;
}

fio_q_status nvmeof_queue(thread_data* td, io_u* unit) {
    try {
        return job_of(td)->queue(unit);
    } catch (const std::exception& error) {
        report(td, "queue", error);
        unit->error = EIO;
        return FIO_Q_COMPLETED;
    }
}

int nvmeof_commit(thread_data* td) {
    try {
        return job_of(td)->commit();
    } catch (const std::exception& error) {
        report(td, "commit", error);
        return -EIO;
    }
}

int nvmeof_getevents(thread_data* td, unsigned int min, unsigned int max, const timespec* t) {
    try {
        return job_of(td)->getevents(min, max, t);
    } catch (const std::exception& error) {
        report(td, "getevents", error);
        return -EIO;
    }
}

io_u* nvmeof_event(thread_data* td, int index) { return job_of(td)->event(index); }

int nvmeof_open_file(thread_data*, fio_file*) { return 0; }
int nvmeof_close_file(thread_data*, fio_file*) { return 0; }

ioengine_ops engine_ops = {
    .name = "nvmeof",
    .version = FIO_IOOPS_VERSION,
    .flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND | FIO_RAWIO | FIO_MEMALIGN |
             FIO_NO_OFFLOAD,
    .setup = nvmeof_setup,
    .init = nvmeof_init,
    .queue = nvmeof_queue,
    .commit = nvmeof_commit,
    .getevents = nvmeof_getevents,
    .event = nvmeof_event,
    .cleanup = nvmeof_cleanup,
    .open_file = nvmeof_open_file,
    .close_file = nvmeof_close_file,
    .iomem_alloc = nvmeof_iomem_alloc,
    .iomem_free = nvmeof_iomem_free,
    .option_struct_size = sizeof(EngineOptions),
    .options = engine_options,
};

}  // namespace
}  // namespace nvmeof::engine

// fio looks this up with dlsym. Refuse to load into another fio release than the
// headers came from: its structures differ and would be silently corrupted.
extern "C" __attribute__((visibility("default"))) void get_ioengine(ioengine_ops** ops) {
    const auto* running = static_cast<const char*>(dlsym(RTLD_DEFAULT, "fio_version_string"));
    if (running == nullptr || std::strcmp(running, FIO_EXPECTED_VERSION) != 0) {
        log_err("nvmeof: this engine was built for %s but is loaded into %s; rebuild it against "
                "the running fio's source (tools/fetch-fio-source.sh)\n",
                FIO_EXPECTED_VERSION, running != nullptr ? running : "an unknown fio");
        *ops = nullptr;
        return;
    }
    *ops = &nvmeof::engine::engine_ops;
}
