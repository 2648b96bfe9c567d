// Data-path entry points installed in ibv_context.ops, and device helpers.
#pragma once
#include "rdma.h"

namespace sv {

struct Device;

int dp_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int dp_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int dp_poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
int dp_req_notify_cq(ibv_cq* cq, int solicited_only);
void fill_device_attr(Device* d, ibv_device_attr* a);

}  // namespace sv
