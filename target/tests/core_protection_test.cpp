// CommandCore: namespaces with metadata and end-to-end protection information
// (PI): Identify, Read/Write/Write Zeroes/Compare for each PRINFO combination,
// the PI check statuses, never-written blocks and the corrupt-* faults.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core_harness.hpp"

namespace nvmeof::target::testing {
namespace {

using wire::BlockFormat;
using wire::GenericStatus;
using wire::IoOpcode;
using wire::PiCheck;
using wire::PiGuard;
using wire::PiTags;
using wire::PiType;
using wire::Status;

constexpr std::uint64_t kDataBytes = 4 << 20;  // every namespace here: 4 MiB of data
constexpr std::uint16_t kApptag = 0x1234;
constexpr std::uint8_t kNoChecks = 0;

using Bytes = std::vector<std::uint8_t>;

NamespaceConfig namespace_config(const BlockFormat& format) {
    NamespaceConfig ns;
    ns.size_bytes = kDataBytes;
    ns.lba_size = format.data_bytes;
    ns.metadata_size = format.metadata_bytes;
    ns.pi_type = format.pi_type;
    ns.pi_guard = format.guard;
    ns.pi_first = format.pi_first;
    ns.storage_tag_bits = format.storage_tag_bits;
    return ns;
}

TargetConfig config_with(const BlockFormat& format) {
    TargetConfig config = default_config();
    config.subsystems[0].namespaces[0] = namespace_config(format);
    return config;
}

Bytes pattern(std::size_t size, std::uint8_t seed) {
    Bytes bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::uint8_t>(seed + i * 13 + (i >> 8));
    }
    return bytes;
}

std::span<std::byte> writable(Bytes& bytes) {
    return std::as_writable_bytes(std::span(bytes));
}
std::span<const std::byte> readable(const Bytes& bytes) {
    return std::as_bytes(std::span(bytes));
}

constexpr std::uint64_t kReftagBase = 0xA5000000;
constexpr std::uint64_t kStorageTag = 0x5A3C96E1D2B4F00Full;

// The tags a host would use for blocks from `slba`: type 1's reference tags
// are the LBAs; type 2's any that count up (here offset from the LBAs, so a
// command on part of a range asks the tags stored there); type 3's a constant.
// Formats with a storage tag get one as wide as it.
PiTags tags_for(const BlockFormat& format, std::uint64_t slba) {
    PiTags tags;
    tags.apptag = kApptag;
    tags.storage_tag = kStorageTag & format.storage_tag_max();
    switch (format.pi_type) {
        case PiType::type1:
            tags.reftag = slba & format.reftag_mask();
            break;
        case PiType::type2:
            tags.reftag = (kReftagBase + slba) & format.reftag_mask();
            break;
        default:
            tags.reftag = kReftagBase;
            break;
    }
    return tags;
}

// Read/Write of `blocks` at `slba` with PRINFO `prinfo`, its SGL as long as the
// format transfers.
wire::Sqe protected_rw(const BlockFormat& format, IoOpcode op, std::uint64_t slba,
                       std::uint32_t blocks, std::uint8_t prinfo, const PiTags& tags) {
    const std::uint32_t block_bytes =
        format.transfer_block_bytes((prinfo & wire::kPract) != 0 && format.pi_type != PiType::none);
    wire::Sqe sqe = wire::rw_command(
        op, 1, slba, blocks,
        wire::RemoteBuffer{kHostAddress, std::size_t{blocks} * block_bytes, kRkey}, block_bytes);
    wire::set_protection(sqe, format, prinfo, tags);
    return sqe;
}

// Extended blocks as a host builds them: data and metadata patterned, PI generated.
Bytes host_blocks(const BlockFormat& format, std::uint32_t blocks, const PiTags& tags,
                  std::uint8_t seed) {
    Bytes bytes = pattern(std::size_t{blocks} * format.extended_bytes(), seed);
    wire::pi_generate(format, writable(bytes), tags);
    return bytes;
}

// The data of each block of extended `blocks`, back to back.
Bytes data_of(const BlockFormat& format, const Bytes& blocks) {
    Bytes data;
    for (std::size_t at = 0; at < blocks.size(); at += format.extended_bytes()) {
        data.insert(data.end(), blocks.begin() + static_cast<std::ptrdiff_t>(at),
                    blocks.begin() + static_cast<std::ptrdiff_t>(at + format.data_bytes));
    }
    return data;
}

void flip_field(const BlockFormat& format, Bytes& blocks, std::uint32_t block, PiCheck field) {
    std::byte* at = writable(blocks).data() + std::size_t{block} * format.extended_bytes();
    wire::PiFields pi = wire::pi_read(format, at);
    switch (field) {
        case PiCheck::guard:
            pi.guard ^= 1;
            break;
        case PiCheck::apptag:
            pi.apptag = static_cast<std::uint16_t>(pi.apptag ^ 1);
            break;
        case PiCheck::storage_tag:
            pi.storage_tag ^= 1;
            break;
        default:
            pi.reftag ^= 1;
            break;
    }
    wire::pi_write(format, at, pi);
}

Status media(wire::MediaStatus code) {
    return Status::make(wire::StatusCodeType::media, static_cast<std::uint8_t>(code), true);
}
Status check_status(PiCheck check) {
    switch (check) {
        case PiCheck::guard:
            return media(wire::MediaStatus::end_to_end_guard_check_error);
        case PiCheck::apptag:
            return media(wire::MediaStatus::end_to_end_application_tag_check_error);
        case PiCheck::storage_tag:
            return media(wire::MediaStatus::end_to_end_storage_tag_check_error);
        default:
            return media(wire::MediaStatus::end_to_end_reference_tag_check_error);
    }
}
std::uint8_t check_bit(PiCheck check) {
    switch (check) {
        case PiCheck::guard:
            return wire::kPrchkGuard;
        case PiCheck::apptag:
            return wire::kPrchkApptag;
        case PiCheck::storage_tag:
            return wire::kCheckStorageTag;
        default:
            return wire::kPrchkReftag;
    }
}
std::uint8_t without(std::uint8_t checks, PiCheck check) {
    return static_cast<std::uint8_t>(checks & ~check_bit(check));
}
const Status kInvalidPi = Status::make(
    wire::StatusCodeType::command_specific,
    static_cast<std::uint8_t>(wire::NvmCommandStatus::invalid_protection_information), true);

// The checks of a format: the storage tag's where it has one; no reference
// tag check for type 3, whose reference tag the controller never compares.
std::vector<PiCheck> checks_of(const BlockFormat& format) {
    std::vector<PiCheck> checks = {PiCheck::guard, PiCheck::apptag};
    if (format.pi_type != PiType::type3) {
        checks.push_back(PiCheck::reftag);
    }
    if (format.storage_tag_bits != 0) {
        checks.push_back(PiCheck::storage_tag);
    }
    return checks;
}

struct FormatCase {
    const char* name;
    BlockFormat format;
};

const FormatCase kFormats[] = {
    {"512_8_pi1", {512, 8, PiType::type1, PiGuard::crc16, false}},
    {"4096_64_pi1_guard64", {4096, 64, PiType::type1, PiGuard::crc64, false}},
    {"512_16_pi2_first", {512, 16, PiType::type2, PiGuard::crc16, true}},
    {"512_32_pi3", {512, 32, PiType::type3, PiGuard::crc16, false}},
    {"4096_16_pi3_guard64_first", {4096, 16, PiType::type3, PiGuard::crc64, true}},
    {"4096_16_pi1_guard32_sts16", {4096, 16, PiType::type1, PiGuard::crc32, false, 16}},
    {"512_32_pi3_guard32_sts64_first", {512, 32, PiType::type3, PiGuard::crc32, true, 64}},
    {"512_8_pi2_sts8", {512, 8, PiType::type2, PiGuard::crc16, false, 8}},
    {"4096_16_pi1_guard64_sts20", {4096, 16, PiType::type1, PiGuard::crc64, false, 20}},
};

class Protection : public ::testing::TestWithParam<FormatCase> {
  protected:
    void SetUp() override {
        format_ = GetParam().format;
        all_ = wire::kPrchkAll | (format_.storage_tag_bits != 0 ? wire::kCheckStorageTag : 0);
        checks_ = checks_of(format_);
        start(config_with(format_));
    }
    void start(const TargetConfig& config) {
        h_ = std::make_unique<CoreHarness>(config);
        admin_ = CoreHarness::new_queue(0);
        io_ = h_->bring_up_io(admin_);
    }

