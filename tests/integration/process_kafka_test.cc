// acmetrace process against a real broker: a processor killed (-9) and restarted resumes from its
// snapshot without counting anything twice, and two instances in one group write the same cluster
// metrics as one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The distinct acme.metrics lines of outputs (a killed run's last line may be cut: skipped).
std::set<std::string> MetricsLines(const std::vector<std::string>& paths) {
  std::set<std::string> out;
  core::RecordParser parser;
  for (const std::string& path : paths) {
    std::istringstream in(ReadAll(path));
    std::string line;
    while (std::getline(in, line)) {
      core::Record r;
      if (!parser.ParseFramedLine(line, r).ok()) continue;
      if (std::holds_alternative<core::MetricsWindow>(r)) out.insert(line);
    }
  }
  return out;
}

/// The totals of each cluster's last base window.
std::map<std::string, std::map<std::string, double>> FinalTotals(const std::set<std::string>& lines) {
  std::map<std::string, std::pair<int64_t, std::map<std::string, double>>> last;
  core::RecordParser parser;
  for (const std::string& line : lines) {
    core::Record r;
    EXPECT_TRUE(parser.ParseFramedLine(line, r).ok());
    const auto& w = std::get<core::MetricsWindow>(r);
    if (w.window_s != 60) continue;
    auto& slot = last[w.cluster];
    if (w.end_ms < slot.first) continue;
    slot.first = w.end_ms;
    slot.second.clear();
    for (const auto& [name, value] : w.metrics) {
      if (name.find("_total") != std::string::npos) slot.second[name] = value;
    }
  }
  std::map<std::string, std::map<std::string, double>> out;
  for (auto& [cluster, v] : last) out[cluster] = v.second;
  return out;
}

class ProcessKafkaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    broker_ = new OwnBroker();
    if (broker_->bootstrap().empty()) return;
    dir_ = FreshDir("process-kafka");
    const std::string data = dir_ + "/release";
    CommandResult synth = RunCommand(std::string(Binary()) + " synth --out " + data +
                                     " --clusters seren,kalos --days 1 --scale 0.02"
                                     " --metrics GPU_UTIL,GPU_TEMP,POWER_USAGE,SM_ACTIVE,NODE_CPU_UTILIZATION");
    ASSERT_EQ(synth.exit_code, 0) << synth.err;
    CommandResult replay = RunCommand(std::string(Binary()) + " replay --data " + data +
                                      " --sink kafka --brokers " + broker_->bootstrap());
    ASSERT_EQ(replay.exit_code, 0) << replay.err;
    std::ofstream(dir_ + "/fast-snapshots.yaml") << "process:\n  snapshot_interval_ms: 500\n";
    // The reference: one instance, from the start to the end, uninterrupted.
    CommandResult reference = RunCommand(Process("reference", dir_ + "/state-reference") + " --until-end > " + dir_ +
                                         "/reference.out");
    ASSERT_EQ(reference.exit_code, 0) << reference.err;
    reference_ = MetricsLines({dir_ + "/reference.out"});
  }
  static void TearDownTestSuite() {
    delete broker_;
    broker_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(broker_->bootstrap().empty()) << "no broker";
    ASSERT_GT(reference_.size(), 100u);
  }

  static std::string Process(const std::string& group, const std::string& state_dir) {
    return std::string(Binary()) + " --config " + dir_ + "/fast-snapshots.yaml process --source kafka --sink stdout" +
           " --brokers " + broker_->bootstrap() + " --group " + group + " --state-dir " + state_dir;
  }

  static OwnBroker* broker_;
  static std::string dir_;
  static std::set<std::string> reference_;
};

OwnBroker* ProcessKafkaTest::broker_ = nullptr;
std::string ProcessKafkaTest::dir_;
std::set<std::string> ProcessKafkaTest::reference_;

TEST_F(ProcessKafkaTest, KilledAndRestartedCountsNothingTwice) {
  const std::string state = dir_ + "/state-restart";
  const std::string snapshot = state + "/restart.seren.state";
  {
    // Following the topics (no --until-end), killed with SIGKILL once it has saved state (with
    // snapshots every 500 ms it is killed mid-stream or, on a fast machine, while following).
    BackgroundCommand first(Process("restart", state), dir_ + "/restart-1.out", dir_ + "/restart-1.err");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    // Once it has saved state and written windows (the sink is flushed before each snapshot).
    while ((!std::filesystem::exists(snapshot) || std::filesystem::file_size(dir_ + "/restart-1.out") == 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // waiting on a real process, not on a clock
    }
    ASSERT_TRUE(std::filesystem::exists(snapshot)) << ReadAll(dir_ + "/restart-1.err");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }  // ~BackgroundCommand: SIGKILL, no clean shutdown
  EXPECT_GT(MetricsLines({dir_ + "/restart-1.out"}).size(), 0u);
  CommandResult second = RunCommand(Process("restart", state) + " --until-end > " + dir_ + "/restart-2.out");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resumed from"), std::string::npos) << second.err;

  const std::set<std::string> combined = MetricsLines({dir_ + "/restart-1.out", dir_ + "/restart-2.out"});
  EXPECT_EQ(FinalTotals(combined), FinalTotals(reference_));
  // Every window either run wrote is one the uninterrupted run wrote, byte for byte, and none is missing.
  EXPECT_EQ(combined, reference_);
}

TEST_F(ProcessKafkaTest, TwoInstancesInOneGroupWriteTheSameMetricsAsOne) {
  const std::string state = dir_ + "/state-pair";
  BackgroundCommand a(Process("pair", state) + " --until-end", dir_ + "/pair-a.out", dir_ + "/pair-a.err");
  BackgroundCommand b(Process("pair", state) + " --until-end", dir_ + "/pair-b.out", dir_ + "/pair-b.err");
  EXPECT_EQ(a.Wait(), 0) << ReadAll(dir_ + "/pair-a.err");
  EXPECT_EQ(b.Wait(), 0) << ReadAll(dir_ + "/pair-b.err");
  const std::set<std::string> combined = MetricsLines({dir_ + "/pair-a.out", dir_ + "/pair-b.out"});
  EXPECT_EQ(FinalTotals(combined), FinalTotals(reference_));
  EXPECT_EQ(combined, reference_);
  const std::string logs = ReadAll(dir_ + "/pair-a.err") + ReadAll(dir_ + "/pair-b.err");
  EXPECT_NE(logs.find("owns seren"), std::string::npos) << logs;
  EXPECT_NE(logs.find("owns kalos"), std::string::npos) << logs;
}

TEST_F(ProcessKafkaTest, SinkKafkaWritesTheSameWindowsToAcmeMetrics) {
  CommandResult run = RunCommand(std::string(Binary()) + " process --source kafka --sink kafka --brokers " +
                                 broker_->bootstrap() + " --group to-kafka --until-end");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::set<std::string> lines;
  for (const Framed& f : ConsumeAll(broker_->bootstrap(), {"acme.metrics"}, "metrics-reader")) {
    lines.insert("{\"topic\":\"" + f.topic + "\",\"key\":\"" + f.key + "\",\"value\":" + f.value + "}");
  }
  EXPECT_EQ(lines, reference_);
}

}  // namespace
}  // namespace acmetrace::kafka::testing
