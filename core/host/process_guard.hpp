// The one piece of process-wide state the library keeps: which process first
// used RDMA through it.
//
// librdmacm opens every RDMA device once per process and keeps the files open
// until the process ends; the kernel refuses writes on them from a forked child
// (uverbs checks the opener's credentials), so in a child of a process that used
// RDMA every post fails with EACCES on real providers. Rather than fail deep in
// the first command with "Permission denied", refuse such a connect up front and
// say why and what to do instead.
#pragma once

namespace nvmeof::detail {

// Throws ConnectError(forked_after_use) in a child of a process that used RDMA
// through this library; otherwise records this process as the user.
void claim_rdma_for_this_process();

}  // namespace nvmeof::detail
