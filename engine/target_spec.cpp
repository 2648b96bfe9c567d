#include "target_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "option_rules.hpp"

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

// fio hands these options over as text: digits first, then the library's rule.
std::uint64_t parse_number(std::string_view text, std::string_view what) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
        throw SpecError(std::string(what) + "=" + std::string(text) + ": not a number");
    }
    return value;
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
    const std::uint64_t port = parse_number(text, what);
    core_check([&] { check_port(port, what); });
    spec.port = static_cast<std::uint16_t>(port);
}

void apply_nsid(TargetSpec& spec, std::string_view text, std::string_view what) {
    const std::uint64_t nsid = parse_number(text, what);
    core_check([&] { check_nsid(nsid, what); });
    spec.nsid = static_cast<std::uint32_t>(nsid);
}

// "IPv4:PORT" (one colon, no brackets) is a path with a port of its own: it
// goes on as a one-path list, where that port stays the path's.
bool is_ipv4_with_port(std::string_view text) {
    return !text.empty() && text.front() != '[' && std::count(text.begin(), text.end(), ':') == 1;
}

// host_traddr (SPDK's hostaddr): one address, which takes no port.
std::string source_address(std::string_view text, std::string_view what) {
    const Address address = parse_address(text, what);
    if (address.port) {
        throw SpecError(std::string(what) + "=" + std::string(text) +
                        ": a source address takes no port");
    }
    return address.host;
}

// trtype (the option, or the filename's key): SPDK's and nvme-cli's names, any case.
Transport transport_of(std::string_view text, std::string_view what) {
    if (const std::optional<Transport> transport = parse_transport(text)) {
        return *transport;
    }
    throw SpecError(std::string(what) + "=" + std::string(text) +
                    ": not a transport this engine speaks (RDMA or TCP, any case)");
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

Address parse_address(std::string_view text, std::string_view what) {
    std::vector<TargetPath> paths;
    core_check([&] { paths = split_target(text, what); });
    if (paths.size() != 1) {
        throw SpecError(std::string(what) + "=" + std::string(text) +
                        ": one address here, not a list of paths");
    }
    return std::move(paths.front());
}

// traddr=a,b (or traddr= repeated in a filename): several paths to the
// subsystem, each "ADDR", "[IPv6]", "[IPv6]:PORT" or "IPv4:PORT". The list goes
// to the library as one string, checked by its grammar.
static std::string parse_path_list(std::string_view text, std::string_view what) {
    core_check([&] { check_target(text, what); });
    return std::string(text);
}

std::string controller_key(const TargetSpec& spec) {
    // '\n' never occurs in a value fio hands over (it ends a job file line).
    return std::string(transport_name(spec.transport)) + '\n' + spec.address + '\n' +
           std::to_string(spec.port) + '\n' + spec.subsystem_nqn + '\n' + spec.host_nqn + '\n' +
           spec.host_id + '\n' + spec.source;
}

namespace {

// A filename spec as written, and whether it gave a port (trsvcid, or
// "[IPv6]:PORT" in traddr): a discovery spec over TCP without one takes the
// discovery port once the options have had their say.
struct FilenameFields {
    TargetSpec spec;
    bool port_given = false;
};

std::optional<FilenameFields> parse_filename_fields(std::string_view filename) {
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
                throw SpecError("filename: unknown key \"" + std::string(key) +
                                "\" (known: " + std::string(kKnownKeys) + ")");
            }
            continue;
        }
        if (iequals(key, "trtype")) {
            spec.transport = transport_of(value, "filename trtype");
        } else if (iequals(key, "adrfam")) {
            if (!iequals(value, "ipv4") && !iequals(value, "ipv6")) {
                throw SpecError("filename: adrfam=" + std::string(value) +
                                " is not supported (IPv4 or IPv6)");
            }
        } else if (iequals(key, "traddr") &&
                   (!spec.address.empty() || value.find(',') != std::string_view::npos ||
                    is_ipv4_with_port(value))) {
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
            spec.source = source_address(value, key);
        } else {
            throw SpecError("filename: unknown key \"" + std::string(key) +
                            "\" (known: " + std::string(kKnownKeys) + ")");
        }
    }
    if (bracket_port && !port_given) {
        spec.port = *bracket_port;
    }
    return FilenameFields{std::move(spec), port_given || bracket_port.has_value()};
}

// A discovery service over TCP listens on its own port (nvme-cli's default
// trsvcid for a discovery controller); an I/O controller, and RDMA's
// discovery, on kDefaultPort.
void default_the_port(TargetSpec& spec, bool port_given) {
    if (!port_given && is_discovery_spec(spec)) {
        spec.port = default_discovery_port(spec.transport);
    }
}

}  // namespace

std::optional<TargetSpec> parse_filename_spec(std::string_view filename) {
    std::optional<FilenameFields> fields = parse_filename_fields(filename);
    if (!fields) {
        return std::nullopt;
    }
    default_the_port(fields->spec, fields->port_given);
    return std::move(fields->spec);
}

TargetSpec resolve_target(const OptionValues& options, std::string_view filename) {
    FilenameFields fields = parse_filename_fields(filename).value_or(FilenameFields{});
    TargetSpec& spec = fields.spec;
    bool port_given = fields.port_given;
    if (!options.trtype.empty()) {
        spec.transport = transport_of(options.trtype, "trtype");
    }
    auto take = [](std::string& field, std::string_view value) {
        if (!value.empty()) {
            field = unescape(value);
        }
    };
    std::optional<std::uint16_t> bracket_port;
    if (!options.traddr.empty() &&
        (options.traddr.find(',') != std::string_view::npos || is_ipv4_with_port(options.traddr))) {
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
        spec.source = source_address(unescape(options.host_traddr), "host_traddr");
    }
    if (!options.trsvcid.empty()) {
        apply_port(spec, options.trsvcid, "trsvcid");
        port_given = true;
    } else if (bracket_port) {
        spec.port = *bracket_port;
        port_given = true;
    }
    if (!options.nsid.empty()) {
        apply_nsid(spec, options.nsid, "nsid");
    }
    if (spec.address.empty()) {
        throw SpecError(
            "no target address: traddr is empty (the shipped job files take it from "
            "${NVMEOF_TRADDR}, which is unset?); set traddr=ADDR or "
            "filename=\"traddr=ADDR ...\"");
    }
    core_check([&] {
        if (!spec.subsystem_nqn.empty()) {
            check_subsystem_nqn(spec.subsystem_nqn, kFioNames.subsystem_nqn);
        }
        if (!spec.host_nqn.empty()) {
            check_host_nqn(spec.host_nqn, kFioNames.host_nqn);
        }
        if (!spec.host_id.empty()) {
            check_host_id(spec.host_id, kFioNames.host_id);
        }
    });
    default_the_port(spec, port_given);
    return spec;
}

bool is_discovery_spec(const TargetSpec& spec) {
    return spec.subsystem_nqn.empty() || spec.subsystem_nqn == kDiscoveryNqn;
}

std::string canonical_filename(const TargetSpec& spec) {
    const bool ipv6 = spec.address.find(':') != std::string::npos;
    // RDMA, the default, goes unsaid: the names of RDMA jobs stay as they were.
    std::string name = spec.transport == Transport::tcp ? "trtype=TCP " : "";
    name += "traddr=" + (ipv6 ? "[" + spec.address + "]" : spec.address) +
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
        throw SpecError("gpu=" + std::to_string(choice.ordinal) + ": only " +
                        std::to_string(visible) + " GPU(s) are visible");
    }
    return choice.ordinal;
}

}  // namespace nvmeof::engine
