// The pipe a user runs: acmetrace replay --sink stdout | acmetrace process --source stdin, on the
// release fixture; and the command's flags and config keys.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "acmetrace/core/record_parse.h"

namespace acmetrace::processors {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

CommandResult RunShell(const std::string& command) {
  CommandResult r;
  std::FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Binary() { return ACMETRACE_BINARY; }
std::string Fixtures() { return ACMETRACE_FIXTURES; }

std::vector<core::Record> ParseLines(const std::string& text) {
  std::vector<core::Record> out;
  core::RecordParser parser;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    core::Record r;
    const core::Status s = parser.ParseFramedLine(text.substr(start, nl - start), r);
    EXPECT_TRUE(s.ok()) << s.message();
    out.push_back(std::move(r));
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

std::map<std::string, double> Last(const std::vector<core::Record>& records, const std::string& cluster,
                                   int64_t window_s) {
  const core::MetricsWindow* last = nullptr;
  for (const core::Record& r : records) {
    if (const auto* w = std::get_if<core::MetricsWindow>(&r); w && w->cluster == cluster && w->window_s == window_s) {
      last = w;
    }
  }
  if (last == nullptr) return {};
  return {last->metrics.begin(), last->metrics.end()};
}

TEST(ProcessPipeTest, ReplayIntoProcessOnTheReleaseFixture) {
  const std::string pipe = Binary() + " replay --data " + Fixtures() + "/release --sink stdout 2>/dev/null | " +
                           Binary() + " process --source stdin --until-end 2>/dev/null";
  const CommandResult r = RunShell(pipe);
  ASSERT_EQ(r.exit_code, 0);
  const std::vector<core::Record> records = ParseLines(r.out);
  ASSERT_FALSE(records.empty());
  const std::map<std::string, double> seren = Last(records, "seren", 60);
  const std::map<std::string, double> kalos = Last(records, "kalos", 60);
  ASSERT_FALSE(seren.empty());
  ASSERT_FALSE(kalos.empty());
  // The fixture's jobs: Seren 5778432 (8 GPUs, FAILED, 936 GPU-s), 5778433 (CPU, COMPLETED),
  // 5778434 (16 GPUs, CANCELLED, 9600 GPU-s); Kalos dlctk696s0jbvitv (64 GPUs, FAILED, 1152 GPU-s).
  EXPECT_EQ(seren.at("jobs_submitted_total{type=Other}"), 2);
  EXPECT_EQ(seren.at("jobs_submitted_total{type=Pretrain}"), 1);
  EXPECT_EQ(seren.at("jobs_finished_total{kind=gpu,type=Other,state=FAILED}"), 1);
  EXPECT_EQ(seren.at("jobs_finished_total{kind=cpu,type=Other,state=COMPLETED}"), 1);
  EXPECT_EQ(seren.at("jobs_finished_total{kind=gpu,type=Pretrain,state=CANCELLED}"), 1);
  EXPECT_EQ(seren.at("job_gpu_seconds_total{type=Other,state=FAILED}"), 936);
  EXPECT_EQ(seren.at("job_gpu_seconds_total{type=Pretrain,state=CANCELLED}"), 9600);
  EXPECT_EQ(seren.at("jobs_running{type=Pretrain}"), 0);
  EXPECT_EQ(seren.at("gpus_allocated"), 0);
  // Capacity as the telemetry shows it: two Seren nodes of two GPUs; one Kalos pod whose GPUs 0 and 3
  // report (index 3: four GPUs).
  EXPECT_EQ(seren.at("gpus_total"), 4);
  EXPECT_EQ(seren.at("late_records_total"), 0);
  EXPECT_EQ(kalos.at("jobs_finished_total{kind=gpu,type=Other,state=FAILED}"), 1);
  EXPECT_EQ(kalos.at("job_gpu_seconds_total{type=Other,state=FAILED}"), 1152);
  EXPECT_EQ(kalos.at("gpus_total"), 4);

  // The first Seren minute (00:18 +08:00): two nodes' GPU_UTIL [99,0] and [null,100]; CPU 8.101 %
  // and 43.7 % (raw fractions 0.08101 and 0.437, reported as percent).
  const core::MetricsWindow* first = nullptr;
  for (const core::Record& r : records) {
    if (const auto* w = std::get_if<core::MetricsWindow>(&r); w && w->cluster == "seren" && w->window_s == 60) {
      first = w;
      break;
    }
  }
  ASSERT_NE(first, nullptr);
  const std::map<std::string, double> m(first->metrics.begin(), first->metrics.end());
  EXPECT_EQ(first->start_ms, 1677601080000);
  EXPECT_DOUBLE_EQ(m.at("gpus_idle"), 0.5);  // one idle GPU at :00, none at :15
  EXPECT_NEAR(m.at("node_cpu_util_percent{stat=mean}"), (8.101 + 43.7 + 10 + 20) / 4, 1e-9);
  EXPECT_DOUBLE_EQ(m.at("ipmi_power_watts{model=GPU_A}"), 2520);

  // Same input, same bytes: run it again.
  EXPECT_EQ(RunShell(pipe).out, r.out);
}

TEST(ProcessPipeTest, MalformedLinesAreCountedNotFatal) {
  const CommandResult r = RunShell("printf '%s\\n' 'not json' "
                              "'{\"topic\":\"acme.util\",\"key\":\"seren/n\",\"value\":{\"v\":1,\"cluster\":\"seren\","
                              "\"node\":\"n\",\"ts_ms\":1677601080000,\"gpu\":{\"GPU_UTIL\":[0]},\"host\":{}}}' | " +
                              Binary() + " process --source stdin 2>&1 >/dev/null");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("stdin:1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 input errors"), std::string::npos) << r.out;
  const CommandResult strict = RunShell("echo 'not json' | " + Binary() + " process --source stdin --strict 2>/dev/null");
  EXPECT_EQ(strict.exit_code, 1);
}

TEST(ProcessPipeTest, BadUsageExitsTwo) {
  EXPECT_EQ(RunShell(Binary() + " process --source nowhere </dev/null 2>/dev/null").exit_code, 2);
  EXPECT_EQ(RunShell("printf 'process:\\n  windows_s: 60,90\\n' > /tmp/acmetrace-process-test.yaml && " + Binary() +
                " --config /tmp/acmetrace-process-test.yaml process </dev/null 2>/dev/null")
                .exit_code,
            2);
}

}  // namespace
}  // namespace acmetrace::processors
