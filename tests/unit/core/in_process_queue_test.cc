// InProcessQueue: FIFO, bounded with backpressure, end after every writer closes, cancel.
#include "acmetrace/core/in_process_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace acmetrace::core {
namespace {

Record Job(int64_t ts) {
  JobEvent e;
  e.cluster = "seren";
  e.ts_ms = ts;
  e.job_id = std::to_string(ts);
  return e;
}

TEST(InProcessQueueTest, KeepsOrderAndEndsWhenEveryWriterClosed) {
  InProcessQueue q(8, 2);
  ASSERT_TRUE(q.Write(Job(1)).ok());
  ASSERT_TRUE(q.Write(Job(2)).ok());
  q.CloseWriter();
  ASSERT_TRUE(q.Write(Job(3)).ok());  // the second writer is still open
  q.CloseWriter();
  std::vector<Record> out;
  ASSERT_TRUE(q.Pop(out, 2));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(TimestampMsOf(out[0]), 1);
  EXPECT_EQ(TimestampMsOf(out[1]), 2);
  ASSERT_TRUE(q.Pop(out, 10));
  EXPECT_EQ(out.size(), 1u);
  EXPECT_FALSE(q.Pop(out, 10));  // drained and closed
}

TEST(InProcessQueueTest, AHeartbeatComesAfterTheRecordsBeforeItAndHeartbeatsInARowKeepTheNewest) {
  InProcessQueue q(4, 1);
  ASSERT_TRUE(q.Write(Job(1)).ok());
  ASSERT_TRUE(q.Write(Job(2)).ok());
  for (int64_t t = 3; t <= 1000; ++t) ASSERT_TRUE(q.Heartbeat(t, false).ok());  // never fills the queue
  ASSERT_TRUE(q.Heartbeat(1001, true).ok());
  ASSERT_TRUE(q.Write(Job(1002)).ok());
  q.CloseWriter();
  QueueInput input(q, "in-process");
  std::vector<std::string> items;
  for (;;) {
    Result<InputItem> item = input.Next(0);
    ASSERT_TRUE(item.ok());
    const InputItem& i = item.value();
    if (i.kind == InputItem::Kind::kEnded) break;
    if (i.kind == InputItem::Kind::kRecord) items.push_back("record " + std::to_string(i.ts_ms));
    if (i.kind == InputItem::Kind::kProgress) {
      items.push_back("progress " + std::to_string(i.ts_ms) + (i.paused ? " paused" : ""));
    }
  }
  EXPECT_EQ(items, (std::vector<std::string>{"record 1", "record 2", "progress 1001 paused", "record 1002"}));
}

TEST(InProcessQueueTest, AFullQueueBlocksTheWriterUntilTheReaderTakesRecords) {
  InProcessQueue q(4, 1);
  std::thread writer([&] {
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(q.Write(Job(i)).ok());
    q.CloseWriter();
  });
  std::vector<Record> out;
  int64_t expected = 0;
  size_t max_seen = 0;
  while (q.Pop(out, 3)) {
    max_seen = std::max(max_seen, out.size());
    for (const Record& r : out) EXPECT_EQ(TimestampMsOf(r), expected++);
    EXPECT_LE(q.size(), 4u);  // never more than the capacity held
  }
  writer.join();
  EXPECT_EQ(expected, 100);  // nothing dropped
  EXPECT_LE(max_seen, 3u);
}

TEST(InProcessQueueTest, CancelWakesABlockedWriterWithAnError) {
  InProcessQueue q(1, 1);
  ASSERT_TRUE(q.Write(Job(1)).ok());
  Status blocked = Status::Ok();
  std::thread writer([&] { blocked = q.Write(Job(2)); });
  q.Cancel();
  writer.join();
  EXPECT_FALSE(blocked.ok());
  std::vector<Record> out;
  EXPECT_FALSE(q.Pop(out, 1));
}

}  // namespace
}  // namespace acmetrace::core
