// Fabrics commands (opcode 0x7F): Connect with its 1024-byte data, Property Get/Set.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::wire {

// Common head of every Fabrics SQE: FCTYPE sits where other commands have NSID.
struct FabricsCommand {
    std::uint8_t opcode;  // 0x7F
    std::uint8_t flags;   // 0x40, even though the spec calls it reserved here
    std::uint16_t command_id;
    std::uint8_t fctype;
    std::uint8_t reserved5[19];
    SglDescriptor sgl1;
    std::uint8_t specific[24];
};
static_assert(sizeof(FabricsCommand) == kSqeSize);
static_assert(offsetof(FabricsCommand, fctype) == 4);
static_assert(offsetof(FabricsCommand, sgl1) == 24);
static_assert(offsetof(FabricsCommand, specific) == 40);

struct ConnectCommand {
    std::uint8_t opcode;
    std::uint8_t flags;
    std::uint16_t command_id;
    std::uint8_t fctype;  // 0x01
    std::uint8_t reserved5[19];
    SglDescriptor sgl1;    // the 1024-byte Connect data
    std::uint16_t recfmt;  // 0
    std::uint16_t qid;     // 0 = admin
    std::uint16_t sqsize;  // 0's based; 0 is invalid
    std::uint8_t cattr;    // priority class, DISSQFC, ...: this host sends 0
    std::uint8_t reserved47;
    std::uint32_t kato;  // keep-alive timeout in ms, admin queue only
    std::uint8_t reserved52[12];
};
static_assert(sizeof(ConnectCommand) == kSqeSize);
static_assert(offsetof(ConnectCommand, fctype) == 4);
static_assert(offsetof(ConnectCommand, sgl1) == 24);
static_assert(offsetof(ConnectCommand, recfmt) == 40);
static_assert(offsetof(ConnectCommand, qid) == 42);
static_assert(offsetof(ConnectCommand, sqsize) == 44);
static_assert(offsetof(ConnectCommand, cattr) == 46);
static_assert(offsetof(ConnectCommand, kato) == 48);
static_assert(offsetof(ConnectCommand, reserved52) == 52);

// Property Get/Set size encoding (ATTRIB bits 2:0).
enum class PropertySize : std::uint8_t { four_bytes = 0, eight_bytes = 1 };
inline constexpr std::uint8_t kPropertySizeMask = 0x7;

struct PropertyGetCommand {
    std::uint8_t opcode;
    std::uint8_t flags;
    std::uint16_t command_id;
    std::uint8_t fctype;  // 0x04
    std::uint8_t reserved5[19];
    SglDescriptor sgl1;   // zero-length keyed: no data
    std::uint8_t attrib;  // PropertySize
    std::uint8_t reserved41[3];
    std::uint32_t offset;
    std::uint8_t reserved48[16];
};
static_assert(sizeof(PropertyGetCommand) == kSqeSize);
static_assert(offsetof(PropertyGetCommand, attrib) == 40);
static_assert(offsetof(PropertyGetCommand, offset) == 44);

struct PropertySetCommand {
    std::uint8_t opcode;
    std::uint8_t flags;
    std::uint16_t command_id;
    std::uint8_t fctype;  // 0x00
    std::uint8_t reserved5[19];
    SglDescriptor sgl1;
    std::uint8_t attrib;
    std::uint8_t reserved41[3];
    std::uint32_t offset;
    std::uint64_t value;
    std::uint8_t reserved56[8];
};
static_assert(sizeof(PropertySetCommand) == kSqeSize);
static_assert(offsetof(PropertySetCommand, attrib) == 40);
static_assert(offsetof(PropertySetCommand, offset) == 44);
static_assert(offsetof(PropertySetCommand, value) == 48);

// Views of a received SQE as a Fabrics command (target side).
FabricsCommand as_fabrics(const Sqe& sqe);
ConnectCommand as_connect(const Sqe& sqe);
PropertyGetCommand as_property_get(const Sqe& sqe);
PropertySetCommand as_property_set(const Sqe& sqe);

// The 1024-byte data of a Connect command.
struct ConnectData {
    HostId host_id;
    std::uint16_t cntlid;  // 0xFFFF on the admin queue (dynamic model)
    std::uint8_t reserved18[238];
    char subnqn[kNqnFieldSize];
    char hostnqn[kNqnFieldSize];
    std::uint8_t reserved768[256];
};
static_assert(sizeof(ConnectData) == kConnectDataSize);
static_assert(offsetof(ConnectData, host_id) == 0);
static_assert(offsetof(ConnectData, cntlid) == 16);
static_assert(offsetof(ConnectData, reserved18) == 18);
static_assert(offsetof(ConnectData, subnqn) == 256);
static_assert(offsetof(ConnectData, hostnqn) == 512);
static_assert(offsetof(ConnectData, reserved768) == 768);

// Connect for queue `qid` with `queue_size` entries (SQSIZE = size − 1); the
// data goes through `data` (keyed; nvmet's admin receive buffers are 64 bytes,
// so the admin Connect data must never travel in-capsule).
Sqe connect_command(std::uint16_t qid, std::uint16_t queue_size, std::uint32_t kato_ms,
                    const SglDescriptor& data);

// Throws std::invalid_argument for an NQN that is empty, longer than 223 bytes,
// or contains a NUL.
ConnectData connect_data(const HostId& host_id, std::string_view subnqn, std::string_view hostnqn,
                         std::uint16_t cntlid);

// An NQN fits the Connect data's 256-byte field: 1 to kMaxNqnLength (223)
// bytes, no NUL.
bool nqn_fits(std::string_view nqn);
// Throws std::invalid_argument "<what> must be 1 to 223 bytes ..." unless it fits.
void validate_nqn(std::string_view nqn, std::string_view what);

// Connect response DW0.
inline constexpr std::uint32_t kConnectCntlidMask = 0xFFFF;
inline constexpr unsigned kAuthreqAtrBit = 17;   // authentication transaction required
inline constexpr unsigned kAuthreqAscrBit = 18;  // secure channel required too
inline constexpr unsigned kConnectIattrShift = 16;
inline constexpr std::uint32_t kConnectIattrMask = 0xFF;
inline constexpr std::uint32_t kConnectIattrDataBit = 0x1;  // IPO is into the 1024-byte data

struct ConnectResult {
    std::uint16_t cntlid;
    bool authentication_required;  // ATR or ASCR
    bool secure_channel_required;  // ASCR: TLS as well, which this project lacks
};
ConnectResult parse_connect_result(std::uint32_t dw0);

// For SCT 1 / SC 0x82 "Connect Invalid Parameters": which field was refused.
struct ConnectInvalidParameter {
    bool in_data;          // IATTR bit 0: offset into the Connect data, else the SQE
    std::uint16_t offset;  // IPO
};
ConnectInvalidParameter parse_connect_invalid_parameter(std::uint32_t dw0);
std::uint32_t connect_invalid_parameter_result(bool in_data, std::uint16_t offset);
// "SUBNQN", "HOSTNQN", "CNTLID", "QID", "SQSIZE", ... or "byte N".
std::string connect_parameter_name(ConnectInvalidParameter p);

Sqe property_get_command(std::uint32_t offset, PropertySize size);
Sqe property_set_command(std::uint32_t offset, std::uint64_t value, PropertySize size);

}  // namespace nvmeof::wire
