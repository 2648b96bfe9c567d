// GPU memory: what a registration is, the CUDA ordering seam, the run-time
// CUDA driver, the choice of RDMA device by PCIe locality and GpuBuffer, for
// programs. Declared in the base layer (nvmeof/base/gpu.hpp): the GPU layer
// defines them and the memory layer keeps a region's kind and ordering.
#pragma once

#include "nvmeof/base/gpu.hpp"
