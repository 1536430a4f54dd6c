// Number parsing on the hot path of every reader.
#include "acmetrace/core/number.h"

#include <charconv>
#include <cmath>

#include "fast_float/fast_float.h"

namespace acmetrace::core {

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

namespace {
std::optional<double> ParseWholeDouble(std::string_view text) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') {  // fast_float rejects a leading '+'
    ++begin;
    if (begin != end && *begin == '-') return std::nullopt;  // "+-1" is not a number
  }
  double value;
  auto result = fast_float::from_chars(begin, end, value);
  // "inf", "nan" and overflows ("1e400") are not values a reader can use: a cell holding one is
  // reported as not a number rather than passed on as a sample that JSON can only write as null.
  if (begin != end && result.ec == std::errc() && result.ptr == end && std::isfinite(value)) return value;
  return std::nullopt;
}

// The common cell: an optional '-', digits, optionally '.' and digits ("57.123", "0.0", "117",
// "-2.5"), whose value is exact as mantissa / 10^k (internal::ExactDecimalValue). Anything else
// returns false and goes the full way.
bool ParsePlainDecimal(std::string_view text, double& out) {
  const char* const end = text.data() + text.size();
  const internal::DecimalScan d = internal::ScanDecimal(text.data(), end);
  // "1." and "1.5x" take the full path
  if (d.integer_digits == 0 || d.end != end || (d.dot && d.fraction_digits == 0)) return false;
  return internal::ExactDecimalValue(d, out);
}

}  // namespace

namespace internal {

const char* ParseJsonNumberFull(const char* first, const char* p, const char* end, double& out) {
  // The rest of the grammar after the digits the inline part took: exponent, or a mantissa too
  // long for the exact path. fast_float converts.
  if (p != end && *p == '.') {
    ++p;
    const char* const from = p;
    while (p != end && static_cast<unsigned char>(*p - '0') <= 9) ++p;
    if (p == from) return nullptr;
  }
  if (p != end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p != end && (*p == '+' || *p == '-')) ++p;
    const char* const from = p;
    while (p != end && static_cast<unsigned char>(*p - '0') <= 9) ++p;
    if (p == from) return nullptr;
  }
  double value;
  auto result = fast_float::from_chars(first, p, value);
  if (result.ec != std::errc() || result.ptr != p || !std::isfinite(value)) return nullptr;
  out = value;
  return p;
}

}  // namespace internal

std::optional<double> ParseJsonNumber(std::string_view text) {
  const char* const end = text.data() + text.size();
  double value;
  if (ParseJsonNumberPrefix(text.data(), end, value) != end) return std::nullopt;
  return value;
}

std::optional<double> ParseDouble(std::string_view text) {
  if (double value; ParsePlainDecimal(text, value)) return value;
  if (std::optional<double> value = ParseWholeDouble(text)) return value;
  std::string_view trimmed = TrimSpaces(text);
  if (trimmed.size() == text.size() || trimmed.empty()) return std::nullopt;
  return ParseWholeDouble(trimmed);
}

std::optional<int64_t> ParseInteger(std::string_view text) {
  text = TrimSpaces(text);
  if (text.empty()) return std::nullopt;
  int64_t value;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size()) return value;
  std::optional<double> d = ParseDouble(text);
  if (d && std::trunc(*d) == *d && std::fabs(*d) < 9e15) return static_cast<int64_t>(*d);
  return std::nullopt;
}

}  // namespace acmetrace::core
