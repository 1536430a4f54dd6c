// Number parsing of CSV cells: whole-cell doubles, exact integers, spaces, rejects.
#include "acmetrace/core/number.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace acmetrace::core {
namespace {

TEST(ParseDoubleTest, ParsesTheReleaseValues) {
  EXPECT_EQ(ParseDouble("8.101"), 8.101);
  EXPECT_EQ(ParseDouble("0.437"), 0.437);
  EXPECT_EQ(ParseDouble("67.47"), 67.47);
  EXPECT_EQ(ParseDouble("936.0"), 936.0);
  EXPECT_EQ(ParseDouble("10.0"), 10.0);
  EXPECT_EQ(ParseDouble("117"), 117.0);
  EXPECT_EQ(ParseDouble("0"), 0.0);
  EXPECT_EQ(ParseDouble("-2.5"), -2.5);
  EXPECT_EQ(ParseDouble("+2.5"), 2.5);
  EXPECT_EQ(ParseDouble("1e3"), 1000.0);
  EXPECT_EQ(ParseDouble("1.5E-3"), 0.0015);
}

TEST(ParseDoubleTest, AllowsSurroundingSpacesAndTabs) {
  EXPECT_EQ(ParseDouble(" 8.101"), 8.101);
  EXPECT_EQ(ParseDouble("8.101 "), 8.101);
  EXPECT_EQ(ParseDouble("\t 42 \t"), 42.0);
  EXPECT_EQ(ParseDouble(" +1 "), 1.0);
}

TEST(ParseDoubleTest, RejectsAnythingButAWholeNumber) {
  for (const char* text : {"", " ", "\t", "abc", "8.1.1", "8,1", "1 2", "12abc", "abc12", "0x10", "--1", "+",
                           "-", "e5", "1e", "8.101\r", "\"8\""}) {
    EXPECT_EQ(ParseDouble(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(ParseIntegerTest, ParsesIntegers) {
  EXPECT_EQ(ParseInteger("128"), 128);
  EXPECT_EQ(ParseInteger("0"), 0);
  EXPECT_EQ(ParseInteger("-3"), -3);
  EXPECT_EQ(ParseInteger(" 1024 "), 1024);
  EXPECT_EQ(ParseInteger("9223372036854775807"), INT64_MAX);
}

TEST(ParseIntegerTest, AcceptsWholeFloats) {
  EXPECT_EQ(ParseInteger("8.0"), 8);
  EXPECT_EQ(ParseInteger("64.00"), 64);
  EXPECT_EQ(ParseInteger("1e3"), 1000);
  EXPECT_EQ(ParseInteger("-2.0"), -2);
}

TEST(ParseIntegerTest, RejectsFractionsAndGarbage) {
  for (const char* text : {"", " ", "8.5", "0.1", "abc", "8x", "x8", "1,024", "99999999999999999999",
                           "1e300", "nan", "inf"}) {
    EXPECT_EQ(ParseInteger(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(TrimSpacesTest, TrimsSpacesAndTabsOnly) {
  EXPECT_EQ(TrimSpaces("  a b \t"), "a b");
  EXPECT_EQ(TrimSpaces("\t\t"), "");
  EXPECT_EQ(TrimSpaces(""), "");
  EXPECT_EQ(TrimSpaces("x"), "x");
  EXPECT_EQ(TrimSpaces("\nx\n"), "\nx\n");
}

TEST(ParseJsonNumberTest, ParsesJsonNumbersCorrectlyRounded) {
  EXPECT_EQ(ParseJsonNumber("0"), 0.0);
  EXPECT_TRUE(std::signbit(*ParseJsonNumber("-0")));
  EXPECT_EQ(ParseJsonNumber("81920"), 81920.0);
  EXPECT_EQ(ParseJsonNumber("65.082"), 65.082);
  EXPECT_EQ(ParseJsonNumber("-2.5"), -2.5);
  EXPECT_EQ(ParseJsonNumber("1e3"), 1000.0);
  EXPECT_EQ(ParseJsonNumber("1.5E-3"), 0.0015);
  EXPECT_EQ(ParseJsonNumber("2e+2"), 200.0);
  // Past the plain-decimal path (more than 19 digits, mantissa above 2^53): fast_float, same bits.
  EXPECT_EQ(ParseJsonNumber("0.1000000000000000055511151231257827"), 0.1);
  EXPECT_EQ(ParseJsonNumber("9007199254740993"), 9007199254740992.0);
  EXPECT_EQ(ParseJsonNumber("123456789012345678901234"), 123456789012345678901234.0);
}

TEST(ParseJsonNumberTest, RejectsWhatJsonRejects) {
  for (const char* text : {"", " 1", "1 ", "+1", "01", "-01", "1.", ".5", "-", "1e", "1e+", "0x10", "nan", "inf",
                           "Infinity", "1e400", "--1", "1.2.3", "\"1\"", "null"}) {
    EXPECT_EQ(ParseJsonNumber(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(ParseJsonNumberTest, PrefixStopsAfterTheNumber) {
  const std::string_view text = "12.5,7]";
  double v = 0;
  const char* end = ParseJsonNumberPrefix(text.data(), text.data() + text.size(), v);
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(end - text.data(), 4);
  EXPECT_EQ(v, 12.5);
  EXPECT_EQ(ParseJsonNumberPrefix(text.data() + 4, text.data() + text.size(), v), nullptr);  // ','
}

// ParseShortDecimal must take exactly the cells [0-9]+(.[0-9]+)? of at most 8 bytes, whatever bytes
// follow them, and give ParseDouble's value for each; it reads 8 bytes, so each cell sits in a
// buffer followed by other bytes, as in a CSV row.
bool IsShortDecimal(std::string_view s) {
  if (s.empty() || s.size() > 8) return false;
  const size_t dot = s.find('.');
  if (dot == 0 || dot + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i != dot && (s[i] < '0' || s[i] > '9')) return false;
  }
  return true;
}

void ExpectShortDecimalAgrees(const std::string& cell, char after) {
  char buffer[16];
  std::memset(buffer, after, sizeof(buffer));
  std::memcpy(buffer, cell.data(), cell.size());
  double v = -1;
  const bool taken = ParseShortDecimal(buffer, cell.size(), v);
  ASSERT_EQ(taken, IsShortDecimal(cell)) << "'" << cell << "' followed by '" << after << "'";
  if (taken) {
    ASSERT_EQ(v, ParseDouble(cell).value()) << "'" << cell << "'";
  } else {
    ASSERT_EQ(v, -1) << "'" << cell << "': out written on a refusal";
  }
}

TEST(ParseShortDecimalTest, TakesEveryShortDecimalUpToFiveBytesAndNothingElse) {
  const std::string alphabet = "0123456789.";
  for (size_t length = 1; length <= 5; ++length) {
    std::vector<size_t> digit(length, 0);
    for (;;) {
      std::string cell;
      for (size_t d : digit) cell += alphabet[d];
      ExpectShortDecimalAgrees(cell, cell.size() % 2 == 0 ? '7' : ',');
      size_t i = 0;
      while (i < length && ++digit[i] == alphabet.size()) digit[i++] = 0;
      if (i == length) break;
    }
  }
}

TEST(ParseShortDecimalTest, AgreesWithParseDoubleOnLongerCellsAndOtherCharacters) {
  std::mt19937_64 random(20231);
  const std::string digits = "0123456789";
  const std::string others("0123456789.-+eE :/\x00\x80\xff", 21);  // with a NUL byte
  for (int i = 0; i < 200000; ++i) {
    const size_t length = 1 + random() % 9;  // 9: too long, refused
    std::string cell;
    for (size_t k = 0; k < length; ++k) cell += digits[random() % digits.size()];
    if (random() % 4 != 0) cell[random() % length] = '.';
    if (random() % 8 == 0) cell[random() % length] = others[random() % others.size()];
    ExpectShortDecimalAgrees(cell, "9.,\n"[random() % 4]);
  }
  for (const char* cell : {"0.0", "100.0", "57.123", "99999999", "9999999.9", "0.000001", "00000001", "1.2.3"}) {
    ExpectShortDecimalAgrees(cell, '5');
  }
}

TEST(ParseDoubleTest, RefusesInfinitiesNanAndOverflow) {
  // Accepted before, they became samples that JSON could only write as null, with no error.
  for (const char* text : {"inf", "-inf", "+inf", "Infinity", "nan", "NaN", "-nan", "1e400", "-1e400", " 1e309 ",
                           "+-1", "+-inf"}) {
    EXPECT_EQ(ParseDouble(text), std::nullopt) << "'" << text << "'";
  }
  EXPECT_EQ(ParseDouble("1.7976931348623157e308"), 1.7976931348623157e308);  // the largest double is one
  EXPECT_EQ(ParseDouble("1e308"), 1e308);
  EXPECT_EQ(ParseDouble("+1"), 1.0);
}

}  // namespace
}  // namespace acmetrace::core
