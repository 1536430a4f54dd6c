// The replay's progress markers: a round each progress interval of trace time, a marker only into
// the partitions whose last record is more than an interval before the round.
#include "acmetrace/core/stream_markers.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace acmetrace::core {
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

TEST(ProgressMarkersTest, OnlyPartitionsWithoutARecordInTheLastIntervalGetAMarker) {
  ProgressMarkers markers({3, 2}, 60'000);
  ASSERT_FALSE(markers.DueBefore(0));
  markers.Wrote(0, 1, 0);
  markers.Wrote(1, 0, 30'000);
  ASSERT_TRUE(markers.DueBefore(60'000));
  // Records at or after 0, one interval before the round: those partitions have said as much.
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 2}, {1, 1}}));
  markers.Wrote(0, 1, 60'000);
  markers.Wrote(1, 0, 100'000);
  markers.Wrote(1, 0, 110'000);
  ASSERT_TRUE(markers.DueBefore(125'000));
  // Partition 0/1's last record (60 s) is more than an interval before the round (125 s): a marker.
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}, {0, 2}, {1, 1}}));
  // A gap of quiet trace time: a record long ago does not stand for a marker now.
  ASSERT_TRUE(markers.DueBefore(600'000));
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
}

TEST(ProgressMarkersTest, EveryPartitionGetsOneBeforeAnyRecordAndInARoundNotFoundDue) {
  ProgressMarkers markers({3, 2}, 60'000);
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
  markers.Wrote(0, 0, 0);
  EXPECT_EQ(RoundOf(markers), (Marked{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
}

TEST(ProgressMarkersTest, ARecordOfUnknownPartitionOrTopicCountsForNone) {
  ProgressMarkers markers({2}, 60'000);
  ASSERT_FALSE(markers.DueBefore(0));
  markers.Wrote(0, ProgressMarkers::kUnknownPartition, 0);
  markers.Wrote(0, 2, 0);  // not a partition of the topic as declared
  markers.Wrote(1, 0, 0);  // not a declared topic
  markers.Wrote(0, 1, kNoTraceTs);  // no trace time: says nothing
  ASSERT_TRUE(markers.DueBefore(60'000));
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
}  // namespace acmetrace::core

namespace acmetrace::core {
namespace {

// The file transport's marker lines: what AppendMarkerLine writes reads back, text (control
// characters included) and trace time; a record or broken JSON is no marker line.
TEST(MarkerLineTest, WhatIsWrittenReadsBackAndRecordsAreNoMarkers) {
  std::string line;
  AppendMarkerLine(line, "end:seren,ka\nlos\x01", 1688140800000);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  std::string text, ts;
  ASSERT_TRUE(ReadMarkerLine(line, text, ts)) << line;
  EXPECT_EQ(text, "end:seren,ka\nlos\x01");
  EXPECT_EQ(ts, "1688140800000");
  line.clear();
  AppendMarkerLine(line, std::string(kProgressMarker), kNoTraceTs);
  line.pop_back();
  ASSERT_TRUE(ReadMarkerLine(line, text, ts)) << line;
  EXPECT_EQ(text, kProgressMarker);
  EXPECT_EQ(ts, "");
  EXPECT_FALSE(ReadMarkerLine(R"({"topic":"acme.jobs","key":"k","value":{}})", text, ts));
  EXPECT_FALSE(ReadMarkerLine(R"({"marker":"progress","trace_ts_ms":)", text, ts));
  EXPECT_FALSE(ReadMarkerLine(R"({"marker":"progress","trace_ts_ms":"1"})", text, ts));
  EXPECT_FALSE(ReadMarkerLine(R"({"marker":"progress","other":1})", text, ts));
}

}  // namespace
}  // namespace acmetrace::core
