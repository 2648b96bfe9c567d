// Single place that pulls in the real rdma-core headers.  softverbs implements
// functions the headers define as macros, so the macros are removed here.
#pragma once
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port
