// Replayer pacing on a ManualClock (no test sleeps), its results and failures; and the acmetrace
// binary's exit codes (0 ok, 1 failure, 2 bad usage) on the fixture release.
#include "acmetrace/producers/replay.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "acmetrace/core/log.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/producers/replay_config.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

constexpr int64_t kTrace0 = 1677601102000;

core::JobEvent Job(int64_t ts_ms, const std::string& id = "1") {
  core::JobEvent e;
  e.cluster = "seren";
  e.ts_ms = ts_ms;
  e.job_id = id;
  return e;
}

core::UtilSample Util(int64_t ts_ms) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = "10.140.1.10";
  s.ts_ms = ts_ms;
  return s;
}

// Hands out a fixed list of records; optionally reports an input error before record `error_at`.
class VectorSource : public RecordSource {
 public:
  VectorSource(std::vector<core::Record> records, core::InputErrors* errors = nullptr, size_t error_at = SIZE_MAX)
      : records_(std::move(records)), errors_(errors), error_at_(error_at) {}
  TraceSpan span() const override { return span_; }
  void set_span(TraceSpan span) { span_ = span; }
  const core::Record* Next() override {
    if (next_ >= records_.size()) return nullptr;
    if (next_ == error_at_ && errors_ != nullptr) {
      errors_->Report("seren", "job_trace", "trace_seren.csv", 7, "gpu_num", "not a non-negative integer: 'x'");
    }
    return &records_[next_++];
  }
  int64_t bytes_read() const override { return static_cast<int64_t>(next_) * 100; }
  int64_t bytes_total() const override { return static_cast<int64_t>(records_.size()) * 100; }
  core::Status status() const override { return status_; }
  void set_status(core::Status s) { status_ = std::move(s); }

 private:
  std::vector<core::Record> records_;
  core::InputErrors* errors_;
  size_t error_at_;
  size_t next_ = 0;
  core::Status status_ = core::Status::Ok();
  TraceSpan span_;
};

// Remembers when (on the clock) each record was written, and can act like a slow or broken sink.
class RecordingSink : public core::RecordSink {
 public:
  explicit RecordingSink(core::ManualClock& clock) : clock_(clock) {}
  core::Status Write(const core::Record& record) override {
    if (fail_at_ == writes_.size()) return core::Status::Error("sink: broker went away");
    writes_.push_back({clock_.NowMs(), core::TimestampMsOf(record)});
    clock_.AdvanceMs(cost_ms_);
    return core::Status::Ok();
  }
  core::Status Flush() override {
    ++flushes_;
    flushed_at_.push_back(writes_.size());
    if (fail_flush_) return core::Status::Error("sink: flush failed, disk full");
    return core::Status::Ok();
  }
  core::Status Send() override {
    sent_at_.push_back(writes_.size());
    if (fail_flush_) return core::Status::Error("sink: send failed, disk full");
    return core::Status::Ok();
  }
  core::Status Prepare(int64_t first_trace_ts_ms) override {
    prepared_.push_back({writes_.size(), first_trace_ts_ms});
    clock_.AdvanceMs(prepare_cost_ms_);
    return prepare_error_.empty() ? core::Status::Ok() : core::Status::Error(prepare_error_);
  }
  // Each Prepare: how many records had been written, and the trace time it was given.
  const std::vector<std::pair<size_t, int64_t>>& prepared() const { return prepared_; }
  void set_prepare(int64_t cost_ms, std::string error = {}) {
    prepare_cost_ms_ = cost_ms;
    prepare_error_ = std::move(error);
  }
  // How many records had been written at each flush, and at each send (on its way, not waited for).
  const std::vector<size_t>& flushed_at() const { return flushed_at_; }
  const std::vector<size_t>& sent_at() const { return sent_at_; }
  void set_fail_flush() { fail_flush_ = true; }
  struct Write_ {
    int64_t wall_ms;
    int64_t trace_ms;
  };
  std::vector<int64_t> wall_times() const {
    std::vector<int64_t> out;
    for (const auto& w : writes_) out.push_back(w.wall_ms);
    return out;
  }
  size_t writes() const { return writes_.size(); }
  int flushes() const { return flushes_; }
  void set_cost_ms(int64_t ms) { cost_ms_ = ms; }
  void set_fail_at(size_t n) { fail_at_ = n; }

