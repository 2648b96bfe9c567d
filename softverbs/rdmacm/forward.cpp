// The replacement librdmacm.so.1: every implemented rdma_* function forwards to
// its sv_rdma_* twin in the replacement libibverbs.so.1 (SOFTVERBS_PRIVATE).
// Unimplemented exports are generated trap stubs (rdmacm_traps.cpp).
#include "cm_api.h"

#define SV_FORWARD(ret, name, params, args) \
  ret name params { return sv_##name args; }
extern "C" {
SV_CM_FUNCS(SV_FORWARD)
}
