// The exporter's exposition turned into what promtool reads: OpenMetrics sample lines with the
// scrape's target labels and its time.
#include "acmetrace/history/openmetrics.h"

#include <gtest/gtest.h>

namespace acmetrace::history {
namespace {

TEST(OpenMetricsTest, TargetLabelsComeFirstAndTheTimeIsInSeconds) {
  std::string out;
  const std::string target = RenderTargetLabels("acmetrace", "127.0.0.1:9400");
  ASSERT_TRUE(AppendOpenMetricsSamples(out,
                                       "# HELP a_total things\n# TYPE a_total counter\n"
                                       "a_total{cluster=\"seren\",kind=\"x\"} 3\nb 0.25\n",
                                       target, 1688140815000)
                  .ok());
  EXPECT_EQ(out,
            "a_total{job=\"acmetrace\",instance=\"127.0.0.1:9400\",cluster=\"seren\",kind=\"x\"} 3 1688140815\n"
            "b{job=\"acmetrace\",instance=\"127.0.0.1:9400\"} 0.25 1688140815\n");
}

TEST(OpenMetricsTest, QuotedBracesSpacesAndEscapesInLabelValuesAreKept) {
  std::string out;
  ASSERT_TRUE(AppendOpenMetricsSamples(out, "m{a=\"x} y\",b=\"q\\\"}\\\\\"} NaN\nn{c=\"\\n\"} +Inf\n",
                                       RenderTargetLabels("j", "i"), 1500)
                  .ok());
  EXPECT_EQ(out,
            "m{job=\"j\",instance=\"i\",a=\"x} y\",b=\"q\\\"}\\\\\"} NaN 1.500\n"
            "n{job=\"j\",instance=\"i\",c=\"\\n\"} +Inf 1.500\n");
}

TEST(OpenMetricsTest, TargetLabelValuesAreEscaped) {
  EXPECT_EQ(RenderTargetLabels("a\"b", "c\\d"), "job=\"a\\\"b\",instance=\"c\\\\d\"");
}

TEST(OpenMetricsTest, ASampleFromValuesRendersLikeTheExporter) {
  std::string out;
  AppendOpenMetricsSample(out, "DCGM_FI_DEV_GPU_TEMP", "{gpu=\"0\"}", "job=\"n\",instance=\"10.0.0.1\"", 71.5, 7);
  AppendOpenMetricsSample(out, "up", "", "job=\"n\",instance=\"10.0.0.1\"", 1, -1500);
  EXPECT_EQ(out,
            "DCGM_FI_DEV_GPU_TEMP{job=\"n\",instance=\"10.0.0.1\",gpu=\"0\"} 71.5 0.007\n"
            "up{job=\"n\",instance=\"10.0.0.1\"} 1 -1.500\n");
}

TEST(OpenMetricsTest, ALineThatIsNotASampleIsAnError) {
  std::string out;
  EXPECT_FALSE(AppendOpenMetricsSamples(out, "m{a=\"x\" 1\n", "", 0).ok());
  EXPECT_FALSE(AppendOpenMetricsSamples(out, "m\n", "", 0).ok());
  EXPECT_FALSE(AppendOpenMetricsSamples(out, "m \n", "", 0).ok());
}

}  // namespace
}  // namespace acmetrace::history
