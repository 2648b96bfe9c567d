#!/usr/bin/env python3
"""The Python API's register_gpu with real PyTorch CUDA tensors, for a GPU machine
(tests/gpu/python-check.sh runs it against nvmeof-target). Prints each step and
exits non-zero, saying why, on the first failure.

    torch_check.py TARGET_IP SUBSYSTEM_NQN PORT

1. A pattern made on the GPU is written from its tensor, read back into another
   CUDA tensor and compared on the GPU, with a negative control.
2. The same through DLPack alone: an object that offers only __dlpack__.
3. CUDA ordering: on a non-blocking side stream, a kernel that sleeps, then the
   fill; the write follows at once, with no synchronize by the caller. The
   library must wait for the fill; sending the tensor's old bytes fails here.
4. Refusals: a CPU tensor, a non-contiguous CUDA tensor.
5. 64 MiB each way through a 2-D tensor, split at MDTS by the core, timed
   (over softverbs these are software-transport figures).
"""
import sys
import time

import torch

import nvmeof

SIZE = 4 << 20
BIG = 64 << 20


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        sys.exit(f"torch_check: {what}: failed")


def gpu_pattern(size, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(0, 256, (size,), dtype=torch.uint8, device="cuda", generator=generator)


class DlpackOnly:
    """A CUDA tensor offered only by DLPack, as a library without
    __cuda_array_interface__ would offer it."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def round_trip(controller, namespace):
    source, sink = gpu_pattern(SIZE, 1), torch.zeros(SIZE, dtype=torch.uint8, device="cuda")
    with controller.register_gpu(source) as out, controller.register_gpu(sink) as into:
        print(f"     registered {len(out)} bytes of a torch CUDA tensor by {out.registration_path}")
        check(out.kind == "gpu" and out.obj is source, "register_gpu keeps the tensor itself")
        namespace.write(out, slba=0)
        namespace.read(into, slba=0)
    check(torch.equal(sink, source), f"{SIZE} bytes GPU -> target -> GPU, compared on the GPU")
    sink[SIZE // 2] ^= 1
    check(not torch.equal(sink, source), "negative control: one flipped bit is seen")


def by_dlpack(controller, namespace):
    source, sink = gpu_pattern(SIZE, 2), torch.zeros(SIZE, dtype=torch.uint8, device="cuda")
    offered = DlpackOnly(sink)
    check(not hasattr(offered, "__cuda_array_interface__"), "the DLPack-only object has no CAI")
    with controller.register_gpu(source) as out, controller.register_gpu(offered) as into:
        check(into.obj is offered, "a DLPack registration keeps the object it was given")
        namespace.write(out, slba=SIZE // namespace.lba_size)
        namespace.read(into, slba=SIZE // namespace.lba_size)
    check(torch.equal(sink, source), "a tensor registered by DLPack alone reads the pattern")


def ordering(controller, namespace):
    tensor = torch.zeros(SIZE, dtype=torch.uint8, device="cuda")
    expected = gpu_pattern(SIZE, 3)
    sink = torch.zeros_like(tensor)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()  # PyTorch's pool streams do not wait for the legacy stream
    with controller.register_gpu(tensor) as out, controller.register_gpu(sink) as into:
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time before the fill
            tensor.copy_(expected)
            start = time.monotonic()
            namespace.write(out, slba=0)  # no synchronize: the library must order it
            waited = time.monotonic() - start
            namespace.read(into, slba=0)
            same = torch.equal(sink, expected)  # queued on the side stream after the read
    torch.cuda.synchronize()
    print(f"     the write returned after {waited * 1000:.0f} ms (the fill waited behind a sleep)")
    check(same, "a write waits for the kernel that filled its tensor on another stream")


def refusals(controller):
    try:
        controller.register_gpu(torch.zeros(1024, dtype=torch.uint8))
        check(False, "a CPU tensor is refused by register_gpu")
    except ValueError as e:
        check("register()" in str(e), f"a CPU tensor is refused: {e}")
    try:
        controller.register_gpu(torch.zeros(64, 64, device="cuda").t())
        check(False, "a transposed CUDA tensor is refused")
    except ValueError as e:
        check("contiguous" in str(e), f"a transposed CUDA tensor is refused: {e}")


def bandwidth(controller, namespace):
    source = gpu_pattern(BIG, 4).view(256, BIG // 256)
    sink = torch.zeros_like(source)
    with controller.register_gpu(source) as out, controller.register_gpu(sink) as into:
        figures = []
        for label, transfer, buffer in (("write", namespace.write, out), ("read", namespace.read, into)):
            start = time.monotonic()
            rounds = 4
            for _ in range(rounds):
                transfer(buffer, slba=0)
            seconds = time.monotonic() - start
            figures.append(f"{label} {rounds * BIG / seconds / (1 << 20):,.0f} MiB/s")
    check(torch.equal(sink, source), f"{BIG >> 20} MiB through a 2-D tensor, split at MDTS")
    print(f"     blocking {BIG >> 20} MiB transfers, 4 each: {', '.join(figures)}")


def main(argv):
    if len(argv) != 4:
        sys.exit(f"usage: {argv[0]} TARGET_IP SUBSYSTEM_NQN PORT")
    target_ip, nqn, port = argv[1], argv[2], int(argv[3])
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    with nvmeof.Controller.connect(target_ip, nqn, port=port) as controller:
        namespace = controller.namespace(1)
        check(namespace.size_bytes >= BIG, f"namespace 1 holds {BIG >> 20} MiB")
        round_trip(controller, namespace)
        by_dlpack(controller, namespace)
        ordering(controller, namespace)
        refusals(controller)
        bandwidth(controller, namespace)
    print("torch_check: all passed")


if __name__ == "__main__":
    main(sys.argv)
