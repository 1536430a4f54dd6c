// acmetrace process against a real broker: a processor killed (-9) and restarted resumes from its
// snapshot without counting anything twice, and two instances in one group write the same cluster
// metrics as one.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
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
#include "../suite_prepare.h"

namespace acmetrace::kafka::testing {
namespace {

using ::acmetrace::test::Prepared;
using ::acmetrace::test::PrepareSuiteOnce;

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

/// The distinct acme.anomalies lines of outputs.
std::set<std::string> AnomalyLines(const std::vector<std::string>& paths) {
  std::set<std::string> out;
  core::RecordParser parser;
  for (const std::string& path : paths) {
    std::istringstream in(ReadAll(path));
    std::string line;
    while (std::getline(in, line)) {
      core::Record r;
      if (!parser.ParseFramedLine(line, r).ok()) continue;
      if (std::holds_alternative<core::AnomalyEvent>(r)) out.insert(line);
    }
  }
  return out;
}

/// Per "topic/partition" of topics: {the group's committed offset (-1001 if none), the end offset},
/// read with librdkafka as kafka-consumer-groups.sh --describe shows them.
std::map<std::string, std::pair<int64_t, int64_t>> GroupOffsets(const std::string& brokers, const std::string& group,
                                                                const std::vector<std::string>& topics) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) {
    ADD_FAILURE() << err;
    return out;
  }
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(16);
  for (const std::string& topic : topics) {
    rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    EXPECT_EQ(rd_kafka_metadata(rk, 0, t, &md, 10'000), RD_KAFKA_RESP_ERR_NO_ERROR) << topic;
    if (md != nullptr && md->topic_cnt == 1) {
      for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
        rd_kafka_topic_partition_list_add(list, topic.c_str(), md->topics[0].partitions[p].id);
      }
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
  }
  EXPECT_EQ(rd_kafka_committed(rk, list, 10'000), RD_KAFKA_RESP_ERR_NO_ERROR);
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    int64_t low = 0, high = 0;
    EXPECT_EQ(rd_kafka_query_watermark_offsets(rk, p.topic, p.partition, &low, &high, 10'000),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    out[std::string(p.topic) + "/" + std::to_string(p.partition)] = {p.offset, high};
  }
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(rk);
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
  // Made once per process by the first test (suite_prepare.h).
  static void Prepare() {
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
    reference_anomalies_ = AnomalyLines({dir_ + "/reference.out"});
  }
  static inline Prepared prepared_ = Prepared::kNotYet;
  static void TearDownTestSuite() {
    delete broker_;
    broker_ = nullptr;
  }
  void SetUp() override {
    PrepareSuiteOnce(prepared_, &Prepare);
    if (HasFatalFailure()) return;
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
  static std::set<std::string> reference_anomalies_;
};

OwnBroker* ProcessKafkaTest::broker_ = nullptr;
std::string ProcessKafkaTest::dir_;
std::set<std::string> ProcessKafkaTest::reference_;
std::set<std::string> ProcessKafkaTest::reference_anomalies_;

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
  // The same for the flags: detector state resumes from the snapshot, so no flag opens twice.
  EXPECT_GT(reference_anomalies_.size(), 0u);
  EXPECT_EQ(AnomalyLines({dir_ + "/restart-1.out", dir_ + "/restart-2.out"}), reference_anomalies_);
}

TEST_F(ProcessKafkaTest, AnOwnerResumingAfterTheEndMarkersEndsWithoutWaitingForIdleness) {
  // The reference run read every writer's end markers and saved its snapshots past them. A new
  // owner of its clusters (here the same group and state directory started again, as after a
  // rebalance or a restart) reads nothing more: the snapshot must tell it that the input ended.
  // Idleness (kafka.idle_timeout_ms) is set to 10 minutes, so only that can end it; `timeout` ends a
  // build where it would wait.
  const std::string config = dir_ + "/no-idle.yaml";
  std::ofstream(config) << "process:\n  snapshot_interval_ms: 500\nkafka:\n  idle_timeout_ms: 600000\n";
  CommandResult again = RunCommand("timeout 120 " + std::string(Binary()) + " --config " + config +
                                   " process --source kafka --sink stdout --brokers " + broker_->bootstrap() +
                                   " --group reference --state-dir " + dir_ + "/state-reference --until-end");
  ASSERT_EQ(again.exit_code, 0) << "124: it waited for idleness\n" << again.err;
  EXPECT_NE(again.err.find("resumed from"), std::string::npos) << again.err;
  // Every window was written by the first run: nothing again.
  std::istringstream out(again.out);
  std::string line;
  while (std::getline(out, line)) EXPECT_EQ(line.find("\"acme.metrics\""), std::string::npos) << line;
}

TEST_F(ProcessKafkaTest, SigtermStopsCleanlyAndCommitsWhatWasProcessedToTheGroup) {
  const std::string state = dir_ + "/state-sigterm";
  const std::vector<std::string> inputs = {"acme.jobs", "acme.util", "acme.power"};
  BackgroundCommand run(Process("sigterm", state), dir_ + "/sigterm.out", dir_ + "/sigterm.err");
  // Following the topics: wait until it has read everything there is (its committed offsets, made
  // after each snapshot, reach the ends), then ask it to stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  bool caught_up = false;
  while (!caught_up && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // waiting on a real process, not on a clock
    caught_up = true;
    for (const auto& [partition, offsets] : GroupOffsets(broker_->bootstrap(), "sigterm", inputs)) {
      if (offsets.second > 0 && offsets.first != offsets.second) caught_up = false;
    }
  }
  EXPECT_TRUE(caught_up) << ReadAll(dir_ + "/sigterm.err");
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(), 0) << ReadAll(dir_ + "/sigterm.err");
  const std::string err = ReadAll(dir_ + "/sigterm.err");
  EXPECT_EQ(err.find("warning"), std::string::npos) << err;

  // After the clean stop the group's committed offsets are the ends of the partitions it consumed.
  int partitions_with_records = 0;
  for (const auto& [partition, offsets] : GroupOffsets(broker_->bootstrap(), "sigterm", inputs)) {
    if (offsets.second == 0) continue;  // an empty partition: nothing consumed, nothing committed
    ++partitions_with_records;
    EXPECT_EQ(offsets.first, offsets.second) << partition;
  }
  EXPECT_GT(partitions_with_records, 0);
  // Everything it wrote before the stop is what the uninterrupted run wrote for the closed windows.
  for (const std::string& line : MetricsLines({dir_ + "/sigterm.out"})) {
    EXPECT_EQ(reference_.count(line), 1u) << line;
  }
}

TEST_F(ProcessKafkaTest, ARestartAfterSigtermReadsNothingAgainAndFinishesLikeOneRun) {
  // Stopped with SIGTERM while following, then finished with --until-end from its snapshot: the two
  // outputs together are the uninterrupted run's, flags included.
  const std::string state = dir_ + "/state-term-restart";
  const std::string snapshot = state + "/term-restart.seren.state";
  {
    BackgroundCommand first(Process("term-restart", state), dir_ + "/term-1.out", dir_ + "/term-1.err");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(snapshot) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // waiting on a real process, not on a clock
    }
    ASSERT_TRUE(std::filesystem::exists(snapshot)) << ReadAll(dir_ + "/term-1.err");
    first.Signal(SIGTERM);
    EXPECT_EQ(first.Wait(), 0) << ReadAll(dir_ + "/term-1.err");
  }
  CommandResult second = RunCommand(Process("term-restart", state) + " --until-end > " + dir_ + "/term-2.out");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(MetricsLines({dir_ + "/term-1.out", dir_ + "/term-2.out"}), reference_);
  EXPECT_EQ(AnomalyLines({dir_ + "/term-1.out", dir_ + "/term-2.out"}), reference_anomalies_);
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
