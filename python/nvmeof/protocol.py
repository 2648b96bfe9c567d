"""NVMe command builders and constants for the low-level queue API:

    from nvmeof import protocol
    command = protocol.rw_command(protocol.OPC_READ, namespace.nsid, slba=0, blocks=1,
                                  buffer=buffer, lba_size=namespace.lba_size)
    request = controller.io.submit(command, data_owner=buffer)
"""
from nvmeof._core import Command, rw_command, status_name, wire as _wire

OPC_FLUSH = _wire.OPC_FLUSH
OPC_WRITE = _wire.OPC_WRITE
OPC_READ = _wire.OPC_READ

__all__ = ["Command", "rw_command", "status_name", "OPC_FLUSH", "OPC_WRITE", "OPC_READ"]
