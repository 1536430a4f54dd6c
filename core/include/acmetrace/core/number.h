// Number parsing for CSV cells: fast_float for doubles, exact integers, empty = no sample.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace acmetrace::core {

/// Parses a whole cell as a finite double (leading/trailing spaces allowed). nullopt if it is not
/// one: "inf", "nan" and values beyond a double's range ("1e400") included.
std::optional<double> ParseDouble(std::string_view text);

/// Parses a whole cell as an integer; "8.0" is accepted as 8, "8.5" is not.
std::optional<int64_t> ParseInteger(std::string_view text);

/// Parses a short unsigned decimal cell, [0-9]+(.[0-9]+)? in at most 8 bytes ("57.123", "0.0",
/// "100.0"), into out, correctly rounded (the value ParseDouble gives); false for anything else
/// (empty, longer, a sign, an exponent, spaces), which is then ParseDouble's business. Reads 8
/// bytes at p whatever n is: the caller guarantees they are readable (CsvReader::kFieldPadding).
/// Inline: the wide utilization files are millions of such cells and little else.
inline bool ParseShortDecimal(const char* p, size_t n, double& out);

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

// The decimal -?[0-9]*(\.[0-9]*)? at the start of a text, its digits gathered as one mantissa: the
// scan ParseDouble's and ParseJsonNumberPrefix's common path share (each judges the grammar).
struct DecimalScan {
  const char* end;           // after the last character taken
  uint64_t mantissa = 0;     // exact for up to 19 digits
  size_t integer_digits = 0;
  size_t fraction_digits = 0;
  bool negative = false;
  bool dot = false;          // a '.' was taken ("1." has one and no fraction digits)
};

[[gnu::always_inline]] inline DecimalScan ScanDecimal(const char* p, const char* end) {
  // Locals, not the struct's fields, in the loops: they stay in registers.
  const bool negative = p != end && *p == '-';
  if (negative) ++p;
  uint64_t mantissa = 0;
  const char* const integer = p;
  for (; p != end && static_cast<unsigned char>(*p - '0') <= 9; ++p) {
    mantissa = mantissa * 10 + static_cast<unsigned char>(*p - '0');
  }
  const size_t integer_digits = static_cast<size_t>(p - integer);
  const bool dot = p != end && *p == '.';
  size_t fraction_digits = 0;
  if (dot) {
    const char* const fraction = ++p;
    for (; p != end && static_cast<unsigned char>(*p - '0') <= 9; ++p) {
      mantissa = mantissa * 10 + static_cast<unsigned char>(*p - '0');
    }
    fraction_digits = static_cast<size_t>(p - fraction);
  }
  return DecimalScan{p, mantissa, integer_digits, fraction_digits, negative, dot};
}

// mantissa / 10^fraction_digits, signed, into out when it is exact (at most 19 digits, a mantissa up
// to 2^53): two exact doubles and one correctly rounded IEEE division give the correctly rounded
// value, the same bits as fast_float. False (out unchanged) otherwise.
[[gnu::always_inline]] inline bool ExactDecimalValue(const DecimalScan& d, double& out) {
  if (d.integer_digits + d.fraction_digits > 19 || d.mantissa > (uint64_t{1} << 53)) return false;
  const double value = static_cast<double>(d.mantissa) / kExactPowersOfTen[d.fraction_digits];
  out = d.negative ? -value : value;
  return true;
}

// What the inline part leaves: from the fraction or exponent at p on (first = the number's start).
const char* ParseJsonNumberFull(const char* first, const char* p, const char* end, double& out);
}  // namespace internal

inline const char* ParseJsonNumberPrefix(const char* p, const char* end, double& out) {
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. The common shape (at most 19 digits, a mantissa
  // up to 2^53, no exponent) is one exact division, correctly rounded like fast_float.
  const internal::DecimalScan d = internal::ScanDecimal(p, end);
  const char* const integer = d.negative ? p + 1 : p;
  if (d.integer_digits == 0 || (d.integer_digits > 1 && *integer == '0') || (d.dot && d.fraction_digits == 0)) {
    return nullptr;
  }
  if ((d.end != end && (*d.end == 'e' || *d.end == 'E')) || !internal::ExactDecimalValue(d, out)) {
    return internal::ParseJsonNumberFull(p, integer + d.integer_digits, end, out);
  }
  return d.end;
}

inline bool ParseShortDecimal(const char* p, size_t n, double& out) {
  // Without a branch per character: the cell is loaded as one word and shifted to its high bytes,
  // so the low bytes read as leading zeros; the dot is taken out by moving the integer digits up a
  // byte; then the 8 digits are checked and combined at once. The mantissa (< 10^8) and the power
  // of ten are exact, so their quotient is the correctly rounded value, as in fast_float.
  static_assert(std::endian::native == std::endian::little);
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = kOnes * 0x80;
  if (n - 1 >= 8) return false;  // empty or longer than 8
  uint64_t word;
  std::memcpy(&word, p, 8);
  // '0'-'9' become 0-9 and '.' 0x1E; byte 7 is the cell's last character, bytes below 8-n are 0.
  word = (word ^ (kOnes * '0')) << ((8 - n) * 8);
  size_t scale = 0;  // fraction digits
  const uint64_t x = word ^ (kOnes * 0x1E);
  if (const uint64_t dots = (x - kOnes) & ~x & kHigh; dots != 0) {
    const unsigned dot = static_cast<unsigned>(__builtin_ctzll(dots)) / 8;  // the first '.'
    if (dot == 8 - n || dot == 7) return false;  // ".5", "5.": ParseDouble's
    const uint64_t below = (uint64_t{1} << (8 * dot + 8)) - 1;  // bytes 0..dot (dot < 7)
    word = (word & ~below) | ((word << 8) & below);
    scale = 7 - dot;
  }
  // Every byte 0-9 (a second dot, 0x1E, fails here): adding 0x76 sets no high bit, nor had it one.
  if ((((word + kOnes * 0x76) | word) & kHigh) != 0) return false;
  // Byte 0 is the most significant digit: combine pairs, then fours, then all eight.
  word = word * 10 + (word >> 8);
  word = (((word & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
          (((word >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
  out = static_cast<double>(static_cast<uint32_t>(word)) / internal::kExactPowersOfTen[scale];
  return true;
}

/// Trims ASCII spaces and tabs.
std::string_view TrimSpaces(std::string_view text);

}  // namespace acmetrace::core
