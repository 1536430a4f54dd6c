// Reading UTF-8 one code point at a time (strictly: no overlong forms, no surrogates, nothing above U+10FFFF), and
// the text of a YAML scalar as YAML decodes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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

/// A YAML scalar's value as yaml-cpp 0.7 gives it, made what YAML (and Prometheus's reader, yaml.v3) decodes:
/// yaml-cpp turns the double-quoted escapes \N and \_ into the single bytes 0x85 and 0xA0, not U+0085 and U+00A0
/// in UTF-8. (A UTF-8 file's text holds no such byte where no character starts: it comes from one of them.) The
/// config and rule-file readers read every scalar through it, and `acmetrace rules` writes every scalar from it.
std::string YamlScalarText(std::string_view yaml_cpp_scalar);

}  // namespace acmetrace::core