    Result write(std::uint64_t slba, std::uint32_t blocks, std::uint8_t prinfo, const PiTags& tags,
                 const Bytes& bytes) {
        return h_->run(io_, protected_rw(format_, IoOpcode::write, slba, blocks, prinfo, tags),
                       bytes);
    }
    Result read(std::uint64_t slba, std::uint32_t blocks, std::uint8_t prinfo, const PiTags& tags) {
        return h_->run(io_, protected_rw(format_, IoOpcode::read, slba, blocks, prinfo, tags));
    }
    Result read(std::uint64_t slba, std::uint32_t blocks, std::uint8_t prinfo) {
        return read(slba, blocks, prinfo, tags_for(format_, slba));
    }
    // A Compare is laid out as a Write (its data travels host to controller).
    Status compare(std::uint64_t slba, std::uint32_t blocks, std::uint8_t prinfo,
                   const Bytes& bytes) {
        wire::Sqe sqe =
            protected_rw(format_, IoOpcode::write, slba, blocks, prinfo, tags_for(format_, slba));
        sqe.opcode = static_cast<std::uint8_t>(IoOpcode::compare);
        return h_->run(io_, sqe, bytes).status();
    }

    BlockFormat format_;
    std::uint8_t all_ = wire::kPrchkAll;  // every check the format has
    std::vector<PiCheck> checks_;
    std::unique_ptr<CoreHarness> h_;
    QueueState admin_;
    QueueState io_;
};

TEST_P(Protection, IdentifyReportsTheFormat) {
    const auto keyed = CoreHarness::keyed(wire::kIdentifyDataSize);
    Result r = h_->run(admin_, wire::identify_command(wire::IdentifyCns::controller, 0, keyed));
    ASSERT_TRUE(r.status().ok());
    wire::IdentifyController ctrl{};
    std::memcpy(&ctrl, r.data.data(), sizeof ctrl);
    EXPECT_EQ(ctrl.ctratt & wire::kCtrattExtendedLbaFormats, wire::kCtrattExtendedLbaFormats);

    r = h_->run(admin_, wire::identify_command(wire::IdentifyCns::namespace_data, 1, keyed));
    ASSERT_TRUE(r.status().ok());
    wire::IdentifyNamespace ns{};
    std::memcpy(&ns, r.data.data(), sizeof ns);
    EXPECT_EQ(ns.nsze, kDataBytes / format_.data_bytes);
    EXPECT_EQ(ns.flbas, wire::kFlbasExtendedMetadata);
    EXPECT_EQ(ns.lbaf[0].ms, format_.metadata_bytes);
    EXPECT_EQ(1u << ns.lbaf[0].lbads, format_.data_bytes);
    EXPECT_EQ(ns.dps & wire::kDpsPiTypeMask, static_cast<std::uint8_t>(format_.pi_type));
    EXPECT_EQ((ns.dps & wire::kDpsPiFirst) != 0, format_.pi_first);
    // DPC: only the protection it has (no Format NVM could give it another).
    const std::uint8_t type_bit =
        static_cast<std::uint8_t>(1u << (static_cast<unsigned>(format_.pi_type) - 1));
    EXPECT_EQ(ns.dpc, type_bit | (format_.pi_first ? wire::kDpcPiFirst : wire::kDpcPiLast));
    EXPECT_EQ(ns.dlfeat, wire::kDlfeatReadsZeroes);

    r = h_->run(admin_, wire::identify_command_set_namespace(1, wire::kCsiNvm, keyed));
    ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
    wire::IdentifyNvmNamespace nvm{};
    std::memcpy(&nvm, r.data.data(), sizeof nvm);
    EXPECT_EQ(nvm.elbaf[0],
              (static_cast<std::uint32_t>(format_.guard) << wire::kElbafPiFormatShift) |
                  format_.storage_tag_bits);
    EXPECT_EQ(nvm.lbstm, format_.storage_tag_max());

    // What the host makes of the two is the format served.
    const wire::NamespaceGeometry geometry = wire::namespace_geometry(ns, &nvm);
    EXPECT_EQ(geometry.format.data_bytes, format_.data_bytes);
    EXPECT_EQ(geometry.format.metadata_bytes, format_.metadata_bytes);
    EXPECT_EQ(geometry.format.pi_type, format_.pi_type);
    EXPECT_EQ(geometry.format.guard, format_.guard);
    EXPECT_EQ(geometry.format.pi_first, format_.pi_first);
    EXPECT_EQ(geometry.format.storage_tag_bits, format_.storage_tag_bits);
}

TEST_P(Protection, HostPiStoredAndCheckedBothWays) {
    const std::uint64_t slba = 40;
    const std::uint32_t blocks = 6;
    const PiTags tags = tags_for(format_, slba);
    const Bytes sent = host_blocks(format_, blocks, tags, 7);
    const Result w = write(slba, blocks, all_, tags, sent);
    ASSERT_TRUE(w.status().ok()) << wire::describe(w.status());
    EXPECT_EQ(w.plan.length, sent.size());
    const Result r = read(slba, blocks, all_);
    ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
    EXPECT_EQ(r.data, sent);
}

TEST_P(Protection, PractInsertsAndStrips) {
    const std::uint64_t slba = 100;
    const std::uint32_t blocks = 5;
    const PiTags tags = tags_for(format_, slba);
    const bool pi_only = !format_.metadata_transferred(true);
    // PI the whole metadata: data only; else extended blocks whose PI the target replaces.
    const Bytes sent = pattern(std::size_t{blocks} * format_.transfer_block_bytes(true), 21);
    const std::uint8_t pract = wire::kPract | all_;
    const Result w = write(slba, blocks, pract, tags, sent);
    ASSERT_TRUE(w.status().ok()) << wire::describe(w.status());
    EXPECT_EQ(w.plan.length, sent.size());

    const Result stripped = read(slba, blocks, pract);
    ASSERT_TRUE(stripped.status().ok()) << wire::describe(stripped.status());
    ASSERT_EQ(stripped.data.size(), sent.size());

    const Result full = read(slba, blocks, all_);
    ASSERT_TRUE(full.status().ok()) << wire::describe(full.status());
    ASSERT_EQ(full.data.size(), std::size_t{blocks} * format_.extended_bytes());
    EXPECT_FALSE(wire::pi_verify(format_, readable(full.data), all_, tags));
    if (pi_only) {
        EXPECT_EQ(stripped.data, sent);
        EXPECT_EQ(data_of(format_, full.data), sent);
    } else {
        // Everything but the PI is as sent, and the PI is passed to the host.
        Bytes expected = sent;
        wire::pi_generate(format_, writable(expected), tags);
        EXPECT_EQ(full.data, expected);
        EXPECT_EQ(stripped.data, expected);
    }
}

TEST_P(Protection, BadHostPiFailsWithItsOwnStatus) {
    const std::uint32_t blocks = 4;
    std::uint64_t slba = 200;
    for (const PiCheck check : checks_) {
        SCOPED_TRACE(std::string(wire::pi_check_name(check)));
        slba += blocks;
        const PiTags tags = tags_for(format_, slba);
        Bytes sent = host_blocks(format_, blocks, tags, 3);
        flip_field(format_, sent, 2, check);
        EXPECT_EQ(write(slba, blocks, all_, tags, sent).status(), check_status(check));
        // Nothing was stored: the blocks still read as never written.
        const Result unwritten = read(slba, blocks, kNoChecks);
        ASSERT_TRUE(unwritten.status().ok());
        EXPECT_EQ(std::count(unwritten.data.begin(), unwritten.data.end(), 0xFF),
                  static_cast<std::ptrdiff_t>(blocks * format_.pi_bytes()));
        // With that check off the same blocks are stored as sent.
        const std::uint8_t others = without(all_, check);
        ASSERT_TRUE(write(slba, blocks, others, tags, sent).status().ok());
        const Result back = read(slba, blocks, others);
        ASSERT_TRUE(back.status().ok());
        EXPECT_EQ(back.data, sent);
        EXPECT_EQ(read(slba, blocks, all_).status(), check_status(check));
    }
}

// Compare checks the stored PI as a Read would and compares what travels:
// data and metadata, or the data alone where PRACT strips a PI-only metadata.
TEST_P(Protection, CompareChecksStoredPiAndComparesWhatTravels) {
    const std::uint64_t slba = 250;
    const std::uint32_t blocks = 3;
    const PiTags tags = tags_for(format_, slba);
    Bytes stored = host_blocks(format_, blocks, tags, 11);
    flip_field(format_, stored, 1, PiCheck::guard);  // stored with the guard check off
    const std::uint8_t no_guard = without(wire::kPrchkAll, PiCheck::guard);
    ASSERT_TRUE(write(slba, blocks, no_guard, tags, stored).status().ok());
    const Status miscompare = media(wire::MediaStatus::compare_failure);

    EXPECT_TRUE(compare(slba, blocks, no_guard, stored).ok());
    EXPECT_EQ(compare(slba, blocks, wire::kPrchkAll, stored), check_status(PiCheck::guard));
    Bytes other_data = stored;
    other_data[format_.extended_bytes() * 2 + 1] ^= 1;
    EXPECT_EQ(compare(slba, blocks, no_guard, other_data), miscompare);
    Bytes other_pi = stored;  // the metadata travels: it is compared too
    flip_field(format_, other_pi, 2, PiCheck::apptag);
    EXPECT_EQ(compare(slba, blocks, kNoChecks, other_pi), miscompare);

    // PRACT: what travels is what a Read with PRACT returns.
    const std::uint8_t pract = wire::kPract | no_guard;
    const Bytes travels = format_.metadata_transferred(true) ? stored : data_of(format_, stored);
    EXPECT_TRUE(compare(slba, blocks, pract, travels).ok());
    EXPECT_EQ(compare(slba, blocks, wire::kPract | wire::kPrchkGuard, travels),
              check_status(PiCheck::guard));
    Bytes other = travels;
    other.back() ^= 1;
    EXPECT_EQ(compare(slba, blocks, pract, other), miscompare);
    EXPECT_EQ(h_->stats().count_of(CommandKind::compare), 7u);
}

TEST_P(Protection, WrongTagsOnReadFailWithTheirStatus) {
    const std::uint64_t slba = 300;
    const std::uint32_t blocks = 3;
    const PiTags tags = tags_for(format_, slba);
    ASSERT_TRUE(
        write(slba, blocks, all_, tags, host_blocks(format_, blocks, tags, 9)).status().ok());
    PiTags other_apptag = tags;
    other_apptag.apptag = static_cast<std::uint16_t>(kApptag + 1);
    EXPECT_EQ(read(slba, blocks, all_, other_apptag).status(), check_status(PiCheck::apptag));
    EXPECT_TRUE(read(slba, blocks, without(all_, PiCheck::apptag), other_apptag).status().ok());
    // Type 1: a reftag other than the SLBA is refused (InitialReftagMustBeTheSlba);
    // type 2 compares it; type 3 does not, whatever PRCHK asks.
    PiTags other_reftag = tags;
    other_reftag.reftag += 1;
    if (format_.pi_type == PiType::type2) {
        EXPECT_EQ(read(slba, blocks, all_, other_reftag).status(), check_status(PiCheck::reftag));
        EXPECT_TRUE(read(slba, blocks, without(all_, PiCheck::reftag), other_reftag).status().ok());
    } else if (format_.pi_type == PiType::type3) {
        EXPECT_TRUE(read(slba, blocks, all_, other_reftag).status().ok());
    }
    if (format_.storage_tag_bits != 0) {
        PiTags other_storage_tag = tags;
        other_storage_tag.storage_tag ^= 1;
        EXPECT_EQ(read(slba, blocks, all_, other_storage_tag).status(),
                  check_status(PiCheck::storage_tag));
        EXPECT_TRUE(read(slba, blocks, without(all_, PiCheck::storage_tag), other_storage_tag)
                        .status()
                        .ok());
    }
}

TEST_P(Protection, ApptagMaskAndEscape) {
    const std::uint64_t slba = 400;
    PiTags tags = tags_for(format_, slba);
    tags.apptag = 0x12FF;
    ASSERT_TRUE(write(slba, 2, all_, tags, host_blocks(format_, 2, tags, 1)).status().ok());
    PiTags masked = tags;
    masked.apptag = 0x1200;
    masked.apptag_mask = 0xFF00;  // the low byte is not compared
    EXPECT_TRUE(read(slba, 2, all_, masked).status().ok());
    masked.apptag_mask = 0xFFFF;
    EXPECT_EQ(read(slba, 2, all_, masked).status(), check_status(PiCheck::apptag));

    // A block whose apptag is the escape (type 3: and reftag all ones) is
    // checked neither on write nor on read, its guard wrong as it may be.
    PiTags escape = tags_for(format_, slba + 2);
    escape.apptag = wire::kApptagEscape;
    if (format_.pi_type == PiType::type3) {
        escape.reftag = format_.reftag_mask();
        escape.storage_tag = format_.storage_tag_max();
    }
    Bytes escaped = host_blocks(format_, 1, escape, 2);
    flip_field(format_, escaped, 0, PiCheck::guard);
    ASSERT_TRUE(write(slba + 2, 1, all_, tags_for(format_, slba + 2), escaped).status().ok());
    const Result r = read(slba + 2, 1, all_);
    ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
    EXPECT_EQ(r.data, escaped);
}

TEST_P(Protection, NeverWrittenAndDeallocatedBlocksReadWithChecksOn) {
    // Blocks 500..503 never written; 504..507 written, then deallocated.
    ASSERT_TRUE(write(504, 4, all_, tags_for(format_, 504),
                      host_blocks(format_, 4, tags_for(format_, 504), 3))
                    .status()
                    .ok());
    const wire::DsmRange range{0, 4, 504};
    Bytes ranges(sizeof range);
    std::memcpy(ranges.data(), &range, sizeof range);
    ASSERT_TRUE(h_->run(io_,
                        wire::dataset_management_command(1, 1, wire::kDsmAttributeDeallocate,
                                                         {kHostAddress, ranges.size(), kRkey}),
                        ranges)
                    .status()
                    .ok());
    for (const std::uint64_t slba : {500, 504}) {
        SCOPED_TRACE(slba);
        const Result r = read(slba, 4, all_);
        ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
        ASSERT_EQ(r.data.size(), 4u * format_.extended_bytes());
        for (std::size_t at = 0; at < r.data.size(); at += format_.extended_bytes()) {
            const wire::PiFields pi = wire::pi_read(format_, readable(r.data).data() + at);
            EXPECT_EQ(pi.apptag, wire::kApptagEscape);
            EXPECT_EQ(pi.reftag, format_.reftag_mask());
            EXPECT_EQ(pi.storage_tag, format_.storage_tag_max());
        }
        EXPECT_EQ(data_of(format_, r.data), Bytes(4u * format_.data_bytes, 0));
        const Result stripped = read(slba, 4, wire::kPract | all_);
        ASSERT_TRUE(stripped.status().ok());
        EXPECT_EQ(stripped.data.size(), 4u * format_.transfer_block_bytes(true));
    }
}

TEST_P(Protection, WriteZeroesStoresValidPi) {
    const std::uint64_t slba = 600;
    const std::uint32_t blocks = 300;  // more than one run of blocks built at a time
    const PiTags tags = tags_for(format_, slba);
    ASSERT_TRUE(write(slba, 8, all_, tags, host_blocks(format_, 8, tags, 5)).status().ok());
    wire::Sqe zeroes = wire::write_zeroes_command(1, slba, blocks);
    wire::set_protection(zeroes, format_, wire::kPract, tags);
    ASSERT_TRUE(h_->run(io_, zeroes).status().ok());
    const std::uint32_t per_read = 16;
    for (std::uint32_t done = 0; done < blocks; done += per_read) {
        const std::uint32_t count = std::min(per_read, blocks - done);
        const PiTags at = tags_for(format_, slba + done);
        const Result r = read(slba + done, count, all_, at);
        ASSERT_TRUE(r.status().ok()) << done << ": " << wire::describe(r.status());
        EXPECT_FALSE(wire::pi_verify(format_, readable(r.data), all_, at));
        EXPECT_EQ(data_of(format_, r.data), Bytes(std::size_t{count} * format_.data_bytes, 0));
    }
    // Write Zeroes carries no data to check: PRCHK must be clear.
    wire::set_protection(zeroes, format_, wire::kPract | wire::kPrchkGuard, tags);
    EXPECT_EQ(h_->run(io_, zeroes).status(), kInvalidPi);
}

TEST_P(Protection, TransferLengthMustCoverTheMetadata) {
    const PiTags tags = tags_for(format_, 0);
    // PRACT=0: extended blocks; an SGL of the data alone is refused.
    wire::Sqe sqe = protected_rw(format_, IoOpcode::write, 0, 2, all_, tags);
    sqe.dptr = CoreHarness::keyed(2u * format_.data_bytes);
    EXPECT_EQ(h_->run(io_, sqe, pattern(2u * format_.extended_bytes(), 0)).status(),
              generic(GenericStatus::data_sgl_length_invalid));
    // PRACT=1: the data alone when the PI is the whole metadata, else extended
    // blocks; a 16-byte PI may also travel as SPDK's host sends it (extended).
    sqe = protected_rw(format_, IoOpcode::read, 0, 2, wire::kPract, tags);
    const bool spdk_form = !format_.metadata_transferred(true) && format_.pi_bytes() == 16;
    const std::uint32_t other_length = format_.metadata_transferred(true)
                                           ? 2u * format_.data_bytes
                                           : 2u * format_.extended_bytes();
    sqe.dptr = CoreHarness::keyed(other_length);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(h_->run(io_, sqe).status().ok(), spdk_form);
    sqe.dptr = CoreHarness::keyed(2u * format_.data_bytes + 1);
    EXPECT_EQ(h_->run(io_, sqe).status(), generic(GenericStatus::data_sgl_length_invalid));
    // The refusal names the length and what the command moves.
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("Read refused (Data SGL Length Invalid): SGL length " +
                       std::to_string(2u * format_.data_bytes + 1) + " bytes, the command moves " +
                       std::to_string(2u * format_.transfer_block_bytes(true))),
              std::string::npos)
        << log;
    // MDTS (128 KiB) counts the metadata too.
    const auto fitting = static_cast<std::uint32_t>(128 * 1024 / format_.extended_bytes());
    EXPECT_TRUE(read(0, fitting, kNoChecks).status().ok());
    EXPECT_EQ(read(0, fitting + 1, kNoChecks).status(), generic(GenericStatus::invalid_field));
}

