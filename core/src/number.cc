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
  if (begin != end && *begin == '+') ++begin;  // fast_float rejects a leading '+'
  double value;
  auto result = fast_float::from_chars(begin, end, value);
  if (begin != end && result.ec == std::errc() && result.ptr == end) return value;
  return std::nullopt;
}
}  // namespace

std::optional<double> ParseDouble(std::string_view text) {
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
