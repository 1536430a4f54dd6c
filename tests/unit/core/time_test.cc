// Trace timestamps: the release's ISO times with offsets, unix seconds, and formatting back.
#include "acmetrace/core/time.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace acmetrace::core {
namespace {

constexpr int64_t kSerenExampleSubmitMs = 1677601102000;  // 2023-03-01 00:18:22+08:00

TEST(DaysFromCivilTest, KnownDates) {
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(1969, 12, 31), -1);
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);
  EXPECT_EQ(DaysFromCivil(2023, 3, 1), 19417);
  EXPECT_EQ(DaysFromCivil(2024, 3, 1) - DaysFromCivil(2024, 2, 28), 2);  // leap year
  EXPECT_EQ(DaysFromCivil(2023, 3, 1) - DaysFromCivil(2023, 2, 28), 1);
}

TEST(ParseIsoTimeMsTest, ParsesTheReleaseFormat) {
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22+08:00"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-05-17 11:00:58+00:00"), 1684321258000);
  EXPECT_EQ(ParseIsoTimeMs("2023-07-01 08:00:00+08:00"), 1688169600000);
}

TEST(ParseIsoTimeMsTest, AcceptsEveryOffsetSpelling) {
  EXPECT_EQ(ParseIsoTimeMs("2023-02-28 16:18:22+00:00"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-02-28 16:18:22Z"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-02-28T16:18:22Z"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01T00:18:22+08:00"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22+0800"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-02-28 11:18:22-05:00"), kSerenExampleSubmitMs);
  EXPECT_EQ(ParseIsoTimeMs("2023-02-28 21:48:22+05:30"), kSerenExampleSubmitMs);
}

TEST(ParseIsoTimeMsTest, ParsesFractionalSeconds) {
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22.5+08:00"), kSerenExampleSubmitMs + 500);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22.250+08:00"), kSerenExampleSubmitMs + 250);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01T00:18:22.007Z"), kSerenExampleSubmitMs + 8 * 3600 * 1000 + 7);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22.123456+08:00"), kSerenExampleSubmitMs + 123);  // truncated
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22.000+08:00"), kSerenExampleSubmitMs);
}

TEST(ParseIsoTimeMsTest, HandlesDatesAroundTheEpochAndLeapDays) {
  EXPECT_EQ(ParseIsoTimeMs("1970-01-01 00:00:00+00:00"), 0);
  EXPECT_EQ(ParseIsoTimeMs("1970-01-01 08:00:00+08:00"), 0);
  EXPECT_EQ(ParseIsoTimeMs("1969-12-31 23:59:59+00:00"), -1000);
  EXPECT_EQ(ParseIsoTimeMs("2024-02-29 23:59:59+00:00"), 1709251199000);
}

TEST(ParseIsoTimeMsTest, RejectsTimesWithoutAnOffset) {
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22"), std::nullopt);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01T00:18:22"), std::nullopt);
  EXPECT_EQ(ParseIsoTimeMs("2023-03-01 00:18:22.5"), std::nullopt);
  EXPECT_EQ(ParseTimeMs("2023-03-01 00:18:22"), std::nullopt);
  EXPECT_EQ(ParseTimeMs("2023-03-01T00:18:22.250"), std::nullopt);
}