TEST_P(Protection, CorruptFaultsCaughtByTheirOwnCheck) {
    TargetConfig config = config_with(format_);
    const std::uint64_t slba = 700;
    const std::uint64_t lba_of[] = {slba + 1, slba + 3, slba + 5, slba + 7};  // as checks_
    for (std::size_t i = 0; i < checks_.size(); ++i) {
        config.faults.corrupt_pi.push_back({checks_[i], lba_of[i]});
    }
    start(config);
    const std::uint32_t blocks = 8;
    const PiTags tags = tags_for(format_, slba);
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(
        write(slba, blocks, all_, tags, host_blocks(format_, blocks, tags, 4)).status().ok());
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(h_->stats().faults_injected, checks_.size());
    for (const PiCheck check : checks_) {
        const std::string name = check == PiCheck::storage_tag
                                     ? "corrupt-storage-tag: "
                                     : "corrupt-" +
                                           std::string(check == PiCheck::guard    ? "guard"
                                                       : check == PiCheck::apptag ? "apptag"
                                                                                  : "reftag") +
                                           ": ";
        EXPECT_NE(log.find(name), std::string::npos) << log;
    }
    for (std::size_t i = 0; i < checks_.size(); ++i) {
        SCOPED_TRACE(std::string(wire::pi_check_name(checks_[i])));
        const std::uint64_t lba = lba_of[i];
        ::testing::internal::CaptureStderr();
        EXPECT_EQ(read(lba, 1, check_bit(checks_[i])).status(), check_status(checks_[i]));
        EXPECT_NE(::testing::internal::GetCapturedStderr().find("check failed at LBA " +
                                                                std::to_string(lba)),
                  std::string::npos);
        const std::uint8_t others = without(all_, checks_[i]);
        EXPECT_TRUE(read(lba, 1, others).status().ok());
        EXPECT_TRUE(read(lba, 1, static_cast<std::uint8_t>(wire::kPract | others)).status().ok());
    }
    // Write Zeroes and PRACT writes store the fault too.
    wire::Sqe zeroes = wire::write_zeroes_command(1, slba, blocks);
    wire::set_protection(zeroes, format_, wire::kPract, tags);
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(h_->run(io_, zeroes).status().ok());
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(read(lba_of[0], 1, wire::kPrchkGuard).status(), check_status(PiCheck::guard));
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(write(slba, blocks, wire::kPract, tags,
                      pattern(std::size_t{blocks} * format_.transfer_block_bytes(true), 8))
                    .status()
                    .ok());
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(read(lba_of[1], 1, wire::kPrchkApptag).status(), check_status(PiCheck::apptag));
    EXPECT_EQ(h_->stats().faults_injected, 3 * checks_.size());
}

