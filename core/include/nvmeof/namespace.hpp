// A namespace of a connected controller: geometry and blocking I/O.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "nvmeof/base/namespace_ref.hpp"
#include "nvmeof/memory.hpp"
#include "nvmeof/protection.hpp"
#include "nvmeof/zones.hpp"

namespace nvmeof {

// The state behind a Controller (opaque here).
class ControllerImpl;

struct Transfer;

struct NamespaceInfo {
    std::uint32_t nsid = 0;
    std::uint32_t lba_size = 0;       // data bytes of a block
    std::uint64_t size_lbas = 0;      // NSZE
    std::uint64_t capacity_lbas = 0;  // NCAP
    // The block layout: metadata bytes interleaved after each block's data
    // (extended LBA) and the protection information in them, if any.
    BlockFormat format{};
    // LBSTM: the storage tag bits a storage tag check compares (a format with
    // a storage tag).
    std::uint64_t storage_tag_mask = ~std::uint64_t{0};
    // The namespace's I/O command set: the CSI of its namespace identification
    // descriptors where the controller runs several (CC.CSS 110b), else 0 (NVM).
    std::uint8_t csi = 0;
    bool zoned = false;  // CSI 2, the Zoned Namespace command set
    ZonedInfo zones{};   // where zoned
    std::uint64_t size_bytes() const { return size_lbas * lba_size; }
    std::uint32_t metadata_size() const { return format.metadata_bytes; }
    // Bytes per block in a transfer's buffer: data, plus the metadata unless
    // PRACT has the controller insert and strip PI that is all of it.
    std::uint32_t buffer_block_bytes(const Protection& p = {}) const {
        return format.transfer_block_bytes(p.pract());
    }
};

// Called by a blocking call each time it is about to wait (for completions, for
// room in the queues, for an outage to end), with nothing of the controller in
// use: a program that shares the controller among threads lets go of its lock
// there and takes it again, so the other threads' calls run meanwhile. It may
// throw (the call then ends with that exception).
using BetweenPolls = std::function<void()>;

// A cheap value; valid while its Controller is open. The blocking calls
// validate the LBA range against the namespace and the buffer against the
// memory region (InvalidArgument), cut transfers into commands of at most MDTS
// (and 65,536 blocks) handed round robin to the I/O queues as they have room,
// and throw the first error of any command (wire::NvmeError or TransportError).
// `blocks` defaults to what fits in the buffer from buffer_offset.
class Namespace {
  public:
    Namespace(ControllerImpl* controller, NamespaceInfo info);

    std::uint32_t nsid() const { return info_.nsid; }
    std::uint32_t lba_size() const { return info_.lba_size; }
    const BlockFormat& format() const { return info_.format; }
    std::uint64_t size_lbas() const { return info_.size_lbas; }
    // log2 of lba_size() (LBADS: block sizes are powers of two).
    std::uint32_t lba_shift() const { return ref_.lba_shift; }
    // What the data path reads on every submission, kept ready (internal).
    const NamespaceRef& ref() const noexcept { return ref_; }
    const NamespaceInfo& info() const { return info_; }

    // On a namespace with metadata the buffer holds whole blocks as
    // buffer_block_bytes(protection) says; `protection` sets PRACT, PRCHK and
    // the tags (PI the host generates or checks itself: pi_generate/pi_verify).
    void read(const MemoryRegion& buffer, std::uint64_t slba,
              std::optional<std::uint64_t> blocks = std::nullopt, std::uint64_t buffer_offset = 0,
              const Protection& protection = {});
    void write(const MemoryRegion& buffer, std::uint64_t slba,
               std::optional<std::uint64_t> blocks = std::nullopt, std::uint64_t buffer_offset = 0,
               const Protection& protection = {});
    // Compare: the controller compares the blocks at `slba` with the buffer's
    // (sent as a write's; with metadata, the metadata that travels too, and
    // the stored PI checked as PRCHK asks, as a read would). True when they
    // are the same, false when the controller answers Compare Failure (SCT 2
    // SC 0x85); any other error throws. InvalidArgument where the controller
    // does not support Compare (Identify ONCS bit 0).
    bool compare(const MemoryRegion& buffer, std::uint64_t slba,
                 std::optional<std::uint64_t> blocks = std::nullopt,
                 std::uint64_t buffer_offset = 0, const Protection& protection = {});
    void flush();
    void write_zeroes(std::uint64_t slba, std::uint64_t blocks, const Protection& protection = {});
    void deallocate(std::uint64_t slba, std::uint64_t blocks);
    // The loop behind the calls above, for any Transfer (its user_data is not
    // used), with `between_polls` called each time it waits. Returns true, or
    // false for a Compare whose blocks differ (as compare()).
    bool run(const Transfer& transfer, const BetweenPolls& between_polls = {});

    // --- zoned namespaces (info().zoned; InvalidArgument for any other) ---
    // A write on a zoned namespace goes at a zone's write pointer: one cut
    // into several commands (above MDTS) sends each only once the one before
    // it completed, and a blocking write is not spread over the I/O queues.
    // Zone errors are wire::NvmeError with the status named (Zone Is Full,
    // Too Many Open Zones, ...; CompletionStatus::error_number() has their
    // errnos).
    //
    // One Zone Management Receive into `buffer` (registered with this
    // controller) from `buffer_offset`, `bytes` of it (default: the rest,
    // rounded down to whole dwords; at least 64): the zones from the one
    // holding `slba` on that options.filter lists, as many as fit.
    ZoneReport report_zones_into(const MemoryRegion& buffer, std::uint64_t slba,
                                 const ZoneReportOptions& options = {},
                                 std::uint64_t buffer_offset = 0,
                                 std::optional<std::uint64_t> bytes = std::nullopt,
                                 const BetweenPolls& between_polls = {});
    // Every zone from the one holding `slba` on that `filter` lists, at most
    // `max_zones`, read a page at a time (partial reports) into `page` when
    // given (registered, at least 128 bytes), else into up to 64 KiB the call
    // allocates.
    static constexpr std::uint64_t kAllZones = ~std::uint64_t{0};
    std::vector<Zone> report_zones(std::uint64_t slba = 0, std::uint64_t max_zones = kAllZones,
                                   ZoneFilter filter = ZoneFilter::all,
                                   const MemoryRegion* page = nullptr,
                                   const BetweenPolls& between_polls = {});
    // Zone Management Send: `action` on the zone starting at `zslba`, or with
    // ZoneSelect::all on every zone in a state it applies to.
    void zone_action(ZoneAction action, std::uint64_t zslba, ZoneSelect select = ZoneSelect::one,
                     const BetweenPolls& between_polls = {});
    // Zone Append of `blocks` blocks (default: what fits in the buffer) to the
    // zone starting at `zslba`; returns the first LBA the controller wrote
    // them at. Never split: InvalidArgument above
    // info().zones.zone_append_max_bytes (ZASL, or MDTS).
    std::uint64_t zone_append(const MemoryRegion& buffer, std::uint64_t zslba,
                              std::optional<std::uint64_t> blocks = std::nullopt,
                              std::uint64_t buffer_offset = 0, const Protection& protection = {},
                              const BetweenPolls& between_polls = {});

  private:
    // First: the data path's submit finds it at the Namespace's own address.
    NamespaceRef ref_;
    ControllerImpl* controller_;
    NamespaceInfo info_;
};

}  // namespace nvmeof
