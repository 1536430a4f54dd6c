// acmetrace score as a user runs it, without a Prometheus: flags of acmetrace's own anomalies scored
// against a faults.csv, and the usage errors (exit 2) with their one-line messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_files.h"

namespace acmetrace {
namespace {

// `acmetrace score args`: its exit code, and stdout and stderr together in out.
ShellOutput Score(const std::string& args) {
  return RunShellCapture(std::string(ACMETRACE_BINARY) + " score " + args + " 2>&1");
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr const char* kFaults =
    "cluster,kind,subject,start,end\n"
    "seren,gpu_overheat,10.140.1.10-3,1688173200,1688173800\n"
    "seren,xid_error,10.140.1.11-0,1688180000,1688180300\n";

// Flags: the overheat seen 45 s after its start; a false xid flag on another GPU.
constexpr const char* kAnomalies =
    "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"10.140.1.10-3\",\"state\":\"open\","
    "\"ts_ms\":1688173245000}\n"
    "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"10.140.1.10-3\",\"state\":\"close\","
    "\"ts_ms\":1688173800000}\n"
    "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"xid_error\",\"subject\":\"10.140.1.12-5\",\"state\":\"open\","
    "\"ts_ms\":1688180100000}\n";

TEST(ScoreCliTest, ScoresAnomalyFlagsAgainstTheFaults) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string anomalies = WriteFile(dir, "anomalies.jsonl", kAnomalies);
  const ShellOutput run = Score("--faults " + faults + " --anomalies " + anomalies + " --json " + dir + "/s.json --html " +
                        dir + "/s.html");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("flag:gpu_overheat"), std::string::npos) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(dir + "/s.json"));
  ASSERT_EQ(doc["rules"].size(), 2u);
  EXPECT_EQ(doc["rules"][0]["rule"], "flag:gpu_overheat");
  EXPECT_DOUBLE_EQ(doc["rules"][0]["recall"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(doc["rules"][0]["ttd_median_s"].get<double>(), 45.0);
  EXPECT_EQ(doc["rules"][1]["rule"], "flag:xid_error");
  EXPECT_EQ(doc["rules"][1]["false_alerts"], 1);
  EXPECT_DOUBLE_EQ(doc["rules"][1]["recall"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(doc["total"]["recall"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(doc["total"]["precision"].get<double>(), 0.5);
  // Default window: an hour either side of the incidents, from a whole minute.
  EXPECT_EQ(doc["window"]["from"], 1688173200 - 3600);
  EXPECT_EQ(doc["window"]["to"], 1688180300 + 3600);
  EXPECT_NE(ReadAll(dir + "/s.html").find("10.140.1.11-0"), std::string::npos);
}

TEST(ScoreCliTest, UsageErrorsExitTwoWithOneLine) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string rules = WriteFile(dir, "rules.yml",
                                      "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n"
                                      "        for: 1q\n");
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"--faults " + faults, "give --prometheus"},
      {"--faults " + faults + " --prometheus http://127.0.0.1:9090 --rules " + rules, rules + ":6: for: not a duration"},
      {"--faults " + faults + " --prometheus localhost:9090", "--prometheus: \"localhost:9090\": not an http:// URL"},
      {"--faults " + faults + " --anomalies " + faults + " --sweep-for 1m,x", "--sweep-for: not a duration"},
      {"--faults " + faults + " --anomalies " + faults + " --from yesterday", "--from: not a time"},
      {"--faults " + rules + " --anomalies " + faults, rules + ":1: row:"},
      {"--faults " + faults + " --anomalies " + faults, faults + ":1: "},
  };
  for (const Case& c : cases) {
    const ShellOutput run = Score(c.args);
    EXPECT_EQ(run.exit_code, 2) << c.args << "\n" << run.out;
    EXPECT_NE(run.out.find(c.message), std::string::npos) << c.args << "\n" << run.out;
    EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << run.out;
  }
}

}  // namespace
}  // namespace acmetrace