INSTANTIATE_TEST_SUITE_P(Formats, Protection, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<FormatCase>& param) {
                             return std::string(param.param.name);
                         });

TEST(ProtectionType1, InitialReftagMustBeTheSlba) {
    const BlockFormat format{512, 8, PiType::type1, PiGuard::crc16, false};
    CoreHarness h(config_with(format));
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    PiTags tags = tags_for(format, 10);
    tags.reftag = 11;
    const Bytes sent = host_blocks(format, 1, tags, 0);
    EXPECT_EQ(h.run(io, protected_rw(format, IoOpcode::write, 10, 1, wire::kPrchkAll, tags), sent)
                  .status(),
              kInvalidPi);
    EXPECT_EQ(
        h.run(io, protected_rw(format, IoOpcode::read, 10, 1, wire::kPrchkReftag, tags)).status(),
        kInvalidPi);
    // Without the reference tag check the ILBRT is not compared with the SLBA.
    EXPECT_TRUE(h.run(io,
                      protected_rw(format, IoOpcode::write, 10, 1,
                                   wire::kPrchkGuard | wire::kPrchkApptag, tags),
                      sent)
                    .status()
                    .ok());
}

// SPDK's host on a type 3 namespace with PRACT=0 and every check: reference
// tag 0 in the command, each block's LBA in its PI. The reference tag of type
// 3 is the application's, so neither the write nor the read compares it.
TEST(ProtectionType3, ReferenceTagIsNotCompared) {
    for (const PiGuard guard : {PiGuard::crc16, PiGuard::crc64}) {
        const BlockFormat format{4096, guard == PiGuard::crc16 ? 8u : 16u, PiType::type3, guard,
                                 false};
        SCOPED_TRACE(format.guard_bits());
        CoreHarness h(config_with(format));
        QueueState admin = CoreHarness::new_queue(0);
        QueueState io = h.bring_up_io(admin);
        const std::uint64_t slba = 968;
        const std::uint32_t blocks = 4;
        Bytes sent = pattern(std::size_t{blocks} * format.extended_bytes(), 6);
        for (std::uint32_t i = 0; i < blocks; ++i) {
            std::byte* block = writable(sent).data() + std::size_t{i} * format.extended_bytes();
            wire::pi_write(format, block, {wire::pi_guard(format, block), kApptag, slba + i, 0});
        }
        PiTags command_tags;
        command_tags.apptag = kApptag;  // reference tag 0
        const Result w = h.run(
            io, protected_rw(format, IoOpcode::write, slba, blocks, wire::kPrchkAll, command_tags),
            sent);
        ASSERT_TRUE(w.status().ok()) << wire::describe(w.status());
        const Result r = h.run(
            io, protected_rw(format, IoOpcode::read, slba, blocks, wire::kPrchkAll, command_tags));
        ASSERT_TRUE(r.status().ok()) << wire::describe(r.status());
        EXPECT_EQ(r.data, sent);
        // The guard is still checked.
        Bytes bad = sent;
        flip_field(format, bad, 1, PiCheck::guard);
        EXPECT_EQ(h.run(io,
                        protected_rw(format, IoOpcode::write, slba, blocks, wire::kPrchkAll,
                                     command_tags),
                        bad)
                      .status(),
                  check_status(PiCheck::guard));
    }
}

