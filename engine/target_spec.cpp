#include "target_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <vector>

namespace nvmeof::engine {
namespace {

std::string unescape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == ':') {
            continue;
        }
        out.push_back(text[i]);
    }
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

template <typename T>
T parse_number(std::string_view text, std::string_view what, T min, T max) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
        value > max) {
        throw SpecError(std::string(what) + "=" + std::string(text) + " is not a number from " +
                        std::to_string(min) + " to " + std::to_string(max));
    }
    return static_cast<T>(value);
}

std::vector<std::string_view> split_words(std::string_view text) {
    std::vector<std::string_view> words;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
            ++i;
        }
        const std::size_t start = i;
        while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
            ++i;
        }
        if (i > start) {
            words.push_back(text.substr(start, i - start));
        }
    }
    return words;
}

void apply_port(TargetSpec& spec, std::string_view text, std::string_view what) {
    spec.port = parse_number<std::uint16_t>(text, what, 1, std::numeric_limits<std::uint16_t>::max());
}

void apply_nsid(TargetSpec& spec, std::string_view text, std::string_view what) {
    // 0 and the broadcast NSID 0xFFFFFFFF never name one namespace.
    spec.nsid = parse_number<std::uint32_t>(text, what, 1, 0xFFFFFFFE);
}

constexpr std::size_t kMaxNqnBytes = 223;
constexpr std::string_view kUuidNqnPrefix = "nqn.2014-08.org.nvmexpress:uuid:";

bool is_uuid(std::string_view text) {
    if (text.size() != 36) {
        return false;
    }
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? text[i] != '-' : !std::isxdigit(static_cast<unsigned char>(text[i]))) {
            return false;
        }
    }
    return true;
}

// "nqn.yyyy-mm." followed by a naming authority.
bool has_date_form(std::string_view nqn) {
    constexpr std::string_view kShape = "nqn.dddd-dd.";
    if (nqn.size() <= kShape.size()) {
        return false;
    }
    for (std::size_t i = 0; i < kShape.size(); ++i) {
        const bool ok = kShape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(nqn[i])) != 0
                                         : nqn[i] == kShape[i];
        if (!ok) {
            return false;
        }
    }
    return true;
}

constexpr std::string_view kKnownKeys =
    "trtype adrfam traddr trsvcid subnqn ns hostnqn hostid host_traddr hostaddr";

bool is_known_key(std::string_view key) {
    for (std::string_view known : split_words(kKnownKeys)) {
        if (iequals(key, known) || iequals(key, "nsid")) {
            return true;
        }
    }
    return false;
}

}  // namespace

void check_host_nqn(std::string_view nqn) {
    const bool uuid_form = nqn.substr(0, kUuidNqnPrefix.size()) == kUuidNqnPrefix;
    const bool ok = nqn.size() <= kMaxNqnBytes &&
                    (uuid_form ? is_uuid(nqn.substr(kUuidNqnPrefix.size())) : has_date_form(nqn));
    if (!ok) {
        throw SpecError("hostnqn=\"" + std::string(nqn.substr(0, 64)) +
                        (nqn.size() > 64 ? "..." : "") +
                        "\" is not an NVMe Qualified Name: expected \"nqn.yyyy-mm.domain:name\" or "
                        "\"nqn.2014-08.org.nvmexpress:uuid:<UUID>\", at most 223 bytes");
    }
}

Address parse_address(std::string_view text, std::string_view what) {
    Address address;
    if (text.empty() || text.front() != '[') {
        if (text.find_first_of("[]") != std::string_view::npos) {
            throw SpecError(std::string(what) + "=" + std::string(text) +
                            ": a bracketed address starts with '[' (\"[::1]\" or \"[::1]:4420\")");
        }
        address.host = text;
        return address;
    }
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close == 1) {
        throw SpecError(std::string(what) + "=" + std::string(text) +
                        ": expected \"[IPv6 address]\" or \"[IPv6 address]:port\"");
    }
    address.host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
        if (rest.front() != ':') {
            throw SpecError(std::string(what) + "=" + std::string(text) +
                            ": only \":port\" may follow the closing bracket");
        }
        address.port = parse_number<std::uint16_t>(rest.substr(1), std::string(what) + " port", 1,
                                                   std::numeric_limits<std::uint16_t>::max());
    }
    return address;
}

