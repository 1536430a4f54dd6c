// The samples the backfill writes for an active alert, as Prometheus's rule manager writes them.
#include "acmetrace/history/alert_series.h"

#include <gtest/gtest.h>

namespace acmetrace::history {
namespace {

TEST(AlertSeriesTest, AlertsCarriesTheStateAndAlertsForStateTheActiveTimeInSeconds) {
  std::string out;
  const scoring::Labels labels = {{"alertname", "DcgmGpuTemperatureHigh"}, {"cluster", "seren"}, {"gpu", "3"},
                                  {"Hostname", "node \"7\""}};
  AppendAlertSamples(out, labels, {1'688'140'875'000, false, 1'688'140'860'000});
  AppendAlertSamples(out, labels, {1'688'140'920'000, true, 1'688'140'860'000});
  EXPECT_EQ(out,
            "ALERTS{Hostname=\"node \\\"7\\\"\",alertname=\"DcgmGpuTemperatureHigh\",alertstate=\"pending\","
            "cluster=\"seren\",gpu=\"3\"} 1 1688140875\n"
            "ALERTS_FOR_STATE{Hostname=\"node \\\"7\\\"\",alertname=\"DcgmGpuTemperatureHigh\",cluster=\"seren\","
            "gpu=\"3\"} 1688140860 1688140875\n"
            "ALERTS{Hostname=\"node \\\"7\\\"\",alertname=\"DcgmGpuTemperatureHigh\",alertstate=\"firing\","
            "cluster=\"seren\",gpu=\"3\"} 1 1688140920\n"
            "ALERTS_FOR_STATE{Hostname=\"node \\\"7\\\"\",alertname=\"DcgmGpuTemperatureHigh\",cluster=\"seren\","
            "gpu=\"3\"} 1688140860 1688140920\n");
}

TEST(AlertSeriesTest, PrometheussAlertstateWinsOverASeriesLabelOfThatName) {
  std::string out;
  AppendAlertSamples(out, {{"alertname", "A"}, {"alertstate", "bogus"}, {"z", "1"}}, {2'000, true, 1'000});
  EXPECT_EQ(out,
            "ALERTS{alertname=\"A\",alertstate=\"firing\",z=\"1\"} 1 2\n"
            "ALERTS_FOR_STATE{alertname=\"A\",z=\"1\"} 1 2\n");
}

}  // namespace
}  // namespace acmetrace::history
