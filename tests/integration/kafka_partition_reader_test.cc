// KafkaPartitionReader merges its partitions in trace-time order, so an event-time processor buffers
// only what one partition holds out of order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_message.h"
#include "acmetrace/kafka/kafka_partition_reader.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

// Trace times are offsets from here: readers accept trace_ts_ms headers in the trace years only.
constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01T00:00:00Z

// One record into one partition with a trace_ts_ms header (kT0 + offset_ms), as the replay writes it.
void Produce(const std::string& brokers, const std::string& topic, int partition, int64_t offset_ms) {
  const std::string value = "p" + std::to_string(partition) + "@" + std::to_string(offset_ms);
  CommandResult r = RunCommand("printf '%s' '" + value + "' | kcat -b " + brokers + " -P -t " + topic + " -p " +
                               std::to_string(partition) + " -H trace_ts_ms=" + std::to_string(kT0 + offset_ms));
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

struct Read {
  std::vector<int64_t> ts;       // trace times (offsets from kT0) in the order Next handed them over
  std::vector<std::string> values;
};

Read ReadAll(KafkaPartitionReader& reader, size_t want, int max_polls = 200) {
  Read out;
  for (int polls = 0; out.ts.size() < want && polls < max_polls; ++polls) {
    core::Result<ReaderEvent> e = reader.Next(100);
    EXPECT_TRUE(e.ok()) << e.status().message();
    if (!e.ok()) break;
    if (e.value().kind != ReaderEvent::Kind::kRecord) continue;
    out.ts.push_back(e.value().record->trace_ts_ms - kT0);
    out.values.emplace_back(e.value().record->value);
  }
  return out;
}

class KafkaPartitionReaderTest : public ::testing::Test {
 protected:
  // A topic of this test process with that many partitions, on the shared broker.
  void MakeTopic(const std::string& suffix, int partitions) {
    brokers = SharedBroker();
    ASSERT_FALSE(brokers.empty()) << "no broker: run through ctest (fixture kafka_broker)";
    settings.brokers = brokers;
    topic = "it.reader." + std::to_string(::getpid()) + "." + suffix;
    core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
    ASSERT_TRUE(admin.ok()) << admin.status().message();
    ASSERT_TRUE(admin.value()->EnsureTopics({{topic, partitions, 1, -1}}).ok());
  }

  std::string brokers;
  KafkaSettings settings;
  std::string topic;
};

TEST_F(KafkaPartitionReaderTest, MergesPartitionsInTraceTimeOrder) {
  ASSERT_NO_FATAL_FAILURE(MakeTopic("merge", 3));
  // Each partition in its own order; across partitions the times interleave.
  for (int p = 0; p < 3; ++p) {
    for (int k = 0; k < 3; ++k) Produce(brokers, topic, p, 1000 * (1 + p + 3 * k));
  }

  core::Result<std::unique_ptr<KafkaPartitionReader>> reader = KafkaPartitionReader::Open(settings);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  core::Result<std::vector<PartitionInfo>> parts = reader.value()->Describe({topic});
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts.value().size(), 3u);
  std::vector<PartitionStart> starts;
  for (const PartitionInfo& p : parts.value()) starts.push_back({p.topic, p.partition, -1});
  ASSERT_TRUE(reader.value()->Assign(starts).ok());

  const Read read = ReadAll(*reader.value(), 9);
  ASSERT_EQ(read.ts.size(), 9u);
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(read.ts[i], static_cast<int64_t>(1000 * (i + 1))) << "record " << i;
  EXPECT_EQ(read.values.front(), "p0@1000");
  EXPECT_EQ(read.values.back(), "p2@9000");
}

TEST_F(KafkaPartitionReaderTest, PausedPartitionDropsOut) {
  ASSERT_NO_FATAL_FAILURE(MakeTopic("pause", 2));
  Produce(brokers, topic, 0, 1000);
  Produce(brokers, topic, 0, 3000);
  Produce(brokers, topic, 1, 2000);
  Produce(brokers, topic, 1, 4000);

  core::Result<std::unique_ptr<KafkaPartitionReader>> reader = KafkaPartitionReader::Open(settings);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  ASSERT_TRUE(reader.value()->Assign({{topic, 0, -1}, {topic, 1, -1}}).ok());
  Read first = ReadAll(*reader.value(), 1);
  ASSERT_EQ(first.ts, std::vector<int64_t>{1000});
  // Partition 0 stops (as a bounded run stops at the end it saw): its held record (3000) is dropped
  // and only partition 1's come.
  ASSERT_TRUE(reader.value()->Pause(topic, 0).ok());
  Read rest = ReadAll(*reader.value(), 2);
  EXPECT_EQ(rest.ts, (std::vector<int64_t>{2000, 4000}));
  EXPECT_EQ(ReadAll(*reader.value(), 1, /*max_polls=*/5).ts, std::vector<int64_t>{}) << "partition 0 is paused";
}

// The replay's records carry their trace time in their value only (kafka.trace_ts_header off), and
// the reader takes it from there. Written partition by partition, their Kafka timestamps (the write
// times) are in another order than their trace times. A record whose value is cut short before its
// time goes as soon as it heads its partition (to be reported at once), however late it was written.
TEST(KafkaPartitionReaderValueTimeTest, MergesRecordsWithoutHeadersByTheTimeInTheirValues) {
  OwnBroker broker;  // acme.util is a record topic: kept off the shared broker, whose acme.* others read whole
  ASSERT_FALSE(broker.bootstrap().empty()) << "could not start a broker (scripts/kafka-local)";
  KafkaSettings settings;
  settings.brokers = broker.bootstrap();
  {
    core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
    ASSERT_TRUE(admin.ok()) << admin.status().message();
    ASSERT_TRUE(admin.value()->EnsureTopics({{"acme.util", 3, 1, -1}}).ok());
  }
  auto produce = [&](int partition, const std::string& value) {
    CommandResult r = RunCommand("printf '%s' '" + value + "' | kcat -b " + broker.bootstrap() +
                                 " -P -t acme.util -p " + std::to_string(partition));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  auto util = [](int partition, int64_t offset_ms) {
    return R"({"v":1,"cluster":"seren","node":"n)" + std::to_string(partition) + R"(","ts_ms":)" +
           std::to_string(kT0 + offset_ms) + "}";
  };
  for (int p = 0; p < 3; ++p) {
    for (int k = 0; k < 3; ++k) ASSERT_NO_FATAL_FAILURE(produce(p, util(p, 1000 * (1 + p + 3 * k))));
  }
  const std::string cut = R"({"v":1,"cluster":"seren","node":"n1","ts_ms":)";
  ASSERT_NO_FATAL_FAILURE(produce(1, cut));

  core::Result<std::unique_ptr<KafkaPartitionReader>> reader = KafkaPartitionReader::Open(settings);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  ASSERT_TRUE(reader.value()->Assign({{"acme.util", 0, -1}, {"acme.util", 1, -1}, {"acme.util", 2, -1}}).ok());
  const Read read = ReadAll(*reader.value(), 10);
  ASSERT_EQ(read.values.size(), 10u);
  std::vector<std::string> want;
  for (int i = 1; i <= 9; ++i) want.push_back(util((i - 1) % 3, 1000 * i));
  want.insert(want.begin() + 8, cut);  // after partition 1's last record (8000), before 9000
  EXPECT_EQ(read.values, want);
  EXPECT_EQ(read.ts[8] + kT0, kInvalidTraceTs);
  EXPECT_EQ(read.ts[0], 1000);
}

}  // namespace
}  // namespace acmetrace::kafka::testing
