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

}  // namespace

std::optional<TargetSpec> parse_filename_spec(std::string_view filename) {
    if (filename.find('=') == std::string_view::npos) {
        return std::nullopt;
    }
    const std::string text = unescape(filename);
    TargetSpec spec;
    for (std::string_view word : split_words(text)) {
        const std::size_t eq = word.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            throw SpecError("filename: \"" + std::string(word) + "\" is not key=value");
        }
        const std::string_view key = word.substr(0, eq);
        const std::string_view value = word.substr(eq + 1);
        if (iequals(key, "trtype")) {
            if (!iequals(value, "rdma")) {
                throw SpecError("filename: trtype=" + std::string(value) +
                                " is not supported (this engine speaks NVMe/RDMA only)");
            }
        } else if (iequals(key, "adrfam")) {
            if (!iequals(value, "ipv4") && !iequals(value, "ipv6")) {
                throw SpecError("filename: adrfam=" + std::string(value) +
                                " is not supported (IPv4 and IPv6 only)");
            }
        } else if (iequals(key, "traddr")) {
            spec.address = value;
        } else if (iequals(key, "trsvcid")) {
            apply_port(spec, value, "filename trsvcid");
        } else if (iequals(key, "subnqn")) {
            spec.subsystem_nqn = value;
        } else if (iequals(key, "ns") || iequals(key, "nsid")) {
            apply_nsid(spec, value, "filename ns");
        } else if (iequals(key, "hostnqn")) {
            spec.host_nqn = value;
        } else if (iequals(key, "hostid")) {
            spec.host_id = value;
        } else if (iequals(key, "host_traddr")) {
            spec.source = value;
        } else {
            throw SpecError("filename: unknown key \"" + std::string(key) +
                            "\" (known: trtype adrfam traddr trsvcid subnqn ns hostnqn hostid "
                            "host_traddr)");
        }
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
    take(spec.address, options.traddr);
    take(spec.subsystem_nqn, options.subnqn);
    take(spec.host_nqn, options.hostnqn);
    take(spec.host_id, options.hostid);
    take(spec.source, options.host_traddr);
    if (!options.trsvcid.empty()) {
        apply_port(spec, options.trsvcid, "trsvcid");
    }
    if (!options.nsid.empty()) {
        apply_nsid(spec, options.nsid, "nsid");
    }
    if (spec.address.empty()) {
        throw SpecError("no target address: traddr is empty (the shipped job files take it from "
                        "${NVMEOF_TRADDR}, which is unset?); set traddr=ADDR or "
                        "filename=\"traddr=ADDR ...\"");
    }
    if (spec.subsystem_nqn.empty()) {
        throw SpecError("no subsystem NQN: subnqn is empty (the shipped job files take it from "
                        "${NVMEOF_SUBNQN}, which is unset?); set subnqn=NQN or "
                        "filename=\"... subnqn=NQN\"");
    }
    return spec;
}

std::string canonical_filename(const TargetSpec& spec) {
    return "traddr=" + spec.address + " trsvcid=" + std::to_string(spec.port) +
           " subnqn=" + spec.subsystem_nqn + " ns=" + std::to_string(spec.nsid);
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
