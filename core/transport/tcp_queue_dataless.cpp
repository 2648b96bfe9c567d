// The commands TcpQueue builds off the common path: the general path's
// Flush, Write Zeroes and Deallocate (Dataset Management with one range from
// the cid's DSM buffer, in the capsule), and a caller's low-level command,
// whose keyed SGL (the host layer's and the RDMA transport's way of naming
// memory) is translated into what NVMe/TCP carries. Built with the wire
// layer's builders.
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/io.hpp"
#include "transport/command_fields.hpp"
#include "transport/tcp_queue.hpp"
#include "transport/tcp_queue_command.hpp"

namespace nvmeof::detail {

void TcpQueue::build_dataless(std::uint16_t cid, Op op, std::uint32_t nsid, std::uint64_t slba,
                              std::uint64_t blocks) noexcept {
    wire::Sqe& command = sqe(cid);
    Command& c = commands_[cid];
    wire::DsmRange& range = dsm_ranges_[cid];
    const bool ranged = op == Op::deallocate;
    c.address = ranged ? reinterpret_cast<std::uint64_t>(&range) : 0;
    c.bytes = ranged ? sizeof range : 0;
    c.flow = Flow::none;
    command = dataless_command(op, nsid, slba, blocks, range, {c.address, c.bytes, 0});
    if (ranged) {
        route_to_controller(c, command);  // 16 bytes: in the capsule
    }
    if (c.flow == Flow::none) {
        command.dptr = wire::transport_data_block(0);  // no data (as the Linux host sends)
    }
    command.command_id = cid;
}

void TcpQueue::set_no_data(std::uint16_t cid) noexcept {
    wire::Sqe& command = sqe(cid);
    Command& c = commands_[cid];
    c.address = 0;
    c.bytes = 0;
    c.flow = Flow::none;
    const wire::SglDescriptor sgl = command.dptr;
    if (!sgl.is_keyed()) {
        // Already NVMe/TCP's own (or none): sent as it is, with no data of
        // this queue's to move; data the controller then sends or asks for
        // for it is refused as naming no command that moves data.
        return;
    }
    const std::uint32_t length = sgl.keyed_length();
    if (length == 0) {
        command.dptr = wire::transport_data_block(0);
        return;
    }
    // The keyed SGL's address is memory of this process (IoQueue::submit
    // checked it against the data owner); the key means nothing here. Which
    // way it moves: bits 1:0 of the opcode, or of FCTYPE for a Fabrics
    // command (Connect and Authentication Send to the controller,
    // Authentication Receive to the host).
    c.address = sgl.address;
    c.bytes = length;
    const std::uint8_t code =
        command.opcode == wire::kFabricsOpcode ? wire::as_fabrics(command).fctype : command.opcode;
    if (wire::direction_of(code) == wire::DataDirection::host_to_controller) {
        route_to_controller(c, command);  // in the capsule if it fits, else by R2T
    } else {
        // Controller to host (and the rare opcode without a direction that
        // still names a buffer): C2HData into that memory.
        command.dptr = wire::transport_data_block(length);
        c.flow = Flow::c2h;
    }
}

void TcpQueue::rebuild_as_built(std::uint16_t cid) noexcept {
    // Its command is still in the cid's buffer, unless the reconnected
    // controller takes less in the capsule.
    Command& c = commands_[cid];
    if (c.flow == Flow::in_capsule && c.bytes > in_capsule_limit_) {
        sqe(cid).dptr = wire::transport_data_block(c.bytes);
        c.flow = Flow::r2t;
    }
}

}  // namespace nvmeof::detail
