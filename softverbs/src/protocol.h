// Hooks the engine calls into the CM and data-path layers (all with core().mu held).
#pragma once
#include "conn.h"

namespace sv {

struct Listener;

// cm_wire.cpp
void cm_on_tcp_connected(Conn* c);
void cm_on_tcp_failed(Conn* c, int err);
void cm_on_accepted(Conn* c, Listener* l);
void cm_on_message(Conn* c);
// The peer vanished (EOF, reset) or a fault dropped the link; closes c.
void on_conn_lost(Conn* c, int err);
// Unlinks a dying connection from its QP and CM id.
void detach_conn(Conn* c);

// datapath: decides where the payload of in.hdr goes (may park for RNR).
void dp_on_header(Conn* c);
// datapath: the whole message (header + payload) has arrived.
void dp_on_message(Conn* c);
// datapath: sends the cumulative ACK for requests processed in this batch.
void dp_flush_ack(Conn* c);
// datapath: the status of a message whose payload could not be copied into GPU memory.
uint32_t dp_device_copy_failure(Sink sink);

}  // namespace sv

namespace sv {
// requester.cpp
void req_on_ack(Conn* c);
void req_on_nak(Conn* c);
void req_on_read_resp_header(Conn* c);
void req_on_read_resp(Conn* c);
}  // namespace sv
