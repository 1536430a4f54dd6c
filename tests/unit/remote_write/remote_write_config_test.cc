// The remote_write.* keys as a user sets them: which batch size each command's queue gets, the byte
// bound, and the checks across keys that refuse a configuration before any work.
#include "acmetrace/remote_write/remote_write_config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace acmetrace::remote_write {
namespace {

core::Config Declared() {
  core::Config config;
  DeclareRemoteWriteConfig(config);
  return config;
}

RemoteWriteSettings With(const std::string& key, const std::string& value) {
  core::Config config = Declared();
  EXPECT_TRUE(config.Set(key, value).ok());
  return RemoteWriteSettingsFromConfig(config);
}

TEST(RemoteWriteConfigTest, BackfillSendsLargeBatchesRunAndExportLiveOnesBothWithinTheByteBound) {
  const RemoteWriteSettings defaults = RemoteWriteSettingsFromConfig(Declared());
  const QueueOptions backfill = defaults.Queue(WriteMode::kBackfill);
  const QueueOptions live = defaults.Queue(WriteMode::kLive);
  EXPECT_EQ(backfill.max_samples_per_send, 500'000);
  EXPECT_EQ(live.max_samples_per_send, 20'000);
  for (const QueueOptions& q : {backfill, live}) {
    EXPECT_EQ(q.max_bytes_per_send, 16 << 20);
    EXPECT_EQ(q.capacity_samples, 1'000'000);
    EXPECT_TRUE(q.Validate().ok()) << q.Validate().message();
  }
  EXPECT_TRUE(defaults.Validate(WriteMode::kBackfill).ok());
  EXPECT_TRUE(defaults.Validate(WriteMode::kLive).ok());
}

TEST(RemoteWriteConfigTest, EachCommandsBatchKeyReachesItsQueueAndOnlyItsQueue) {
  const RemoteWriteSettings backfill_set = With("remote_write.backfill_max_samples_per_send", "1234");
  EXPECT_EQ(backfill_set.Queue(WriteMode::kBackfill).max_samples_per_send, 1234);
  EXPECT_EQ(backfill_set.Queue(WriteMode::kLive).max_samples_per_send, 20'000);
  const RemoteWriteSettings live_set = With("remote_write.max_samples_per_send", "777");
  EXPECT_EQ(live_set.Queue(WriteMode::kLive).max_samples_per_send, 777);
  EXPECT_EQ(live_set.Queue(WriteMode::kBackfill).max_samples_per_send, 500'000);
  const RemoteWriteSettings bytes_set = With("remote_write.max_bytes_per_send", "4096");
  EXPECT_EQ(bytes_set.Queue(WriteMode::kLive).max_bytes_per_send, 4096);
  EXPECT_EQ(bytes_set.Queue(WriteMode::kBackfill).max_bytes_per_send, 4096);
}

TEST(RemoteWriteConfigTest, TheNewKeysRefuseWrongTypesAndValuesOutsideTheirRangeNamingTheKey) {
  const struct {
    const char* key;
    const char* value;
  } bad[] = {
      {"remote_write.backfill_max_samples_per_send", "abc"},
      {"remote_write.backfill_max_samples_per_send", "1.5"},
      {"remote_write.backfill_max_samples_per_send", "0"},
      {"remote_write.backfill_max_samples_per_send", "10000001"},
      {"remote_write.max_bytes_per_send", "16MiB"},
      {"remote_write.max_bytes_per_send", "1023"},
      {"remote_write.max_bytes_per_send", "1073741825"},
      {"remote_write.max_bytes_per_send", ""},
  };
  for (const auto& [key, value] : bad) {
    core::Config config = Declared();
    ASSERT_TRUE(config.Set(key, value).ok());
    const std::vector<std::string> errors = config.Validate();
    ASSERT_EQ(errors.size(), 1u) << key << " = '" << value << "' was accepted";
    EXPECT_EQ(errors[0].rfind(std::string(key) + ": ", 0), 0u) << errors[0];
    EXPECT_THROW(RemoteWriteSettingsFromConfig(config), std::invalid_argument) << key << " = '" << value << "'";
  }
  for (const auto& [key, value] : {std::pair{"remote_write.backfill_max_samples_per_send", "10000000"},
                                   std::pair{"remote_write.max_bytes_per_send", "1024"},
                                   std::pair{"remote_write.max_bytes_per_send", "1073741824"}}) {
    core::Config config = Declared();
    ASSERT_TRUE(config.Set(key, value).ok());
    EXPECT_TRUE(config.Validate().empty()) << key << " = " << value << ": " << config.Validate().front();
  }
}

// A shard's queue must hold one whole request of the command's batch size: refused in one line
// naming both keys and their values, for the command that uses that batch size only.
TEST(RemoteWriteConfigTest, CapacityBelowTheCommandsBatchIsRefusedNamingBothKeys) {
  const RemoteWriteSettings small = With("remote_write.capacity", "100000");
  const core::Status backfill = small.Validate(WriteMode::kBackfill);
  EXPECT_EQ(backfill.message(),
            "remote_write.capacity (100000) must be at least remote_write.backfill_max_samples_per_send (500000), the "
            "samples of one request");
  EXPECT_TRUE(small.Validate(WriteMode::kLive).ok());  // run's batches are 20000

  RemoteWriteSettings live = With("remote_write.capacity", "10");
  live.max_samples_per_send = 100;
  EXPECT_EQ(live.Validate(WriteMode::kLive).message(),
            "remote_write.capacity (10) must be at least remote_write.max_samples_per_send (100), the samples of one "
            "request");
  EXPECT_FALSE(live.Validate(WriteMode::kBackfill).ok());

  RemoteWriteSettings equal;
  equal.capacity = equal.backfill_max_samples_per_send;
  EXPECT_TRUE(equal.Validate(WriteMode::kBackfill).ok());
}

}  // namespace
}  // namespace acmetrace::remote_write
