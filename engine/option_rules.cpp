#include "option_rules.hpp"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>

#include "nvmeof/protection.hpp"
#include "target_spec.hpp"

namespace nvmeof::engine {
namespace {

[[noreturn]] void refuse(std::string_view option, unsigned int value, std::string_view why) {
    throw SpecError(std::string(option) + "=" + std::to_string(value) + ": " + std::string(why));
}

[[noreturn]] void refuse(std::string_view option, std::string_view value, std::string_view why) {
    throw SpecError(std::string(option) + "=" + std::string(value) + ": " + std::string(why));
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
        text.remove_prefix(1);
    }
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
        text.remove_suffix(1);
    }
    return text;
}

// Decimal, or hex after 0x; with `suffixes`, a k, m or g (any case) after the
// digits multiplies by 2^10, 2^20 or 2^30 (fio's byte counts). Nothing else.
std::optional<std::uint64_t> parse_number(std::string_view text, bool suffixes) {
    unsigned base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    unsigned shift = 0;
    if (suffixes && base == 10 && !text.empty()) {
        switch (std::tolower(static_cast<unsigned char>(text.back()))) {
            case 'k':
                shift = 10;
                break;
            case 'm':
                shift = 20;
                break;
            case 'g':
                shift = 30;
                break;
            default:
                break;
        }
        if (shift != 0) {
            text.remove_suffix(1);
        }
    }
    if (text.empty()) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    const char* const last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value, static_cast<int>(base));
    if (error != std::errc{} || end != last) {
        return std::nullopt;  // not digits of the base, or past 64 bits
    }
    if (shift != 0 && value > (UINT64_MAX >> shift)) {
        return std::nullopt;
    }
    return value << shift;
}

std::uint16_t parse_tag(std::string_view option, std::string_view text, std::uint16_t fallback) {
    const std::string_view value = trimmed(text);
    if (value.empty()) {
        return fallback;
    }
    char default_text[16];
    std::snprintf(default_text, sizeof default_text, "0x%x", fallback);
    const std::optional<std::uint64_t> number = parse_number(value, false);
    if (!number) {
        refuse(
            option, text,
            "not a number (decimal, or hex as 0x1234; default " + std::string(default_text) + ")");
    }
    if (*number > 0xFFFF) {
        refuse(option, text,
               "an application tag field is 16 bits: 0 to 0xffff (default " +
                   std::string(default_text) + ")");
    }
    return static_cast<std::uint16_t>(*number);
}

std::uint8_t parse_pi_chk(std::string_view text) {
    std::uint8_t checks = 0;
    std::string_view rest = trimmed(text);
    while (!rest.empty()) {
        const std::size_t end = rest.find_first_of(",|");
        const std::string_view word = trimmed(rest.substr(0, end));
        std::string upper;
        for (const char c : word) {
            upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        if (upper == "GUARD") {
            checks |= kPrchkGuard;
        } else if (upper == "REFTAG") {
            checks |= kPrchkReftag;
        } else if (upper == "APPTAG") {
            checks |= kPrchkApptag;
        } else {
            refuse("pi_chk", text,
                   (word.empty() ? std::string("an empty check")
                                 : "unknown check \"" + std::string(word) + "\"") +
                       ": the checks are GUARD, REFTAG and APPTAG, joined by ',' or '|'");
        }
        if (end == std::string_view::npos) {
            break;
        }
        rest = rest.substr(end + 1);
        if (trimmed(rest).empty()) {
            refuse("pi_chk", text,
                   "an empty check: the checks are GUARD, REFTAG and APPTAG, joined by ',' or '|'");
        }
    }
    return checks;
}

}  // namespace

