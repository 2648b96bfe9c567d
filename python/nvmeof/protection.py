"""End-to-end data protection: what a read, write or write zeroes asks of a
namespace formatted with protection information (PI), and the host's own
generation and checking of PI.

A namespace's layout is its `format` (a BlockFormat): `lba_size` data bytes and
`metadata_size` metadata bytes per block, interleaved in a transfer's buffer
(fabrics carry metadata as extended LBAs); `pi_type` 1-3 puts an 8-byte (16-bit
guard) or 16-byte (32- or 64-bit guard) PI tuple at the metadata's end, or start
(`pi_first`), with a storage tag of `storage_tag_bits` in it where the format
has one. Transfers take, keyword-only:

    pract        the controller inserts (write) and strips (read) the PI; when the
                 PI is all the metadata the buffer holds data only
    prchk        Prchk flags: what the controller checks
    apptag       the application tag (written with pract; checked with APPTAG)
    apptag_mask  the apptag bits checked (0xFFFF: all)
    reftag       the first block's reference tag (None: its LBA)
    storage_tag  the storage tag (formats with one; checked with STORAGE_TAG)

With pract=False the buffer carries the PI: pi_generate writes it before a
write, pi_verify checks what a read brought.
"""
import enum

from nvmeof import _core
from nvmeof._core import BlockFormat, crc16_t10dif, crc32c, crc64_nvme, pi_generate, pi_verify
from nvmeof.errors import ProtectionError


class Prchk(enum.IntFlag):
    """The PRCHK bits of PRINFO: the checks a controller makes of the PI it
    receives (write) or reads (read), or pi_verify makes of a buffer; and
    STORAGE_TAG, the command's storage tag check (STC, CDW12 bit 24), for
    formats with a storage tag."""

    NONE = 0
    REFTAG = _core.PRCHK_REFTAG
    APPTAG = _core.PRCHK_APPTAG
    GUARD = _core.PRCHK_GUARD
    ALL = REFTAG | APPTAG | GUARD
    STORAGE_TAG = _core.PRCHK_STORAGE_TAG


__all__ = ["BlockFormat", "Prchk", "ProtectionError", "crc16_t10dif", "crc32c", "crc64_nvme",
           "pi_generate", "pi_verify"]
