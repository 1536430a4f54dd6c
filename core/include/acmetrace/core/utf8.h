// Reading UTF-8 one code point at a time (strictly: no overlong forms, no surrogates, nothing above U+10FFFF).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace acmetrace::core {

/// One code point and the bytes it takes. Value type.
struct CodePoint {
  uint32_t value = 0;
  size_t length = 0;  // 1 to 4
};

/// The code point that starts at text[pos], or nullopt where no valid UTF-8 sequence starts there (a
/// continuation byte, a truncated or overlong sequence, a surrogate, a value above U+10FFFF).
std::optional<CodePoint> NextCodePoint(std::string_view text, size_t pos);

}  // namespace acmetrace::core
