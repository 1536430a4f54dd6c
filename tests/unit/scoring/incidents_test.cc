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

TEST(FaultsCsvTest, ASpreadsheetsFileReadsTheSame) {
  // Saved from a spreadsheet: a UTF-8 BOM, CRLF line ends, every cell quoted, a quote and a comma
  // inside a cell; and a node failure whose node is not known (an empty subject).
  const std::string path = WriteFile(TestDir(), "faults.csv",
                                     "\xEF\xBB\xBF\"cluster\",\"kind\",\"subject\",\"start\",\"end\"\r\n"
                                     "\"seren\",\"gpu_overheat\",\"10.140.1.10-3\",\"1688173200\",\"1688173800\"\r\n"
                                     "\"seren\",\"node_failure\",\"\",\"1688170000\",\"1688170900\"\r\n"
                                     "kalos,util_drop,\"a \"\"quoted\"\", subject\",1688171000,1688171100\r\n");
  core::Result<std::vector<Incident>> got = LoadFaultsCsv(path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 3u);
  EXPECT_EQ(got.value()[0].cluster, "seren");
  EXPECT_EQ(got.value()[0].kind, "node_failure");
  EXPECT_EQ(got.value()[0].subject, "");
  EXPECT_EQ(got.value()[1].subject, "a \"quoted\", subject");
  EXPECT_EQ(got.value()[2].subject, "10.140.1.10-3");
  EXPECT_EQ(got.value()[2].end_ms, 1'688'173'800'000);
  // An unclosed quote is an error on its line, not the rest of the file swallowed.
  const std::string bad = WriteFile(TestDir(), "unclosed.csv", "seren,gpu_overheat,\"g,1688173200,1688173800\n");
  got = LoadFaultsCsv(bad);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message().rfind(bad + ":1: row: unbalanced quote", 0), 0u) << got.status().message();
}

