// The queue as a receiver and its operator see it: every sample delivered once per success, series
// order kept, retries with backoff on 5xx/429/no answer, other statuses refused and counted, a
// bounded number of attempts. A scripted transport answers; a recording sleeper never sleeps.
#include "acmetrace/remote_write/write_queue.h"

#include "acmetrace/remote_write/http_transport.h"
#include "acmetrace/remote_write/queue_metrics.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

namespace acmetrace::remote_write {
namespace {

// What every transport of a test saw, and the answers it gives (a script shared by the shards).
struct Receiver {
  std::mutex mu;
  std::vector<int> script;  // statuses to answer in turn (0: no answer); then 200
  std::vector<int64_t> retry_after_ms;  // the Retry-After of each scripted answer (-1: none)
  size_t next = 0;
  std::string refuse_name;  // answer 400 to every request holding a series of this __name__
  std::map<std::string, std::vector<Sample>> stored;  // __name__ -> samples accepted, in order
  int posts = 0;
  int senders = 0;  // transports made so far: each shard's sender has its own
  // Per sender, each request's WriteRequest size before snappy, in the order posted.
  std::map<int, std::vector<size_t>> uncompressed;

  core::Result<HttpAnswer> Answer(const std::string& body, int sender) {
    std::lock_guard<std::mutex> lock(mu);
    ++posts;
    size_t raw = 0;
    EXPECT_TRUE(snappy::GetUncompressedLength(body.data(), body.size(), &raw));
    uncompressed[sender].push_back(raw);
    const size_t turn = next;
    int status = next < script.size() ? script[next++] : 200;
    if (!refuse_name.empty()) {
      core::Result<std::vector<TimeSeries>> decoded = DecodeWriteRequest(body);
      for (const TimeSeries& s : decoded.value()) status = s.labels.at(0).value == refuse_name ? 400 : status;
    }
    if (status == 0) return core::Status::Error("connection refused");
    if (status == 200) {
      core::Result<std::vector<TimeSeries>> decoded = DecodeWriteRequest(body);
      EXPECT_TRUE(decoded.ok());
      for (const TimeSeries& s : decoded.value()) {
        std::vector<Sample>& into = stored[s.labels.at(0).value];
        into.insert(into.end(), s.samples.begin(), s.samples.end());
      }
    }
    return HttpAnswer{status, status == 200 ? "" : "out of order sample\nfor series x",
                      turn < retry_after_ms.size() ? retry_after_ms[turn] : -1};
  }
};

class ScriptedTransport : public WriteTransport {
 public:
  explicit ScriptedTransport(Receiver& receiver) : receiver_(receiver) {
    std::lock_guard<std::mutex> lock(receiver.mu);
    sender_ = receiver.senders++;
  }
  core::Result<HttpAnswer> Post(const std::string& body) override { return receiver_.Answer(body, sender_); }

