// faults.csv as synth writes it, and acme.anomalies records as `process` writes them.
#include "acmetrace/scoring/incidents.h"

#include <gtest/gtest.h>

#include "test_files.h"

namespace acmetrace::scoring {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z

TEST(FaultsCsvTest, ReadsSynthsFaultsSortedByStart) {
  const std::string path = WriteFile(TestDir(), "faults.csv",
                                     "cluster,kind,subject,start,end\n"
                                     "seren,gpu_overheat,10.140.1.10-3,1688173200,1688173800\n"
                                     "kalos,util_drop,kalos,1688170000,1688170900\n"
                                     "seren,node_failure,5778432,2023-07-01 08:00:00+08:00,1688169600\n");
  core::Result<std::vector<Incident>> got = LoadFaultsCsv(path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 3u);
  EXPECT_EQ(got.value()[0].kind, "node_failure");
  EXPECT_EQ(got.value()[0].start_ms, kT0);
  EXPECT_EQ(got.value()[0].end_ms, kT0);
  EXPECT_EQ(got.value()[1].cluster, "kalos");
  EXPECT_EQ(got.value()[2].subject, "10.140.1.10-3");
  EXPECT_EQ(got.value()[2].end_ms, 1'688'173'800'000);
}

TEST(FaultsCsvTest, BadRowsNameFileLineAndField) {
  const std::string dir = TestDir();
  const std::pair<const char*, const char*> cases[] = {
      {"cluster,kind,subject,start,end\nseren,gpu_overheat,g,1688173200\n", ":2: row: 4 fields, expected 5"},
      {"seren,gpu_overheat,g,soon,1688173800\n", ":1: start: not a time"},
      {"cluster,kind,subject,start,end\n\nseren,gpu_overheat,g,1688173200,1688173000\n", ":3: end: before start"},
      {"seren,,g,1688173200,1688173800\n", ":1: kind: empty"},
      {"seren,gpu_overheat,g,1688173200,99999999999\n", ":1: end: outside the accepted years"},
      {"cluster,kind,subject,begin,end\n", ":1: header: expected"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string path = WriteFile(dir, "faults.csv", text);
    core::Result<std::vector<Incident>> got = LoadFaultsCsv(path);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().message().rfind(path + expected, 0), 0u) << got.status().message();
  }
  EXPECT_FALSE(LoadFaultsCsv(dir + "/none.csv").ok());
}

TEST(AnomalyFlagsTest, OpenToCloseIsAFlagAndAnOpenOneLastsToTheEnd) {
  const std::string path = WriteFile(
      TestDir(), "anomalies.jsonl",
      // Framed as process --sink stdout writes, with a metrics record between (skipped).
      "{\"topic\":\"acme.anomalies\",\"key\":\"seren/gpu_overheat/n-3\",\"value\":{\"v\":1,\"cluster\":\"seren\","
      "\"kind\":\"gpu_overheat\",\"subject\":\"n-3\",\"state\":\"open\",\"ts_ms\":1688169660000,\"value\":88,"
      "\"threshold\":85}}\n"
      "{\"topic\":\"acme.metrics\",\"key\":\"seren\",\"value\":{\"v\":1,\"cluster\":\"seren\",\"window_s\":60,"
      "\"start_ms\":1688169600000,\"end_ms\":1688169660000,\"metrics\":{\"jobs_running\":3}}}\n"
      // A bare value.
      "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"n-3\",\"state\":\"close\","
      "\"ts_ms\":1688170200000,\"value\":80,\"threshold\":85}\n"
      "{\"v\":1,\"cluster\":\"kalos\",\"kind\":\"util_drop\",\"subject\":\"kalos\",\"state\":\"open\","
      "\"ts_ms\":1688171000000}\n"
      // Opened before the window (closed in it, or never): already firing, left out.
      "{\"v\":1,\"cluster\":\"kalos\",\"kind\":\"xid_error\",\"subject\":\"m-1\",\"state\":\"open\","
      "\"ts_ms\":1688160000000}\n"
      "{\"v\":1,\"cluster\":\"kalos\",\"kind\":\"xid_error\",\"subject\":\"m-2\",\"state\":\"open\","
      "\"ts_ms\":1688160000000}\n"
      "{\"v\":1,\"cluster\":\"kalos\",\"kind\":\"xid_error\",\"subject\":\"m-2\",\"state\":\"close\","
      "\"ts_ms\":1688170000000}\n");
  core::Result<std::vector<FlagKind>> got = LoadAnomalyFlags(path, kT0, kT0 + 3'600'000);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 3u);  // gpu_overheat, util_drop, xid_error (no flag in the window)
  const FlagKind& overheat = got.value()[0];
  EXPECT_EQ(overheat.kind, "gpu_overheat");
  ASSERT_EQ(overheat.intervals.size(), 1u);
  EXPECT_EQ(overheat.intervals[0].start_ms, kT0 + 60'000);
  EXPECT_EQ(overheat.intervals[0].end_ms, kT0 + 600'000);
  EXPECT_FALSE(overheat.intervals[0].open);
  EXPECT_EQ(overheat.intervals[0].labels.at("subject"), "n-3");
  const FlagKind& drop = got.value()[1];
  ASSERT_EQ(drop.intervals.size(), 1u);
  EXPECT_TRUE(drop.intervals[0].open);
  EXPECT_EQ(drop.intervals[0].end_ms, kT0 + 3'600'000);
  EXPECT_TRUE(got.value()[2].intervals.empty());
}

TEST(AnomalyFlagsTest, AMalformedLineNamesFileAndLine) {
  const std::string path =
      WriteFile(TestDir(), "anomalies.jsonl",
                "\n{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"n-3\",\"state\":\"maybe\","
                "\"ts_ms\":1688169660000}\n");
  core::Result<std::vector<FlagKind>> got = LoadAnomalyFlags(path, kT0, kT0 + 3'600'000);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message().rfind(path + ":2: ", 0), 0u) << got.status().message();
  EXPECT_NE(got.status().message().find("state"), std::string::npos) << got.status().message();
}

}  // namespace
}  // namespace acmetrace::scoring
