"""End-to-end protection from Python against nvmeof-target's PI namespaces over
softverbs: the layout attributes, PRACT writes read back stripped and whole
(the target's PI checked by nvmeof.pi_verify), host-generated PI written and
read with every check, application tag mismatches and the target's corrupt-*
faults raising EILSEQ, PRINFO refused on a plain namespace, asynchronous
transfers cut at MDTS with an explicit type 2 reference tag, and storage tags
with the 32-bit guard."""
import errno
import pathlib
import re

import numpy
import pytest

import nvmeof
from nvmeof import BlockFormat, Prchk

from conftest import start_target

PI1_512 = "ram:16M:512+8:pi1"
PI1_4096_GUARD64 = "ram:16M:4096+64:pi1:guard64"
PI2_FIRST = "ram:16M:512+16:pi2:first"
PI3 = "ram:16M:512+8:pi3"


def connect(target, **options):
    return nvmeof.Controller.connect(target.address, target.nqn, port=target.port, **options)


def pattern(size, seed):
    return numpy.random.default_rng(seed).integers(0, 256, size, dtype=numpy.uint8)


def blocks_of(namespace, array):
    """`array` (a buffer of extended blocks) as rows of data + metadata."""
    return array.reshape(-1, namespace.lba_size + namespace.metadata_size)


def pi_columns(namespace):
    """The columns of an extended block that hold the PI."""
    start = namespace.lba_size if namespace.pi_first else (
        namespace.lba_size + namespace.metadata_size - namespace.pi_size)
    return slice(start, start + namespace.pi_size)


@pytest.fixture(scope="module")
def pi1_target():
    with start_target(namespace=PI1_512) as t:
        yield t


@pytest.fixture(scope="module")
def guard64_target():
    with start_target(namespace=PI1_4096_GUARD64) as t:
        yield t


@pytest.fixture(scope="module", params=[PI1_512, PI1_4096_GUARD64])
def pi_namespace(request, pi1_target, guard64_target):
    target = pi1_target if request.param == PI1_512 else guard64_target
    with connect(target) as controller:
        yield controller, controller.namespace(1)


LAYOUTS = [
    # spec, (metadata_size, pi_type, pi_guard_bits, pi_first, pi_size, block, block with PRACT)
    ("ram:16M:512", (0, 0, 0, False, 0, 512, 512)),
    (PI1_512, (8, 1, 16, False, 8, 520, 512)),
    (PI1_4096_GUARD64, (64, 1, 64, False, 16, 4160, 4160)),
    (PI2_FIRST, (16, 2, 16, True, 8, 528, 528)),
    (PI3, (8, 3, 16, False, 8, 520, 512)),
    ("ram:16M:4096+16:pi3:guard64", (16, 3, 64, False, 16, 4112, 4096)),
    ("ram:16M:4096+16:pi1:guard32", (16, 1, 32, False, 16, 4112, 4096)),
]


@pytest.mark.parametrize("spec,expected", LAYOUTS, ids=[spec for spec, _ in LAYOUTS])
def test_layout_attributes(spec, expected):
    with start_target(namespace=spec) as target, connect(target) as controller:
        namespace = controller.namespace(1)
        metadata, pi_type, guard_bits, first, pi_size, block, pract_block = expected
        assert (namespace.metadata_size, namespace.pi_type, namespace.pi_guard_bits,
                namespace.pi_first, namespace.pi_size) == (metadata, pi_type, guard_bits, first, pi_size)
        assert namespace.buffer_block_size() == block
        assert namespace.buffer_block_size(pract=True) == pract_block
        # The reference package's decoder of Identify Namespace agrees.
        assert namespace.info.metadata_size == namespace.metadata_size
        assert namespace.info.lba_size == namespace.lba_size
        assert namespace.format == BlockFormat(namespace.lba_size, metadata, pi_type,
                                               pi_guard_bits=guard_bits or 16, pi_first=first)
        assert namespace.format.buffer_block_size(pract=True) == pract_block


