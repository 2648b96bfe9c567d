"""PyTorch CPU tensors as buffers against nvmeof-target over softverbs:
Controller.register of a tensor (by DLPack, in place, kept alive while
registered), torch.frombuffer over an allocated block (zero copy), round trips
with the data checked through the target."""
import gc
import weakref

import numpy
import pytest

from conftest import TORCH_MISSING

torch = pytest.importorskip("torch", reason=TORCH_MISSING)

import nvmeof  # noqa: E402

from test_api import connect, pattern  # noqa: E402


def pattern_tensor(size, seed):
    return torch.from_numpy(pattern(size, seed))


def test_round_trip_torch_cpu_tensors(target):
    with connect(target) as controller:
        namespace = controller.namespace(1)
        # A 2-D float tensor out, a fresh one in: both registered in place.
        source = pattern_tensor(64 * 1024, 21).view(torch.float32).view(128, 128)
        sink = torch.zeros(128, 128, dtype=torch.float32)
        with controller.register(source) as out, controller.register(sink) as into:
            assert out.obj is source and len(out) == source.numel() * source.element_size()
            numpy_view = numpy.frombuffer(out, dtype=numpy.uint8)  # the tensor's own bytes
            assert numpy_view.ctypes.data == source.data_ptr()
            del numpy_view
            namespace.write(out, slba=1000)
            namespace.read(into, slba=1000)
        assert torch.equal(sink.view(torch.uint8), source.view(torch.uint8))
        # What the target holds is the tensor's bytes (not a copy made elsewhere).
        with controller.allocate(64 * 1024) as check:
            namespace.read(check, slba=1000)
            assert bytes(memoryview(check)) == source.numpy().tobytes()
        # A slice of a larger tensor at a storage offset, read into at a byte offset.
        big = torch.zeros(4, 4096, dtype=torch.uint8)
        row = big[2]
        assert row.is_contiguous() and row.storage_offset() == 2 * 4096
        with controller.register(row) as into:
            namespace.read(into, slba=1000, blocks=4, buffer_offset=1024)
        assert torch.equal(big[2, 1024:3072], source.view(torch.uint8).flatten()[:2048])
        assert not big[2, :1024].any() and not big[:2].any() and not big[3].any()


def test_register_keeps_the_tensor_alive_until_closed(target):
    expected = pattern_tensor(8192, 22)
    with connect(target) as controller:
        namespace = controller.namespace(1)
        with controller.register(expected.clone()) as out:
            namespace.write(out, slba=1200)
        tensor = torch.zeros(8192, dtype=torch.uint8)
        alive = weakref.ref(tensor)
        buffer = controller.register(tensor)
        del tensor
        gc.collect()
        assert alive() is not None, "the registration keeps its tensor"
        namespace.read(buffer, slba=1200)
        assert torch.equal(buffer.obj, expected)
        buffer.close()
        del buffer
        gc.collect()
        assert alive() is None, "closing the registration lets the tensor go"


def test_register_refuses_unusable_tensors(target):
    with connect(target) as controller:
        with pytest.raises(ValueError, match="C-contiguous"):
            controller.register(torch.zeros(64, 64).t())
        with pytest.raises(ValueError, match="C-contiguous"):
            controller.register(torch.zeros(4096, dtype=torch.uint8)[::2])
        with pytest.raises(ValueError, match="require gradient"):
            controller.register(torch.zeros(1024, requires_grad=True))
        with pytest.raises(ValueError, match="empty"):
            controller.register(torch.zeros(0))
        with pytest.raises(ValueError, match=r"use register\(\)"):
            controller.register_gpu(torch.zeros(1024))
        with pytest.raises(ValueError, match="neither"):
            controller.register(object())


def test_frombuffer_is_zero_copy_over_an_allocated_block(target):
    expected = pattern_tensor(8192, 23)
    with connect(target) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(8192) as block:
            tensor = torch.frombuffer(block, dtype=torch.uint8)
            assert tensor.data_ptr() == numpy.frombuffer(block, dtype=numpy.uint8).ctypes.data
            tensor.copy_(expected)  # written through the tensor ...
            namespace.write(block, slba=1400)  # ... sent from the block
            tensor.zero_()
            assert not any(memoryview(block))
            namespace.read(block, slba=1400)  # read into the block ...
            assert torch.equal(tensor, expected)  # ... seen by the tensor
            words = torch.frombuffer(block, dtype=torch.int32)
            assert words.numel() == 2048 and torch.equal(words, expected.view(torch.int32))
            del tensor, words
