"""The Python package against a peer's target (tests/spdk/run-checks.sh: SPDK's nvmf_tgt):
connects, writes a random pattern across several transfers, reads it back and compares it,
and reads blocks never written. Run under softverbs-run with PYTHONPATH naming the build's
python folder.

    python_roundtrip.py ADDRESS PORT SUBSYSTEM_NQN [TRANSPORT]   (rdma, the default, or tcp)
"""
import os
import sys

import nvmeof

BLOCKS = 64      # one transfer: 256 KiB on 4096-byte blocks, above the peer's 128 KiB MDTS
ROUNDS = 4       # transfers, each at its own place
FIRST_LBA = 8


def main():
    address, port, nqn = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    transport = sys.argv[4] if len(sys.argv) > 4 else "rdma"
    with nvmeof.Controller.connect(address, nqn, port=port, transport=transport) as controller:
        model = controller.info.model.strip()
        namespace = controller.namespace(1)
        length = BLOCKS * namespace.lba_size
        with controller.allocate(length) as out, controller.allocate(length) as into:
            for i in range(ROUNDS):
                slba = FIRST_LBA + i * BLOCKS
                payload = os.urandom(length)
                out.write(payload)
                namespace.write(out, slba=slba, blocks=BLOCKS)
                into.write(bytes(length))
                namespace.read(into, slba=slba, blocks=BLOCKS)
                if into.read() != payload:
                    sys.exit(f"python: LBAs {slba}-{slba + BLOCKS - 1} read back differ from what was written")
        print(f"python: {model} ({nqn}, {transport}): "
              f"{ROUNDS} x {length} bytes written and read back equal (lba_size {namespace.lba_size}, "
              f"{namespace.size_lbas} blocks)")


if __name__ == "__main__":
    main()
