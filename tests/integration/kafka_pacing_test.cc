// The replay clock in real time at a high speed, into a real broker: each record's Kafka timestamp
// (its replay time) is its trace time divided by the speed, from one anchor, within a tolerance loose
// enough for a shared CI machine (the strict goal, 50 ms at --speed 360, is bench/pacing_accuracy.sh's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

TEST(KafkaPacingTest, RecordsLeaveAtTraceTimeOverSpeed) {
  OwnBroker broker;  // empty topics of its own: every record read back is this replay's
  const std::string& brokers = broker.bootstrap();
  ASSERT_FALSE(brokers.empty()) << "could not start a broker (scripts/kafka-local)";
  const std::string data = FreshDir("pacing-data");
  WriteSyntheticRelease(data, /*jobs=*/40, /*nodes=*/2, /*hours=*/1);
  const std::string dir = FreshDir("pacing");
  const std::string suffix = std::to_string(::getpid());
  std::ofstream(dir + "/acmetrace.yaml") << "kafka:\n  partitions: 1\n  linger_ms: 0\n";
  constexpr double kSpeed = 720;  // an hour of trace in 5 s
  const CommandResult replay =
      RunCommand(std::string(Binary()) + " --config " + dir + "/acmetrace.yaml replay --data " + data +
                 " --speed 720 --sink kafka --brokers " + brokers);
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const std::vector<Framed> got = ConsumeAll(brokers, {"acme.jobs", "acme.util", "acme.power"}, "pace-" + suffix);
  ASSERT_GT(got.size(), 100u);

  int64_t trace0 = INT64_MAX;
  for (const Framed& f : got) trace0 = std::min(trace0, f.trace_ts_ms);
  // The anchor: the earliest wall time any record's schedule implies.
  auto scheduled_offset = [&](const Framed& f) { return static_cast<double>(f.trace_ts_ms - trace0) / kSpeed; };
  double anchor = 1e300;
  for (const Framed& f : got) anchor = std::min(anchor, static_cast<double>(f.timestamp_ms) - scheduled_offset(f));
  double worst_late = 0, trace_span = 0, wall_span = 0;
  int64_t wall_min = INT64_MAX, wall_max = 0;
  for (const Framed& f : got) {
    worst_late = std::max(worst_late, static_cast<double>(f.timestamp_ms) - scheduled_offset(f) - anchor);
    trace_span = std::max(trace_span, scheduled_offset(f));
    wall_min = std::min(wall_min, f.timestamp_ms);
    wall_max = std::max(wall_max, f.timestamp_ms);
  }
  wall_span = static_cast<double>(wall_max - wall_min);
  std::printf("pacing at speed %.0f: %zu records over %.0f ms of schedule, %.0f ms of replay; worst lateness %.0f ms\n",
              kSpeed, got.size(), trace_span, wall_span, worst_late);
  EXPECT_GT(trace_span, 4000);                   // the data spans about 5 s of replay...
  EXPECT_GE(wall_span, trace_span - 5);          // ...which really took that long (paced, not max speed)
  EXPECT_LE(worst_late, 250) << "a record left more than 250 ms after its schedule";
}

}  // namespace
}  // namespace acmetrace::kafka::testing
