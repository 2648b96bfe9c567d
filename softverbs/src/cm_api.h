// CM entry points implemented in the replacement libibverbs.so.1 and exported
// there as SOFTVERBS_PRIVATE; librdmacm.so.1's rdma_* functions forward here,
// so all state (devices, engine, QPs) lives in one library.
#pragma once
#include "rdma.h"

#define SV_CM_FUNCS(X)                                                                                                \
  X(struct rdma_event_channel*, rdma_create_event_channel, (void), ())                                                \
  X(void, rdma_destroy_event_channel, (struct rdma_event_channel * ch), (ch))                                         \
  X(int, rdma_create_id,                                                                                              \
    (struct rdma_event_channel * ch, struct rdma_cm_id * *id, void* ctx, enum rdma_port_space ps), (ch, id, ctx, ps)) \
  X(int, rdma_destroy_id, (struct rdma_cm_id * id), (id))                                                             \
  X(int, rdma_bind_addr, (struct rdma_cm_id * id, struct sockaddr * a), (id, a))                                      \
  X(int, rdma_resolve_addr, (struct rdma_cm_id * id, struct sockaddr * s, struct sockaddr * d, int ms),               \
    (id, s, d, ms))                                                                                                   \
  X(int, rdma_resolve_route, (struct rdma_cm_id * id, int ms), (id, ms))                                              \
  X(int, rdma_create_qp, (struct rdma_cm_id * id, struct ibv_pd * pd, struct ibv_qp_init_attr * a), (id, pd, a))      \
  X(void, rdma_destroy_qp, (struct rdma_cm_id * id), (id))                                                            \
  X(int, rdma_connect, (struct rdma_cm_id * id, struct rdma_conn_param * p), (id, p))                                 \
  X(int, rdma_listen, (struct rdma_cm_id * id, int backlog), (id, backlog))                                           \
  X(int, rdma_accept, (struct rdma_cm_id * id, struct rdma_conn_param * p), (id, p))                                  \
  X(int, rdma_reject, (struct rdma_cm_id * id, const void* pd, uint8_t len), (id, pd, len))                           \
  X(int, rdma_disconnect, (struct rdma_cm_id * id), (id))                                                             \
  X(int, rdma_get_cm_event, (struct rdma_event_channel * ch, struct rdma_cm_event * *ev), (ch, ev))                   \
  X(int, rdma_ack_cm_event, (struct rdma_cm_event * ev), (ev))                                                        \
  X(__be16, rdma_get_src_port, (struct rdma_cm_id * id), (id))                                                        \
  X(__be16, rdma_get_dst_port, (struct rdma_cm_id * id), (id))                                                        \
  X(struct ibv_context**, rdma_get_devices, (int* n), (n))                                                            \
  X(void, rdma_free_devices, (struct ibv_context * *list), (list))                                                    \
  X(const char*, rdma_event_str, (enum rdma_cm_event_type e), (e))                                                    \
  X(int, rdma_set_option, (struct rdma_cm_id * id, int level, int name, void* val, size_t len),                       \
    (id, level, name, val, len))

#define SV_DECLARE(ret, name, params, args) ret sv_##name params;
extern "C" {
SV_CM_FUNCS(SV_DECLARE)
}
#undef SV_DECLARE
