// `acmetrace run --brokers`: replay, processors and exporter in one process with every hop through
// the fixture's Kafka broker give the same exported job counters as the in-process run; `acmetrace
// export --source kafka` serves what the topics hold.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

// The sample lines of the families whose names start with prefix.
std::map<std::string, std::string> Lines(const std::string& text, const std::string& prefix) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

TEST(KafkaRunTest, EveryHopThroughKafkaExportsWhatTheInProcessRunExports) {
  // A broker of its own: run --brokers uses the acme.* topics, which KafkaRoundTripTest expects to
  // create on the shared broker (ctest may run either first).
  OwnBroker broker;
  const std::string& brokers = broker.bootstrap();
  ASSERT_FALSE(brokers.empty()) << "could not start a broker (scripts/kafka-local)";
  const std::string dir = FreshDir("kafka_run");
  WriteSyntheticRelease(dir + "/release", 40, 3, 2);
  const std::string common = std::string(Binary()) + " run --data " + dir +
                             "/release --speed max --until-end --listen 127.0.0.1:0 --metrics-out ";
  // Twice through Kafka: the second run must not read the first run's records again.
  for (int round = 0; round < 2; ++round) {
    CommandResult kafka_run = RunCommand(common + dir + "/kafka.prom --brokers " + brokers);
    ASSERT_EQ(kafka_run.exit_code, 0) << kafka_run.err;
    EXPECT_NE(kafka_run.err.find("every hop through Kafka"), std::string::npos) << kafka_run.err;
    CommandResult local_run = RunCommand(common + dir + "/local.prom");
    ASSERT_EQ(local_run.exit_code, 0) << local_run.err;
    const std::string kafka_text = ReadFile(dir + "/kafka.prom");
    const std::string local_text = ReadFile(dir + "/local.prom");
    for (const char* family : {"acmetrace_jobs_submitted_total", "acmetrace_jobs_started_total",
                               "acmetrace_jobs_finished_total", "acmetrace_job_gpu_seconds_total"}) {
      const auto via_kafka = Lines(kafka_text, std::string(family) + "{");
      EXPECT_FALSE(via_kafka.empty()) << family;
      EXPECT_EQ(via_kafka, Lines(local_text, std::string(family) + "{")) << family << " round " << round;
    }
    // The persona has every GPU either way.
    EXPECT_EQ(Lines(kafka_text, "DCGM_FI_DEV_GPU_UTIL{").size(), Lines(local_text, "DCGM_FI_DEV_GPU_UTIL{").size());
    EXPECT_NE(kafka_text.find("acmetrace_records_total{stage=\"export\",topic=\"acme.metrics\"}"), std::string::npos);
  }
}

}  // namespace
}  // namespace acmetrace::kafka::testing
