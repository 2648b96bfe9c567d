#include "nvmeof/wire/common.hpp"

namespace nvmeof::wire {

bool copy_to_field(char* field, std::size_t field_size, std::string_view text) {
    if (text.size() >= field_size) {
        return false;
    }
    std::memset(field, 0, field_size);
    std::memcpy(field, text.data(), text.size());
    return true;
}

void copy_to_space_padded(char* field, std::size_t field_size, std::string_view text) {
    std::memset(field, ' ', field_size);
    std::memcpy(field, text.data(), text.size() < field_size ? text.size() : field_size);
}

std::string_view field_text(const char* field, std::size_t field_size) {
    std::size_t end = 0;
    while (end < field_size && field[end] != '\0') {
        ++end;
    }
    while (end > 0 && field[end - 1] == ' ') {
        --end;
    }
    return {field, end};
}

}  // namespace nvmeof::wire
