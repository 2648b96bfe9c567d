// A DH-HMAC-CHAP secret option read as connect() uses it: the text, or "@file"
// holding it (so keys need not sit in job files or command lines). Shared by
// the connect and the option rules, so a secret the rules accept is one the
// connect can use.
#pragma once

#include <string>
#include <string_view>

#include "auth/dhchap_crypto.hpp"

namespace nvmeof::detail {

// Throws InvalidOption "<option>: <what is wrong>" (never showing the secret).
auth::Secret read_dhchap_secret(const std::string& value, std::string_view option);

}  // namespace nvmeof::detail
