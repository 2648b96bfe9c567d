// The engine options' limits, checked in setup() before any job starts, and
// the SPDK plugin option names this engine accepts without a meaning here.
// Pure logic, no fio headers, so it is unit-tested on its own. Every check
// throws SpecError whose one line names the option.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace nvmeof::engine {

inline constexpr unsigned kMaxQueueSize = 65535;  // NVMe queue entries (16-bit SQSIZE + 1)
inline constexpr unsigned kMinQueueSize = 2;      // one entry always stays free
inline constexpr unsigned kMaxIoQueues =
    65534;  // Set Features Number of Queues: 0's based, 0xFFFF reserved
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

// SPDK's fio plugins' option names (spdk/app/fio/nvme and the bdev plugin)
// that have no effect on NVMe/RDMA here: accepted so that SPDK job files run
// by changing only ioengine, and named once per job in a note.
inline constexpr std::array<std::string_view, 28> kSpdkIgnoredOptions = {
    "enable_wrr",
    "arbitration_burst",
    "low_weight",
    "medium_weight",
    "high_weight",
    "wrr_priority",
    "mem_size_mb",
    "shm_id",
    "enable_sgl",
    "sge_size",
    "bit_bucket_data_len",
    "pi_act",
    "pi_chk",
    "md_per_io_size",
    "apptag",
    "apptag_mask",
    "digest_enable",
    "enable_vmd",
    "initial_zone_reset",
    "zone_append",
    "print_qid_mappings",
    "log_flags",
    "spdk_tracing",
    "spdk_conf",
    "spdk_json_conf",
    "spdk_mem",
    "spdk_single_seg",
    "disable_pcie_sgl_merge",
};
static_assert(kSpdkIgnoredOptions.size() <= 64, "one bit each in a 64-bit mask");

// "enable_sgl, digest_enable": the names of the bits set in `given`, in table order.
std::string ignored_option_names(std::uint64_t given);

}  // namespace nvmeof::engine
