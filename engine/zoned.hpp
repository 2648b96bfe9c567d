// Zoned namespaces in the engine: fio's zone hooks (zonemode=zbd) and SPDK's
// plugin options initial_zone_reset and zone_append. setup() learns each
// file's zone facts with the probe, checks the options against them and marks
// the zoned files for fio; the hooks report and reset zones through the job's
// own connection once it has one, else (fio's parent, before any job connects)
// through a connection of their own for the call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job.hpp"
#include "target_spec.hpp"

namespace nvmeof::engine {

// A file's zone facts, from its namespace and the layout of fio's buffer.
ZoneFacts zone_facts(const Namespace& ns, const FileLayout& layout);

// zone_append=1 where it cannot work, refused in one line naming the option
// and the namespace (SpecError): a namespace that is not zoned, a controller
// without Zone Append, a block size above its Zone Append limit, a namespace
// with metadata, a job without zonemode=zbd (only fio's zone mode writes each
// zone in order at its write pointer). Returns the note to say
// once ("" for none): initial_zone_reset=1 does nothing on a namespace that is
// not zoned.
std::string check_zone_options(const thread_data* td, const EngineOptions& options,
                               const std::vector<TargetSpec>& specs);

// fio asks a file for its zone model only when the file is not a regular file
// (zbd.c emulates zones in those): zoned namespaces become character devices,
// as Linux's NVMe generic devices (/dev/ngXnY) are to fio. Not block devices:
// fio would then demand direct=1, which means nothing to this engine.
void mark_zoned_files(thread_data* td, const EngineOptions& options);

// The hooks' work; each throws, and fio_nvmeof.cpp turns the exception into
// one line and fio's negative errno.
zbd_zoned_model zoned_model(const EngineOptions& options, const fio_file* f);
unsigned int max_open_zones(const EngineOptions& options, const fio_file* f);
// The zones from the one holding byte `offset` on, at most `max_zones`, in
// fio's terms (bytes of the file).
std::vector<zbd_zone> report_zones(thread_data* td, const TargetSpec& spec, const fio_file* f,
                                   std::uint64_t offset, unsigned int max_zones);
// Resets every zone in [offset, offset + length): one Select All reset where
// that is the whole namespace, else one reset per zone.
void reset_zones(thread_data* td, const TargetSpec& spec, const fio_file* f, std::uint64_t offset,
                 std::uint64_t length);

}  // namespace nvmeof::engine
