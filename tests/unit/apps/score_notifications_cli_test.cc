// acmetrace score --notifications as a user runs it: what Alertmanager paged, recorded by run's webhook,
// scored against a faults.csv without a Prometheus; and the one-line errors of a bad file.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_files.h"

namespace acmetrace {
namespace {

ShellOutput Score(const std::string& args) {
  return RunShellCapture(std::string(ACMETRACE_BINARY) + " score " + args + " 2>&1");
}

constexpr const char* kFaults =
    "cluster,kind,subject,start,end\n"
    "seren,gpu_overheat,10.140.1.10-3,1688173200,1688173800\n"
    "seren,xid_error,10.140.1.11-0,1688180000,1688180300\n";

// A line as `run --notifications` records it: an alert of trace_ms's receiver.
std::string Line(const std::string& receiver, int64_t trace_s, const std::string& alertname, const std::string& host,
                 const std::string& gpu) {
  return "{\"received_ms\":1796421743617,\"received\":\"2026-12-04 22:02:23+00:00\",\"trace_ms\":" +
         std::to_string(trace_s * 1000) + ",\"trace_time\":\"x\",\"receiver\":\"" + receiver +
         "\",\"status\":\"firing\",\"group_key\":\"g\",\"group_labels\":{\"alertname\":\"" + alertname +
         "\"},\"truncated_alerts\":0,\"alerts\":[{\"status\":\"firing\",\"labels\":{\"alertname\":\"" + alertname +
         "\",\"cluster\":\"seren\",\"Hostname\":\"" + host + "\",\"gpu\":\"" + gpu +
         "\"},\"starts_at\":\"s\",\"ends_at\":\"e\",\"fingerprint\":\"" + host + gpu + "\"}]}\n";
}

TEST(ScoreNotificationsCliTest, ScoresWhatPagedPerReceiverWithoutAPrometheus) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  // The overheat paged 90 s after its start, then again; a temperature page for a GPU with no incident.
  const std::string notes = WriteFile(dir, "n.jsonl",
                                      Line("seren-oncall", 1688173290, "DcgmGpuTemperatureCritical", "10.140.1.10", "3") +
                                          Line("seren-oncall", 1688173590, "DcgmGpuTemperatureCritical", "10.140.1.10", "3") +
                                          Line("seren-oncall", 1688175000, "DcgmGpuTemperatureCritical", "10.140.1.99", "1"));
  const ShellOutput run = Score("--notifications " + notes + " --faults " + faults + " --json " + dir + "/s.json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("seren-oncall                  3        0       1/2   0.50      +1m30s      +1m30s"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("pages that matched no incident:"), std::string::npos) << run.out;
  std::ifstream in(dir + "/s.json");
  const nlohmann::json json = nlohmann::json::parse(in);
  const nlohmann::json& oncall = json["notifications"]["receivers"][0];
  EXPECT_EQ(oncall["receiver"], "seren-oncall");
  EXPECT_EQ(oncall["incidents_notified"], 1);
  EXPECT_EQ(oncall["unmatched_pages"], 1);
  EXPECT_EQ(oncall["max_notifications_per_incident"], 2);
  // No page named the XID incident's GPU.
  EXPECT_EQ(oncall["by_kind"]["xid_error"]["notified"], 0);
}

TEST(ScoreNotificationsCliTest, ABadNotificationsFileIsOneLineNamingFileLineAndField) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string bad = WriteFile(dir, "n.jsonl", Line("r", 1688173290, "A", "h", "0") + "{\"received_ms\":1}\n");
  const ShellOutput run = Score("--notifications " + bad + " --faults " + faults);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find(bad + ":2: trace_ms: missing"), std::string::npos) << run.out;
  const ShellOutput missing = Score("--notifications " + dir + "/none.jsonl --faults " + faults);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("none.jsonl: cannot open the notifications file: No such file or directory"),
            std::string::npos)
      << missing.out;
  const ShellOutput html = Score("--notifications " + bad + " --faults " + faults + " --html " + dir + "/s.html");
  EXPECT_EQ(html.exit_code, 2);
  EXPECT_NE(html.out.find("--html draws rules and flags"), std::string::npos) << html.out;
  const ShellOutput nothing = Score("--faults " + faults);
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.out.find("--notifications"), std::string::npos) << nothing.out;
}

}  // namespace
}  // namespace acmetrace
