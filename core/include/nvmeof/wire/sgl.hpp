// SGL descriptors as NVMe/RDMA and NVMe/TCP use them (the 16-byte "SGL1" in
// every capsule).
#pragma once

#include <cstdint>

#include "nvmeof/wire/common.hpp"

namespace nvmeof::wire {

// Byte 15 of a descriptor: type in bits 7:4, subtype in bits 3:0.
enum class SglType : std::uint8_t {
    data_block = 0x0,
    bit_bucket = 0x1,
    segment = 0x2,
    last_segment = 0x3,
    keyed_data_block = 0x4,
    transport_data_block = 0x5,
    vendor_specific = 0xF,
};

enum class SglSubtype : std::uint8_t {
    address = 0x0,
    offset = 0x1,
    transport_specific = 0xA,
    invalidate_key = 0xF,  // keyed only: ask the target to invalidate the rkey
};

inline constexpr unsigned kSglTypeShift = 4;
inline constexpr std::uint8_t kSglSubtypeMask = 0x0F;

constexpr std::uint8_t sgl_identifier(SglType type, SglSubtype subtype) {
    return static_cast<std::uint8_t>((static_cast<unsigned>(type) << kSglTypeShift) |
                                     static_cast<unsigned>(subtype));
}

// The identifiers this project sends.
inline constexpr std::uint8_t kKeyedDataBlockAddress =
    sgl_identifier(SglType::keyed_data_block, SglSubtype::address);  // 0x40
inline constexpr std::uint8_t kKeyedDataBlockInvalidate =
    sgl_identifier(SglType::keyed_data_block, SglSubtype::invalidate_key);  // 0x4F
inline constexpr std::uint8_t kDataBlockOffset =
    sgl_identifier(SglType::data_block, SglSubtype::offset);  // 0x01, in-capsule data
// NVMe/TCP: data the transport moves outside the capsule (R2T/H2CData for
// host-to-controller data, C2HData the other way). Linux and SPDK send 0x5A.
inline constexpr std::uint8_t kTransportDataBlock =
    sgl_identifier(SglType::transport_data_block, SglSubtype::transport_specific);  // 0x5A

// Generic 16-byte descriptor. Bytes 8..14 depend on the type: keyed descriptors
// hold a 24-bit length then a 32-bit key, unkeyed ones a 32-bit length.
struct SglDescriptor {
    std::uint64_t address;  // memory address, or an offset into the capsule
    std::uint8_t body[7];   // bytes 8..14
    std::uint8_t identifier;

    constexpr SglType type() const { return static_cast<SglType>(identifier >> kSglTypeShift); }
    constexpr SglSubtype subtype() const {
        return static_cast<SglSubtype>(identifier & kSglSubtypeMask);
    }
    bool is_keyed() const { return type() == SglType::keyed_data_block; }

    // Keyed Data Block: 24-bit little-endian length at byte 8, key at byte 11.
    std::uint32_t keyed_length() const {
        return static_cast<std::uint32_t>(body[0]) | (static_cast<std::uint32_t>(body[1]) << 8) |
               (static_cast<std::uint32_t>(body[2]) << 16);
    }
    std::uint32_t keyed_key() const { return load_le<std::uint32_t>(body + 3); }

    // Data Block (address or offset subtype): 32-bit length at byte 8.
    std::uint32_t unkeyed_length() const { return load_le<std::uint32_t>(body); }

    // The transfer length of either form.
    std::uint32_t length() const { return is_keyed() ? keyed_length() : unkeyed_length(); }
};
static_assert(sizeof(SglDescriptor) == kSglDescriptorSize);
static_assert(offsetof(SglDescriptor, address) == 0);
static_assert(offsetof(SglDescriptor, body) == 8);
static_assert(offsetof(SglDescriptor, identifier) == 15);
static_assert(std::is_trivially_copyable_v<SglDescriptor>);

inline constexpr std::size_t kKeyedKeyOffset = 11;  // byte of the rkey inside a descriptor

// A Keyed SGL Data Block pointing at [address, address + length) under rkey.
// The length must fit 24 bits; callers check against kMaxKeyedSglLength.
inline SglDescriptor keyed_data_block(std::uint64_t address, std::uint32_t length,
                                      std::uint32_t rkey, bool invalidate = false) {
    SglDescriptor d{};
    d.address = address;
    d.body[0] = static_cast<std::uint8_t>(length);
    d.body[1] = static_cast<std::uint8_t>(length >> 8);
    d.body[2] = static_cast<std::uint8_t>(length >> 16);
    store_le<std::uint32_t>(d.body + 3, rkey);
    d.identifier = invalidate ? kKeyedDataBlockInvalidate : kKeyedDataBlockAddress;
    return d;
}

// A keyed descriptor for a RemoteBuffer (whole buffer).
inline SglDescriptor keyed_data_block(const RemoteBuffer& buffer) {
    return keyed_data_block(buffer.address, static_cast<std::uint32_t>(buffer.length), buffer.rkey);
}

// "No data": a zero-length keyed descriptor. nvmet parses the SGL of every command
// and refuses an all-zero one, so no-data commands must carry this.
inline SglDescriptor zero_length_keyed() {
    return keyed_data_block(0, 0, 0);
}

// In-capsule data: the data follows the SQE inside the same SEND, at `offset` bytes
// from the start of the in-capsule area (hosts send 0).
inline SglDescriptor in_capsule_data(std::uint32_t offset, std::uint32_t length) {
    SglDescriptor d{};
    d.address = offset;
    store_le<std::uint32_t>(d.body, length);
    d.identifier = kDataBlockOffset;
    return d;
}

// NVMe/TCP's Transport SGL Data Block: `length` bytes the transport moves
// itself (address 0, no key). Length 0: a command without data.
inline SglDescriptor transport_data_block(std::uint32_t length) {
    SglDescriptor d{};
    store_le<std::uint32_t>(d.body, length);
    d.identifier = kTransportDataBlock;
    return d;
}

}  // namespace nvmeof::wire
