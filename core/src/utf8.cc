#include "acmetrace/core/utf8.h"

namespace acmetrace::core {

std::optional<CodePoint> NextCodePoint(std::string_view text, size_t pos) {
  if (pos >= text.size()) return std::nullopt;
  const auto byte = [&text](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return CodePoint{lead, 1};
  size_t length = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, cp = lead & 0x1fu, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, cp = lead & 0x0fu, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, cp = lead & 0x07u, min = 0x10000;
  } else {
    return std::nullopt;  // a continuation byte, or a lead that only starts overlong or too large forms
  }
  if (text.size() - pos < length) return std::nullopt;
  for (size_t i = 1; i < length; ++i) {
    const unsigned char next = byte(pos + i);
    if ((next & 0xc0u) != 0x80) return std::nullopt;
    cp = (cp << 6) | (next & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::nullopt;
  return CodePoint{cp, length};
}

std::string YamlScalarText(std::string_view yaml_cpp_scalar) {
  std::string text;
  text.reserve(yaml_cpp_scalar.size());
  for (size_t pos = 0; pos < yaml_cpp_scalar.size();) {
    if (const std::optional<CodePoint> cp = NextCodePoint(yaml_cpp_scalar, pos)) {
      text.append(yaml_cpp_scalar.substr(pos, cp->length));
      pos += cp->length;
      continue;
    }
    const char byte = yaml_cpp_scalar[pos++];
    if (byte == '\x85' || byte == '\xa0') text += '\xc2';  // \N, \_ : U+0085, U+00A0
    text += byte;
  }
  return text;
}

}  // namespace acmetrace::core
