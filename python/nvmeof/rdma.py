"""The queue-level API, with the reference package's names:

    RDMAQueue       a queue of a controller (nvmeof.IoQueue): submit(), poll(), execute()
    Request         a command in flight (done, response, command_id, data_owner)
    HostBuffer      registered memory (nvmeof.Buffer): read(), write(), addr, rkey, lkey
    QueueFullError  submit() found every command slot in use

Queues and buffers come from a connected Controller (controller.io,
controller.io_queue(i), controller.admin, controller.allocate()); they are not
constructed directly, since the C++ core owns the RDMA resources.
"""
from nvmeof._core import Buffer as HostBuffer
from nvmeof._core import IoQueue as RDMAQueue
from nvmeof._core import Request
from nvmeof.errors import QueueFullError

__all__ = ["HostBuffer", "QueueFullError", "RDMAQueue", "Request"]
