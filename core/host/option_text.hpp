// How a refused option shows its value in InvalidOption's line (internal to
// the option rules).
#pragma once

#include <string>
#include <string_view>

namespace nvmeof::detail {

// The text in double quotes, so an empty value or one with spaces reads as
// one; cut short after 64 bytes ("...") so a line stays a line.
std::string quoted(std::string_view text);

}  // namespace nvmeof::detail