ProtectionOptions parse_protection_options(const ProtectionOptionText& text) {
    ProtectionOptions o;
    if (const std::string_view pi_act = trimmed(text.pi_act); !pi_act.empty()) {
        if (pi_act != "0" && pi_act != "1") {
            refuse("pi_act", text.pi_act,
                   "must be 0 (the host generates and checks protection information) or 1 (the "
                   "controller inserts and strips it; default)");
        }
        o.pi_act = pi_act == "1";
        o.pi_given = true;
    }
    if (!trimmed(text.pi_chk).empty()) {
        o.pi_chk = parse_pi_chk(text.pi_chk);
        o.pi_given = true;
    }
    o.apptag = parse_tag("apptag", text.apptag, kDefaultApptag);
    o.apptag_mask = parse_tag("apptag_mask", text.apptag_mask, kDefaultApptagMask);
    if (const std::string_view size = trimmed(text.md_per_io_size); !size.empty()) {
        const std::optional<std::uint64_t> bytes = parse_number(size, true);
        if (!bytes) {
            refuse("md_per_io_size", text.md_per_io_size,
                   "not a byte count (decimal, 0x hex, or with k, m or g; default 4096)");
        }
        if (*bytes > UINT32_MAX) {
            refuse("md_per_io_size", text.md_per_io_size,
                   "a metadata buffer per I/O is below 4 GiB (default 4096)");
        }
        o.md_per_io_size = *bytes;
        o.md_per_io_size_given = true;
    }
    return o;
}

std::string pi_chk_names(std::uint8_t checks) {
    std::string names;
    for (const auto& [bit, name] :
         {std::pair{kPrchkGuard, "GUARD"}, std::pair{kPrchkReftag, "REFTAG"},
          std::pair{kPrchkApptag, "APPTAG"}}) {
        if ((checks & bit) != 0) {
            names += (names.empty() ? "" : "|") + std::string(name);
        }
    }
    return names.empty() ? "none" : names;
}

void check_numeric_options(const NumericOptions& o) {
    using std::chrono::milliseconds;
    if (o.queue_size != 0) {
        try {
            check_queue_depth(o.queue_size, kFioNames.queue_depth);
        } catch (const InvalidOption& e) {
            throw SpecError(std::string(e.what()) + " (0 or unset: derived from iodepth)");
        }
    }
    core_check([&] { check_io_queues(o.nr_io_queues, kFioNames.io_queues); });
    if (o.keep_alive_ms != 0 && o.keep_alive_ms < kMinKeepAliveMs) {
        refuse("keep_alive_ms", o.keep_alive_ms,
               "a keep-alive timeout is at least " + std::to_string(kMinKeepAliveMs) +
                   " ms (it is in milliseconds; 0 turns keep-alive off)");
    }
    core_check([&] { check_timeout(milliseconds(o.connect_timeout_ms), kFioNames.timeout); });
    if (o.io_timeout_ms == 0) {
        refuse("io_timeout_ms", 0,
               "the deadline must be at least 1 ms; there is no \"no timeout\" (default 30000)");
    }
    core_check([&] {
        check_reconnect_timers(milliseconds(o.ctrl_loss_tmo_ms), milliseconds(o.reconnect_delay_ms),
                               milliseconds(o.fast_io_fail_tmo_ms), kFioNames);
    });
}

void check_secret_options(const std::string& secret, const std::string& ctrl_secret) {
    core_check([&] { check_dhchap_secrets(secret, ctrl_secret, kFioNames); });
}

DigestChoice parse_digest_enable(std::string_view text) {
    const std::string_view value = trimmed(text);
    DigestChoice choice;
    if (value.empty()) {
        return choice;
    }
    std::string upper;
    for (const char c : value) {
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (upper != "HEADER" && upper != "DATA" && upper != "BOTH" && upper != "NONE") {
        refuse("digest_enable", text,
               "must be HEADER, DATA, BOTH or NONE (any case): the NVMe/TCP digests asked for");
    }
    choice.given = true;
    choice.header = upper == "HEADER" || upper == "BOTH";
    choice.data = upper == "DATA" || upper == "BOTH";
    return choice;
}

std::string ignored_option_names(std::uint64_t given, bool digest_ignored) {
    std::string names;
    for (std::size_t i = 0; i < kSpdkIgnoredOptions.size(); ++i) {
        if ((given >> i) & 1u) {
            names += (names.empty() ? "" : ", ") + std::string(kSpdkIgnoredOptions[i]);
        }
    }
    if (digest_ignored) {
        names += (names.empty() ? "" : ", ") + std::string("digest_enable");
    }
    return names;
}

}  // namespace nvmeof::engine