TEST(FaultsCsvTest, TheSeverityColumnIsReadAndFilesWithoutItStillRead) {
  const std::string dir = TestDir();
  core::Result<std::vector<Incident>> got =
      LoadFaultsCsv(WriteFile(dir, "faults.csv",
                              "cluster,kind,subject,start,end,severity\n"
                              "seren,gpu_overheat,10.140.1.10-3,1688173200,1688173800,critical\n"
                              "seren,xid_error,10.140.1.11-0,1688173300,1688173900,warning\n"
                              "seren,util_drop,seren,1688173400,1688174000,\n"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 3u);
  EXPECT_EQ(got.value()[0].severity, IncidentSeverity::kCritical);
  EXPECT_EQ(got.value()[1].severity, IncidentSeverity::kWarning);
  EXPECT_EQ(got.value()[2].severity, IncidentSeverity::kUntiered);
  // Five columns (files written before severity): incidents of no tier, as before.
  got = LoadFaultsCsv(WriteFile(dir, "old.csv",
                                "cluster,kind,subject,start,end\n"
                                "seren,gpu_overheat,10.140.1.10-3,1688173200,1688173800\n"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 1u);
  EXPECT_EQ(got.value()[0].severity, IncidentSeverity::kUntiered);
  EXPECT_EQ(got.value()[0].end_ms, 1'688'173'800'000);
  // From a spreadsheet, headerless: BOM, CRLF, quoted cells; a row may leave the severity out.
  got = LoadFaultsCsv(WriteFile(dir, "sheet.csv",
                                "\xEF\xBB\xBF\"seren\",\"xid_error\",\"n-1\",\"1688173200\",\"1688173800\",\"critical\"\r\n"
                                "seren,xid_error,n-2,1688173300,1688173900\r\n"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 2u);
  EXPECT_EQ(got.value()[0].severity, IncidentSeverity::kCritical);
  EXPECT_EQ(got.value()[1].severity, IncidentSeverity::kUntiered);
}

TEST(FaultsCsvTest, BadRowsNameFileLineAndField) {
  const std::string dir = TestDir();
  const std::pair<const char*, const char*> cases[] = {
      {"cluster,kind,subject,start,end\nseren,gpu_overheat,g,1688173200\n", ":2: row: 4 fields, expected 6"},
      {"seren,gpu_overheat,g,soon,1688173800\n", ":1: start: not a time"},
      {"cluster,kind,subject,start,end\n\nseren,gpu_overheat,g,1688173200,1688173000\n", ":3: end: before start"},
      {"seren,,g,1688173200,1688173800\n", ":1: kind: empty"},
      {"seren,gpu_overheat,g,1688173200,99999999999\n", ":1: end: outside the accepted years"},
      {"cluster,kind,subject,begin,end\n", ":1: header: expected"},
      {"cluster,kind,subject,start,end,tier\n", ":1: header: expected"},
      {"seren,gpu_overheat,g,1688173200,1688173800,critical,x\n", ":1: row: 7 fields, expected 6"},
      {"cluster,kind,subject,start,end,severity\nseren,gpu_overheat,g,1688173200,1688173800,Critical\n",
       ":2: severity: expected warning, critical or empty, got 'Critical'"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string path = WriteFile(dir, "faults.csv", text);
    core::Result<std::vector<Incident>> got = LoadFaultsCsv(path);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().message().rfind(path + expected, 0), 0u) << got.status().message();
  }
  EXPECT_FALSE(LoadFaultsCsv(dir + "/none.csv").ok());
}

TEST(FaultsCsvTest, ADirectoryOrAnEmptyFileIsAnErrorNotNoIncidents) {
  const std::string dir = TestDir();
  core::Result<std::vector<Incident>> got = LoadFaultsCsv(dir);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), dir + ": a directory, not a faults file");
  for (const char* empty : {"", "\n\n", "\r\n"}) {
    const std::string path = WriteFile(dir, "empty.csv", empty);
    got = LoadFaultsCsv(path);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().message().rfind(path + ": empty, not a faults file", 0), 0u) << got.status().message();
  }
  // A header alone is a run with no incident injected: no error.
  got = LoadFaultsCsv(WriteFile(dir, "header.csv", "cluster,kind,subject,start,end\n"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(got.value().empty());
}

TEST(FaultsCsvTest, AHugeCellIsEchoedCut) {
  const std::string dir = TestDir();
  // A 10 MB cell: its line is over the line limit, said in one short line.
  std::string path = WriteFile(dir, "huge.csv", "seren,gpu_overheat,g," + std::string(10 << 20, '9') + ",1\n");
  core::Result<std::vector<Incident>> got = LoadFaultsCsv(path);
  ASSERT_FALSE(got.ok());
  EXPECT_LT(got.status().message().size(), path.size() + 200) << got.status().message().substr(0, 400);
  // Under the line limit but far over an echo: the cell is cut, its size said, control characters escaped.
  path = WriteFile(dir, "long.csv", "seren,gpu_overheat,g,\x1b[2J" + std::string(60'000, 'x') + ",1\n");
  got = LoadFaultsCsv(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), path + ":1: start: not a time (unix seconds or ISO 8601 with offset): '\\x1b[2J" +
                                        std::string(60, 'x') + "'... (60004 bytes)");
}

TEST(AnomalyFlagsTest, ARecordDeliveredTwiceIsOneFlag) {
  // Kafka delivers at least once: the same open and close again, after the first pair.
  const std::string open =
      "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"n-3\",\"state\":\"open\","
      "\"ts_ms\":1688169660000}\n";
  const std::string close =
      "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"n-3\",\"state\":\"close\","
      "\"ts_ms\":1688170200000}\n";
  // A later, different flag of the same GPU is no duplicate.
  const std::string again =
      "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"n-3\",\"state\":\"open\","
      "\"ts_ms\":1688171000000}\n";
  const std::string path = WriteFile(TestDir(), "anomalies.jsonl", open + close + open + close + open + again);
  int64_t duplicates = -1;
  core::Result<std::vector<FlagKind>> got = LoadAnomalyFlags(path, kT0, kT0 + 3'600'000, &duplicates);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got.value().size(), 1u);
  ASSERT_EQ(got.value()[0].intervals.size(), 2u);
  EXPECT_EQ(got.value()[0].intervals[0].start_ms, kT0 + 60'000);
  EXPECT_EQ(got.value()[0].intervals[0].end_ms, kT0 + 600'000);
  EXPECT_EQ(got.value()[0].intervals[1].start_ms, kT0 + 1'400'000);
  EXPECT_EQ(duplicates, 3);
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