// traddr=a,b (or traddr= repeated in a filename): several paths to the
// subsystem, each "ADDR", "[IPv6]", "[IPv6]:PORT" or "IPv4:PORT". The list goes
// to the core as one string; only its shape is checked here.
static std::string parse_path_list(std::string_view text, std::string_view what) {
    std::string list;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item =
            text.substr(start, comma == std::string_view::npos ? comma : comma - start);
        if (item.empty()) {
            throw SpecError(std::string(what) + "=" + std::string(text) +
                            ": an empty address in the list of paths");
        }
        const bool v4_with_port =
            item.front() != '[' && std::count(item.begin(), item.end(), ':') == 1;
        if (v4_with_port) {
            parse_number<std::uint16_t>(item.substr(item.find(':') + 1),
                                        std::string(what) + " port", 1,
                                        std::numeric_limits<std::uint16_t>::max());
        } else {
            parse_address(item, what);
        }
        list += (list.empty() ? "" : ",") + std::string(item);
        if (comma == std::string_view::npos) {
            return list;
        }
        start = comma + 1;
    }
}

std::string controller_key(const TargetSpec& spec) {
    // '\n' never occurs in a value fio hands over (it ends a job file line).
    return spec.address + '\n' + std::to_string(spec.port) + '\n' + spec.subsystem_nqn + '\n' +
           spec.host_nqn + '\n' + spec.host_id + '\n' + spec.source;
}

std::optional<TargetSpec> parse_filename_spec(std::string_view filename) {
    if (filename.find('=') == std::string_view::npos) {
        return std::nullopt;
    }
    const std::string text = unescape(filename);
    TargetSpec spec;
    std::optional<std::uint16_t> bracket_port;
    bool port_given = false;
    for (std::string_view word : split_words(text)) {
        const std::size_t eq = word.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            throw SpecError("filename: \"" + std::string(word) + "\" is not key=value");
        }
        const std::string_view key = word.substr(0, eq);
        const std::string_view value = word.substr(eq + 1);
        if (value.empty()) {  // an unset ${VAR}: the default
            if (!is_known_key(key)) {
                throw SpecError("filename: unknown key \"" + std::string(key) + "\" (known: " +
                                std::string(kKnownKeys) + ")");
            }
            continue;
        }
        if (iequals(key, "trtype")) {
            if (!iequals(value, "rdma")) {
                throw SpecError("filename: trtype=" + std::string(value) +
                                " is not supported (this engine speaks NVMe/RDMA only)");
            }
        } else if (iequals(key, "adrfam")) {
            if (!iequals(value, "ipv4") && !iequals(value, "ipv6")) {
                throw SpecError("filename: adrfam=" + std::string(value) +
                                " is not supported (IPv4 or IPv6)");
            }
        } else if (iequals(key, "traddr") &&
                   (!spec.address.empty() || value.find(',') != std::string_view::npos)) {
            // Repeated, or a list: several paths (a first "[IPv6]:PORT" gives the
            // default port of those without one, as for a single address).
            spec.address = parse_path_list(
                (spec.address.empty() ? "" : spec.address + ",") + std::string(value),
                "filename traddr");
        } else if (iequals(key, "traddr")) {
            Address address = parse_address(value, "filename traddr");
            spec.address = std::move(address.host);
            bracket_port = address.port;
        } else if (iequals(key, "trsvcid")) {
            apply_port(spec, value, "filename trsvcid");
            port_given = true;
        } else if (iequals(key, "subnqn")) {
            spec.subsystem_nqn = value;
        } else if (iequals(key, "ns") || iequals(key, "nsid")) {
            apply_nsid(spec, value, "filename ns");
        } else if (iequals(key, "hostnqn")) {
            spec.host_nqn = value;
        } else if (iequals(key, "hostid")) {
            spec.host_id = value;
        } else if (iequals(key, "host_traddr") || iequals(key, "hostaddr")) {
            spec.source = parse_address(value, key).host;
        } else {
            throw SpecError("filename: unknown key \"" + std::string(key) + "\" (known: " +
                            std::string(kKnownKeys) + ")");
        }
    }
    if (bracket_port && !port_given) {
        spec.port = *bracket_port;
    }
    return spec;
}