// SPDK's host strips only 8-byte PI with PRACT; a 16-byte PI travels with the
// data. The target takes that form beside the specification's (data only):
// the PI it generates replaces the host's and a read returns it.
TEST(ProtectionPract, SixteenBytePiWithTheDataAsSpdkSendsIt) {
    const BlockFormat format{4096, 16, PiType::type1, PiGuard::crc64, false};
    CoreHarness h(config_with(format));
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const std::uint64_t slba = 32;
    const std::uint32_t blocks = 3;
    const PiTags tags = tags_for(format, slba);
    const Bytes sent = pattern(std::size_t{blocks} * format.extended_bytes(), 17);
    wire::Sqe write = protected_rw(format, IoOpcode::write, slba, blocks, wire::kPract, tags);
    write.dptr = CoreHarness::keyed(sent.size());
    ASSERT_TRUE(h.run(io, write, sent).status().ok());
    Bytes expected = sent;
    wire::pi_generate(format, writable(expected), tags);
    wire::Sqe read =
        protected_rw(format, IoOpcode::read, slba, blocks, wire::kPract | wire::kPrchkAll, tags);
    read.dptr = CoreHarness::keyed(sent.size());
    const Result extended = h.run(io, read);
    ASSERT_TRUE(extended.status().ok()) << wire::describe(extended.status());
    EXPECT_EQ(extended.data, expected);
    const Result data_only = h.run(io, protected_rw(format, IoOpcode::read, slba, blocks,
                                                    wire::kPract | wire::kPrchkAll, tags));
    ASSERT_TRUE(data_only.status().ok());
    EXPECT_EQ(data_only.data, data_of(format, expected));
}

