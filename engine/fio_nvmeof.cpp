// libfio_nvmeof.so: fio's ioengine_ops table, the engine options and the
// extern "C" trampolines. No exception crosses into fio: each hook catches,
// logs one line through fio's logging and returns fio's error convention.
#include <dlfcn.h>
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

#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "discovered_targets.hpp"
#include "job.hpp"
#include "job_facts.hpp"
#include "output.hpp"
#include "probe.hpp"
#include "zoned.hpp"

#ifndef FIO_EXPECTED_VERSION
#error "FIO_EXPECTED_VERSION must name the fio release the headers come from"
#endif

namespace nvmeof::engine {
namespace {

constexpr unsigned int kDefaultConnectTimeoutMs = 30000;
constexpr unsigned int kDefaultIoTimeoutMs = 30000;

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

#define NVMEOF_STRING_OPTION(option_name, field, help_text)                         \
    fio_option {                                                                    \
        .name = option_name, .lname = option_name, .type = FIO_OPT_STR,             \
        .off1 = offsetof(EngineOptions, field),                                     \
        .cb = string_callback<offsetof(EngineOptions, field)>(), .help = help_text, \
        .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                   \
    }

// An SPDK plugin option with no effect here: accepted with any value (or
// none), remembered as one bit so setup() can name it once per job.
template <std::size_t Bit>
int mark_ignored(void* data, const char*) {
    static_cast<EngineOptions*>(data)->spdk_ignored |= std::uint64_t{1} << Bit;
    return 0;
}

template <std::size_t Bit>
void* ignored_callback() {
    int (*fn)(void*, const char*) = mark_ignored<Bit>;
    void* cb = nullptr;
    std::memcpy(&cb, &fn, sizeof cb);  // fio keeps callbacks as void*
    return cb;
}

#define NVMEOF_IGNORED_OPTION(bit)                                                         \
    fio_option {                                                                           \
        .name = kSpdkIgnoredOptions[bit].data(), .lname = kSpdkIgnoredOptions[bit].data(), \
        .type = FIO_OPT_STR, .off1 = offsetof(EngineOptions, spdk_ignored),                \
        .cb = ignored_callback<bit>(),                                                     \
        .help = "SPDK plugin option, accepted for SPDK job files; no effect here",         \
        .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                          \
    }

#define NVMEOF_INT_OPTION(option_name, field, help_text, default_value)                  \
    fio_option {                                                                         \
        .name = option_name, .lname = option_name, .type = FIO_OPT_INT,                  \
        .off1 = offsetof(EngineOptions, field), .help = help_text, .def = default_value, \
        .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                        \
    }

#define NVMEOF_BOOL_OPTION(option_name, field, help_text, default_value)                 \
    fio_option {                                                                         \
        .name = option_name, .lname = option_name, .type = FIO_OPT_BOOL,                 \
        .off1 = offsetof(EngineOptions, field), .help = help_text, .def = default_value, \
        .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                        \
    }

fio_option engine_options[] = {
    NVMEOF_STRING_OPTION("trtype", trtype,
                         "Transport: rdma (NVMe/RDMA, default) or tcp (NVMe/TCP), any case"),
    NVMEOF_STRING_OPTION("traddr", traddr, "NVMe-oF target address"),
    NVMEOF_STRING_OPTION("trsvcid", trsvcid,
                         "Target port (default 4420; a discovery service over TCP: 8009)"),
    NVMEOF_STRING_OPTION("subnqn", subnqn, "Subsystem NQN"),
    NVMEOF_STRING_OPTION("nsid", nsid, "Namespace ID (default 1)"),
    NVMEOF_STRING_OPTION("hostnqn", hostnqn,
                         "Host NQN (default /etc/nvme/hostnqn, else derived from the host ID)"),
    NVMEOF_STRING_OPTION("hostid", hostid,
                         "Host ID UUID (default /etc/nvme/hostid, else derived from "
                         "/etc/machine-id)"),
    NVMEOF_STRING_OPTION("host_traddr", host_traddr,
                         "Local source address: over RDMA it binds RDMA-CM and so picks the RDMA "
                         "device; over TCP it binds the sockets"),
    NVMEOF_INT_OPTION("nr_io_queues", nr_io_queues,
                      "I/O queues per job and controller, 1 to 65534 (a note says so when the "
                      "target grants fewer)",
                      "1"),
    NVMEOF_INT_OPTION("queue_size", queue_size,
                      "I/O queue entries asked for (nvme-cli -Q), 2 to 65535; 0: derived from "
                      "iodepth (the target may grant fewer; iodepth is then clamped)",
                      "0"),
    NVMEOF_INT_OPTION("connect_timeout_ms", connect_timeout_ms,
                      "Deadline of the whole connect, every step together, in milliseconds (at "
                      "least 1)",
                      "30000"),
    NVMEOF_INT_OPTION("io_timeout_ms", io_timeout_ms,
                      "Deadline of each I/O, in milliseconds (at least 1; there is no \"no "
                      "timeout\"); an I/O the target never answers fails with ETIMEDOUT",
                      "30000"),
    NVMEOF_INT_OPTION("keep_alive_ms", keep_alive_ms,
                      "Keep-alive timeout (KATO) asked for in the admin Connect, in milliseconds: "
                      "0 (off) or at least 1000 and at least the controller's KAS granularity. "
                      "Keep Alive goes out every half timeout while the job polls, so a job idle "
                      "longer than that (thinktime) may be dropped",
                      "0"),
    NVMEOF_INT_OPTION("ctrl_loss_tmo_ms", ctrl_loss_tmo_ms,
                      "Reconnect after a queue failure for up to this long, in milliseconds, "
                      "re-sending the I/Os in flight (kernel ctrl_loss_tmo, default there 600 s); "
                      "0: no reconnect, a failure fails the I/Os in flight",
                      "0"),
    NVMEOF_INT_OPTION("reconnect_delay_ms", reconnect_delay_ms,
                      "Delay before each reconnect attempt, in milliseconds (kernel "
                      "reconnect_delay), at least 1",
                      "10000"),
    NVMEOF_INT_OPTION("fast_io_fail_tmo_ms", fast_io_fail_tmo_ms,
                      "While reconnecting, I/Os wait (busy to fio) this long, then fail with "
                      "ENOLINK until reconnected, in milliseconds (kernel fast_io_fail_tmo); 0: "
                      "off, they wait up to ctrl_loss_tmo_ms",
                      "0"),
    NVMEOF_INT_OPTION("poll_spin_us", poll_spin_us,
                      "How long a job waiting for completions polls before it sleeps until one "
                      "arrives, in microseconds (0: sleep at once); it polls only "
                      "while an I/O is one command from done (not for a split I/O's earlier "
                      "pieces)",
                      "200"),
    NVMEOF_STRING_OPTION("gpu", gpu,
                         "I/O buffers in GPU memory: a GPU number, or rr (round-robin over the "
                         "visible GPUs by job); needs a CUDA build and driver, and NVMe/RDMA"),
    NVMEOF_STRING_OPTION("info_file", info_file,
                         "Append one JSON line of each job's start-up facts (target, namespace, "
                         "queues, MDTS, controller) to this file; emptied when fio starts"),
    NVMEOF_STRING_OPTION("dhchap_secret", dhchap_secret,
                         "DH-HMAC-CHAP host key (DHHC-1:hh:BASE64: as nvme gen-dhchap-key prints "
                         "it, or @FILE holding it), used when the target asks for "
                         "authentication"),
    NVMEOF_STRING_OPTION("dhchap_ctrl_secret", dhchap_ctrl_secret,
                         "DH-HMAC-CHAP controller key (same forms): the target must prove it "
                         "too (bidirectional); needs dhchap_secret"),
    NVMEOF_BOOL_OPTION("in_capsule_writes", in_capsule_writes,
                       "1: a write small enough for the target's command capsule carries its "
                       "data in the command (no RDMA READ, or NVMe/TCP R2T, round trip); 0: every "
                       "write's data is fetched by the target",
                       "1"),
    // End-to-end protection, as SPDK's plugin names it; text, checked in setup().
    NVMEOF_STRING_OPTION("pi_act", pi_act,
                         "Protection information action (PRACT) on namespaces with PI: 1: the "
                         "controller inserts and strips it; 0: the host generates it on writes "
                         "and checks it on reads (default 1)"),
    NVMEOF_STRING_OPTION("pi_chk", pi_chk,
                         "Protection information checks (PRCHK): any of GUARD, REFTAG, APPTAG "
                         "joined by ',' or '|' (default none)"),
    NVMEOF_STRING_OPTION("apptag", apptag,
                         "Application tag of the protection information, 16 bits (default "
                         "0x1234)"),
    NVMEOF_STRING_OPTION("apptag_mask", apptag_mask,
                         "Bits of the application tag that are checked (default 0xffff)"),
    NVMEOF_STRING_OPTION("md_per_io_size", md_per_io_size,
                         "SPDK's separate metadata buffer per I/O, in bytes (default 4096): "
                         "checked, no effect (over NVMe-oF metadata travels interleaved)"),
    NVMEOF_STRING_OPTION("digest_enable", digest_enable,
                         "NVMe/TCP digests asked for (SPDK's): HEADER, DATA, BOTH or NONE (any "
                         "case; default NONE); no effect over RDMA"),
    // SPDK's zone options, with SPDK's meanings (zoned.hpp).
    NVMEOF_BOOL_OPTION("initial_zone_reset", initial_zone_reset,
                       "1: reset every zone of each zoned namespace once, before the job starts "
                       "(Zone Management Send, Select All)",
                       "0"),
    NVMEOF_BOOL_OPTION("zone_append", zone_append,
                       "1: send writes to zoned namespaces as Zone Append to their zone's start "
                       "(needs zonemode=zbd); 0: as Writes",
                       "0"),
    NVMEOF_IGNORED_OPTION(0),
    NVMEOF_IGNORED_OPTION(1),
    NVMEOF_IGNORED_OPTION(2),
    NVMEOF_IGNORED_OPTION(3),
    NVMEOF_IGNORED_OPTION(4),
    NVMEOF_IGNORED_OPTION(5),
    NVMEOF_IGNORED_OPTION(6),
    NVMEOF_IGNORED_OPTION(7),
    NVMEOF_IGNORED_OPTION(8),
    NVMEOF_IGNORED_OPTION(9),
    NVMEOF_IGNORED_OPTION(10),
    NVMEOF_IGNORED_OPTION(11),
    NVMEOF_IGNORED_OPTION(12),
    NVMEOF_IGNORED_OPTION(13),
    NVMEOF_IGNORED_OPTION(14),
    NVMEOF_IGNORED_OPTION(15),
    NVMEOF_IGNORED_OPTION(16),
    NVMEOF_IGNORED_OPTION(17),
    NVMEOF_IGNORED_OPTION(18),
    NVMEOF_IGNORED_OPTION(19),
    fio_option{.name = nullptr},
};
static_assert(kSpdkIgnoredOptions.size() == 20, "one NVMEOF_IGNORED_OPTION per ignored name");
static_assert(kDefaultConnectTimeoutMs == 30000 && kDefaultIoTimeoutMs == 30000,
              "keep the option defaults above in step");

EngineOptions& options_of(thread_data* td) {
    return *static_cast<EngineOptions*>(td->eo);
}

Job* job_of(thread_data* td) {
    return static_cast<Job*>(td->io_ops_data);
}

void report(thread_data* td, const char* hook, const std::exception& error) {
    log_err("nvmeof: %s: %s: %s\n", td->o.name, hook, error.what());
}

// A setup, init or buffer hook failed: the line, and the job's error. fio
// puts td->error in the job's "error" of its JSON and terse reports and in its
// exit line; after a failed setup() it reads nothing else (a failed init()
// would read as 1, EPERM). Returns the hook's failure.
int fail_job(thread_data* td, const char* hook, const std::exception& error) {
    report(td, hook, error);
    td_verror(td, error_number(error), hook);
    return 1;
}

TargetSpec spec_of(thread_data* td, const fio_file* f) {
    OptionValues values = option_values(options_of(td));
    if (options_of(td).files_discovered) {
        // The files name the discovered subsystems (their transport too);
        // these options name the discovery service and must not override them.
        values.trtype = values.traddr = values.trsvcid = values.subnqn = {};
    }
    return resolve_target(values, f != nullptr ? f->file_name : "");
}

// Every file's target spec, in fio's file order (one from the options alone
// when fio gave the job no file).
std::vector<TargetSpec> specs_of(thread_data* td) {
    std::vector<TargetSpec> specs;
    for (unsigned int i = 0; td->files != nullptr && i < td->o.nr_files; ++i) {
        specs.push_back(spec_of(td, td->files[i]));
    }
    if (specs.empty()) {
        specs.push_back(spec_of(td, nullptr));
    }
    return specs;
}

// Says `line` once per fio run, however many jobs (numjobs) find the same.
void say_once(const std::string& line, void (*say)(const char*, ...)) {
    static std::mutex lock;
    static std::set<std::string> said;
    const std::lock_guard guard(lock);
    if (said.insert(line).second) {
        say("%s\n", line.c_str());
    }
}

// The job's files become `targets`, one fio file each, named by its canonical
// spec. fio's own files are freed, not renamed: a file name is smalloc'd and
// may be hashed by name, so a fresh fio_file per target is what stays correct.
void replace_files(thread_data* td, const std::vector<TargetSpec>& targets) {
    const unsigned int old_count = td->o.nr_files;
    for (unsigned int i = 0; i < td->files_index; ++i) {
        fio_file_free(td->files[i]);
    }
    std::free(td->files);
    td->files = nullptr;
    td->files_size = 0;
    td->files_index = 0;
    td->o.nr_files = 0;
    for (const TargetSpec& target : targets) {
        add_file(td, canonical_filename(target).c_str(), 0, 1);
    }
    if (td->o.open_files == old_count) {  // fio's default: every file open
        td->o.open_files = td->o.nr_files;
    }
}

// A job whose spec names a discovery service (no subnqn, or the discovery NQN)
// reads the service's log, over the spec's transport, and uses every NVM
// subsystem listed over that transport, one fio file each. That works for the files fio made up
// when the job has no filename, and for a filename that is a single discovery spec; a discovery
// spec among other files is refused, since the files it stands for are known
// only once the log is read.
void use_discovered_subsystems(thread_data* td) {
    if (options_of(td).files_discovered) {
        return;  // setup() did it in fio's parent
    }
    const std::vector<TargetSpec> specs = specs_of(td);
    const auto service = std::find_if(specs.begin(), specs.end(), is_discovery_spec);
    if (service == specs.end()) {
        return;
    }
    const bool files_from_fio = td->o.filename == nullptr;  // named after the job
    if (!files_from_fio && specs.size() > 1) {
        throw SpecError(
            "filename: file " + std::to_string(service - specs.begin() + 1) + " of " +
            std::to_string(specs.size()) +
            " names a discovery service (no subnqn, or subnqn=" + std::string(kDiscoveryNqn) +
            "); a discovery spec must be the job's only file: give every file its "
            "subnqn, or put the discovery spec in a job of its own");
    }
    const EngineOptions& o = options_of(td);
    const DiscoveredTargets found = decode_discovered(run_rdma_work(td, [&] {
        Options options = controller_options(*service, o, kProbeQueueDepth);
        options.keep_alive_ms = 0;  // one read of the log, then disconnect
        std::vector<DiscoveryRecord> records;
        try {
            records = discover(options);
        } catch (const std::exception& error) {
            throw std::runtime_error("discovery at " + service_name(*service) + ": " +
                                     error.what());
        }
        return encode(targets_from_discovery(*service, records));
    }));
    if (found.targets.size() > kMaxFilesPerJob) {
        throw SpecError("discovery at " + service_name(*service) + " lists " +
                        std::to_string(found.targets.size()) + " subsystems; at most " +
                        std::to_string(kMaxFilesPerJob) + " files per job");
    }
    const std::string where =
        "nvmeof: " + std::string(td->o.name) + ": discovery at " + service_name(*service);
    if (!found.skipped.empty()) {
        say_once(where + ": skipped " + found.skipped, say_note);
    }
    std::string used;
    for (const TargetSpec& target : found.targets) {
        used +=
            (used.empty() ? "" : ", ") + target.subsystem_nqn + " (" + service_name(target) + ")";
    }
    say_once(where + ": using " + std::to_string(found.targets.size()) +
                 " subsystem(s), namespace " + std::to_string(service->nsid) + " of each: " + used,
             say_info);
    replace_files(td, found.targets);
    options_of(td).files_discovered = true;
}

// fio shares one zone state (write pointers, open zones, zone locks) among
// the jobs whose files have the same name. A job without `filename` gets files
// fio names after the job and its clone number (w.0.0, w.1.0), so numjobs=2 on
// one zoned namespace would write its zones as two strangers, each failing the
// other's writes. In zonemode=zbd those files take their target's canonical
// name instead, the same in every clone.
void name_files_by_target(thread_data* td) {
    if (td->o.zone_mode != ZONE_MODE_ZBD || td->o.filename != nullptr ||
        options_of(td).files_discovered) {
        return;
    }
    replace_files(td, specs_of(td));
}

// fio runs a job whose start offset is at or past the end of its file and
// moves nothing, without a word (a range only partly past the end it truncates
// itself). fio computes the start (offset, offset=N%, offset_increment for the
// clone's number) right after setup() returns, from the sizes setup() just set:
// asking fio for it here checks the very offsets the job will use, whether
// setup() runs in fio's parent or, with create_serialize=0, in the job after
// init(). (file_append, which starts at the end, fio refuses for this engine.)
void check_start_offsets(thread_data* td, const std::vector<TargetSpec>& specs) {
    for (unsigned int i = 0; td->files != nullptr && i < td->o.nr_files && i < specs.size(); ++i) {
        fio_file* f = td->files[i];
        const unsigned long long start = get_start_offset(td, f);
        if (start >= f->real_file_size) {
            throw SpecError("offset=" + std::to_string(start) +
                            " is at or beyond the end of namespace " +
                            std::to_string(specs[i].nsid) + " of " + specs[i].subsystem_nqn + " (" +
                            std::to_string(f->real_file_size) + " bytes)");
        }
    }
}

// pi_act and pi_chk on a namespace without protection information do nothing
// (as with SPDK's plugin): one note per namespace, once per run; md_per_io_size
// never does anything over fabrics: one note when it is given.
void note_protection_options(const thread_data* td, const ProtectionOptions& protection,
                             const std::vector<TargetSpec>& specs, const Probe& p) {
    const std::string job = "nvmeof: " + std::string(td->o.name) + ": ";
    for (std::size_t i = 0; protection.pi_given && i < specs.size() && i < p.file_count; ++i) {
        if (p.format[i].pi_type == PiType::none) {
            say_once(job + "pi_act and pi_chk do not apply to namespace " +
                         std::to_string(specs[i].nsid) + " of " + specs[i].subsystem_nqn + " (" +
                         format_name(p.format[i]) + "): it has no protection information",
                     say_note);
        }
    }
    if (protection.md_per_io_size_given) {
        say_once(job + "md_per_io_size=" + std::to_string(protection.md_per_io_size) +
                     ": no effect: over NVMe-oF metadata travels interleaved with the data, never "
                     "in a separate buffer",
                 say_note);
    }
}

// info_file is emptied once per fio run, by the first job's setup(), when
// setup() runs in fio's parent before any job starts (create_serialize, the
// default). Otherwise setup() runs in each job, and records are only appended.
void start_info_file(const thread_data* td, const EngineOptions& options) {
    if (options.info_file[0] == '\0' || !td->o.create_serialize) {
        return;
    }
    static std::mutex lock;
    static std::set<std::string> emptied;
    const std::lock_guard guard(lock);
    if (emptied.insert(options.info_file).second) {
        truncate_file(options.info_file);
    }
}

// What the job's transports cannot do (gpu= over NVMe/TCP), and digest_enable's
// value, refused before anything connects. A discovery spec's files take its
// transport, so the files as given (before discovery) say it all.
void check_transports(thread_data* td) {
    const EngineOptions& o = options_of(td);
    parse_digest_enable(o.digest_enable);
    for (const TargetSpec& spec : specs_of(td)) {
        check_transport_support(spec.transport, o.gpu);
    }
}

// "NVMe/RDMA", "NVMe/TCP", or both, for the note naming SPDK options with no effect.
std::string transports_named(const std::vector<TargetSpec>& specs) {
    const bool tcp = std::ranges::any_of(
        specs, [](const TargetSpec& s) { return s.transport == Transport::tcp; });
    const bool rdma = std::ranges::any_of(
        specs, [](const TargetSpec& s) { return s.transport == Transport::rdma; });
    return rdma && tcp ? "NVMe/RDMA or NVMe/TCP" : tcp ? "NVMe/TCP" : "NVMe/RDMA";
}

// Runs in fio's parent, before any job forks: turns a discovery spec into the subsystems
// it lists, learns the namespace sizes and the number of commands per I/O. With process
// jobs the network work (RDMA or TCP) happens in short-lived children (see
// run_rdma_work); with thread jobs in this process. No connection survives it.
int nvmeof_setup(thread_data* td) {
    try {
        check_transports(td);
        // gpu=: refused here, before any job starts, when it cannot work. Only
        // looked for, never initialised: CUDA does not survive fio's fork.
        if (const EngineOptions& o = options_of(td); parse_gpu_option(o.gpu).enabled) {
            std::string why;
            if (!gpu_driver_present(&why)) {
                throw SpecError("gpu=" + std::string(o.gpu) + ": " + why);
            }
        }
        const EngineOptions& o = options_of(td);
        check_numeric_options({o.queue_size, o.nr_io_queues, o.keep_alive_ms, o.connect_timeout_ms,
                               o.io_timeout_ms, o.reconnect_delay_ms, o.ctrl_loss_tmo_ms,
                               o.fast_io_fail_tmo_ms});
        // The keys are read (files too) before any job starts, so a typo fails
        // the run at once instead of at the target.
        check_secret_options(o.dhchap_secret, o.dhchap_ctrl_secret);
        const ProtectionOptions protection = protection_options(o);
        use_discovered_subsystems(td);  // every file's spec resolves, before anything connects
        name_files_by_target(td);
        const std::vector<TargetSpec> specs = specs_of(td);
        // digest_enable means something where a file is over TCP.
        const bool digest_ignored = parse_digest_enable(o.digest_enable).given &&
                                    std::ranges::none_of(specs, [](const TargetSpec& s) {
                                        return s.transport == Transport::tcp;
                                    });
        if (o.spdk_ignored != 0 || digest_ignored) {
            say_note("nvmeof: %s: SPDK plugin option(s) with no effect on %s, ignored: %s\n",
                     td->o.name, transports_named(specs).c_str(),
                     ignored_option_names(o.spdk_ignored, digest_ignored).c_str());
        }
        start_info_file(td, o);
        const Probe p = probe_where_rdma_may_run(td, specs, o);
        options_of(td).pieces_per_io_u = p.pieces_per_io_u;
        for (unsigned int i = 0; td->files != nullptr && i < td->o.nr_files; ++i) {
            td->files[i]->real_file_size = p.file_size[i];
            fio_file_set_size_known(td->files[i]);
        }
        note_protection_options(td, protection, specs, p);
        std::copy(std::begin(p.zones), std::end(p.zones), std::begin(options_of(td).zones));
        if (const std::string note = check_zone_options(td, o, specs); !note.empty()) {
            say_once("nvmeof: " + std::string(td->o.name) + ": " + note, say_note);
        }
        mark_zoned_files(td, o);
        check_start_offsets(td, specs);
        return 0;
    } catch (const std::exception& error) {
        return fail_job(td, "setup", error);
    }
}

int nvmeof_init(thread_data* td) {
    try {
        // With create_serialize=0 fio calls init before setup: check and
        // discover here then.
        check_transports(td);
        use_discovered_subsystems(td);
        td->io_ops_data = new Job(td, specs_of(td), options_of(td));
        return 0;
    } catch (const std::exception& error) {
        return fail_job(td, "init", error);
    }
}

int nvmeof_iomem_alloc(thread_data* td, std::size_t bytes) {
    try {
        td->orig_buffer = static_cast<char*>(job_of(td)->allocate_buffers(bytes));
        return 0;
    } catch (const std::exception& error) {
        return fail_job(td, "buffer registration", error);
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

// Per I/O: no exception boundary, since queue() and commit() handle their own
// errors (the other hooks turn an exception into fio's error).
fio_q_status nvmeof_queue(thread_data* td, io_u* unit) {
    return job_of(td)->queue(unit);
}

int nvmeof_commit(thread_data* td) {
    return job_of(td)->commit();
}

int nvmeof_getevents(thread_data* td, unsigned int min, unsigned int max, const timespec* t) {
    try {
        return job_of(td)->getevents(min, max, t);
    } catch (const std::exception& error) {
        report(td, "getevents", error);
        return -EIO;
    }
}

io_u* nvmeof_event(thread_data* td, int index) {
    return job_of(td)->event(index);
}

// fio's zone hooks (zonemode=zbd), zoned.hpp. fio wants a negative errno and
// reads errno for its own line after the engine's.
int zone_hook_failed(thread_data* td, const char* hook, const std::exception& error) {
    report(td, hook, error);
    errno = error_number(error);
    return -errno;
}

int nvmeof_get_zoned_model(thread_data* td, fio_file* f, zbd_zoned_model* model) {
    *model = zoned_model(options_of(td), f);
    return 0;
}

int nvmeof_report_zones(thread_data* td, fio_file* f, std::uint64_t offset, zbd_zone* zones,
                        unsigned int nr_zones) {
    try {
        const std::vector<zbd_zone> found = report_zones(td, spec_of(td, f), f, offset, nr_zones);
        std::copy(found.begin(), found.end(), zones);
        return static_cast<int>(found.size());
    } catch (const std::exception& error) {
        return zone_hook_failed(td, "report_zones", error);
    }
}

int nvmeof_reset_wp(thread_data* td, fio_file* f, std::uint64_t offset, std::uint64_t length) {
    try {
        reset_zones(td, spec_of(td, f), f, offset, length);
        return 0;
    } catch (const std::exception& error) {
        return zone_hook_failed(td, "reset_wp", error);
    }
}

int nvmeof_get_max_open_zones(thread_data* td, fio_file* f, unsigned int* max_open) {
    *max_open = max_open_zones(options_of(td), f);
    return 0;
}

int nvmeof_open_file(thread_data*, fio_file*) {
    return 0;
}
int nvmeof_close_file(thread_data*, fio_file*) {
    return 0;
}

ioengine_ops engine_ops = {
    .name = "nvmeof",
    .version = FIO_IOOPS_VERSION,
    // FIO_ASYNCIO_SETS_ISSUE_TIME: fio would stamp the issue time after queue()
    // and commit() return, after the command went out (a clat shorter than
    // the target's own delay); Job stamps it just before the post instead.
    .flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND | FIO_RAWIO | FIO_MEMALIGN |
             FIO_NO_OFFLOAD | FIO_ASYNCIO_SETS_ISSUE_TIME,
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
    .get_zoned_model = nvmeof_get_zoned_model,
    .report_zones = nvmeof_report_zones,
    .reset_wp = nvmeof_reset_wp,
    .get_max_open_zones = nvmeof_get_max_open_zones,
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
        log_err(
            "nvmeof: this engine was built for %s but is loaded into %s; rebuild it against "
            "the running fio's source (tools/fetch-fio-source.sh)\n",
            FIO_EXPECTED_VERSION, running != nullptr ? running : "an unknown fio");
        *ops = nullptr;
        return;
    }
    *ops = &nvmeof::engine::engine_ops;
}
