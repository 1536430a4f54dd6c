// Reading UTF-8 one code point at a time, against simdjson's validator and an encoder written here.
#include "acmetrace/core/utf8.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <random>
#include <string>

namespace acmetrace::core {
namespace {

// Every byte string decodes whole exactly when simdjson calls it UTF-8.
bool DecodesWhole(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const std::optional<CodePoint> cp = NextCodePoint(s, pos);
    if (!cp) return false;
    pos += cp->length;
  }
  return true;
}

TEST(Utf8Test, ReadsOneCodePointAndItsLength) {
  EXPECT_EQ(NextCodePoint("A", 0)->value, 0x41u);
  EXPECT_EQ(NextCodePoint("\xc3\xa9", 0)->length, 2u);
  EXPECT_EQ(NextCodePoint("x\xe2\x82\xac", 1)->value, 0x20acu);
  EXPECT_EQ(NextCodePoint("\xf0\x9f\x98\x80", 0)->value, 0x1f600u);
  EXPECT_EQ(NextCodePoint("\xf0\x9f\x98\x80", 0)->length, 4u);
  EXPECT_EQ(NextCodePoint(std::string_view("\0", 1), 0)->value, 0u);
  for (const char* bad : {"\x80", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xed\xbf\xbf",
                          "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xc3", "\xe2\x82",
                          "\xc3\x41"}) {
    EXPECT_FALSE(NextCodePoint(bad, 0).has_value()) << bad;
  }
  EXPECT_FALSE(NextCodePoint("a", 1).has_value());  // past the end
}

TEST(Utf8Test, EveryCodePointEncodedReadsBack) {
  for (uint32_t c = 0; c <= 0x10ffff; ++c) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    std::string s;
    if (c < 0x80) {
      s = {static_cast<char>(c)};
    } else if (c < 0x800) {
      s = {static_cast<char>(0xc0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3f))};
    } else if (c < 0x10000) {
      s = {static_cast<char>(0xe0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3f)),
           static_cast<char>(0x80 | (c & 0x3f))};
    } else {
      s = {static_cast<char>(0xf0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3f)),
           static_cast<char>(0x80 | ((c >> 6) & 0x3f)), static_cast<char>(0x80 | (c & 0x3f))};
    }
    const std::optional<CodePoint> cp = NextCodePoint(s, 0);
    ASSERT_TRUE(cp.has_value()) << c;
    ASSERT_EQ(cp->value, c);
    ASSERT_EQ(cp->length, s.size());
  }
}

TEST(Utf8Test, AgreesWithSimdjsonOnRandomBytes) {
  std::mt19937 rng(7);
  // Bytes drawn mostly from the ranges where UTF-8's rules are decided.
  const unsigned char interesting[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2,
                                       0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  int valid = 0;
  for (int round = 0; round < 200000; ++round) {
    std::string s(1 + rng() % 6, '\0');
    for (char& b : s) {
      b = static_cast<char>(rng() % 2 ? interesting[rng() % std::size(interesting)] : rng() % 256);
    }
    const bool expected = simdjson::validate_utf8(s.data(), s.size());
    valid += expected;
    ASSERT_EQ(DecodesWhole(s), expected) << testing::PrintToString(s);
  }
  EXPECT_GT(valid, 10000);  // both answers were tried often
}

TEST(Utf8Test, YamlScalarTextMendsOnlyTheBytesNoCharacterHolds) {
  EXPECT_EQ(YamlScalarText("a\x85" "b\xa0"), "a\xc2\x85" "b\xc2\xa0");
  EXPECT_EQ(YamlScalarText("\xc2\x85\xc2\xa0 \xe2\x82\xac"), "\xc2\x85\xc2\xa0 \xe2\x82\xac");  // characters: as they are
  EXPECT_EQ(YamlScalarText("\xc3\xa9\x85"), "\xc3\xa9\xc2\x85");  // after a whole character
  EXPECT_EQ(YamlScalarText("\xed\xa0\x80"), "\xed\xc2\xa0\x80");  // a surrogate's bytes stay not UTF-8
  EXPECT_EQ(YamlScalarText(""), "");
}

}  // namespace
}  // namespace acmetrace::core
