#include "host/dhchap_secret.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "nvmeof/option_rules.hpp"

namespace nvmeof {
namespace {

std::string secret_text(const std::string& value, std::string_view option) {
    if (!value.starts_with('@')) {
        return value;
    }
    const std::string path = value.substr(1);
    std::ifstream file(path);
    if (!file) {
        throw InvalidOption(option, "", "cannot read " + path + ": " + std::strerror(errno));
    }
    std::ostringstream text;
    text << file.rdbuf();
    std::string s = text.str();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.pop_back();
    }
    return s;
}

}  // namespace

auth::Secret detail::read_dhchap_secret(const std::string& value, std::string_view option) {
    const std::string text = secret_text(value, option);
    try {
        return auth::parse_secret(text);
    } catch (const auth::SecretError& e) {
        throw InvalidOption(option, "", e.what());
    }
}

void validate_dhchap_secret(const std::string& value, std::string_view option) {
    detail::read_dhchap_secret(value, option);
}

}  // namespace nvmeof
