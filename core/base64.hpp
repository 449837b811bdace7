#pragma once
// Base64 (RFC 4648, standard alphabet, padded), for serve's byte fields.
#include <optional>
#include <string>
#include <string_view>

namespace wb {

std::string base64_encode(std::string_view bytes);
// nullopt when the text is not base64 (whitespace is not accepted).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace wb
