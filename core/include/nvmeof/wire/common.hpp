// Shared constants and value types of the NVMe / NVMe-oF / NVMe-RDMA wire layer.
//
// The wire layer is plain data: it knows nothing of verbs, fio or sockets. Every
// structure in it is a trivially copyable struct whose size and field offsets are
// checked at compile time; builders fill them, parsers read them.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace nvmeof::wire {

// NVMe is little-endian on the wire; the structs below are stored in host order,
// which is only correct on little-endian hosts. Refuse to build elsewhere rather
// than silently emitting byte-swapped capsules.
static_assert(std::endian::native == std::endian::little,
              "the NVMe wire layer assumes a little-endian host");

inline constexpr std::uint16_t kDefaultPort = 4420;  // TRSVCID for RDMA, I/O and discovery
inline constexpr std::size_t kSqeSize = 64;          // submission queue entry
inline constexpr std::size_t kCqeSize = 16;          // completion queue entry
inline constexpr std::size_t kSglDescriptorSize = 16;
inline constexpr std::size_t kIdentifyDataSize = 4096;  // every Identify CNS returns 4 KiB
inline constexpr std::size_t kConnectDataSize = 1024;
inline constexpr std::uint16_t kAdminQueueSize = 32;  // NVME_AQ_DEPTH; nvmet rejects more
inline constexpr std::uint32_t kMaxKeyedSglLength = (1u << 24) - 1;  // 24-bit length field
inline constexpr std::uint32_t kMaxBlocksPerCommand = 1u << 16;      // NLB is 16 bits, 0's based
inline constexpr std::size_t kMaxNqnLength = 223;  // text bytes, excluding the NUL
inline constexpr std::size_t kNqnFieldSize = 256;
inline constexpr std::uint16_t kDynamicControllerId = 0xFFFF;  // "give me any" on admin Connect
inline constexpr std::uint32_t kBroadcastNsid = 0xFFFFFFFF;
inline constexpr char kDiscoveryNqn[] = "nqn.2014-08.org.nvmexpress.discovery";
inline constexpr char kUuidNqnPrefix[] = "nqn.2014-08.org.nvmexpress:uuid:";  // + a UUID
inline constexpr std::uint32_t kMinLbaDataShift = 9;  // 512-byte blocks at the least

// The host identifier of Connect data (a UUID); here rather than with Connect
// because the public options carry it too.
using HostId = std::array<std::uint8_t, 16>;

// A region of memory the peer may reach by RDMA: the address the rkey covers, its
// length and the key. The transport fills it from a memory registration; the wire
// layer only copies the three numbers into keyed SGL descriptors.
struct RemoteBuffer {
    std::uint64_t address = 0;
    std::uint64_t length = 0;
    std::uint32_t rkey = 0;

    // The sub-range [offset, offset + bytes) of this buffer, unchecked.
    constexpr RemoteBuffer slice(std::uint64_t offset, std::uint64_t bytes) const {
        return RemoteBuffer{address + offset, bytes, rkey};
    }
};

// Little-endian unaligned integer access for fields that do not sit on their
// natural alignment (the 24-bit keyed SGL length, the key at byte 11).
template <typename T>
inline T load_le(const void* src) {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, src, sizeof value);
    return value;
}

template <typename T>
inline void store_le(void* dst, T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(dst, &value, sizeof value);
}

// Copies text into a fixed-size NUL-padded field. Returns false (and leaves the
// field untouched) if it does not fit with at least one terminating NUL.
bool copy_to_field(char* field, std::size_t field_size, std::string_view text);

// Fills a fixed-size ASCII field the way the spec wants (space padded, no NUL).
void copy_to_space_padded(char* field, std::size_t field_size, std::string_view text);

// Text of a fixed-size ASCII field up to the first NUL, with trailing spaces removed
// (nvmet pads with NULs, SPDK and the spec with spaces).
std::string_view field_text(const char* field, std::size_t field_size);

}  // namespace nvmeof::wire