TEST(MetadataWithoutPi, PrinfoIgnoredAndMetadataKept) {
    const BlockFormat format{512, 16, PiType::none, PiGuard::crc16, false};
    CoreHarness h(config_with(format));
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const Result id = h.run(admin, wire::identify_command(wire::IdentifyCns::namespace_data, 1,
                                                          CoreHarness::keyed(4096)));
    wire::IdentifyNamespace ns{};
    std::memcpy(&ns, id.data.data(), sizeof ns);
    EXPECT_EQ(ns.flbas, wire::kFlbasExtendedMetadata);
    EXPECT_EQ(ns.lbaf[0].ms, 16);
    EXPECT_EQ(ns.dps, 0);

    // PRACT and PRCHK mean nothing here: extended blocks both ways, stored as sent.
    const Bytes sent = pattern(3u * format.extended_bytes(), 6);
    const std::uint8_t prinfo = wire::kPract | wire::kPrchkAll;
    const Result w = h.run(io, protected_rw(format, IoOpcode::write, 5, 3, prinfo, {}), sent);
    ASSERT_TRUE(w.status().ok()) << wire::describe(w.status());
    EXPECT_EQ(w.plan.length, sent.size());
    const Result r = h.run(io, protected_rw(format, IoOpcode::read, 5, 3, prinfo, {}));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data, sent);
    ASSERT_TRUE(h.run(io, wire::write_zeroes_command(1, 5, 3)).status().ok());
    EXPECT_EQ(h.run(io, protected_rw(format, IoOpcode::read, 5, 3, 0, {})).data,
              Bytes(sent.size(), 0));
}

