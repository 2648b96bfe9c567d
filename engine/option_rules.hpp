// The engine options' limits, checked in setup() before any job starts, the
// end-to-end protection options (SPDK's plugin's names and meanings), and the
// SPDK plugin option names this engine accepts without a meaning here.
// Pure logic, no fio headers, so it is unit-tested on its own. Every check
// throws SpecError whose one line names the option.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "nvmeof/option_rules.hpp"

namespace nvmeof::engine {

// The library's option rules (nvmeof/option_rules.hpp) speak of Options
// fields; a job file's user knows them by these names.
inline constexpr OptionNames kFioNames{
    .target = "traddr",
    .subsystem_nqn = "subnqn",
    .port = "trsvcid",
    .host_nqn = "hostnqn",
    .host_id = "hostid",
    .queue_depth = "queue_size",
    .io_queues = "nr_io_queues",
    .timeout = "connect_timeout_ms",
    .io_timeout = "io_timeout_ms",
    .ctrl_loss_tmo = "ctrl_loss_tmo_ms",
    .reconnect_delay = "reconnect_delay_ms",
    .fast_io_fail_tmo = "fast_io_fail_tmo_ms",
    .dhchap_secret = "dhchap_secret",
    .dhchap_ctrl_secret = "dhchap_ctrl_secret",
};

// The engine's own rules beside the library's: a keep_alive_ms below a second
// is most likely seconds meant (nvme-cli's unit), and io_timeout_ms 0, the
// library's "as the connect timeout", would read as "no timeout" in a job file.
inline constexpr unsigned kMinKeepAliveMs = 1000;

// The numeric options as fio stored them (0 where fio's default is 0).
struct NumericOptions {
    unsigned int queue_size = 0;  // 0: derived from iodepth
    unsigned int nr_io_queues = 1;
    unsigned int keep_alive_ms = 0;  // 0: off
    unsigned int connect_timeout_ms = 30000;
    unsigned int io_timeout_ms = 30000;
    unsigned int reconnect_delay_ms = 10000;
    unsigned int ctrl_loss_tmo_ms = 0;     // 0: no reconnect
    unsigned int fast_io_fail_tmo_ms = 0;  // 0: off
};
void check_numeric_options(const NumericOptions& options);

// dhchap_secret and dhchap_ctrl_secret (either may be empty: not given), read
// as the connect will read them.
void check_secret_options(const std::string& secret, const std::string& ctrl_secret);

// The end-to-end protection options, as SPDK's fio plugin (and fio's
// io_uring_cmd engine) name them: what each read and write asks of a
// namespace with protection information (PI), and what the host does itself.
inline constexpr std::uint16_t kDefaultApptag = 0x1234;
inline constexpr std::uint16_t kDefaultApptagMask = 0xFFFF;
inline constexpr std::uint64_t kDefaultMdPerIoSize = 4096;  // SPDK's separate metadata buffer
struct ProtectionOptions {
    bool pi_act = true;       // PRACT: the controller inserts and strips PI
    std::uint8_t pi_chk = 0;  // PRCHK bits (kPrchkGuard, kPrchkApptag, kPrchkReftag)
    std::uint16_t apptag = kDefaultApptag;
    std::uint16_t apptag_mask = kDefaultApptagMask;
    std::uint64_t md_per_io_size = kDefaultMdPerIoSize;  // accepted; no fabrics format uses it
    bool pi_given = false;                               // pi_act or pi_chk set in the job
    bool md_per_io_size_given = false;
};
// The options' text as the job gave it ("" or unset: the default).
struct ProtectionOptionText {
    std::string_view pi_act = {};
    std::string_view pi_chk = {};
    std::string_view apptag = {};
    std::string_view apptag_mask = {};
    std::string_view md_per_io_size = {};
};
// pi_act 0 or 1; pi_chk any of GUARD, REFTAG, APPTAG (any case) joined by ','
// or '|'; apptag and apptag_mask 16-bit numbers (decimal or 0x hex);
// md_per_io_size a byte count (k, m, g suffixes: KiB, MiB, GiB) below 4 GiB.
ProtectionOptions parse_protection_options(const ProtectionOptionText& text);
// "GUARD|REFTAG" for PRCHK bits, "none" for none.
std::string pi_chk_names(std::uint8_t checks);

// digest_enable, as SPDK's plugin reads it: the NVMe/TCP digests (CRC-32C of
// each PDU's header, of each PDU's data) asked for in ICReq; the controller may
// decline them. Over RDMA, which has no PDUs, it has no effect.
struct DigestChoice {
    bool header = false;
    bool data = false;
    bool given = false;  // set in the job (NONE too)
};
// HEADER, DATA, BOTH or NONE, any case; "" or unset: none (SPDK's default).
// Anything else is refused, on either transport.
DigestChoice parse_digest_enable(std::string_view text);

// What a transport cannot do yet, refused before any job starts in one line
// naming the option: gpu= (any value but "") over NVMe/TCP, whose data goes
// through the socket from host memory.
void check_transport_support(Transport transport, std::string_view gpu);

// SPDK's fio plugins' option names (spdk/app/fio/nvme and the bdev plugin)
// that have no effect here, on either transport: accepted so that SPDK job
// files run by changing only ioengine, and named once per job in a note.
inline constexpr std::array<std::string_view, 20> kSpdkIgnoredOptions = {
    "enable_wrr",         "arbitration_burst", "low_weight",          "medium_weight",
    "high_weight",        "wrr_priority",      "mem_size_mb",         "shm_id",
    "enable_sgl",         "sge_size",          "bit_bucket_data_len", "enable_vmd",
    "print_qid_mappings", "log_flags",         "spdk_tracing",        "spdk_conf",
    "spdk_json_conf",     "spdk_mem",          "spdk_single_seg",     "disable_pcie_sgl_merge",
};
static_assert(kSpdkIgnoredOptions.size() <= 64, "one bit each in a 64-bit mask");

// "enable_sgl, sge_size": the names of the bits set in `given`, in table
// order, then digest_enable when `digest_ignored` (given to a job with no file
// over TCP).
std::string ignored_option_names(std::uint64_t given, bool digest_ignored = false);

}  // namespace nvmeof::engine
