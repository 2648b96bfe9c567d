// Memory registrations, and the checks every data-path access makes against
// them.  Registered bytes are host memory or CUDA device memory (gpu_memory.h);
// the data path moves them only through read_span/write_span.
#pragma once
#include <cstddef>
#include <cstdint>

#include "objects.h"

namespace sv {

// The MR behind a local SGE: its lkey exists, it belongs to the QP's PD,
// covers the range and grants every bit of `need`.  Null otherwise.
const Mr* local_mr(const Qp* qp, const ibv_sge& sge, unsigned need);
inline Span local_span(const Mr* mr, const ibv_sge& sge) { return {sge.addr, sge.length, mr->gpu}; }

// Where a remote access to [raddr, raddr + len) through rkey lands; false when
// the rkey is unknown, from another PD, lacks `need` or does not cover the range.
bool remote_span(const Qp* qp, uint32_t rkey, uint64_t raddr, uint64_t len, unsigned need, Span* out);

// Copies between registered memory and host bytes; false when a device copy failed.
bool read_span(const Span& span, void* dst);
bool write_span(const Span& span, std::size_t offset, const void* src, std::size_t n);

}  // namespace sv