 private:
  core::ManualClock& clock_;
  std::vector<Write_> writes_;
  std::vector<std::pair<size_t, int64_t>> prepared_;
  int64_t prepare_cost_ms_ = 0;
  std::string prepare_error_;
  int64_t cost_ms_ = 0;
  size_t fail_at_ = SIZE_MAX;
  int flushes_ = 0;
  std::vector<size_t> flushed_at_;
  std::vector<size_t> sent_at_;
  bool fail_flush_ = false;
};

ReplayOptions Speed(double speed) {
  ReplayOptions o;
  o.speed = speed;
  o.progress_interval_ms = 0;
  o.progress_out = nullptr;
  return o;
}

TEST(ReplayerTest, PacesTraceTimeDividedBySpeed) {
  core::ManualClock clock(5'000);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 60'000), Job(kTrace0 + 90'000), Job(kTrace0 + 600'000)});
  RecordingSink sink(clock);
  Replayer replayer(source, sink, clock, errors, Speed(60));
  const core::Result<ReplayStats> stats = replayer.Run();
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  // 60 s of trace after the first record is due 1000 ms of wall time after the start.
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{5'000, 6'000, 6'500, 15'000}));
  EXPECT_EQ(clock.NowMs(), 15'000);
  EXPECT_EQ(stats.value().wall_ms, 10'000);
}

TEST(ReplayerTest, JobsFromBeforeTheTelemetryGoOutAtOnceAndPacingStartsAtItsFirstSample) {
  // A day cut from a longer trace (synth's twin, issue #22) holds the jobs pending or running when its
  // telemetry begins, submitted days before: paced from the first of them, the default run (60x) spent
  // two hours showing no telemetry before the day began.
  core::ManualClock clock(5'000);
  core::InputErrors errors(nullptr);
  const int64_t days = 5 * 86'400'000;
  VectorSource source({Job(kTrace0 - days), Job(kTrace0 - 3'600'000), Util(kTrace0), Job(kTrace0 + 60'000),
                       Util(kTrace0 + 120'000)});
  TraceSpan span;
  span.pace_from_ms = kTrace0;
  source.set_span(span);
  RecordingSink sink(clock);
  Replayer replayer(source, sink, clock, errors, Speed(60));
  const core::Result<ReplayStats> stats = replayer.Run();
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{5'000, 5'000, 5'000, 6'000, 7'000}));
  EXPECT_EQ(stats.value().max_lateness_ms, 0) << "the jobs before the telemetry were not late";
}

TEST(ReplayerTest, SpeedMaxNeverSleeps) {
  core::ManualClock clock(42);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 3'600'000), Util(kTrace0 + 86'400'000)});
  RecordingSink sink(clock);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(0)).Run();
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(clock.sleeps(), 0);
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{42, 42, 42}));
  EXPECT_EQ(stats.value().wall_ms, 0);
}

TEST(ReplayerTest, ParsedMaxSpeedIsUnpaced) {
  const std::optional<double> speed = ParseSpeed("max");
  ASSERT_TRUE(speed.has_value());
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 3'600'000)});
  RecordingSink sink(clock);
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(*speed)).Run().ok());
  EXPECT_EQ(clock.sleeps(), 0);
  EXPECT_EQ(clock.NowMs(), 0);
}

TEST(ReplayerTest, WallTimeNeverGoesBackwards) {
  // A record behind the stream in trace time is sent at once, not "in the past".
  core::ManualClock clock(1'000);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 120'000), Job(kTrace0 + 30'000), Job(kTrace0 - 60'000),
                       Job(kTrace0 + 180'000)});
  RecordingSink sink(clock);
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(60)).Run().ok());
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{1'000, 3'000, 3'000, 3'000, 4'000}));
}

TEST(ReplayerTest, PacesFromOneAnchorSoASlowSinkCausesNoDrift) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 60'000), Job(kTrace0 + 120'000), Job(kTrace0 + 1'200'000)});
  RecordingSink sink(clock);
  sink.set_cost_ms(2'500);  // each write takes 2.5 s of wall time
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(60)).Run().ok());
  // Late records go at once; the last one is still due at exactly 0 + 1200 s / 60 = 20 s.
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{0, 2'500, 5'000, 20'000}));
}

