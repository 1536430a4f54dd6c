// The replay's progress markers: a round each progress interval of trace time, a marker only where
// no record of the writer went since the previous round.
#include "acmetrace/kafka/progress_markers.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace acmetrace::kafka {
namespace {

using Marked = std::vector<std::pair<size_t, int32_t>>;

Marked RoundOf(ProgressMarkers& markers) {
  Marked out;
  const core::Status s = markers.Round([&](size_t topic, int32_t partition) {
    out.emplace_back(topic, partition);
    return core::Status::Ok();
  });
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

TEST(ProgressMarkersTest, ARoundIsDueEachIntervalOfTraceTimeAfterTheFirstRecord) {
  ProgressMarkers markers({2}, 60'000);
  EXPECT_FALSE(markers.DueBefore(1'000'000));  // the first record: nothing before it to mark
  EXPECT_FALSE(markers.DueBefore(1'000'000));
  EXPECT_FALSE(markers.DueBefore(1'059'999));
  EXPECT_TRUE(markers.DueBefore(1'060'000));
  EXPECT_FALSE(markers.DueBefore(1'060'000));  // the next one 60 s after the record that made this one
  EXPECT_FALSE(markers.DueBefore(1'119'999));
  EXPECT_TRUE(markers.DueBefore(1'500'000));  // a gap: one round, not one per interval skipped
  EXPECT_FALSE(markers.DueBefore(1'559'999));
  EXPECT_FALSE(markers.DueBefore(kNoTraceTs));  // a message without trace time moves nothing
}

TEST(ProgressMarkersTest, NeverDueWithoutAnInterval) {
  ProgressMarkers markers({3}, 0);
  EXPECT_FALSE(markers.DueBefore(1));
  EXPECT_FALSE(markers.DueBefore(1'000'000'000));
}

TEST(ProgressMarkersTest, OnlyPartitionsWithoutARecordSinceTheLastRoundGetAMarker) {
  ProgressMarkers markers({3, 2}, 60'000);
  // Nothing written yet: every partition of every topic, in topic then partition order.
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
  markers.Wrote(0, 1);
  markers.Wrote(1, 0);
  markers.Wrote(1, 0);
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 2}, {1, 1}}));
  // A record counts for the round after it only: quiet since, these partitions get markers again.
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
}

TEST(ProgressMarkersTest, ARecordOfUnknownPartitionOrTopicCountsForNone) {
  ProgressMarkers markers({2}, 60'000);
  markers.Wrote(0, ProgressMarkers::kUnknownPartition);
  markers.Wrote(0, 2);  // not a partition of the topic as declared
  markers.Wrote(1, 0);  // not a declared topic
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}}));
}

TEST(ProgressMarkersTest, AFailedMarkerStopsTheRound) {
  ProgressMarkers markers({3}, 60'000);
  int calls = 0;
  const core::Status s = markers.Round([&](size_t, int32_t partition) {
    ++calls;
    return partition == 1 ? core::Status::Error("queue gone") : core::Status::Ok();
  });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "queue gone");
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace acmetrace::kafka
