#include <algorithm>
#include <cctype>
#include <fstream>
#include <random>
#include <sstream>

#include "nvmeof/errors.hpp"
#include "nvmeof/option_rules.hpp"
#include "nvmeof/options.hpp"
#include "nvmeof/wire/fabrics.hpp"

namespace nvmeof {
namespace {

constexpr std::string_view kUuidNqnPrefix = wire::kUuidNqnPrefix;
constexpr std::size_t kUuidTextLength = 36;

// The first line of a file, trimmed; empty when missing or unreadable.
std::string read_first_line(const std::string& path) {
    if (path.empty()) {
        return {};
    }
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) {
        return {};
    }
    auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
    line.erase(line.begin(), std::find_if(line.begin(), line.end(), not_space));
    line.erase(std::find_if(line.rbegin(), line.rend(), not_space).base(), line.end());
    return line;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// FNV-1a, 64 bits, from a given offset basis.
std::uint64_t fnv1a(std::string_view text, std::uint64_t basis) {
    constexpr std::uint64_t kPrime = 0x100000001b3ULL;
    std::uint64_t h = basis;
    for (const char c : text) {
        h ^= static_cast<unsigned char>(c);
        h *= kPrime;
    }
    return h;
}

void set_uuid_layout(wire::HostId& id, std::uint8_t version) {
    id[6] = static_cast<std::uint8_t>((id[6] & 0x0F) | (version << 4));
    id[8] = static_cast<std::uint8_t>((id[8] & 0x3F) | 0x80);  // RFC 4122 variant
}

wire::HostId random_host_id() {
    std::random_device rd;
    wire::HostId id{};
    for (std::size_t i = 0; i < id.size(); i += 4) {
        const std::uint32_t v = rd();
        for (std::size_t b = 0; b < 4; ++b) {
            id[i + b] = static_cast<std::uint8_t>(v >> (8 * b));
        }
    }
    set_uuid_layout(id, 4);
    return id;
}

// The UUID part of a host NQN of the uuid form, if any.
bool uuid_of_nqn(std::string_view nqn, wire::HostId& out) {
    return nqn.size() == kUuidNqnPrefix.size() + kUuidTextLength &&
           nqn.substr(0, kUuidNqnPrefix.size()) == kUuidNqnPrefix &&
           parse_uuid(nqn.substr(kUuidNqnPrefix.size()), out);
}

// The NQN in use, whatever its origin: it must fit the Connect data. One from
// /etc/nvme/hostnqn is not held to the form check_host_nqn asks of an
// explicit option, as the kernel does not hold it to one either.
void check_nqn(std::string_view nqn) {
    try {
        wire::validate_nqn(nqn, "host NQN");
    } catch (const std::invalid_argument& e) {
        throw InvalidArgument(e.what());
    }
}

}  // namespace

bool parse_uuid(std::string_view text, wire::HostId& out) {
    if (text.size() != kUuidTextLength) {
        return false;
    }
    wire::HostId id{};
    std::size_t nibble = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') {
                return false;
            }
            continue;
        }
        const int v = hex_value(text[i]);
        if (v < 0) {
            return false;
        }
        id[nibble / 2] = static_cast<std::uint8_t>(id[nibble / 2] | (nibble % 2 == 0 ? v << 4 : v));
        ++nibble;
    }
    out = id;
    return true;
}

std::string format_uuid(const wire::HostId& id) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    text.reserve(kUuidTextLength);
    for (std::size_t i = 0; i < id.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            text += '-';
        }
        text += kHex[id[i] >> 4];
        text += kHex[id[i] & 0xF];
    }
    return text;
}

std::string host_nqn_from_id(const wire::HostId& id) {
    return std::string(kUuidNqnPrefix) + format_uuid(id);
}

wire::HostId host_id_from_machine_id(std::string_view machine_id) {
    // Two independent 64-bit hashes of an application-specific string, so the
    // machine ID itself never leaves the host (as systemd recommends).
    std::string keyed = "nvmeof-host-id:";
    keyed += machine_id;
    const std::uint64_t a = fnv1a(keyed, 0xcbf29ce484222325ULL);
    const std::uint64_t b = fnv1a(keyed, 0x84222325cbf29ce4ULL);
    wire::HostId id{};
    for (std::size_t i = 0; i < 8; ++i) {
        id[i] = static_cast<std::uint8_t>(a >> (8 * i));
        id[8 + i] = static_cast<std::uint8_t>(b >> (8 * i));
    }
    set_uuid_layout(id, 8);
    return id;
}

HostIdentity resolve_host_identity(const Options& options, const HostIdentityPaths& paths) {
    HostIdentity identity;
    const std::string file_nqn = options.host_nqn.empty() && !options.random_host_id
                                     ? read_first_line(paths.hostnqn_file)
                                     : std::string();
    const std::string nqn = options.host_nqn.empty() ? file_nqn : options.host_nqn;

    if (!options.host_nqn.empty()) {
        check_host_nqn(options.host_nqn);
    }
    if (!options.host_id.empty()) {
        check_host_id(options.host_id);
        parse_uuid(options.host_id, identity.id);
        identity.origin = "options";
    } else if (options.random_host_id) {
        identity.id = random_host_id();
        identity.origin = "random";
    } else if (const std::string text = read_first_line(paths.hostid_file);
               !text.empty() && parse_uuid(text, identity.id)) {
        identity.origin = paths.hostid_file;
    } else if (uuid_of_nqn(nqn, identity.id)) {
        identity.origin = "host NQN";
    } else if (const std::string machine = read_first_line(paths.machine_id_file);
               !machine.empty()) {
        identity.id = host_id_from_machine_id(machine);
        identity.origin = "derived from " + paths.machine_id_file;
    } else {
        identity.id = random_host_id();
        identity.origin = "random (no " + paths.hostid_file + " or " + paths.machine_id_file + ")";
    }
    identity.id_text = format_uuid(identity.id);
    identity.nqn = nqn.empty() ? host_nqn_from_id(identity.id) : nqn;
    check_nqn(identity.nqn);
    return identity;
}

}  // namespace nvmeof