TEST(ReplayerTest, FractionalSpeedsSlowTheReplayDown) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 1'000), Job(kTrace0 + 1'500)});
  RecordingSink sink(clock);
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(0.5)).Run().ok());
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{0, 2'000, 3'000}));
}

TEST(ReplayerTest, ReportsWhatItReplayed) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Util(kTrace0 + 15'000), Job(kTrace0 + 30'000, "2"), Util(kTrace0 + 45'000),
                       Util(kTrace0 + 60'000)});
  RecordingSink sink(clock);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(0)).Run();
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  const ReplayStats& s = stats.value();
  EXPECT_EQ(s.total, 5);
  EXPECT_EQ(s.records, (std::map<std::string, int64_t>{{"acme.jobs", 2}, {"acme.util", 3}}));
  EXPECT_EQ(s.first_ts_ms, kTrace0);
  EXPECT_EQ(s.last_ts_ms, kTrace0 + 60'000);
  EXPECT_EQ(s.bytes_read, 500);
  EXPECT_EQ(sink.writes(), 5u);
  EXPECT_GE(sink.flushes(), 1);
}

TEST(ReplayerTest, EmptySourceIsASuccessWithNothingSent) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({});
  RecordingSink sink(clock);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(60)).Run();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats.value().total, 0);
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(ReplayerTest, FailsOnASinkError) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 1), Job(kTrace0 + 2)});
  RecordingSink sink(clock);
  sink.set_fail_at(1);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(0)).Run();
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("broker went away"), std::string::npos);
  EXPECT_EQ(sink.writes(), 1u);
}

TEST(ReplayerTest, FailsOnASourceReadError) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0)});
  source.set_status(core::Status::Error("trace_seren.csv: read error: Input/output error"));
  RecordingSink sink(clock);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(0)).Run();
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("trace_seren.csv: read error"), std::string::npos);
}

TEST(ReplayerTest, StrictModeStopsAtTheFirstInputError) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr, /*strict=*/true);
  std::vector<core::Record> records;
  for (int i = 0; i < 10; ++i) records.emplace_back(Job(kTrace0 + i));
  VectorSource source(records, &errors, 3);
  RecordingSink sink(clock);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(0)).Run();
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("trace_seren.csv:7: gpu_num"), std::string::npos)
      << stats.status().message();
  EXPECT_LE(sink.writes(), 4u);
}

TEST(ReplayerTest, LenientModeCountsInputErrorsAndGoesOn) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr, /*strict=*/false);
  std::vector<core::Record> records;
  for (int i = 0; i < 10; ++i) records.emplace_back(Job(kTrace0 + i));
  VectorSource source(records, &errors, 3);
  RecordingSink sink(clock);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(0)).Run();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(sink.writes(), 10u);
  EXPECT_EQ(errors.total(), 1);
}

// Issue #12 point 4: a paced replay pushes out what it sent before it waits, so a reader at the
// other end of a pipe gets each record on schedule, not when a 1 MiB buffer fills. It sends without
// waiting for the records to arrive (Send, not Flush: a Kafka sink's Flush waits for the broker's
// acknowledgements, which made the next records late); only the end flushes.
TEST(ReplayerTest, PacedReplaySendsBeforeEveryWaitAndFlushesAtTheEnd) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Util(kTrace0), Job(kTrace0 + 60'000), Util(kTrace0 + 60'000),
                       Job(kTrace0 + 120'000)});
  RecordingSink sink(clock);
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(60)).Run().ok());
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{0, 0, 1'000, 1'000, 2'000}));
  // Before the wait for the third record (2 sent) and before the fifth (4 sent); flushed at the end.
  EXPECT_EQ(sink.sent_at(), (std::vector<size_t>{2, 4}));
  EXPECT_EQ(sink.flushed_at(), (std::vector<size_t>{5}));
}

