#!/usr/bin/env python3
"""Reads a file's blocks from an NVMe-oF namespace straight into a PyTorch tensor.

    read_file_into_tensor.py FILE TARGET_IP SUBSYSTEM_NQN [PORT]

The namespace stands in for a dataset or checkpoint store: the example first
writes FILE's bytes to namespace 1 from LBA 0 (staging), then reads those
blocks back into a CPU tensor registered in place (no bounce buffer: the RDMA
transfer lands in the tensor's own memory) and checks the tensor against the
file. Exits non-zero, saying why, when anything differs or fails.
"""
import sys

import torch

import nvmeof


def blocks_for(size, lba_size):
    return (size + lba_size - 1) // lba_size


def stage_file(controller, namespace, data):
    """Writes `data` to the namespace from LBA 0, the last block zero-padded."""
    padded = bytearray(blocks_for(len(data), namespace.lba_size) * namespace.lba_size)
    padded[:len(data)] = data
    with controller.register(padded) as buffer:
        namespace.write(buffer, slba=0)


def read_into_tensor(controller, namespace, size):
    """The first `size` bytes of the namespace as a uint8 tensor, read in place."""
    blocks = blocks_for(size, namespace.lba_size)
    tensor = torch.empty(blocks * namespace.lba_size, dtype=torch.uint8)
    with controller.register(tensor) as buffer:
        namespace.read(buffer, slba=0, blocks=blocks)  # split at MDTS by the core
    return tensor[:size]


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(f"usage: {argv[0]} FILE TARGET_IP SUBSYSTEM_NQN [PORT]")
    path, target_ip, subsystem_nqn = argv[1:4]
    port = int(argv[4]) if len(argv) == 5 else 4420
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        sys.exit(f"{path}: empty file, nothing to read")
    with nvmeof.Controller.connect(target_ip, subsystem_nqn, port=port) as controller:
        namespace = controller.namespace(1)
        if len(data) > namespace.size_bytes:
            sys.exit(f"{path}: {len(data)} bytes do not fit namespace 1 ({namespace.size_bytes} bytes)")
        stage_file(controller, namespace, data)
        tensor = read_into_tensor(controller, namespace, len(data))
    expected = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    if not torch.equal(tensor, expected):
        first = int((tensor != expected).nonzero()[0])
        sys.exit(f"{path}: the tensor differs from the file at byte {first}")
    print(f"read {path} ({len(data)} bytes, {blocks_for(len(data), namespace.lba_size)} blocks of "
          f"{namespace.lba_size}) from {subsystem_nqn} into a torch.uint8 tensor: matches the file")


if __name__ == "__main__":
    main(sys.argv)