TEST(PlainNamespace, IdentifyNvmCommandSet) {
    CoreHarness h;
    QueueState q = CoreHarness::new_queue(0);
    h.bring_up(q);
    const auto keyed = CoreHarness::keyed(wire::kIdentifyDataSize);
    Result r = h.run(q, wire::identify_command_set_namespace(1, wire::kCsiNvm, keyed));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(std::count(r.data.begin(), r.data.end(), 0), 4096);  // ELBAF 0: 16-bit guard, no STS
    r = h.run(q, wire::identify_command_set_namespace(9, wire::kCsiNvm, keyed));
    ASSERT_TRUE(r.status().ok());  // an inactive NSID: zeroes
    EXPECT_EQ(std::count(r.data.begin(), r.data.end(), 0), 4096);
    constexpr std::uint8_t kCsiKeyValue = 1;
    EXPECT_EQ(h.run(q, wire::identify_command_set_namespace(1, kCsiKeyValue, keyed)).status(),
              generic(GenericStatus::invalid_field));
    EXPECT_EQ(h.run(q, wire::identify_command_set_namespace(0, wire::kCsiNvm, keyed)).status(),
              generic(GenericStatus::invalid_namespace_or_format));
    r = h.run(q, wire::identify_command(wire::IdentifyCns::namespace_data, 1, keyed));
    wire::IdentifyNamespace ns{};
    std::memcpy(&ns, r.data.data(), sizeof ns);
    EXPECT_EQ(ns.flbas, 0);
    EXPECT_EQ(ns.lbaf[0].ms, 0);
    EXPECT_EQ(ns.dps, 0);
    EXPECT_EQ(ns.dpc, 0);
}

