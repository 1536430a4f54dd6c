// Number parsing for CSV cells: fast_float for doubles, exact integers, empty = no sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace acmetrace::core {

/// Parses a whole cell as a double (leading/trailing spaces allowed). nullopt if it is not one.
std::optional<double> ParseDouble(std::string_view text);

/// Parses a whole cell as an integer; "8.0" is accepted as 8, "8.5" is not.
std::optional<int64_t> ParseInteger(std::string_view text);

/// Parses a whole JSON number (RFC 8259 grammar: no '+', no leading zeros, no spaces), correctly
/// rounded. nullopt if it is not one or is too large for a double.
std::optional<double> ParseJsonNumber(std::string_view text);
/// The JSON number at the start of [p, end) into out: the first character after it, or nullptr if
/// none is there (then out is unchanged). Inline: it runs for every number of every util record.
inline const char* ParseJsonNumberPrefix(const char* p, const char* end, double& out);

namespace internal {
inline constexpr double kExactPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
// What the inline part leaves: from the fraction or exponent at p on (first = the number's start).
const char* ParseJsonNumberFull(const char* first, const char* p, const char* end, double& out);
}  // namespace internal

inline const char* ParseJsonNumberPrefix(const char* p, const char* end, double& out) {
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. The common shape (at most 19 digits, a mantissa
  // up to 2^53, no exponent) is one exact division, correctly rounded like fast_float.
  const char* const first = p;
  const bool negative = p != end && *p == '-';
  if (negative) ++p;
  const char* const integer = p;
  uint64_t mantissa = 0;
  for (; p != end && static_cast<unsigned char>(*p - '0') <= 9; ++p) {
    mantissa = mantissa * 10 + static_cast<unsigned char>(*p - '0');
  }
  const size_t integer_digits = static_cast<size_t>(p - integer);
  if (integer_digits == 0 || (integer_digits > 1 && *integer == '0')) return nullptr;
  size_t fraction_digits = 0;
  const char* const fraction = p;
  if (p != end && *p == '.') {
    ++p;
    const char* const from = p;
    for (; p != end && static_cast<unsigned char>(*p - '0') <= 9; ++p) {
      mantissa = mantissa * 10 + static_cast<unsigned char>(*p - '0');
    }
    fraction_digits = static_cast<size_t>(p - from);
    if (fraction_digits == 0) return nullptr;
  }
  if ((p != end && (*p == 'e' || *p == 'E')) || integer_digits + fraction_digits > 19 ||
      mantissa > (uint64_t{1} << 53)) {
    return internal::ParseJsonNumberFull(first, fraction, end, out);
  }
  const double value = static_cast<double>(mantissa) / internal::kExactPowersOfTen[fraction_digits];
  out = negative ? -value : value;
  return p;
}
/// Trims ASCII spaces and tabs.
std::string_view TrimSpaces(std::string_view text);

}  // namespace acmetrace::core