TargetSpec resolve_target(const OptionValues& options, std::string_view filename) {
    TargetSpec spec = parse_filename_spec(filename).value_or(TargetSpec{});
    auto take = [](std::string& field, std::string_view value) {
        if (!value.empty()) {
            field = unescape(value);
        }
    };
    std::optional<std::uint16_t> bracket_port;
    const bool v4_with_port = !options.traddr.empty() && options.traddr.front() != '[' &&
                              std::count(options.traddr.begin(), options.traddr.end(), ':') == 1;
    if (!options.traddr.empty() &&
        (options.traddr.find(',') != std::string_view::npos || v4_with_port)) {
        spec.address = parse_path_list(unescape(options.traddr), "traddr");
    } else if (!options.traddr.empty()) {
        Address address = parse_address(unescape(options.traddr), "traddr");
        spec.address = std::move(address.host);
        bracket_port = address.port;
    }
    take(spec.subsystem_nqn, options.subnqn);
    take(spec.host_nqn, options.hostnqn);
    take(spec.host_id, options.hostid);
    if (!options.host_traddr.empty()) {
        spec.source = parse_address(unescape(options.host_traddr), "host_traddr").host;
    }
    if (!options.trsvcid.empty()) {
        apply_port(spec, options.trsvcid, "trsvcid");
    } else if (bracket_port) {
        spec.port = *bracket_port;
    }
    if (!options.nsid.empty()) {
        apply_nsid(spec, options.nsid, "nsid");
    }
    if (spec.address.empty()) {
        throw SpecError("no target address: traddr is empty (the shipped job files take it from "
                        "${NVMEOF_TRADDR}, which is unset?); set traddr=ADDR or "
                        "filename=\"traddr=ADDR ...\"");
    }
    if (!spec.host_nqn.empty()) {
        check_host_nqn(spec.host_nqn);
    }
    return spec;
}

bool is_discovery_spec(const TargetSpec& spec) {
    return spec.subsystem_nqn.empty() || spec.subsystem_nqn == kDiscoveryNqn;
}

std::string canonical_filename(const TargetSpec& spec) {
    const bool ipv6 = spec.address.find(':') != std::string::npos;
    std::string name = "traddr=" + (ipv6 ? "[" + spec.address + "]" : spec.address) +
                       " trsvcid=" + std::to_string(spec.port) + " subnqn=" + spec.subsystem_nqn +
                       " ns=" + std::to_string(spec.nsid);
    for (const auto& [key, value] :
         {std::pair<std::string_view, const std::string&>{"hostnqn", spec.host_nqn},
          {"hostid", spec.host_id},
          {"host_traddr", spec.source}}) {
        if (!value.empty()) {
            name += " " + std::string(key) + "=" + value;
        }
    }
    return name;
}

GpuChoice parse_gpu_option(std::string_view value) {
    GpuChoice choice;
    if (value.empty()) {
        return choice;
    }
    choice.enabled = true;
    if (value == "rr") {
        choice.round_robin = true;
        return choice;
    }
    int ordinal = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ordinal);
    if (error != std::errc() || end != value.data() + value.size() || ordinal < 0) {
        throw SpecError("gpu=" + std::string(value) +
                        ": expected a GPU number (0, 1, ...) or rr (round-robin by job)");
    }
    choice.ordinal = ordinal;
    return choice;
}

int gpu_for_job(const GpuChoice& choice, unsigned int job_index, int visible) {
    if (visible <= 0) {
        throw SpecError("gpu: no GPU is visible (CUDA_VISIBLE_DEVICES?)");
    }
    if (choice.round_robin) {
        return static_cast<int>(job_index % static_cast<unsigned int>(visible));
    }
    if (choice.ordinal >= visible) {
        throw SpecError("gpu=" + std::to_string(choice.ordinal) + ": only " + std::to_string(visible) +
                        " GPU(s) are visible");
    }
    return choice.ordinal;
}

}  // namespace nvmeof::engine