// The first records of a paced replay into a broker just started came 0.2-0.4 s late: the producer
// was still getting its producer id and the new partitions' leaders (KafkaPacingTest, CI). The sink
// is prepared, with the first record's trace time, before the schedule starts, so however long that
// takes, no record is late for it.
TEST(ReplayerTest, TheSinkIsPreparedBeforeTheScheduleStarts) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Util(kTrace0 + 60'000), Job(kTrace0 + 120'000)});
  RecordingSink sink(clock);
  sink.set_prepare(/*cost_ms=*/400);
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(60)).Run();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(sink.prepared(), (std::vector<std::pair<size_t, int64_t>>{{0, kTrace0}}));
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{400, 1'400, 2'400}));
  EXPECT_EQ(stats.value().max_lateness_ms, 0);
}

TEST(ReplayerTest, ASinkThatCannotBePreparedStopsTheReplayWithItsError) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 60'000)});
  RecordingSink sink(clock);
  sink.set_prepare(0, "kafka: cannot produce to acme.jobs: Local: Unknown topic");
  const core::Result<ReplayStats> run = Replayer(source, sink, clock, errors, Speed(60)).Run();
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("Unknown topic"), std::string::npos) << run.status().message();
  EXPECT_EQ(sink.writes(), 0u);
}

TEST(ReplayerTest, MaxSpeedKeepsFullBuffering) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 60'000), Job(kTrace0 + 120'000)});
  RecordingSink sink(clock);
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(0)).Run().ok());
  EXPECT_EQ(sink.flushed_at(), (std::vector<size_t>{3}));  // only the final flush
  EXPECT_TRUE(sink.sent_at().empty());
}

TEST(ReplayerTest, NothingSentEarlyWhenTheNextRecordIsAlreadyDue) {
  // A sink slower than the schedule: nothing is waited for, so nothing is flushed early.
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 60'000), Job(kTrace0 + 120'000)});
  RecordingSink sink(clock);
  sink.set_cost_ms(5'000);
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(60)).Run().ok());
  EXPECT_EQ(sink.flushed_at(), (std::vector<size_t>{3}));
  EXPECT_TRUE(sink.sent_at().empty());
}

TEST(ReplayerTest, StdoutLinesAreOutBeforeTheReplayWaits) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Util(kTrace0), Job(kTrace0 + 60'000), Job(kTrace0 + 120'000)});
  core::StdioSink sink(out);
  std::vector<int> lines_at_sleep;
  clock.OnSleep([&](int64_t) {
    // What a reader of the file sees while the replay sleeps (the sink's own buffer is not visible).
    std::string text;
    char buf[4096];
    std::FILE* reader = std::fopen(("/proc/self/fd/" + std::to_string(::fileno(out))).c_str(), "r");
    ASSERT_NE(reader, nullptr);
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), reader)) > 0;) text.append(buf, n);
    std::fclose(reader);
    lines_at_sleep.push_back(static_cast<int>(std::count(text.begin(), text.end(), '\n')));
  });
  ASSERT_TRUE(Replayer(source, sink, clock, errors, Speed(60)).Run().ok());
  EXPECT_EQ(lines_at_sleep, (std::vector<int>{2, 3}));
  std::fclose(out);
}

TEST(ReplayerTest, AFailedSendBeforeAWaitFailsTheReplay) {
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Job(kTrace0), Job(kTrace0 + 60'000), Job(kTrace0 + 120'000)});
  RecordingSink sink(clock);
  sink.set_fail_flush();
  const core::Result<ReplayStats> stats = Replayer(source, sink, clock, errors, Speed(60)).Run();
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("disk full"), std::string::npos);
  EXPECT_EQ(sink.writes(), 1u);  // nothing more is sent into a sink that cannot flush
}