TEST(ParseIsoTimeMsTest, RejectsGarbage) {
  for (const char* text : {
           "", "abc", "2023-03-01", "2023/03/01 00:18:22+08:00", "2023-03-01_00:18:22+08:00",
           "2023-13-01 00:18:22+08:00", "2023-00-01 00:18:22+08:00", "2023-03-00 00:18:22+08:00",
           "2023-03-32 00:18:22+08:00", "2023-03-01 24:00:00+08:00", "2023-03-01 00:60:00+08:00",
           "2023-03-01 00:18:61+08:00", "2023-03-01 00:18:22+08", "2023-03-01 00:18:22+8:00",
           "2023-03-01 00:18:22+24:00", "2023-03-01 00:18:22+08:60", "2023-03-01 00:18:22+08:00x",
           "2023-03-01 00:18:22 +08:00", "2023-03-01 00:18:22.+08:00", "2023-03-01 00:18:22Z+08:00",
           "2023-3-1 00:18:22+08:00", "2O23-03-01 00:18:22+08:00", " 2023-03-01 00:18:22+08:00",
           "2023-02-30 00:00:00+00:00", "2023-02-29 00:00:00+00:00", "2023-04-31 00:00:00+00:00"}) {
    EXPECT_EQ(ParseIsoTimeMs(text), std::nullopt) << "'" << text << "'";
    EXPECT_EQ(ParseTimeMs(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(ParseUnixSecondsMsTest, ParsesWholeAndFractionalSeconds) {
  EXPECT_EQ(ParseUnixSecondsMs("1688169600"), 1688169600000);
  EXPECT_EQ(ParseUnixSecondsMs("1688169600.0"), 1688169600000);
  EXPECT_EQ(ParseUnixSecondsMs("1688169600.25"), 1688169600250);
  EXPECT_EQ(ParseUnixSecondsMs("1688169600.999"), 1688169600999);
  EXPECT_EQ(ParseUnixSecondsMs("0"), 0);
  EXPECT_EQ(ParseUnixSecondsMs("-1"), -1000);
  EXPECT_EQ(ParseUnixSecondsMs("-1.5"), -1500);
}

TEST(ParseUnixSecondsMsTest, KeepsTheSignOfNegativeFractions) {
  EXPECT_EQ(ParseUnixSecondsMs("-0.5"), -500);
  EXPECT_EQ(ParseUnixSecondsMs("-0.25"), -250);
}

TEST(ParseUnixSecondsMsTest, RejectsGarbage) {
  for (const char* text : {"", "abc", "1688169600x", "1688169600.5.5", "1688169600.a", "16881696OO", ".5",
                           "1e9", "0x10", " 1688169600", "1688169600,0", "+-1"}) {
    EXPECT_EQ(ParseUnixSecondsMs(text), std::nullopt) << "'" << text << "'";
    EXPECT_EQ(ParseTimeMs(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(ParseTimeMsTest, AcceptsBothFormsOfTheSameInstant) {
  EXPECT_EQ(ParseTimeMs("1688169600"), 1688169600000);
  EXPECT_EQ(ParseTimeMs("1688169600.0"), 1688169600000);
  EXPECT_EQ(ParseTimeMs("2023-07-01 08:00:00+08:00"), 1688169600000);
  EXPECT_EQ(ParseTimeMs("2023-07-01T00:00:00Z"), 1688169600000);
  EXPECT_EQ(ParseTimeMs("2023-03-01 00:18:22+08:00"), kSerenExampleSubmitMs);
}

TEST(FormatIsoTimeTest, FormatsAsTheReleaseWrites) {
  EXPECT_EQ(FormatIsoTime(kSerenExampleSubmitMs, 480), "2023-03-01 00:18:22+08:00");
  EXPECT_EQ(FormatIsoTime(kSerenExampleSubmitMs, 0), "2023-02-28 16:18:22+00:00");
  EXPECT_EQ(FormatIsoTime(kSerenExampleSubmitMs, -300), "2023-02-28 11:18:22-05:00");
  EXPECT_EQ(FormatIsoTime(kSerenExampleSubmitMs, 330), "2023-02-28 21:48:22+05:30");
  EXPECT_EQ(FormatIsoTime(1684321258000, 0), "2023-05-17 11:00:58+00:00");
  EXPECT_EQ(FormatIsoTime(0, 0), "1970-01-01 00:00:00+00:00");
  EXPECT_EQ(FormatIsoTime(-1000, 0), "1969-12-31 23:59:59+00:00");
  EXPECT_EQ(FormatIsoTime(1709251199000, 0), "2024-02-29 23:59:59+00:00");
}

TEST(FormatIsoTimeTest, DropsMilliseconds) {
  EXPECT_EQ(FormatIsoTime(kSerenExampleSubmitMs + 999, 480), "2023-03-01 00:18:22+08:00");
  EXPECT_EQ(FormatIsoTime(-1, 0), "1969-12-31 23:59:59+00:00");  // floor, not toward zero
}

TEST(FormatIsoTimeTest, RoundTripsThroughParse) {
  for (int offset : {0, 480, -300, 330, -720, 840}) {
    for (int64_t ts = -86400LL * 1000 * 400; ts < 86400LL * 1000 * 365 * 80; ts += 86400LL * 1000 * 37 + 3661 * 1000) {
      const std::string text = FormatIsoTime(ts, offset);
      ASSERT_EQ(ParseIsoTimeMs(text), ts) << text;
      ASSERT_EQ(ParseTimeMs(text), ts) << text;
    }
  }
}

TEST(AppendIsoTimeTest, AppendsTheSameTextAsFormat) {
  std::string out = "t=";
  AppendIsoTime(out, kSerenExampleSubmitMs, 480);
  EXPECT_EQ(out, "t=2023-03-01 00:18:22+08:00");
}

TEST(TraceTimeRangeTest, AcceptsTheYears2000To2099Only) {
  EXPECT_TRUE(IsTraceTimeMs(*ParseTimeMs("2023-03-01 00:18:22+08:00")));
  EXPECT_TRUE(IsTraceTimeMs(*ParseTimeMs("2000-01-01 00:00:00+00:00")));
  EXPECT_FALSE(IsTraceTimeMs(*ParseTimeMs("1999-12-31 23:59:59+00:00")));
  EXPECT_TRUE(IsTraceTimeMs(*ParseTimeMs("2099-12-31 23:59:59+00:00")));
  EXPECT_FALSE(IsTraceTimeMs(*ParseTimeMs("2100-01-01 00:00:00+00:00")));
  EXPECT_FALSE(IsTraceTimeMs(*ParseTimeMs("9999-01-01 00:00:00+00:00")));
  EXPECT_FALSE(IsTraceTimeMs(4841740800000));  // the job event, in 2123
  EXPECT_FALSE(IsTraceTimeMs(0));
}

TEST(ParseUnixSecondsMsTest, RefusesSecondsWhoseMillisecondsWouldOverflow) {
  EXPECT_EQ(ParseUnixSecondsMs("9223372036854775"), std::nullopt);  // * 1000 overflows int64
  EXPECT_EQ(ParseUnixSecondsMs("-9223372036854775"), std::nullopt);
  EXPECT_EQ(ParseUnixSecondsMs("1000000000000"), 1000000000000000);
}

}  // namespace
}  // namespace acmetrace::core
