// Constants and helpers shared by the CommandCore source files.
#pragma once

#include <cstdint>

#include "core.hpp"
#include "nvmeof/wire/io.hpp"
#include "nvmeof/wire/registers.hpp"

namespace nvmeof::target {

inline constexpr std::uint16_t kMaxControllerId = 0xFFEF;  // valid dynamic IDs are 1..0xFFEF
inline constexpr std::uint32_t kDiscoveryKatoMs =
    120000;                                             // nvmet/SPDK when a discovery host sends 0
inline constexpr std::uint8_t kReadyTimeout500ms = 15;  // CAP.TO: 7.5 s, as nvmet
inline constexpr std::uint8_t kConnectAttrDisableSqFlowControl = 1u << 2;  // CATTR DISSQFC
// VS 1.3: Linux then asks CNS 0x03 but not CNS 0x08 (digest §10.16).
inline constexpr wire::Version kReportedVersion = wire::Version::make(1, 3, 0);
inline constexpr unsigned kAsyncEventLimit = 3;          // AERL, 0's based: four held at most
inline constexpr std::uint32_t kAnaGroupId = 1;          // the one ANA group: every namespace
inline constexpr std::uint8_t kAnaTransitionTimeS = 10;  // ANATT, as nvmet

inline DataPlan failed_plan(wire::GenericStatus status) {
    DataPlan plan;
    plan.status = wire::Status::generic(status, true);
    return plan;
}

// CAP; with `io_command_sets`, CSS bit 6 (I/O command sets) besides the NVM command set.
std::uint64_t capabilities_value(const Limits& limits, bool io_command_sets = false);

// io_zoned.cpp: a zoned namespace's zones as its configuration lays them out.
ZoneLayout zone_layout(const NamespaceConfig& config);
// Zone Append, Zone Management Send and Receive.
bool is_zone_command(wire::IoOpcode opcode);
// The fields of a zoned namespace's command checked before any data moves:
// a Zone Append's size (ZASL) and range, a report's action, filter, length and
// SLBA. Success for every other command.
wire::Status check_zone_command(const Namespace& ns, const wire::Sqe& sqe, const Limits& limits);

// Success for 0, else Internal Error (the errno logged).
Completion storage_status(int error);

// PRACT of a Read, Write or Compare as it applies to the namespace: PRINFO is ignored
// where the namespace has no protection information.
inline bool pract_of(const Namespace& ns, const wire::Sqe& sqe) {
    return ns.format.pi_type != wire::PiType::none &&
           (wire::command_prinfo(sqe) & wire::kPract) != 0;
}

// Bytes per block a Read, Write or Compare moves, and in `rule` why. With
// PRACT and PI that is the whole metadata the NVM command set moves data only
// (so do Linux's host and ours); SPDK's host strips only 8-byte PI and sends
// a 16-byte PI with the data, a length accepted too (the SGL's length tells
// which: execute sees it as the data's size).
std::uint32_t wire_block_bytes(const Namespace& ns, const wire::Sqe& sqe, std::uint64_t blocks,
                               const char*& rule);

// The PRINFO and tag fields of a Read, Write, Compare or Write Zeroes the command is
// refused for before any data moves (Invalid Protection Information); success
// where they are acceptable or the namespace has no protection information.
wire::Status check_protection_fields(const Namespace& ns, const wire::Sqe& sqe);

}  // namespace nvmeof::target