// Issue #12 point 5: progress by trace time over the replayed window, with an ETA at the speed.
TEST(ReplayProgressTest, PercentOfTheWindowAndTimeLeftAtTheSpeed) {
  const int64_t hour = 3'600'000;
  ReplayProgress p = ComputeReplayProgress(kTrace0, kTrace0 + hour, kTrace0 + hour / 4, 60, false, 0);
  ASSERT_TRUE(p.percent && p.eta_ms);
  EXPECT_DOUBLE_EQ(*p.percent, 25.0);
  EXPECT_EQ(*p.eta_ms, 45'000);  // 45 min of trace at x60
  p = ComputeReplayProgress(kTrace0, kTrace0 + hour, kTrace0 + hour / 4, 3600, false, 0);
  EXPECT_EQ(*p.eta_ms, 750);
}

TEST(ReplayProgressTest, MaxSpeedExtrapolatesTheRateSoFar) {
  const int64_t hour = 3'600'000;
  // A quarter of the window in 2 s of wall time: three quarters take 6 s more.
  const ReplayProgress p = ComputeReplayProgress(kTrace0, kTrace0 + hour, kTrace0 + hour / 4, 0, false, 2'000);
  EXPECT_EQ(p.eta_ms, 6'000);
  EXPECT_EQ(ComputeReplayProgress(kTrace0, kTrace0 + hour, kTrace0, 0, false, 0).eta_ms, std::nullopt);
}

TEST(ReplayProgressTest, UnknownEndPausedAndPastTheEnd) {
  const ReplayProgress unknown = ComputeReplayProgress(kTrace0, std::nullopt, kTrace0 + 5, 60, false, 10);
  EXPECT_EQ(unknown.percent, std::nullopt);
  EXPECT_EQ(unknown.eta_ms, std::nullopt);
  const ReplayProgress paused = ComputeReplayProgress(kTrace0, kTrace0 + 1000, kTrace0 + 500, 60, true, 10);
  EXPECT_EQ(paused.percent, 50.0);
  EXPECT_EQ(paused.eta_ms, std::nullopt);
  // The end is an estimate: a record after it stays at 100%, done.
  const ReplayProgress past = ComputeReplayProgress(kTrace0, kTrace0 + 1000, kTrace0 + 1500, 60, false, 10);
  EXPECT_EQ(past.percent, 100.0);
  EXPECT_EQ(past.eta_ms, 0);
}

TEST(ReplayProgressTest, FormatsDurations) {
  EXPECT_EQ(FormatDurationMs(0), "0:00:00");
  EXPECT_EQ(FormatDurationMs(45'000), "0:00:45");
  EXPECT_EQ(FormatDurationMs(3'723'000), "1:02:03");
  EXPECT_EQ(FormatDurationMs(100 * 3'600'000LL), "100:00:00");
}

// An hour of records, one a minute, replayed at x60 on a manual clock; progress lines every 10 s.
std::string HourOfProgress(std::optional<int64_t> window_first_ms, std::vector<ReplayStatus>* statuses) {
  core::SetLogClock([] { return int64_t{1688212800000}; });
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  std::vector<core::Record> records;
  for (int minute = 0; minute <= 60; ++minute) records.emplace_back(Util(kTrace0 + minute * 60'000LL));
  VectorSource source(records);
  source.set_span(TraceSpan{window_first_ms, kTrace0 + 3'600'000, std::nullopt});
  RecordingSink sink(clock);
  Captured out;
  ReplayOptions options = Speed(60);
  options.progress_out = out.file();
  options.progress_interval_ms = 10'000;
  Replayer replayer(source, sink, clock, errors, options);
  if (statuses != nullptr) clock.OnSleep([&](int64_t) { statuses->push_back(replayer.status()); });
  EXPECT_TRUE(replayer.Run().ok());
  core::SetLogClock(nullptr);
  return out.text();
}

TEST(ReplayProgressTest, LogsTraceTimePercentAndEtaNotBytes) {
  const std::string text = HourOfProgress(std::nullopt, nullptr);
  // At 10 s of wall time, waiting for the record of minute 10 (ten are out), the replay is 10 min into the hour:
  // 16.7%, 50 min left = 50 s at x60.
  EXPECT_NE(text.find("2023-07-01T12:00:00.000Z INFO  replay: trace 2023-02-28 16:28:22+00:00  16.7%  ETA 0:00:50  "
                      "10 records"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  50.0%  ETA 0:00:30  "), std::string::npos) << text;
  EXPECT_NE(text.find("  100.0%  ETA 0:00:00  61 records"), std::string::npos) << text;
}

TEST(ReplayProgressTest, WindowStartsAtFromNotAtTheFirstRecord) {
  // --from an hour before the first record: that hour counts as replayed (nothing was in it).
  std::vector<ReplayStatus> statuses;
  const std::string text = HourOfProgress(kTrace0 - 3'600'000, &statuses);
  EXPECT_NE(text.find("  58.3%  ETA 0:00:50  10 records"), std::string::npos) << text;
  ASSERT_EQ(statuses.size(), 60u);  // one wait before each record after the first
  const ReplayStatus& at_10s = statuses[9];
  EXPECT_EQ(at_10s.window_first_ms, kTrace0 - 3'600'000);
  EXPECT_EQ(at_10s.window_last_ms, kTrace0 + 3'600'000);
  EXPECT_EQ(at_10s.progress.at_ms, kTrace0 + 600'000);
  ASSERT_TRUE(at_10s.progress.percent.has_value());
  EXPECT_NEAR(*at_10s.progress.percent, 100.0 * (3600 + 600) / 7200, 0.01);
}

TEST(ReplayProgressTest, LogsWhileWaitingALongTimeForTheNextRecord) {
  // Sparse records (a job ending days after the telemetry): progress lines go on during the wait, at the
  // replay clock's position, not only when a record is sent.
  core::SetLogClock([] { return int64_t{1688212800000}; });
  core::ManualClock clock(0);
  core::InputErrors errors(nullptr);
  VectorSource source({Util(kTrace0), Job(kTrace0 + 3'600'000)});
  source.set_span(TraceSpan{std::nullopt, kTrace0 + 3'600'000, std::nullopt});
  RecordingSink sink(clock);
  Captured out;
  ReplayOptions options = Speed(60);  // the hour takes 60 s
  options.progress_out = out.file();
  options.progress_interval_ms = 10'000;
  ASSERT_TRUE(Replayer(source, sink, clock, errors, options).Run().ok());
  core::SetLogClock(nullptr);
  const std::string text = out.text();
  EXPECT_NE(text.find("trace 2023-02-28 16:28:22+00:00  16.7%  ETA 0:00:50  1 records"), std::string::npos) << text;
  EXPECT_NE(text.find("trace 2023-02-28 17:08:22+00:00  83.3%  ETA 0:00:10  1 records"), std::string::npos) << text;
  EXPECT_NE(text.find("trace 2023-02-28 17:18:22+00:00  100.0%  ETA 0:00:00  2 records"), std::string::npos) << text;
  EXPECT_EQ(sink.wall_times(), (std::vector<int64_t>{0, 60'000}));  // the waking does not move the schedule
}

TEST(ParseSpeedTest, AcceptsMaxAndPositiveFactors) {
  EXPECT_EQ(ParseSpeed("max"), 0.0);
  EXPECT_EQ(ParseSpeed("60"), 60.0);
  EXPECT_EQ(ParseSpeed("0.5"), 0.5);
  EXPECT_EQ(ParseSpeed("1"), 1.0);
  for (const char* bad : {"", "0", "-1", "-60", "abc", "fast", "MAX", "60x", "inf", "nan"}) {
    EXPECT_EQ(ParseSpeed(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(DeclareReplayConfigTest, EveryKeyIsDocumentedAndLoadsBack) {
  core::Config config;
  DeclareReplayConfig(config);
  ASSERT_FALSE(config.keys().empty());
  const std::string doc = config.DocumentedYaml();
  EXPECT_NE(doc.find("\nreplay:\n"), std::string::npos);
  for (const core::ConfigKey& k : config.keys()) {
    EXPECT_EQ(k.key.rfind("replay.", 0), 0u) << k.key;
    EXPECT_FALSE(k.help.empty()) << k.key;
    EXPECT_NE(doc.find("  # " + k.help + "\n  # (" + k.type.Describe() + ")\n  " + k.key.substr(7) + ": "),
              std::string::npos)
        << k.key;
  }
  core::Config reloaded;
  DeclareReplayConfig(reloaded);
  const core::Status s = reloaded.LoadYamlText(doc, "documented.yaml");
  ASSERT_TRUE(s.ok()) << s.message();
  for (const core::ConfigKey& k : config.keys()) EXPECT_EQ(reloaded.GetString(k.key), k.default_value) << k.key;
  EXPECT_EQ(ParseSpeed(config.GetString("replay.speed")), 0.0);  // the default is valid
}

// ---------------------------------------------------------------------------------------------
// The binary. These run `acmetrace` as a child process at --speed max (no pacing, no sleeps).

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class AcmetraceBinaryTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(ACMETRACE_BINARY)) << "not built: " << ACMETRACE_BINARY;
    dir_ = TestDir();
  }

  RunResult Run(const std::string& args) {
    const std::string out = dir_ + "/stdout." + std::to_string(runs_);
    const std::string err = dir_ + "/stderr." + std::to_string(runs_);
    ++runs_;
    const std::string command = Quote(ACMETRACE_BINARY) + " " + args + " </dev/null >" + Quote(out) + " 2>" + Quote(err);
    const int status = std::system(command.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
  }

  const std::string release_ = std::string(ACMETRACE_FIXTURES) + "/release";
  std::string dir_;
  int runs_ = 0;
};

TEST_F(AcmetraceBinaryTest, ReplaysTheFixtureToStdout) {
  const RunResult r = Run("replay --data " + Quote(release_) + " --sink stdout --speed max");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  std::stringstream ss(r.out);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 21u) << r.out;
  EXPECT_EQ(lines[6],
            R"({"topic":"acme.jobs","key":"seren/5778432","value":{"v":1,"cluster":"seren","event":"submit",)"
            R"("ts_ms":1677601102000,"job_id":"5778432","user":"u5907","type":"Other","node_num":1,"gpu_num":8,)"
            R"("cpu_num":128}})");
}

TEST_F(AcmetraceBinaryTest, ReplaysTheFixtureToTheNullSink) {
  const RunResult r = Run("replay --data " + Quote(release_) + " --sink null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(AcmetraceBinaryTest, UnknownFlagIsBadUsage) {
  EXPECT_EQ(Run("replay --data " + Quote(release_) + " --sink null --bogus").exit_code, 2);
  EXPECT_EQ(Run("--bogus").exit_code, 2);
  EXPECT_EQ(Run("no-such-command").exit_code, 2);
  EXPECT_EQ(Run("").exit_code, 2);
}

TEST_F(AcmetraceBinaryTest, MissingDataFlagIsBadUsage) {
  EXPECT_EQ(Run("replay --sink null").exit_code, 2);
}

TEST_F(AcmetraceBinaryTest, BadSpeedIsBadUsage) {
  for (const char* speed : {"abc", "0", "-5", "fast"}) {
    const RunResult r = Run("replay --data " + Quote(release_) + " --sink null --speed " + speed);
    EXPECT_EQ(r.exit_code, 2) << speed << ": " << r.err;
    EXPECT_NE(r.err.find("speed"), std::string::npos) << r.err;
  }
}

TEST_F(AcmetraceBinaryTest, BadTimeOrSinkIsBadUsage) {
  EXPECT_EQ(Run("replay --data " + Quote(release_) + " --sink null --from yesterday").exit_code, 2);
  EXPECT_EQ(Run("replay --data " + Quote(release_) + " --sink null --to '2023-03-01 00:00:00'").exit_code, 2);
  EXPECT_EQ(Run("replay --data " + Quote(release_) + " --sink carrier-pigeon").exit_code, 2);
}

TEST_F(AcmetraceBinaryTest, MissingDataDirectoryIsAFailureNamingIt) {
  const std::string missing = dir_ + "/no-such-release";
  const RunResult r = Run("replay --data " + Quote(missing) + " --sink null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

TEST_F(AcmetraceBinaryTest, DirectoryWithoutAcmeTraceFilesIsAFailure) {
  std::filesystem::create_directories(dir_ + "/empty/data");
  const RunResult r = Run("replay --data " + Quote(dir_ + "/empty") + " --sink null");
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

TEST_F(AcmetraceBinaryTest, StrictModeFailsOnAMalformedRowNamingFileLineAndField) {
  const std::string trace = WriteFile(
      dir_, "bad/data/job_trace/trace_seren.csv",
      "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
      "1,u,1,eight,1,Other,FAILED,2023-03-01 00:18:22+08:00,,,,,\n");
  const RunResult strict = Run("replay --data " + Quote(dir_ + "/bad") + " --sink null --strict");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find(trace + ":2: gpu_num: "), std::string::npos) << strict.err;
  const RunResult lenient = Run("replay --data " + Quote(dir_ + "/bad") + " --sink null");
  EXPECT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_NE(lenient.err.find(trace + ":2: gpu_num: "), std::string::npos) << lenient.err;
}

TEST_F(AcmetraceBinaryTest, UnknownConfigKeyIsBadUsageNamingFileLineAndKey) {
  const std::string config = WriteFile(dir_, "acmetrace.yaml", "replay:\n  sink: null\n  sped: 60\n");
  const RunResult r = Run("--config " + Quote(config) + " replay --data " + Quote(release_));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(config + ":3: replay.sped"), std::string::npos) << r.err;
}

TEST_F(AcmetraceBinaryTest, FlagsOverrideTheConfigFile) {
  const std::string config = WriteFile(dir_, "acmetrace.yaml", "replay:\n  sink: carrier-pigeon\n  speed: 60\n");
  EXPECT_EQ(Run("--config " + Quote(config) + " replay --data " + Quote(release_)).exit_code, 2);
  const RunResult r = Run("--config " + Quote(config) + " replay --data " + Quote(release_) + " --sink null --speed max");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Issue #12 point 8: every stderr line of a run, errors and progress alike, is one log line in the chosen format.
std::vector<std::string> LinesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

bool IsTextLogLine(const std::string& line) {
  // 2026-12-01T14:05:46.499Z INFO  replay: ...
  if (line.size() < 33 || line[4] != '-' || line[10] != 'T' || line[23] != 'Z' || line[24] != ' ') return false;
  const std::string level = line.substr(25, 6);
  if (level != "DEBUG " && level != "INFO  " && level != "WARN  " && level != "ERROR ") return false;
  return line.find(": ", 31) != std::string::npos;
}

TEST_F(AcmetraceBinaryTest, EveryStderrLineIsATextLogLine) {
  const std::string bad = WriteFile(
      dir_, "bad/data/job_trace/trace_seren.csv",
      "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
      "1,u,1,eight,1,Other,FAILED,2023-03-01 00:18:22+08:00,,,,,\n");
  const RunResult r = Run("replay --data " + Quote(dir_ + "/bad") + " --sink null");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = LinesOf(r.err);
  ASSERT_GE(lines.size(), 2u) << r.err;  // the bad row, the summary
  for (const std::string& line : lines) EXPECT_TRUE(IsTextLogLine(line)) << line;
  EXPECT_NE(r.err.find(" WARN  input: " + bad + ":2: gpu_num: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" INFO  replay: 0 records"), std::string::npos) << r.err;
  const RunResult usage = Run("replay --data " + Quote(release_) + " --sink carrier-pigeon");
  EXPECT_EQ(usage.exit_code, 2);
  for (const std::string& line : LinesOf(usage.err)) EXPECT_TRUE(IsTextLogLine(line)) << line;
}

TEST_F(AcmetraceBinaryTest, JsonLogFormatAndLevelApplyToEveryLine) {
  const RunResult r = Run("--log-format json replay --data " + Quote(release_) + " --sink null --speed max");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = LinesOf(r.err);
  ASSERT_GE(lines.size(), 2u) << r.err;  // progress and the summary
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind("{\"ts\":\"", 0), 0u) << line;
    EXPECT_NE(line.find("\",\"level\":\"info\",\"stage\":\"replay\",\"msg\":\""), std::string::npos) << line;
    EXPECT_EQ(line.back(), '}') << line;
  }
  const RunResult quiet = Run("--log-level warn replay --data " + Quote(release_) + " --sink null --speed max");
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.err, "");  // nothing at warn or above
  const RunResult bad = Run("--log-format xml replay --data " + Quote(release_) + " --sink null");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--log-format"), std::string::npos) << bad.err;
}

TEST_F(AcmetraceBinaryTest, SummaryOfTheRealSerenRow) {
  const std::string trace = WriteFile(
      dir_, "trace_seren.csv",
      "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
      "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
      "2023-03-01 00:20:51+08:00,117,32,936.0\n");
  const RunResult r = Run("summary " + Quote(trace));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t nl = r.out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(r.out.substr(nl + 1),
            "Seren,1,0,1,117.0,32.0,8.0,117.0,32.0,8.0,117.0,8.0,0.0,0.0,1.0,0.0,0.0,936.0,0.0,0.0,1.0,,,,,,,\n");
  EXPECT_EQ(Run("summary " + Quote(dir_ + "/missing.csv")).exit_code, 1);
}

}  // namespace
}  // namespace acmetrace::producers
