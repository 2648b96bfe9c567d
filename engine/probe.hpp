// The work setup() does against the targets before any job starts: read each
// file's namespace (its size, block format and the commands per I/O) from fio's
// parent without leaving RDMA state behind for the jobs fio forks.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "job.hpp"

namespace nvmeof::engine {

inline constexpr std::uint16_t kProbeQueueDepth = 2;  // setup() only reads the geometry

// What setup() learns from the targets.
struct Probe {
    unsigned int file_count;
    unsigned long long file_size[kMaxFilesPerJob];  // per file, in fio's file order
    BlockFormat format[kMaxFilesPerJob];            // per file: metadata and PI
    ZoneFacts zones[kMaxFilesPerJob];               // per file: zoned or not, zone geometry
    unsigned int pieces_per_io_u;                   // commands per largest I/O, most of any file
};

// A failure of run_rdma_work's child: its one line and its errno, rebuilt in
// the parent.
class ProbeError : public std::runtime_error {
  public:
    ProbeError(int number, const std::string& what) : std::runtime_error(what), number_(number) {}
    int error_number() const { return number_; }

  private:
    int number_;
};

// The errno of a job's failure, for fio's job error.
int error_number(const std::exception& error);

// Runs `work`, which touches RDMA, and returns what it returned; its error
// comes back as the exception's one line (a ProbeError with its errno). With
// process jobs it runs in a short-lived child (see probe.cpp for why).
std::string run_rdma_work(thread_data* td, const std::function<std::string()>& work);

// Connects to each distinct controller of `specs` once, reads every file's
// namespace, chooses its layout for the job's block sizes (refusing what fits
// none) and disconnects, where RDMA may run (run_rdma_work).
Probe probe_where_rdma_may_run(thread_data* td, const std::vector<TargetSpec>& specs,
                               const EngineOptions& options);

}  // namespace nvmeof::engine
