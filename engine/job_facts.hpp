// What a job connected to, as one JSON line for the info_file option: the
// start-up facts in a form a regression runner reads without scraping text.
// Pure logic, no fio headers, so it is unit-tested on its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nvmeof/options.hpp"  // Transport

namespace nvmeof::engine {

struct ControllerFacts {
    std::string trtype = "rdma";  // or "tcp"
    std::string traddr;
    std::uint16_t trsvcid = 0;
    std::string subnqn;
    std::string host_nqn;
    std::uint16_t cntlid = 0;
    std::string model, serial, firmware;
    std::uint32_t io_queues = 0;  // granted
    std::uint32_t io_queues_asked = 0;
    std::uint32_t queue_size = 0;  // entries per I/O queue, granted
    std::uint32_t queue_size_asked = 0;
    std::uint32_t usable_slots = 0;
    std::uint64_t mdts_bytes = 0;  // 0: no limit
    std::uint64_t max_transfer_bytes = 0;
    std::uint32_t kas_ms = 0;         // keep-alive granularity; 0: not supported
    std::uint32_t keep_alive_ms = 0;  // asked; 0: off
    std::string source;               // local address used
    std::string device;               // RDMA device; "" over TCP
};

struct NamespaceFacts {
    std::string file;            // fio's file name
    std::size_t controller = 0;  // index into JobFacts::controllers
    std::uint32_t nsid = 0;
    std::uint64_t size_bytes = 0;
    std::uint64_t blocks = 0;
    std::uint32_t lba_size = 0;
    std::uint32_t metadata_size = 0;  // per block, interleaved after its data
    unsigned pi_type = 0;             // 0: no protection information
    std::string layout = "plain";     // of fio's buffer: plain, interleaved or data-only
    std::uint32_t block_bytes = 0;    // per block in fio's buffer (file offsets and size)
};

struct JobFacts {
    std::string job;              // fio's job name
    unsigned int job_number = 0;  // fio's 1-based job number (numjobs clones differ)
    long pid = 0;
    unsigned int iodepth = 0;  // after any clamp
    std::vector<ControllerFacts> controllers;
    std::vector<NamespaceFacts> namespaces;
};

// How a controller rode out its outages (jobs with ctrl_loss_tmo_ms), for the
// record written when the job ends.
struct ReconnectFacts {
    std::string traddr;  // as the job named it (first path)
    std::uint16_t trsvcid = 0;
    std::string subnqn;
    std::string path;  // the address in use at the end ("addr:port")
    std::uint32_t reconnects = 0;
    std::uint32_t failed_attempts = 0;
    std::vector<std::uint64_t> outages_ms;  // each ended outage
    std::uint64_t ios_retried = 0;
    std::uint64_t ios_failed = 0;
    std::uint32_t ana_moves = 0;  // moves on an ANA change notice
    bool lost = false;
    std::string lost_reason;
};

struct JobEndFacts {
    std::string job;
    unsigned int job_number = 0;
    long pid = 0;
    std::vector<ReconnectFacts> controllers;
    // Summed over the job's I/O queues: over NVMe/TCP the system calls and
    // PDUs a benchmark divides by fio's I/O count (zeros over NVMe/RDMA).
    TransportCounters transport;
};

// One line of JSON (ending in '\n'): "record" is "start" for the start-up
// facts, "end" for what happened during the job (its reconnects and its
// transport's counters).
std::string to_json_line(const JobFacts& facts);
std::string to_json_line(const JobEndFacts& facts);

// Appends `line` with one write() (records of concurrent jobs never
// interleave); throws SpecError naming info_file when the file cannot be
// written.
void append_line(const std::string& path, std::string_view line);
// Empties (creates) the file; throws SpecError naming info_file.
void truncate_file(const std::string& path);

}  // namespace nvmeof::engine