def documented_snippet():
    """The example of docs/python.md's "End-to-end protection" section."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    section = text[text.index("## End-to-end protection"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_documented_example_runs(pi_namespace):
    controller, namespace = pi_namespace
    exec(documented_snippet(), {"nvmeof": nvmeof, "controller": controller, "namespace": namespace})


def test_pract_write_reads_back_stripped_and_with_the_targets_pi(pi_namespace):
    controller, namespace = pi_namespace
    count, slba, apptag = 24, 100, 0x1234
    size = namespace.buffer_block_size(pract=True)
    source = pattern(count * size, 1)
    with controller.register(source) as out:
        namespace.write(out, slba, pract=True, apptag=apptag)

    # PRACT: the PI stripped where it is all the metadata, else the blocks whole.
    stripped = numpy.zeros(count * size, dtype=numpy.uint8)
    with controller.register(stripped) as into:
        namespace.read(into, slba, pract=True, prchk=Prchk.ALL, apptag=apptag)
    whole = numpy.zeros(count * namespace.buffer_block_size(), dtype=numpy.uint8)
    with controller.register(whole) as into:
        namespace.read(into, slba, prchk=Prchk.ALL, apptag=apptag)

    rows = blocks_of(namespace, whole)
    if size == namespace.lba_size:
        assert numpy.array_equal(stripped, source)
        assert numpy.array_equal(rows[:, :namespace.lba_size].ravel(), source)
    else:
        # The metadata beyond the PI is the host's, kept; the PI is the target's.
        assert numpy.array_equal(stripped, whole)
        kept = numpy.ones(size, dtype=bool)
        kept[pi_columns(namespace)] = False
        assert numpy.array_equal(rows[:, kept], blocks_of(namespace, source)[:, kept])
    # The PI the target generated checks out on the host: guard, apptag, reftag.
    nvmeof.pi_verify(namespace, whole, slba, apptag=apptag)
    with pytest.raises(nvmeof.ProtectionError) as raised:
        nvmeof.pi_verify(namespace, whole, slba, apptag=apptag + 1)
    assert (raised.value.check, raised.value.block, raised.value.lba) == ("apptag", 0, slba)
    assert raised.value.errno == errno.EILSEQ
    with pytest.raises(nvmeof.ProtectionError, match="Reference Tag") as raised:
        nvmeof.pi_verify(namespace, whole, slba + 1, apptag=apptag)
    assert raised.value.check == "reftag"


def test_host_generated_pi_written_and_read_with_every_check(pi_namespace):
    controller, namespace = pi_namespace
    count, slba, apptag = 40, 300, 0x0BEE
    size = namespace.buffer_block_size()
    assert size == namespace.lba_size + namespace.metadata_size
    source, sink = pattern(count * size, 2), numpy.zeros(count * size, dtype=numpy.uint8)
    nvmeof.pi_generate(namespace, source, slba, apptag=apptag)
    with controller.register(source) as out, controller.register(sink) as into:
        namespace.write(out, slba, prchk=Prchk.ALL, apptag=apptag)
        namespace.read(into, slba, prchk=Prchk.ALL, apptag=apptag)
    assert numpy.array_equal(source, sink)
    nvmeof.pi_verify(namespace, sink, slba, apptag=apptag)

    # A block whose data changed after its PI was generated: the target's guard
    # check refuses the write (nothing stored).
    blocks_of(namespace, source)[3, 0] ^= 0xFF
    with controller.register(source) as out:
        with pytest.raises(nvmeof.NvmeError, match="Guard") as raised:
            namespace.write(out, slba, prchk=Prchk.GUARD)
    assert raised.value.errno == errno.EILSEQ and (raised.value.sct, raised.value.sc) == (2, 0x82)


def test_an_application_tag_mismatch_is_eilseq(pi1_target):
    with connect(pi1_target) as controller:
        namespace = controller.namespace(1)
        slba, count = 700, 8
        with controller.allocate(count * namespace.lba_size) as block:
            block.write(bytes(range(256)) * (len(block) // 256))
            namespace.write(block, slba, pract=True, apptag=0x00AA)
            with pytest.raises(nvmeof.NvmeError) as raised:
                namespace.read(block, slba, pract=True, prchk=Prchk.APPTAG, apptag=0x00AB)
            error = raised.value
            assert isinstance(error, OSError) and error.errno == errno.EILSEQ
            assert "Application Tag" in str(error) and (error.sct, error.sc) == (2, 0x83)
            assert isinstance(error, nvmeof.NVMeStatusError)
            # The same from a future.
            with pytest.raises(nvmeof.NvmeError, match="Application Tag") as raised:
                namespace.read_async(block, slba, pract=True, prchk=Prchk.ALL, apptag=0x00AB).result(30)
            assert raised.value.errno == errno.EILSEQ
            # Not checked: the mask 0, or PRCHK without the application tag.
            namespace.read(block, slba, pract=True, prchk=Prchk.ALL, apptag=0x00AB, apptag_mask=0)
            namespace.read(block, slba, pract=True, prchk=Prchk.GUARD | Prchk.REFTAG, apptag=0x00AB)
            # Only the masked bits are compared.
            namespace.read(block, slba, pract=True, prchk=Prchk.ALL, apptag=0x01AA, apptag_mask=0x00FF)
            assert block.read(256) == bytes(range(256))


FAULTS = [("corrupt-guard", "guard", Prchk.GUARD, "Guard"),
          ("corrupt-apptag", "apptag", Prchk.APPTAG, "Application Tag"),
          ("corrupt-reftag", "reftag", Prchk.REFTAG, "Reference Tag")]


def test_the_targets_corrupted_pi_is_caught_by_its_check():
    faulty = 5  # every fault damages its field of this block's PI
    with start_target(*[arg for fault, *_ in FAULTS for arg in ("--fault", f"{fault}={faulty}")],
                      namespace=PI1_512) as target, connect(target) as controller:
        namespace = controller.namespace(1)
        count, apptag = 8, 0x4321
        with controller.allocate(count * namespace.lba_size) as data, \
                controller.allocate(count * namespace.buffer_block_size()) as whole:
            namespace.write(data, 0, pract=True, apptag=apptag)  # blocks 0-7, 5 stored damaged
            for _, check, flag, words in FAULTS:
                with pytest.raises(nvmeof.NvmeError, match=words) as raised:
                    namespace.read(data, 0, pract=True, prchk=flag, apptag=apptag)
                assert raised.value.errno == errno.EILSEQ
            # The blocks around it pass every check.
            namespace.read(data, 0, 5, pract=True, prchk=Prchk.ALL, apptag=apptag)
            namespace.read(data, 6, 2, pract=True, prchk=Prchk.ALL, apptag=apptag)
            # Read whole without checks: the host finds the damage itself.
            namespace.read(whole, 0)
            with pytest.raises(nvmeof.ProtectionError) as raised:
                nvmeof.pi_verify(namespace, whole, 0, apptag=apptag)
            assert (raised.value.lba, raised.value.check) == (faulty, "guard")
            for _, check, flag, _ in FAULTS:
                with pytest.raises(nvmeof.ProtectionError) as raised:
                    nvmeof.pi_verify(namespace, whole, 0, prchk=flag, apptag=apptag)
                assert (raised.value.lba, raised.value.check) == (faulty, check)


def test_a_corrupt_reftag_fault_is_caught_by_prchk_reftag_alone():
    faulty = 9
    with start_target("--fault", f"corrupt-reftag={faulty}", namespace=PI1_512) as target, \
            connect(target) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(16 * namespace.lba_size) as data:
            namespace.write(data, 0, pract=True)
            with pytest.raises(nvmeof.NvmeError, match="Reference Tag") as raised:
                namespace.read(data, 0, pract=True, prchk=Prchk.REFTAG)
            assert raised.value.errno == errno.EILSEQ and raised.value.sc == 0x84
            namespace.read(data, 0, pract=True, prchk=Prchk.GUARD | Prchk.APPTAG)


def test_write_zeroes_generates_pi(pi1_target):
    with connect(pi1_target) as controller:
        namespace = controller.namespace(1)
        slba, count = 900, 4
        namespace.write_zeroes(slba, count, pract=True, apptag=0x0707)
        with controller.allocate(count * namespace.buffer_block_size()) as whole:
            whole.write(b"\xff" * len(whole))
            namespace.read(whole, slba, prchk=Prchk.ALL, apptag=0x0707)
            rows = blocks_of(namespace, numpy.frombuffer(whole, dtype=numpy.uint8))
            assert not rows[:, :namespace.lba_size].any()
            nvmeof.pi_verify(namespace, whole, slba, apptag=0x0707)


def test_prinfo_on_a_namespace_without_pi_is_a_value_error(target):
    with connect(target) as controller:
        namespace = controller.namespace(1)
        assert (namespace.metadata_size, namespace.pi_type, namespace.pi_size) == (0, 0, 0)
        with controller.allocate(4096) as block:
            for options in ({"pract": True}, {"prchk": Prchk.GUARD}, {"prchk": Prchk.ALL}):
                with pytest.raises(ValueError, match="without protection information"):
                    namespace.read(block, 0, **options)
                with pytest.raises(ValueError, match="without protection information"):
                    namespace.write_async(block, 0, **options)
                with pytest.raises(ValueError, match="without protection information"):
                    namespace.write_zeroes(0, 1, **options)
            # Tags alone ask nothing of the controller.
            namespace.read(block, 0, apptag=5, reftag=7)
        with pytest.raises(ValueError, match="no protection information"):
            nvmeof.pi_generate(namespace, bytearray(512))


def test_bad_protection_arguments_are_value_errors(pi1_target):
    with connect(pi1_target) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(520) as block:
            for options, words in (({"prchk": 8}, "prchk"), ({"prchk": -1}, "prchk"),
                                   ({"apptag": 0x10000}, "apptag"),
                                   ({"apptag_mask": -1}, "apptag_mask"),
                                   ({"reftag": 1 << 32}, "32-bit reference tag")):
                with pytest.raises(ValueError, match=words):
                    namespace.read(block, 0, **options)
            # 520 bytes: one block with its PI, not whole 512-byte blocks with PRACT.
            with pytest.raises(ValueError, match="whole number of 512-byte blocks"):
                namespace.read(block, 0, pract=True)
            namespace.read(block, 0)


def test_async_transfers_across_mdts_advance_an_explicit_type2_reftag():
    with start_target(namespace=PI2_FIRST) as target:
        with connect(target, io_queues=2) as controller:
            namespace = controller.namespace(1)
            assert (namespace.pi_type, namespace.pi_first) == (2, True)
            size = namespace.buffer_block_size()
            per_command = controller.max_transfer_bytes // size
            count, slba, reftag, apptag = 2 * per_command + 17, 1000, 0x5EED0000, 0x2222
            assert count * size > 2 * controller.max_transfer_bytes
            source, sink = pattern(count * size, 3), numpy.zeros(count * size, dtype=numpy.uint8)
            nvmeof.pi_generate(namespace, source, slba, apptag=apptag, reftag=reftag)
            tags = dict(apptag=apptag, reftag=reftag)
            with controller.register(source) as out, controller.register(sink) as into:
                namespace.write_async(out, slba, prchk=Prchk.ALL, **tags).result(60)
                namespace.read_async(into, slba, prchk=Prchk.ALL, **tags).result(60)
                assert numpy.array_equal(source, sink)
                nvmeof.pi_verify(namespace, sink, slba, **tags)
                # The blocking loop's pieces carry the same tags.
                sink[:] = 0
                namespace.read(into, slba, prchk=Prchk.ALL, **tags)
                assert numpy.array_equal(source, sink)
                # A later part alone, its reference tag counted on from the first.
                part = per_command + 3
                sink[:] = 0
                namespace.read_async(into, slba + part, count - part, prchk=Prchk.REFTAG,
                                     reftag=reftag + part).result(60)
                offset = part * size
                assert numpy.array_equal(source[offset:], sink[:count * size - offset])
                # Another reference tag: the target's check says so.
                with pytest.raises(nvmeof.NvmeError, match="Reference Tag") as raised:
                    namespace.read_async(into, slba, prchk=Prchk.REFTAG, reftag=reftag + 1).result(60)
                assert raised.value.errno == errno.EILSEQ
    commands = target.stats()["commands"]
    assert commands["write"] == 3  # one write, cut in three at MDTS counting the metadata
    assert commands["read"] >= 3 + 3 + 2


def test_block_format_and_the_host_helpers():
    assert nvmeof.crc16_t10dif(b"123456789") == 0xD0DB
    assert nvmeof.crc64_nvme(b"123456789") == 0xAE8B14860A799888
    assert nvmeof.crc64_nvme(b"6789", nvmeof.crc64_nvme(b"12345")) == 0xAE8B14860A799888
    assert nvmeof.crc16_t10dif(b"6789", nvmeof.crc16_t10dif(b"12345")) == 0xD0DB

    fmt = BlockFormat(4096, 64, 3, pi_guard_bits=64, pi_first=True)
    assert (fmt.lba_size, fmt.metadata_size, fmt.pi_type, fmt.pi_guard_bits, fmt.pi_first,
            fmt.pi_size) == (4096, 64, 3, 64, True, 16)
    assert fmt.buffer_block_size() == fmt.buffer_block_size(pract=True) == 4160
    assert BlockFormat(512, 8).pi_guard_bits == 0 and BlockFormat(512, 8) == BlockFormat(512, 8, 0)
    assert repr(fmt) == "BlockFormat(lba_size=4096, metadata_size=64, pi_type=3, pi_guard_bits=64, pi_first=True)"
    assert hash(fmt) == hash(BlockFormat(4096, 64, 3, pi_guard_bits=64, pi_first=True))
    for args, kwargs in (((512, 4, 1), {}), ((512, 8, 1), {"pi_guard_bits": 64}),
                         ((512, 8, 4), {}), ((512, 8, 1), {"pi_guard_bits": 32}),
                         ((512, 16, 1), {"pi_guard_bits": 32, "storage_tag_bits": 8}),
                         ((512, 8, 1), {"storage_tag_bits": 33}),
                         ((0, 8, 1), {})):
        with pytest.raises(ValueError):
            BlockFormat(*args, **kwargs)

    blocks = bytearray(pattern(3 * 4160, 4).tobytes())
    nvmeof.pi_generate(fmt, blocks, slba=77, apptag=0x99, reftag=0x123456789ABC)
    # Type 3: one reference tag in every block, the 64-bit guard over the data.
    for i in range(3):
        pi = blocks[i * 4160 + 4096:i * 4160 + 4096 + 16]
        assert int.from_bytes(pi[:8], "big") == nvmeof.crc64_nvme(blocks[i * 4160:i * 4160 + 4096])
        assert int.from_bytes(pi[8:10], "big") == 0x99
        assert int.from_bytes(pi[10:16], "big") == 0x123456789ABC
    nvmeof.pi_verify(fmt, bytes(blocks), 77, apptag=0x99, reftag=0x123456789ABC)
    nvmeof.pi_verify(fmt, memoryview(blocks)[4160:], blocks=2, apptag=0x99, reftag=0x123456789ABC)
    with pytest.raises(ValueError, match="48-bit"):
        nvmeof.pi_verify(fmt, blocks, reftag=1 << 48)
    with pytest.raises(ValueError, match="whole number of 4160-byte blocks"):
        nvmeof.pi_verify(fmt, blocks[:-1])
    with pytest.raises(ValueError, match="writable"):
        nvmeof.pi_generate(fmt, bytes(blocks))
    blocks[2 * 4160 + 100] ^= 1
    with pytest.raises(nvmeof.ProtectionError, match="Guard") as raised:
        nvmeof.pi_verify(fmt, blocks, 77, apptag=0x99, reftag=0x123456789ABC)
    assert (raised.value.block, raised.value.lba, raised.value.check) == (2, 79, "guard")
    nvmeof.pi_verify(fmt, blocks, 77, prchk=Prchk.APPTAG | Prchk.REFTAG, apptag=0x99,
                     reftag=0x123456789ABC)
    # An escape application tag turns checking off, as in a controller.
    blocks[2 * 4160 + 4096 + 8:2 * 4160 + 4096 + 10] = b"\xff\xff"
    blocks[2 * 4160 + 4096 + 10:2 * 4160 + 4096 + 16] = b"\xff" * 6
    nvmeof.pi_verify(fmt, blocks, 77, apptag=0x99, reftag=0x123456789ABC)


def test_storage_tags_with_the_32_bit_guard():
    assert nvmeof.crc32c(b"123456789") == 0xE3069283
    assert nvmeof.crc32c(b"6789", nvmeof.crc32c(b"12345")) == 0xE3069283
    fmt = BlockFormat(4096, 16, 1, pi_guard_bits=32, storage_tag_bits=24)
    assert (fmt.pi_guard_bits, fmt.storage_tag_bits, fmt.pi_size) == (32, 24, 16)
    assert repr(fmt).endswith("pi_guard_bits=32, pi_first=False, storage_tag_bits=24)")
    assert BlockFormat(4096, 16, 1, pi_guard_bits=32).storage_tag_bits == 16

    with start_target(namespace="ram:4M:4096+16:pi1:guard32:sts=24") as target, \
            connect(target) as controller:
        namespace = controller.namespace(1)
        assert namespace.format == fmt
        assert namespace.storage_tag_mask == 0xFFFFFF
        count, slba, tag = 6, 50, 0xC0FFEE
        data = pattern(count * 4096, 9)
        whole = numpy.zeros(count * 4112, dtype=numpy.uint8)
        with controller.register(data) as out, controller.register(whole) as into:
            # PRACT: the target writes the command's storage tag into its PI.
            namespace.write(out, slba, pract=True, storage_tag=tag)
            namespace.read(into, slba, prchk=Prchk.ALL | Prchk.STORAGE_TAG, storage_tag=tag)
            nvmeof.pi_verify(namespace, whole, slba, prchk=Prchk.ALL | Prchk.STORAGE_TAG,
                             storage_tag=tag)
            pi = blocks_of(namespace, whole)[0, 4096:]
            assert int.from_bytes(pi[:4].tobytes(), "big") == nvmeof.crc32c(data[:4096].tobytes())
            assert int.from_bytes(pi[6:16].tobytes(), "big") == (tag << 56) | slba
            with pytest.raises(nvmeof.NvmeError, match="Storage Tag") as raised:
                namespace.read(into, slba, prchk=Prchk.STORAGE_TAG, storage_tag=tag ^ 1)
            assert raised.value.errno == errno.EILSEQ
            assert (raised.value.sct, raised.value.sc) == (2, 0x88)
            namespace.read(into, slba, prchk=Prchk.ALL, storage_tag=tag ^ 1)  # not checked
            with pytest.raises(nvmeof.ProtectionError, match="Storage Tag") as found:
                nvmeof.pi_verify(namespace, whole, slba, prchk=Prchk.STORAGE_TAG, storage_tag=1)
            assert found.value.check == "storage_tag"
            with pytest.raises(ValueError, match="24-bit storage tag"):
                namespace.read(into, slba, storage_tag=1 << 24)


def test_the_protocol_modules_commands_carry_prinfo_and_tags(pi1_target):
    from nvmeof import protocol
    with connect(pi1_target) as controller:
        namespace = controller.namespace(1)
        info = namespace.info
        assert (info.extended_lba, info.pi_type, info.pi_first, info.metadata_size) == (True, 1, False, 8)
        with controller.allocate(4 * 512) as buffer:
            buffer.write(bytes(range(256)) * 8)
            pract = 0x8 | Prchk.ALL
            write = protocol.rw_command(protocol.OPC_WRITE, 1, 900, 4, buffer, lba_size=512,
                                        prinfo=pract, reftag=900, apptag=0x1234)
            assert controller.io.execute(write, data_owner=buffer).succeeded
            read = protocol.rw_command(protocol.OPC_READ, 1, 900, 4, buffer, lba_size=512,
                                       prinfo=pract, reftag=900, apptag=0x1235, apptag_mask=0xFFFE)
            assert controller.io.execute(read, data_owner=buffer).succeeded  # bit 0 not compared
            wrong = protocol.rw_command(protocol.OPC_READ, 1, 900, 4, buffer, lba_size=512,
                                        prinfo=pract, reftag=900, apptag=0x1235)
            with pytest.raises(nvmeof.NVMeStatusError) as raised:
                controller.io.execute(wrong, data_owner=buffer)
            assert raised.value.completion.status_code == 0x83
            same = protocol.rw_command(protocol.OPC_COMPARE, 1, 900, 4, buffer, lba_size=512,
                                       prinfo=pract, reftag=900, apptag=0x1234)
            assert controller.io.execute(same, data_owner=buffer).succeeded
        with pytest.raises(ValueError, match="prinfo"):
            protocol.rw_command(protocol.OPC_READ, 1, 0, 1, buffer, lba_size=512, prinfo=16)
        with pytest.raises(ValueError, match="reftag"):
            protocol.rw_command(protocol.OPC_READ, 1, 0, 1, buffer, lba_size=512, reftag=1 << 48)


def test_help_documents_protection():
    for call in (nvmeof.Namespace.read, nvmeof.Namespace.write, nvmeof.Namespace.read_async,
                 nvmeof.Namespace.write_async, nvmeof.Namespace.write_zeroes):
        assert "pract" in call.__doc__ and "reftag" in call.__doc__
    assert "EILSEQ" in nvmeof.Namespace.read.__doc__
    assert "ProtectionError" in nvmeof.pi_verify.__doc__
    assert "pract" in nvmeof.protection.__doc__