 private:
  Receiver& receiver_;
  int sender_ = 0;
};

class RecordingSleeper : public Sleeper {
 public:
  void SleepMs(int64_t ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    waits_.push_back(ms);
  }
  std::vector<int64_t> waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> waits_;
};

QueueOptions SmallOptions(int shards) {
  QueueOptions o;
  o.shards = shards;
  o.max_samples_per_send = 10;
  o.capacity_samples = 20;
  o.max_attempts = 4;
  o.min_backoff_ms = 30;
  o.max_backoff_ms = 100;
  return o;
}

WriteQueue::TransportFactory Factory(Receiver& receiver) {
  return [&receiver] { return std::make_unique<ScriptedTransport>(receiver); };
}

TEST(WriteQueueTest, EverySampleArrivesOnceInSeriesOrderAcrossShards) {
  Receiver receiver;
  RecordingSleeper sleeper;
  WriteQueue queue(SmallOptions(3), Factory(receiver), sleeper);
  std::vector<uint32_t> ids;
  for (int s = 0; s < 7; ++s) ids.push_back(queue.AddSeries({{"__name__", "m" + std::to_string(s)}}));
  // 7 series x 100 scrapes, several batches, more than a shard's capacity: the producer waits.
  for (int t = 0; t < 100; ++t) {
    for (uint32_t id : ids) ASSERT_TRUE(queue.Append(id, {t * 15'000, static_cast<double>(t)}).ok());
  }
  ASSERT_TRUE(queue.Close().ok());
  ASSERT_EQ(receiver.stored.size(), 7u);
  for (const auto& [name, samples] : receiver.stored) {
    ASSERT_EQ(samples.size(), 100u) << name;
    for (int t = 0; t < 100; ++t) EXPECT_EQ(samples[static_cast<size_t>(t)].ts_ms, t * 15'000) << name;
  }
  const QueueStats st = queue.Stats();
  EXPECT_EQ(st.samples_sent, 700);
  EXPECT_EQ(st.samples_failed, 0);
  EXPECT_EQ(st.samples_pending, 0);
  EXPECT_EQ(st.requests, receiver.posts);
  EXPECT_GE(st.requests, 70);  // at most 10 samples a request
  EXPECT_TRUE(sleeper.waits().empty());
}

TEST(WriteQueueTest, RetriesOn5xx429AndNoAnswerWithDoublingBackoffNothingLost) {
  Receiver receiver;
  receiver.script = {503, 429, 0};  // the first request: three failures, then accepted
  RecordingSleeper sleeper;
  WriteQueue queue(SmallOptions(1), Factory(receiver), sleeper);
  const uint32_t id = queue.AddSeries({{"__name__", "m"}});
  for (int t = 0; t < 10; ++t) ASSERT_TRUE(queue.Append(id, {t, 1.0}).ok());
  ASSERT_TRUE(queue.Close().ok());
  EXPECT_EQ(receiver.stored["m"].size(), 10u);
  EXPECT_EQ(sleeper.waits(), (std::vector<int64_t>{30, 60, 100}));  // doubled, capped at max_backoff_ms
  const QueueStats st = queue.Stats();
  EXPECT_EQ(st.samples_sent, 10);
  EXPECT_EQ(st.samples_retried, 30);
  EXPECT_EQ(st.requests, 4);
  EXPECT_EQ(st.samples_failed, 0);
}

TEST(WriteQueueTest, A400IsNotRetriedButCountedWithItsBody) {
  Receiver receiver;
  receiver.script = {400};
  RecordingSleeper sleeper;
  WriteQueue queue(SmallOptions(1), Factory(receiver), sleeper);
  const uint32_t id = queue.AddSeries({{"__name__", "m"}});
  for (int t = 0; t < 25; ++t) ASSERT_TRUE(queue.Append(id, {t, 1.0}).ok());
  EXPECT_TRUE(queue.Close().ok());  // a refusal is reported through the stats, the rest still goes
  const QueueStats st = queue.Stats();
  EXPECT_EQ(st.samples_failed, 10);
  EXPECT_EQ(st.samples_sent, 15);
  EXPECT_EQ(st.requests_rejected, 1);
  EXPECT_EQ(st.first_rejection, "HTTP 400: out of order sample for series x");
  EXPECT_TRUE(sleeper.waits().empty());
  EXPECT_EQ(receiver.stored["m"].size(), 15u);
}

TEST(WriteQueueTest, GivesUpAfterMaxAttemptsAndFailsTheProducer) {
  Receiver receiver;
  receiver.script = std::vector<int>(1000, 500);
  RecordingSleeper sleeper;
  WriteQueue queue(SmallOptions(1), Factory(receiver), sleeper);
  const uint32_t id = queue.AddSeries({{"__name__", "m"}});
  core::Status appended = core::Status::Ok();
  for (int t = 0; t < 1000 && appended.ok(); ++t) appended = queue.Append(id, {t, 1.0});
  // The producer learns of it at the latest when the full queue would have made it wait forever.
  EXPECT_FALSE(appended.ok());
  core::Status closed = queue.Close();
  ASSERT_FALSE(closed.ok());
  EXPECT_NE(closed.message().find("after 4 attempts: HTTP 500"), std::string::npos) << closed.message();
  const QueueStats st = queue.Stats();
  EXPECT_EQ(st.samples_sent, 0);
  EXPECT_EQ(st.samples_pending, 0);  // every appended sample is counted as failed, none vanishes
  EXPECT_GT(st.samples_failed, 0);
  EXPECT_EQ(sleeper.waits().size(), 3u);
}

TEST(WriteQueueTest, RetryAfterOf429And503IsWaitedBoundedByMaxBackoffOthersUseTheBackoff) {
  Receiver receiver;
  // 429 says 50 ms; 503 says an hour, cut to max_backoff_ms; a 500 is not a status the protocol
  // gives Retry-After to: the doubling backoff (30, 60, then 120 ms).
  receiver.script = {429, 503, 500};
  receiver.retry_after_ms = {50, 3'600'000, 7};
  RecordingSleeper sleeper;
  QueueOptions o = SmallOptions(1);
  o.max_backoff_ms = 1'000;
  WriteQueue queue(o, Factory(receiver), sleeper);
  const uint32_t id = queue.AddSeries({{"__name__", "m"}});
  for (int t = 0; t < 10; ++t) ASSERT_TRUE(queue.Append(id, {t, 1.0}).ok());
  ASSERT_TRUE(queue.Close().ok());
  EXPECT_EQ(sleeper.waits(), (std::vector<int64_t>{50, 1'000, 120}));
  EXPECT_EQ(receiver.stored["m"].size(), 10u);
}

TEST(WriteQueueTest, RefusalsAreCountedPerSeriesTheRestDelivered) {
  Receiver receiver;
  receiver.refuse_name = "bad";
  RecordingSleeper sleeper;
  QueueOptions o = SmallOptions(1);
  o.max_samples_per_send = 4;
  o.capacity_samples = 8;
  WriteQueue queue(o, Factory(receiver), sleeper);
  const uint32_t good = queue.AddSeries({{"__name__", "good"}});
  const uint32_t bad = queue.AddSeries({{"__name__", "bad"}, {"pod", "p\"1"}});
  // Requests of 4 samples: good alone (two), then good and bad together (two).
  for (int t = 0; t < 8; ++t) ASSERT_TRUE(queue.Append(good, {t, 1.0}).ok());
  for (int t = 8; t < 12; ++t) {
    ASSERT_TRUE(queue.Append(good, {t, 1.0}).ok());
    ASSERT_TRUE(queue.Append(bad, {t, 2.0}).ok());
  }
  EXPECT_TRUE(queue.Close().ok());
  const QueueStats st = queue.Stats();
  EXPECT_EQ(st.requests_rejected, 2);
  EXPECT_EQ(st.samples_failed, 8);
  EXPECT_EQ(st.samples_sent, 8);
  EXPECT_EQ(st.series_refused, 2);
  EXPECT_EQ(st.bytes_sent > 0, true);
  EXPECT_EQ(st.shards, 1);
  EXPECT_EQ(receiver.stored["good"].size(), 8u);
  const std::vector<RefusedSeries> refused = queue.Refused(10);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(SeriesText(refused[0].labels), "good{}");
  EXPECT_EQ(refused[0].samples, 4);
  EXPECT_EQ(refused[0].requests, 2);
  EXPECT_EQ(SeriesText(refused[1].labels), "bad{pod=\"p\\\"1\"}");
  EXPECT_EQ(refused[1].samples, 4);
  EXPECT_EQ(queue.Refused(1).size(), 1u);
}

TEST(WriteQueueTest, FlushSendsAPartialBatch) {
  Receiver receiver;
  RecordingSleeper sleeper;
  WriteQueue queue(SmallOptions(2), Factory(receiver), sleeper);
  const uint32_t id = queue.AddSeries({{"__name__", "m"}});
  ASSERT_TRUE(queue.Append(id, {1, 1.0}).ok());
  ASSERT_TRUE(queue.Flush().ok());
  ASSERT_TRUE(queue.Append(id, {2, 1.0}).ok());
  ASSERT_TRUE(queue.Close().ok());
  EXPECT_EQ(receiver.posts, 2);  // the flushed sample, then the closing one: not one batch of two
  EXPECT_EQ(receiver.stored["m"].size(), 2u);
}

// Options where only the byte bound ends a batch.
QueueOptions ByteBoundOptions(int shards, int64_t max_bytes) {
  QueueOptions o = SmallOptions(shards);
  o.max_samples_per_send = 1'000'000;
  o.capacity_samples = 1'000'000;
  o.max_bytes_per_send = max_bytes;
  return o;
}

// What a receiver with a request size limit checks: no request passes the bound. And the bound does
// not cut requests far short of it either (not a batch per sample): each sender's requests but its
// last fill three quarters of it at least (the queue counts a sample at its largest, 22 bytes, where
// today's times take 18).
void ExpectRequestsWithinTheBound(Receiver& receiver, int64_t max_bytes) {
  std::lock_guard<std::mutex> lock(receiver.mu);
  ASSERT_FALSE(receiver.uncompressed.empty());
  for (const auto& [sender, sizes] : receiver.uncompressed) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_LE(static_cast<int64_t>(sizes[i]), max_bytes) << "sender " << sender << " request " << i;
      if (i + 1 < sizes.size()) {
        EXPECT_GT(static_cast<int64_t>(sizes[i]), max_bytes * 3 / 4) << "sender " << sender << " request " << i;
      }
    }
  }
}

// Samples of every encoded size: times of 0 (left out), one byte, today's ms (6 bytes), negative
// (10 bytes); values +0.0 (left out), -0.0, NaN, others.
Sample OddSample(int i, int64_t base_ms) {
  const double values[] = {0.0, -0.0, std::numeric_limits<double>::quiet_NaN(), 1.5, 1e300};
  const int64_t times[] = {0, 5, base_ms, -base_ms};
  return {times[i % 4] + (i % 4 == 0 ? 0 : i), values[i % 5]};
}

// Live-sized scrapes of history: a request holding one sample per series carries every series's
// labels, so the byte bound, not the sample count, ends each batch.
TEST(WriteQueueTest, ManySeriesOfOneSampleEachNoRequestPassesTheByteBound) {
  constexpr int64_t kMaxBytes = 4'096;
  Receiver receiver;
  RecordingSleeper sleeper;
  WriteQueue queue(ByteBoundOptions(3, kMaxBytes), Factory(receiver), sleeper);
  std::vector<uint32_t> ids;
  for (int s = 0; s < 3'000; ++s) {
    ids.push_back(queue.AddSeries({{"__name__", "m" + std::to_string(s)},
                                   {"instance", "node-" + std::to_string(s % 97)},
                                   {"pod", std::string(static_cast<size_t>(s % 150), 'p')}}));
  }
  for (size_t s = 0; s < ids.size(); ++s) {
    ASSERT_TRUE(queue.Append(ids[s], OddSample(static_cast<int>(s), 1'688'169'600'000)).ok());
  }
  ASSERT_TRUE(queue.Close().ok());
  ExpectRequestsWithinTheBound(receiver, kMaxBytes);
  EXPECT_GT(receiver.posts, 3 * 20);  // about 0.5 MB in 4 kB requests: the bound cut them
  ASSERT_EQ(receiver.stored.size(), ids.size());
  for (size_t s = 0; s < ids.size(); ++s) {
    const std::vector<Sample>& got = receiver.stored["m" + std::to_string(s)];
    ASSERT_EQ(got.size(), 1u) << s;
    const Sample want = OddSample(static_cast<int>(s), 1'688'169'600'000);
    EXPECT_EQ(got[0].ts_ms, want.ts_ms) << s;
    EXPECT_EQ(std::bit_cast<uint64_t>(got[0].value), std::bit_cast<uint64_t>(want.value)) << s;
  }
  const QueueStats st = queue.Stats();
  EXPECT_EQ(st.samples_sent, 3'000);
  EXPECT_EQ(st.samples_pending, 0);
}

// A backfill's batches: few series, many samples each, a series's samples split across requests
// by the bound and still arriving in order, once.
TEST(WriteQueueTest, FewSeriesOfManySamplesNoRequestPassesTheByteBoundOrderKept) {
  constexpr int64_t kMaxBytes = 2'048;
  Receiver receiver;
  RecordingSleeper sleeper;
  WriteQueue queue(ByteBoundOptions(2, kMaxBytes), Factory(receiver), sleeper);
  std::vector<uint32_t> ids;
  for (int s = 0; s < 5; ++s) ids.push_back(queue.AddSeries({{"__name__", "m" + std::to_string(s)}, {"gpu", "0"}}));
  for (int t = 0; t < 4'000; ++t) {
    for (uint32_t id : ids) ASSERT_TRUE(queue.Append(id, {1'688'169'600'000 + t * 15'000, t + 0.25}).ok());
  }
  ASSERT_TRUE(queue.Close().ok());
  ExpectRequestsWithinTheBound(receiver, kMaxBytes);
  EXPECT_GT(receiver.posts, 20'000 * 18 / kMaxBytes);  // 18 bytes a sample: the bound cut them
  ASSERT_EQ(receiver.stored.size(), 5u);
  for (const auto& [name, samples] : receiver.stored) {
    ASSERT_EQ(samples.size(), 4'000u) << name;
    for (int t = 0; t < 4'000; ++t) {
      ASSERT_EQ(samples[static_cast<size_t>(t)].ts_ms, 1'688'169'600'000 + t * 15'000) << name << " " << t;
    }
  }
}

// Samples at their largest (a value and a time before 1970: a 10-byte varint), so the queue's count
// is exact, and series whose labels are much of a request: a series split across requests by the
// bound carries its labels in each, and each request still keeps to the bound.
TEST(WriteQueueTest, ASeriesSplitByTheByteBoundCountsItsLabelsInEachRequest) {
  constexpr int64_t kMaxBytes = 1'024;
  Receiver receiver;
  RecordingSleeper sleeper;
  WriteQueue queue(ByteBoundOptions(1, kMaxBytes), Factory(receiver), sleeper);
  std::vector<uint32_t> ids;
  for (int s = 0; s < 2; ++s) {
    ids.push_back(queue.AddSeries({{"__name__", "m" + std::to_string(s)}, {"note", std::string(400, 'n')}}));
  }
  constexpr int64_t kBefore1970 = -1'000'000'000'000;
  for (int t = 0; t < 200; ++t) {
    for (uint32_t id : ids) ASSERT_TRUE(queue.Append(id, {kBefore1970 + t, 1.0}).ok());
  }
  ASSERT_TRUE(queue.Close().ok());
  ExpectRequestsWithinTheBound(receiver, kMaxBytes);
  for (const auto& [name, samples] : receiver.stored) {
    ASSERT_EQ(samples.size(), 200u) << name;
    for (int t = 0; t < 200; ++t) ASSERT_EQ(samples[static_cast<size_t>(t)].ts_ms, kBefore1970 + t) << name;
  }
}

// A series whose labels alone pass the bound cannot be sent within it: each of its samples goes in a
// request of its own (a receiver may refuse it, and the report names the series), and the other
// series's requests keep to the bound.
TEST(WriteQueueTest, ASeriesLargerThanTheByteBoundGoesAloneTheOthersWithinIt) {
  constexpr int64_t kMaxBytes = 1'024;
  Receiver receiver;
  RecordingSleeper sleeper;
  WriteQueue queue(ByteBoundOptions(1, kMaxBytes), Factory(receiver), sleeper);
  const std::vector<Label> big_labels = {{"__name__", "big"}, {"note", std::string(2'000, 'x')}};
  const uint32_t big = queue.AddSeries(big_labels);
  std::vector<uint32_t> small;
  for (int s = 0; s < 40; ++s) small.push_back(queue.AddSeries({{"__name__", "s" + std::to_string(s)}}));
  for (int t = 0; t < 10; ++t) {
    for (uint32_t id : small) ASSERT_TRUE(queue.Append(id, {t + 1, 1.0}).ok());
    ASSERT_TRUE(queue.Append(big, {t + 1, 2.0}).ok());
  }
  ASSERT_TRUE(queue.Close().ok());
  // The size of a request of the big series with one sample and nothing else.
  const std::string alone_body = EncodeWriteRequest(std::vector<TimeSeries>{{big_labels, {{1, 2.0}}}});
  size_t big_alone = 0;
  ASSERT_TRUE(snappy::GetUncompressedLength(alone_body.data(), alone_body.size(), &big_alone));
  int alone = 0;
  for (size_t size : receiver.uncompressed.at(0)) {
    if (static_cast<int64_t>(size) <= kMaxBytes) continue;
    EXPECT_EQ(size, big_alone);
    ++alone;
  }
  EXPECT_EQ(alone, 10);
  EXPECT_EQ(receiver.stored["big"].size(), 10u);
  for (int s = 0; s < 40; ++s) EXPECT_EQ(receiver.stored["s" + std::to_string(s)].size(), 10u) << s;
  EXPECT_EQ(queue.Stats().samples_sent, 410);
}

TEST(QueueMetricsTest, PrometheusRemoteStorageStyleTextWithTheUrl) {
  QueueStats st;
  st.samples_sent = 7;
  st.samples_pending = 2;
  st.shards = 4;
  st.bytes_sent = 1234;
  std::string text;
  AppendQueueMetrics(text, st, "http://h:1/api/v1/write?a=\"b\"");
  EXPECT_NE(text.find("# TYPE acmetrace_remote_storage_samples_total counter\n"
                      "acmetrace_remote_storage_samples_total{url=\"http://h:1/api/v1/write?a=\\\"b\\\"\"} 7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("acmetrace_remote_storage_samples_pending{url="), std::string::npos);
  EXPECT_NE(text.find("} 1234\n"), std::string::npos);
  EXPECT_NE(text.find("acmetrace_remote_storage_shards{url=\"http://h:1/api/v1/write?a=\\\"b\\\"\"} 4\n"),
            std::string::npos);
  for (const char* name : {"samples_failed_total", "samples_retried_total", "requests_total",
                           "requests_refused_total", "series_refused"}) {
    EXPECT_NE(text.find(std::string("acmetrace_remote_storage_") + name + "{"), std::string::npos) << name;
  }
}

TEST(RetryAfterTest, SecondsOrAnHttpDateElseNone) {
  const int64_t now = 1'445'412'480'000;  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(ParseRetryAfterMs("120", now), 120'000);
  EXPECT_EQ(ParseRetryAfterMs("0", now), 0);
  EXPECT_EQ(ParseRetryAfterMs("Wed, 21 Oct 2015 07:28:30 GMT", now), 30'000);
  EXPECT_EQ(ParseRetryAfterMs("Wed, 21 Oct 2015 07:27:00 GMT", now), 0);  // past: at once
  EXPECT_EQ(ParseRetryAfterMs("", now), -1);
  EXPECT_EQ(ParseRetryAfterMs("-5", now), -1);
  EXPECT_EQ(ParseRetryAfterMs("12abc", now), -1);
  EXPECT_EQ(ParseRetryAfterMs("soon", now), -1);
  EXPECT_EQ(ParseRetryAfterMs("99999999999999999999999", now), -1);
  EXPECT_GT(ParseRetryAfterMs("9223372036854775", now), 0);  // no overflow into a negative wait
}

TEST(WriteQueueTest, OptionsAreValidated) {
  QueueOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.capacity_samples = o.max_samples_per_send - 1;
  EXPECT_NE(o.Validate().message().find("capacity_samples"), std::string::npos);
  o = QueueOptions{};
  o.max_backoff_ms = o.min_backoff_ms - 1;
  EXPECT_FALSE(o.Validate().ok());
  o = QueueOptions{};
  o.max_bytes_per_send = 0;
  EXPECT_NE(o.Validate().message().find("max_bytes_per_send"), std::string::npos);
}

TEST(BodyExcerptTest, OneLineCut) {
  EXPECT_EQ(BodyExcerpt("a\nb\r\n"), "a b");
  EXPECT_EQ(BodyExcerpt(std::string(300, 'x'), 5), "xxxxx...");
}

}  // namespace
}  // namespace acmetrace::remote_write
