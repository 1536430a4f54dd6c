// Fuzzes number parsing with differential checks: ParseDouble, ParseShortDecimal and
// ParseJsonNumberPrefix each against strtod (glibc's is correctly rounded, as fast_float and the
// exact-division paths are), and their agreement with one another; ParseInteger against its
// contract.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "acmetrace/core/csv_reader.h"
#include "acmetrace/core/number.h"
#include "fuzz_support.h"

namespace {

using acmetrace::core::ParseDouble;

// strtod of exactly [text, text + n), or nullopt when strtod does not take it all.
std::optional<double> Strtod(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool IsJsonNumberGrammar(std::string_view t) {
  size_t i = 0;
  if (i < t.size() && t[i] == '-') ++i;
  if (i >= t.size()) return false;
  if (t[i] == '0') {
    ++i;
  } else if (t[i] >= '1' && t[i] <= '9') {
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  } else {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    const size_t from = ++i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    if (i == from) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    if (i == from) return false;
  }
  return i == t.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace acmetrace::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // ParseDouble: a finite value equal to strtod's of the trimmed text (strtod also reads hex,
  // "inf" and "nan", which ParseDouble must refuse).
  if (const std::optional<double> d = ParseDouble(text)) {
    ACMETRACE_FUZZ_CHECK(std::isfinite(*d));
    const std::string_view trimmed = TrimSpaces(text);
    const std::string_view unsigned_part = !trimmed.empty() && trimmed[0] == '+' ? trimmed.substr(1) : trimmed;
    ACMETRACE_FUZZ_CHECK(unsigned_part.find_first_of("xXnNiI") == std::string_view::npos);
    const std::optional<double> reference = Strtod(trimmed);
    ACMETRACE_FUZZ_CHECK(reference && SameDouble(*d, *reference));
  } else if (const std::optional<double> reference = Strtod(TrimSpaces(text))) {
    // strtod takes it and ParseDouble not: fine for hex, "inf", "nan", overflow and the white
    // space strtod skips, but a plain finite decimal must not be refused.
    const std::string_view t = TrimSpaces(text);
    ACMETRACE_FUZZ_CHECK(!std::isfinite(*reference) || t.find_first_not_of("0123456789.eE+-") != std::string_view::npos);
  }

  // ParseShortDecimal (reads 8 bytes whatever the length: give it a padded copy): when it takes a
  // cell, ParseDouble gives the same bits.
  {
    std::string padded(text.substr(0, 16));
    const size_t n = padded.size();
    padded.append(CsvReader::kFieldPadding, '7');
    double v = -1;
    if (ParseShortDecimal(padded.data(), n, v)) {
      ACMETRACE_FUZZ_CHECK(n >= 1 && n <= 8);
      const std::optional<double> full = ParseDouble(std::string_view(padded.data(), n));
      ACMETRACE_FUZZ_CHECK(full && SameDouble(*full, v));
    }
  }

  // ParseJsonNumberPrefix: the prefix it takes is a JSON number, and its value strtod's.
  {
    const std::string copy(text);  // a fresh allocation: ASan sees a read past the end
    double v = 0;
    const char* end = ParseJsonNumberPrefix(copy.data(), copy.data() + copy.size(), v);
    if (end != nullptr) {
      const std::string_view taken(copy.data(), static_cast<size_t>(end - copy.data()));
      ACMETRACE_FUZZ_CHECK(IsJsonNumberGrammar(taken));
      ACMETRACE_FUZZ_CHECK(std::isfinite(v));
      const std::optional<double> reference = Strtod(taken);
      ACMETRACE_FUZZ_CHECK(reference && SameDouble(v, *reference));
      // The whole-text form agrees.
      const std::optional<double> whole = ParseJsonNumber(text);
      ACMETRACE_FUZZ_CHECK(whole.has_value() == (taken.size() == text.size()));
      if (whole) ACMETRACE_FUZZ_CHECK(SameDouble(*whole, v));
    } else {
      ACMETRACE_FUZZ_CHECK(!ParseJsonNumber(text).has_value());
    }
  }

  // ParseInteger: when it answers, the text is that integer (or a whole double of it).
  if (const std::optional<int64_t> i = ParseInteger(text)) {
    const std::optional<double> d = ParseDouble(text);
    if (d) ACMETRACE_FUZZ_CHECK(static_cast<double>(*i) == *d || std::fabs(*d) >= 9e15);
  }
  return 0;
}
