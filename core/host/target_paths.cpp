// The grammar of Options::target: one address, or several paths to the same
// subsystem joined by ','. connect() reads the paths with it, and every front
// end checks a target with it, so the two never disagree on what a path is.
#include <algorithm>
#include <optional>
#include <string>

#include "host/option_text.hpp"
#include "nvmeof/option_rules.hpp"

namespace nvmeof {
namespace {

// 1 to 65535, digits only.
std::optional<std::uint16_t> port_number(std::string_view digits) {
    constexpr std::size_t kMostDigits = 5;
    if (digits.empty() || digits.size() > kMostDigits ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    const unsigned long port = std::stoul(std::string(digits));
    if (port == 0 || port > 0xFFFF) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(port);
}

// One path; `why` says what is wrong, or stays empty.
TargetPath parse_path(std::string_view path, std::string& why) {
    TargetPath parsed;
    std::string_view port_text;
    bool has_port = false;
    if (path.empty()) {
        why = "an empty address in the list of paths";
        return parsed;
    }
    if (path.front() == '[') {
        const std::size_t close = path.find(']');
        if (close == std::string_view::npos || close == 1) {
            why = "expected \"[IPv6 address]\" or \"[IPv6 address]:port\"";
            return parsed;
        }
        parsed.host = path.substr(1, close - 1);
        const std::string_view rest = path.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') {
            why = "only \":port\" may follow the closing bracket";
            return parsed;
        }
        has_port = !rest.empty();
        port_text = has_port ? rest.substr(1) : rest;
    } else if (path.find_first_of("[]") != std::string_view::npos) {
        why = "a bracketed address starts with '[' (\"[::1]\" or \"[::1]:4420\")";
        return parsed;
    } else if (std::count(path.begin(), path.end(), ':') == 1) {  // IPv4 or a name, with a port
        const std::size_t colon = path.find(':');
        parsed.host = path.substr(0, colon);
        has_port = true;
        port_text = path.substr(colon + 1);
        if (parsed.host.empty()) {
            why = "no address before the port";
            return parsed;
        }
    } else {  // IPv4, a name, or IPv6 without brackets (and so without a port)
        parsed.host = path;
    }
    if (has_port) {
        parsed.port = port_number(port_text);
        if (!parsed.port) {
            why = "the port after ':' must be from 1 to 65535";
        }
    }
    return parsed;
}

}  // namespace

std::vector<TargetPath> split_target(std::string_view target, std::string_view name) {
    if (target.empty()) {
        throw InvalidOption(name, detail::quoted(target), "no target address");
    }
    const bool several = target.find(',') != std::string_view::npos;
    std::vector<TargetPath> paths;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = target.find(',', start);
        const std::string_view path =
            target.substr(start, comma == std::string_view::npos ? comma : comma - start);
        std::string why;
        paths.push_back(parse_path(path, why));
        if (!why.empty()) {
            // In a list, the path at fault too; an empty one speaks for itself.
            const bool name_path = several && !path.empty();
            throw InvalidOption(name, detail::quoted(target),
                                name_path ? "path " + detail::quoted(path) + ": " + why : why);
        }
        if (comma == std::string_view::npos) {
            return paths;
        }
        start = comma + 1;
    }
}

void check_target(std::string_view target, std::string_view name) {
    split_target(target, name);
}

}  // namespace nvmeof
