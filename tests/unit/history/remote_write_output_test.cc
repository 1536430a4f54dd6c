// The scrape text back to labels and values for remote write: what the blocks path stores, the
// receiver gets (same labels, same values, the scrape's time).
#include "acmetrace/history/remote_write_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "acmetrace/exporters/series_store.h"
#include "acmetrace/history/openmetrics.h"

namespace acmetrace::history {
namespace {

TEST(ParseOpenMetricsSampleTest, ReadsBackWhatTheScraperWrites) {
  const std::string hostile = "a\"b\\c\nd},{=é";
  std::string labels = "{user=\"";
  exporters::AppendEscaped(labels, hostile, true);
  labels += "\",Zone=\"z\"}";
  std::string text;
  AppendOpenMetricsSample(text, "acme_job_gpus", labels, RenderTargetLabels("acmetrace", "127.0.0.1:9400"), 8.5,
                          1'688'169'615'250);
  ASSERT_EQ(text.back(), '\n');
  text.pop_back();
  ParsedSample s;
  ASSERT_TRUE(ParseOpenMetricsSample(text, s).ok()) << text;
  EXPECT_EQ(s.value, 8.5);
  const std::vector<remote_write::Label> want = {{"Zone", "z"},
                                                 {"__name__", "acme_job_gpus"},
                                                 {"instance", "127.0.0.1:9400"},
                                                 {"job", "acmetrace"},
                                                 {"user", hostile}};
  EXPECT_EQ(s.labels, want);  // sorted by name, as Prometheus orders a series's labels
  EXPECT_EQ(s.series, text.substr(0, text.find("} ") + 1));
  EXPECT_EQ(SeriesTextEnd(text), s.series.size());  // the fast path of a known series finds the same text
}

TEST(ParseOpenMetricsSampleTest, SpecialValuesAndNoLabels) {
  ParsedSample s;
  ASSERT_TRUE(ParseOpenMetricsSample("up 1 1688169615", s).ok());
  EXPECT_EQ(s.labels, (std::vector<remote_write::Label>{{"__name__", "up"}}));
  ASSERT_TRUE(ParseOpenMetricsSample("m{} NaN 1", s).ok());
  EXPECT_TRUE(std::isnan(s.value));
  ASSERT_TRUE(ParseOpenMetricsSample("m +Inf", s).ok());
  EXPECT_EQ(s.value, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(ParseOpenMetricsSample("m -Inf", s).ok());
  EXPECT_EQ(s.value, -std::numeric_limits<double>::infinity());
  ASSERT_TRUE(ParseOpenMetricsSample("m -1.5e-3", s).ok());
  EXPECT_EQ(s.value, -1.5e-3);
}

TEST(ParseOpenMetricsSampleTest, BrokenLinesAreErrorsNotCrashes) {
  ParsedSample s;
  for (const char* bad : {"", " 1", "m", "m ", "m{", "m{a} 1", "m{a=b} 1", "m{a=\"x} 1", "m{a=\"x\\", "m{=\"x\"} 1",
                          "m{a=\"x\"", "m{a=\"x\"} ", "m{a=\"x\"} 1x", "m{a=\"x\"}1",
                          // names Prometheus would not take; a quote in a label name made SeriesTextEnd, which
                          // reads quotes as the values' bounds, end the series elsewhere (remote_write_fuzz)
                          "m{j\"a=\"x\"} 1", "m{1a=\"x\"} 1", "m-x 1", "1m 1"}) {
    EXPECT_FALSE(ParseOpenMetricsSample(bad, s).ok()) << bad;
  }
}

}  // namespace
}  // namespace acmetrace::history
