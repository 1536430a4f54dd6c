// Topic creation with the Admin API: partitions and retention as configured, existing topics kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include "acmetrace/kafka/kafka_admin.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

TEST(KafkaTopicsTest, CreatesMissingTopicsAsConfigured) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty()) << "no broker: run through ctest (fixture kafka_broker)";
  KafkaSettings settings;
  settings.brokers = brokers;
  core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  const std::string prefix = "it.topics." + std::to_string(::getpid()) + ".";
  const std::vector<TopicSpec> specs = {{prefix + "week", 4, 1, 604'800'000}, {prefix + "forever", 2, -1, -1}};

  core::Result<std::vector<TopicDescription>> created = admin.value()->EnsureTopics(specs);
  ASSERT_TRUE(created.ok()) << created.status().message();
  ASSERT_EQ(created.value().size(), 2u);
  EXPECT_TRUE(created.value()[0].created);
  EXPECT_TRUE(created.value()[1].created);

  core::Result<TopicDescription> week = admin.value()->Describe(prefix + "week");
  ASSERT_TRUE(week.ok()) << week.status().message();
  EXPECT_EQ(week.value().partitions, 4);
  EXPECT_EQ(week.value().retention_ms, "604800000");
  core::Result<TopicDescription> forever = admin.value()->Describe(prefix + "forever");
  ASSERT_TRUE(forever.ok()) << forever.status().message();
  EXPECT_EQ(forever.value().partitions, 2);
  EXPECT_EQ(forever.value().retention_ms, "-1");

  // kcat agrees on the partition count.
  CommandResult kcat = RunCommand("kcat -b " + brokers + " -L -t " + prefix + "week");
  ASSERT_EQ(kcat.exit_code, 0) << kcat.err;
  EXPECT_NE(kcat.out.find("topic \"" + prefix + "week\" with 4 partitions"), std::string::npos) << kcat.out;

  // A second run finds them and leaves them as they are, even with other settings.
  core::Result<std::vector<TopicDescription>> again =
      admin.value()->EnsureTopics({{prefix + "week", 8, 1, 1000}, {prefix + "forever", 2, -1, -1}});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again.value()[0].created);
  EXPECT_EQ(again.value()[0].partitions, 4);
  week = admin.value()->Describe(prefix + "week");
  ASSERT_TRUE(week.ok());
  EXPECT_EQ(week.value().retention_ms, "604800000");
}

TEST(KafkaTopicsTest, BrokerDefaultPartitionsAreReported) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  KafkaSettings settings;
  settings.brokers = brokers;
  core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  const std::string name = "it.topics." + std::to_string(::getpid()) + ".default";
  core::Result<std::vector<TopicDescription>> created = admin.value()->EnsureTopics({{name, -1, -1, -1}});
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_EQ(created.value()[0].partitions, 1);  // scripts/kafka-local: num.partitions=1
}

TEST(KafkaTopicsTest, DescribingAMissingTopicIsAnError) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  KafkaSettings settings;
  settings.brokers = brokers;
  core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  core::Result<TopicDescription> d = admin.value()->Describe("it.no-such-topic");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace acmetrace::kafka::testing
