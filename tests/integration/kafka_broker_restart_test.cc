// A broker stopped and restarted in the middle of a paced replay: no record lost, none duplicated
// (idempotent producer, acks=all, retries; backpressure while the broker is away).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "acmetrace/kafka/kafka_sink.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

TEST(KafkaBrokerRestartTest, NoRecordLostNoneDuplicated) {
  OwnBroker broker;
  ASSERT_FALSE(broker.bootstrap().empty());
  const std::string dir = FreshDir("restart");
  // 1 trace hour at 100x: a 36 s replay of about 9000 records, spread evenly.
  WriteSyntheticRelease(dir + "/release", 1500, 16, 1);
  const std::string replay = std::string(Binary()) + " replay --data " + dir + "/release";

  CommandResult to_stdout = RunCommand(replay + " --sink stdout");
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  std::vector<Framed> expected = ParseFramedLines(to_stdout.out);
  ASSERT_GT(expected.size(), 5000u);

  BackgroundCommand run(replay + " --speed 100 --sink kafka --brokers " + broker.bootstrap(), dir + "/replay.out",
                        dir + "/replay.err");
  std::this_thread::sleep_for(std::chrono::seconds(8));
  ASSERT_TRUE(broker.Stop());
  std::this_thread::sleep_for(std::chrono::seconds(4));
  ASSERT_TRUE(broker.Start());
  const int exit_code = run.Wait();
  const std::string err = ReadFile(dir + "/replay.err");
  ASSERT_EQ(exit_code, 0) << err;
  const auto n = static_cast<int64_t>(expected.size());
  EXPECT_EQ(NumberBefore(err, "records produced"), n) << err;
  // and the replay's stream markers (docs/kafka.md), each delivered too.
  EXPECT_EQ(NumberBefore(err, "delivery reports"), n + NumberBefore(err, "stream markers")) << err;
  EXPECT_EQ(NumberBefore(err, "failed)"), 0) << err;

  std::vector<Framed> got = ConsumeAll(broker.bootstrap(), {"acme.jobs", "acme.util", "acme.power"}, "restart");
  EXPECT_EQ(got.size(), expected.size());
  std::set<Framed> unique(got.begin(), got.end());
  EXPECT_EQ(unique.size(), got.size()) << "duplicates";
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_TRUE(got == expected) << "records differ from the stdout feed";
  std::vector<Framed> missing;
  std::set_difference(expected.begin(), expected.end(), got.begin(), got.end(), std::back_inserter(missing));
  for (size_t i = 0; i < missing.size() && i < 10; ++i) {
    ADD_FAILURE() << "missing: " << missing[i].topic << " " << missing[i].key << " " << missing[i].value;
  }
  std::printf("restart test: %zu records, replay stderr:\n%s\n", got.size(), err.c_str());

  // A broker that stays away: the undeliverable record fails the flush (exit 1 for a replay), it is
  // not silently dropped.
  KafkaSettings settings;
  settings.brokers = broker.bootstrap();
  settings.topics = {"acme.jobs"};
  settings.delivery_timeout_ms = 3000;
  core::Result<std::unique_ptr<KafkaSink>> sink = KafkaSink::Open(settings);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ASSERT_TRUE(broker.Stop());
  ASSERT_TRUE(sink.value()->Produce({"acme.jobs", "seren/1", "{}", 0, kNoTraceTs}).ok());
  core::Status flushed = sink.value()->Flush();
  ASSERT_FALSE(flushed.ok());
  EXPECT_NE(flushed.message().find("not delivered"), std::string::npos) << flushed.message();
  EXPECT_EQ(sink.value()->counts().failed, 1);
}

}  // namespace
}  // namespace acmetrace::kafka::testing
