"""NVMe over Fabrics (RDMA) from Python, on the nvmeof C++ core.

    import nvmeof
    with nvmeof.Controller.connect(target_ip, subsystem_nqn, source=initiator_ip) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(4096) as block:
            namespace.read(block, slba=0, blocks=1)

Blocking calls release the GIL. Threads may share a controller: each call
into it is serialised, but a blocking read or write holds the controller only
to submit and to poll, so several threads' transfers are in flight together.
"""
from nvmeof._core import Buffer, Controller, IoQueue, Namespace, Request, Response
from nvmeof.errors import ConnectError, Error, NvmeError, TransportError
from nvmeof import protocol

__all__ = ["Buffer", "Controller", "IoQueue", "Namespace", "Request", "Response",
           "Error", "ConnectError", "NvmeError", "TransportError", "protocol"]