TEST(ProtectionFile, ExtendedBlocksSurviveRestart) {
    const BlockFormat format{512, 8, PiType::type1, PiGuard::crc16, false};
    const auto path = std::filesystem::temp_directory_path() /
                      ("nvmeof-target-pi-test-" + std::to_string(getpid()) + ".img");
    std::filesystem::remove(path);
    TargetConfig config = config_with(format);
    NamespaceConfig& ns = config.subsystems[0].namespaces[0];
    ns.backing = NamespaceConfig::Backing::file;
    ns.path = path.string();
    const std::uint64_t last = kDataBytes / format.data_bytes - 1;
    const PiTags tags = tags_for(format, last);
    const Bytes sent = host_blocks(format, 1, tags, 12);
    {
        CoreHarness h(config);
        QueueState admin = CoreHarness::new_queue(0);
        QueueState io = h.bring_up_io(admin);
        ASSERT_TRUE(
            h.run(io, protected_rw(format, IoOpcode::write, last, 1, wire::kPrchkAll, tags), sent)
                .status()
                .ok());
    }
    EXPECT_EQ(std::filesystem::file_size(path),
              kDataBytes / format.data_bytes * format.extended_bytes());
    ns.size_bytes = 0;  // the file's own size
    CoreHarness h(config);
    QueueState admin = CoreHarness::new_queue(0);
    QueueState io = h.bring_up_io(admin);
    const Result r =
        h.run(io, protected_rw(format, IoOpcode::read, last, 1, wire::kPrchkAll, tags));
    ASSERT_TRUE(r.status().ok());
    EXPECT_EQ(r.data, sent);
    EXPECT_EQ(h.run(io, protected_rw(format, IoOpcode::read, last + 1, 1, 0, {})).status(),
              generic(GenericStatus::lba_out_of_range));
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace nvmeof::target::testing
