// The consumer stores offsets only for processed records: a group member that stops resumes, in
// the next member, exactly after what it processed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "acmetrace/kafka/kafka_sink.h"
#include "acmetrace/kafka/kafka_source.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

TEST(KafkaConsumerGroupTest, ResumesAfterTheLastProcessedRecord) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty()) << "no broker: run through ctest (fixture kafka_broker)";
  const std::string topic = "it.group." + std::to_string(::getpid());
  KafkaSettings settings;
  settings.brokers = brokers;
  settings.topics = {topic};
  settings.partitions = 2;
  settings.group_id = "it-group-" + std::to_string(::getpid());
  settings.commit_interval_ms = 200;

  constexpr int kRecords = 100;
  {
    core::Result<std::unique_ptr<KafkaSink>> sink = KafkaSink::Open(settings);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    for (int i = 0; i < kRecords; ++i) {
      const std::string key = "seren/" + std::to_string(i % 7);
      const std::string value = "{\"i\":" + std::to_string(i) + "}";
      ASSERT_TRUE(sink.value()->Produce({topic, key, value, 0, kNoTraceTs}).ok());
    }
    ASSERT_TRUE(sink.value()->Flush().ok());
    EXPECT_EQ(sink.value()->counts().delivered, kRecords);
  }

  // The first member reads 40 records but processes only the first 30 it read.
  std::set<std::string> processed;
  {
    core::Result<std::unique_ptr<KafkaSource>> source = KafkaSource::Open(settings, {{topic}, false});
    ASSERT_TRUE(source.ok()) << source.status().message();
    int read = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (read < 40 && std::chrono::steady_clock::now() < deadline) {
      core::Result<const FramedRecord*> next = source.value()->Next(500);
      ASSERT_TRUE(next.ok()) << next.status().message();
      if (next.value() == nullptr) continue;
      ++read;
      if (read <= 30) {
        processed.insert(std::string(next.value()->value));
        ASSERT_TRUE(source.value()->MarkProcessed(*next.value()).ok());
      }
    }
    ASSERT_EQ(read, 40);
    ASSERT_TRUE(source.value()->Close().ok());
  }

  // The next member of the group gets exactly the rest: nothing processed twice, nothing skipped.
  const std::vector<Framed> rest = ConsumeAll(brokers, {topic}, settings.group_id);
  std::set<std::string> rest_values;
  for (const Framed& f : rest) rest_values.insert(f.value);
  EXPECT_EQ(rest.size(), static_cast<size_t>(kRecords - 30));
  EXPECT_EQ(rest_values.size(), rest.size());
  for (const std::string& v : processed) EXPECT_EQ(rest_values.count(v), 0u) << v << " read again";

  // And once everything is processed, a new member has nothing left.
  EXPECT_TRUE(ConsumeAll(brokers, {topic}, settings.group_id).empty());
}

}  // namespace
}  // namespace acmetrace::kafka::testing
