"""Namespace.compare and compare_async against nvmeof-target over softverbs:
True for the same blocks, False for one byte changed (in the last command of
a transfer cut at MDTS too), a future's True/False, the stored PI checked as a
read checks it (PRACT, a corrupted guard caught by PRCHK), and the errno an
NvmeError for a Compare Failure carries."""
import errno

import numpy
import pytest

import nvmeof
from nvmeof import Prchk

from conftest import start_target

ONCS_COMPARE = 1 << 0


def connect(target):
    return nvmeof.Controller.connect(target.address, target.nqn, port=target.port)


def test_compare_same_and_different_across_mdts():
    with start_target("--mdts", "1") as target:  # 8 KiB commands
        with connect(target) as controller:
            assert controller.limits["oncs"] & ONCS_COMPARE
            namespace = controller.namespace(1)
            count, slba = 4 * controller.limits["max_transfer_bytes"] // namespace.lba_size, 64
            source = numpy.random.default_rng(3).integers(0, 256, count * namespace.lba_size,
                                                          dtype=numpy.uint8)
            with controller.register(source) as buffer:
                namespace.write(buffer, slba)
                assert namespace.compare(buffer, slba) is True
                assert namespace.compare_async(buffer, slba).result(30) is True
                source[-1] ^= 1  # in the last command
                assert namespace.compare(buffer, slba) is False
                assert namespace.compare_async(buffer, slba).result(30) is False
                assert namespace.compare(buffer, slba, count - 1) is True
                # The keyword arguments are write()'s.
                assert namespace.compare(buffer, slba + 1, 1, buffer_offset=namespace.lba_size)
        target.stop()
        # Four calls cut in four commands, one of 63 blocks (four too), one of a block.
        assert target.stats()["commands"]["compare"] == 5 * 4 + 1


def test_compare_checks_the_stored_pi():
    with start_target("--fault", "corrupt-guard=13", namespace="ram:16M:4096+8:pi1") as target, \
            connect(target) as controller:
        namespace = controller.namespace(1)
        count, slba, apptag = 8, 8, 0x0042
        with controller.allocate(count * namespace.buffer_block_size(pract=True)) as data:
            data.write(bytes(range(256)) * (len(data) // 256))
            namespace.write(data, slba, pract=True, apptag=apptag)  # block 13's guard damaged
            assert namespace.compare(data, slba, pract=True, apptag=apptag)
            assert namespace.compare(data, slba, 5, pract=True, prchk=Prchk.ALL, apptag=apptag)
            with pytest.raises(nvmeof.NvmeError, match="Guard") as raised:
                namespace.compare(data, slba, pract=True, prchk=Prchk.GUARD, apptag=apptag)
            assert raised.value.errno == errno.EILSEQ
            with pytest.raises(nvmeof.NvmeError, match="Guard") as raised:
                namespace.compare_async(data, slba, pract=True, prchk=Prchk.GUARD).result(30)
            assert raised.value.errno == errno.EILSEQ
            data.write(b"\xff", 3 * namespace.lba_size)
            assert namespace.compare(data, slba, pract=True, apptag=apptag) is False


def test_a_compare_failure_is_ebadmsg():
    error = nvmeof.NvmeError("Compare Failure", sct=2, sc=0x85)
    assert isinstance(error, OSError) and error.errno == errno.EBADMSG
    assert nvmeof.NvmeError("Guard Check Error", sct=2, sc=0x82).errno == errno.EILSEQ
    assert "False" in nvmeof.Namespace.compare.__doc__ and "ONCS" in nvmeof.Namespace.compare.__doc__
