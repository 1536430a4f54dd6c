// Replayer controls on a ManualClock: loop, shard, seek, pause/resume, start-at, speed changes.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "acmetrace/core/clock.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/http/http_connection.h"
#include "acmetrace/producers/replay_control.h"

namespace acmetrace::producers {
namespace {

core::Record Job(int64_t ts_ms, std::string id) {
  core::JobEvent e;
  e.cluster = "seren";
  e.ts_ms = ts_ms;
  e.job_id = std::move(id);
  return e;
}

/// Replays a fixed list of records over a range.
class VectorSource : public RecordSource {
 public:
  VectorSource(std::vector<core::Record> records, TimeRange range) {
    for (auto& r : records) {
      if (range.Contains(core::TimestampMsOf(r))) records_.push_back(std::move(r));
    }
  }
  const core::Record* Next() override { return next_ < records_.size() ? &records_[next_++] : nullptr; }
  int64_t bytes_read() const override { return 0; }
  int64_t bytes_total() const override { return 0; }
  core::Status status() const override { return core::Status::Ok(); }

 private:
  std::vector<core::Record> records_;
  size_t next_ = 0;
};

SourceFactory FactoryOf(std::vector<core::Record> records) {
  return [records](TimeRange range) -> core::Result<std::unique_ptr<RecordSource>> {
    return std::unique_ptr<RecordSource>(std::make_unique<VectorSource>(records, range));
  };
}

/// Records what was written and when; runs a hook after each write.
class RecordingSink : public core::RecordSink {
 public:
  explicit RecordingSink(core::Clock& clock) : clock_(clock) {}
  core::Status Write(const core::Record& record) override {
    ts.push_back(core::TimestampMsOf(record));
    ids.push_back(std::get<core::JobEvent>(record).job_id);
    wall.push_back(clock_.NowMs());
    if (after_write) after_write(ts.size());
    return core::Status::Ok();
  }
  core::Status Flush() override { return core::Status::Ok(); }
  core::Status Heartbeat(int64_t trace_ts_ms, bool paused) override {
    heartbeats.push_back({trace_ts_ms, paused});
    return core::Status::Ok();
  }
  std::vector<int64_t> ts, wall;
  std::vector<std::string> ids;
  std::vector<std::pair<int64_t, bool>> heartbeats;  // trace time, paused
  std::function<void(size_t)> after_write;

 private:
  core::Clock& clock_;
};

std::vector<core::Record> ThreeJobs() { return {Job(0, "a"), Job(1000, "b"), Job(2000, "c")}; }

TEST(ReplayerControlsTest, PacesEachRecordAtItsScheduledWallTime) {
  core::ManualClock clock(5000);
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 2;  // 2 trace seconds per wall second
  Replayer replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, options);
  ASSERT_TRUE(replayer.Run().ok());
  EXPECT_EQ(sink.wall, (std::vector<int64_t>{5000, 5500, 6000}));
  EXPECT_EQ(replayer.status().max_lateness_ms, 0);
}

TEST(ReplayerControlsTest, LoopStartsOverWithTraceTimeRising) {
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.loop = true;
  options.loop_gap_ms = 15'000;
  Replayer replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, options);
  sink.after_write = [&](size_t n) {
    if (n == 7) replayer.Stop();
  };
  core::Result<ReplayStats> stats = replayer.Run();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(sink.ts, (std::vector<int64_t>{0, 1000, 2000, 17'000, 18'000, 19'000, 34'000}));
  EXPECT_EQ(sink.ids, (std::vector<std::string>{"a", "b", "c", "a", "b", "c", "a"}));
  EXPECT_EQ(stats.value().loops, 2);
}

TEST(ReplayerControlsTest, ShardsAreDisjointAndCoverEverything) {
  std::vector<core::Record> jobs;
  for (int i = 0; i < 200; ++i) jobs.push_back(Job(i * 1000, "job" + std::to_string(i)));
  std::vector<std::string> seen;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    core::ManualClock clock;
    core::InputErrors errors(nullptr);
    RecordingSink sink(clock);
    ReplayOptions options;
    options.shard_index = shard;
    options.shard_count = 3;
    Replayer replayer(FactoryOf(jobs), TimeRange{}, sink, clock, errors, options);
    ASSERT_TRUE(replayer.Run().ok());
    EXPECT_GT(sink.ids.size(), 30u) << "shard " << shard << " is far from a third";
    seen.insert(seen.end(), sink.ids.begin(), sink.ids.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
}

TEST(ReplayerControlsTest, ParsesShardSpec) {
  EXPECT_EQ(ParseShard("1/3"), std::make_pair(1u, 3u));
  EXPECT_FALSE(ParseShard("3/3"));
  EXPECT_FALSE(ParseShard("1"));
  EXPECT_FALSE(ParseShard("a/2"));
  EXPECT_FALSE(ParseShard("0/0"));
}

TEST(ReplayerControlsTest, SeekReopensTheSourceAtTheNewTime) {
  std::vector<core::Record> jobs;
  for (int i = 0; i < 10; ++i) jobs.push_back(Job(i * 1000, std::to_string(i)));
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 1;
  Replayer replayer(FactoryOf(jobs), TimeRange{}, sink, clock, errors, options);
  sink.after_write = [&](size_t n) {
    if (n == 2) {
      ASSERT_TRUE(replayer.Seek(7000).ok());
    }
  };
  ASSERT_TRUE(replayer.Run().ok());
  EXPECT_EQ(sink.ids, (std::vector<std::string>{"0", "1", "7", "8", "9"}));
  // After the seek, 7 s of trace is due at once and the rest follows at speed 1.
  EXPECT_EQ(sink.wall[2], sink.wall[1]);
  EXPECT_EQ(sink.wall[3] - sink.wall[2], 1000);
}

TEST(ReplayerControlsTest, SeekNeedsAFactory) {
  std::vector<core::Record> jobs = ThreeJobs();
  VectorSource source(jobs, TimeRange{});
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  Replayer replayer(source, sink, clock, errors, ReplayOptions{});
  EXPECT_FALSE(replayer.Seek(0).ok());
}

TEST(ReplayerControlsTest, PauseHoldsRecordsUntilResume) {
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 1;
  options.heartbeat_interval_ms = 0;  // one sleep per pause (heartbeats: the next test)
  Replayer replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, options);
  int paused_sleeps = 0;
  sink.after_write = [&](size_t n) {
    if (n == 1) replayer.Pause();
  };
  clock.OnSleep([&](int64_t) {
    if (replayer.status().paused && ++paused_sleeps == 2) replayer.Resume();
  });
  ASSERT_TRUE(replayer.Run().ok());
  ASSERT_EQ(sink.wall.size(), 3u);
  EXPECT_EQ(paused_sleeps, 2);
  // Two hour-long paused sleeps, then the next record one trace second after resuming.
  EXPECT_EQ(sink.wall[1] - sink.wall[0], 2 * 3'600'000 + 1000);
  EXPECT_EQ(sink.wall[2] - sink.wall[1], 1000);
}

TEST(ReplayerControlsTest, HeartbeatsSayTheReplayIsAliveAndHowFarItsClockHasGot) {
  // A job, a pause of three seconds, then a job a minute of trace time later: readers must hear
  // from the replay every second (a pause is not an end), paused at the last record it sent (they
  // stay where the pause left them), then at its clock's position while it waits, and at its end.
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 1;
  options.heartbeat_interval_ms = 1000;
  Replayer replayer(FactoryOf({Job(0, "a"), Job(1000, "b"), Job(61'000, "c")}), TimeRange{}, sink, clock, errors,
                    options);
  sink.after_write = [&](size_t n) {
    if (n == 1) replayer.Pause();
  };
  int paused_sleeps = 0;
  clock.OnSleep([&](int64_t) {
    if (replayer.status().paused && ++paused_sleeps == 3) replayer.Resume();
  });
  ASSERT_TRUE(replayer.Run().ok());
  ASSERT_EQ(sink.ids.size(), 3u);
  std::vector<std::pair<int64_t, bool>> paused, running;
  for (const auto& h : sink.heartbeats) (h.second ? paused : running).push_back(h);
  ASSERT_GE(paused.size(), 2u);
  for (const auto& h : paused) EXPECT_EQ(h.first, 0) << "a paused heartbeat must say no more than the last record";
  // Waiting a minute for c: about one a second, each at the clock's trace position, never past c.
  ASSERT_GE(running.size(), 55u);
  for (size_t i = 1; i < running.size(); ++i) EXPECT_GE(running[i].first, running[i - 1].first);
  EXPECT_LE(running[running.size() - 2].first, 61'000);
  EXPECT_GT(running[running.size() - 2].first, 55'000);
  // The end of the stream is time moving on: the last one is at the last record's time.
  EXPECT_EQ(sink.heartbeats.back(), (std::pair<int64_t, bool>{61000, false}));
}

TEST(ReplayerControlsTest, StartAtWaitsForTheAgreedWallTime) {
  core::ManualClock clock(100);
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 1;
  options.start_at_ms = 60'000;
  Replayer replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, options);
  ASSERT_TRUE(replayer.Run().ok());
  EXPECT_EQ(sink.wall, (std::vector<int64_t>{60'000, 61'000, 62'000}));
}

TEST(ReplayerControlsTest, LatenessIsMeasuredAgainstTheSchedule) {
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 1;
  Replayer replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, options);
  sink.after_write = [&](size_t n) {
    if (n == 1) clock.AdvanceMs(1700);  // a slow write: the next record is 700 ms late
  };
  core::Result<ReplayStats> stats = replayer.Run();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats.value().max_lateness_ms, 700);
}

TEST(ReplayerControlsTest, LagIsWallTimeBehindTheSchedule) {
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  ReplayOptions options;
  options.speed = 1;
  Replayer replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, options);
  std::vector<int64_t> lag;  // seen while each record is being written
  sink.after_write = [&](size_t n) {
    lag.push_back(replayer.status().lag_ms);
    if (n == 1) clock.AdvanceMs(1700);  // a slow write: b is handed over 700 ms after its schedule
  };
  ASSERT_TRUE(replayer.Run().ok());
  // a on time; b handed over 700 ms late; during c's write the last record to leave (b) was 700 ms late.
  EXPECT_EQ(lag, (std::vector<int64_t>{0, 700, 700}));
}

// One request through the control endpoint's whole request handling (parser, query decoding,
// routes), as bytes: (status, body).
std::pair<int, std::string> Call(ReplayControlServer& control, const std::string& method, const std::string& target) {
  const http::HttpHandler handler = [&control](const http::HttpRequest& r) { return control.Handle(r); };
  const std::string raw = http::ServeHttpBytes(method + " " + target + " HTTP/1.0\r\n\r\n", handler,
                                               ControlServerOptions(":0").limits);
  if (raw.size() < 12) return {0, raw};
  const size_t body = raw.find("\r\n\r\n");
  return {std::stoi(raw.substr(9, 3)), body == std::string::npos ? "" : raw.substr(body + 4)};
}

struct ControlFixture {
  core::ManualClock clock;
  core::InputErrors errors{nullptr};
  RecordingSink sink{clock};
  Replayer replayer;
  ReplayControlServer control{replayer};
  ControlFixture() : replayer(FactoryOf(ThreeJobs()), TimeRange{}, sink, clock, errors, Options()) {}
  static ReplayOptions Options() {
    ReplayOptions options;
    options.speed = 10;
    return options;
  }
};

TEST(ReplayControlServerTest, HandlesStatusAndControls) {
  ControlFixture f;
  ReplayControlServer& control = f.control;
  Replayer& replayer = f.replayer;
  auto [code, body] = Call(control, "GET", "/status");
  EXPECT_EQ(code, 200);
  EXPECT_NE(body.find("\"speed\":10"), std::string::npos) << body;
  EXPECT_NE(body.find("\"records_sent\":0"), std::string::npos) << body;
  EXPECT_EQ(Call(control, "POST", "/pause").first, 200);
  EXPECT_TRUE(replayer.status().paused);
  EXPECT_EQ(Call(control, "POST", "/resume").first, 200);
  EXPECT_FALSE(replayer.status().paused);
  EXPECT_EQ(Call(control, "POST", "/speed?value=max").first, 200);
  EXPECT_DOUBLE_EQ(replayer.status().speed, 0);
  EXPECT_EQ(Call(control, "POST", "/speed?value=-3").first, 400);
  EXPECT_EQ(Call(control, "POST", "/seek?t=2023-07-01%2008:00:00%2B08:00").first, 200);
  EXPECT_EQ(Call(control, "POST", "/seek?t=yesterday").first, 400);
  EXPECT_EQ(Call(control, "GET", "/pause").first, 405);
  EXPECT_EQ(Call(control, "GET", "/nothing").first, 404);
  EXPECT_NE(body.find("\"window_end_ms\":null,\"percent\":null,\"eta_s\":null}"), std::string::npos) << body;
}

TEST(ReplayControlServerTest, SpeedOutsideTheFlagsRangeIs400AndChangesNothing) {
  // POST /speed?value=1e-15 replayed the remaining months at once; 1e-4, 1e10 and 1e308 were taken.
  ControlFixture f;
  for (const char* value : {"1e-15", "1e-4", "0.0009", "1e10", "1000000001", "1e308", "nan", "inf", "-inf", "-1", "0", "-0"}) {
    const auto [code, body] = Call(f.control, "POST", std::string("/speed?value=") + value);
    EXPECT_EQ(code, 400) << value;
    EXPECT_EQ(body, std::string("{\"error\":\"value: not max or a number in [0.001, 1000000000]: '") + value + "'\"}\n")
        << value;
    EXPECT_DOUBLE_EQ(f.replayer.status().speed, 10) << value;
  }
  for (const char* value : {"0.001", "1000000000", "max", "60"}) {
    EXPECT_EQ(Call(f.control, "POST", std::string("/speed?value=") + value).first, 200) << value;
    EXPECT_EQ(f.replayer.status().speed, ParseAcceptedSpeed(value).value()) << value;
  }
  // The same range as the flag's: one declaration.
  const core::ConfigType flag = SpeedType();
  for (const char* value : {"1e-15", "1e-4", "1e10", "1e308", "nan", "0.001", "1000000000", "max"}) {
    EXPECT_EQ(flag.Check(value).has_value(), !ParseAcceptedSpeed(value).has_value()) << value;
  }
}

TEST(ReplayControlServerTest, BadPercentEncodingIs400AndChangesNothing) {
  // The reproduction: std::stoi threw on %zz and the replay aborted.
  ControlFixture f;
  const auto [code, body] = Call(f.control, "POST", "/seek?t=%zz");
  EXPECT_EQ(code, 400);
  EXPECT_EQ(body, "{\"error\":\"query: t: bad percent-encoding '%zz' (expected % and two hex digits)\"}\n");
  EXPECT_EQ(Call(f.control, "POST", "/speed?value=%2").first, 400);
  EXPECT_DOUBLE_EQ(f.replayer.status().speed, 10);
}

TEST(ReplayControlServerTest, MissingRepeatedOrUnknownParametersAre400) {
  ControlFixture f;
  EXPECT_EQ(Call(f.control, "POST", "/seek"),
            (std::pair<int, std::string>{400, "{\"error\":\"t: missing; use POST /seek?t=T\"}\n"}));
  EXPECT_EQ(Call(f.control, "POST", "/seek?t=1&t=2"),
            (std::pair<int, std::string>{400, "{\"error\":\"t: given more than once\"}\n"}));
  EXPECT_EQ(Call(f.control, "POST", "/speed?value=2&value=3").first, 400);
  EXPECT_EQ(Call(f.control, "POST", "/speed?v=2"),
            (std::pair<int, std::string>{400, "{\"error\":\"unknown parameter 'v'; use POST /speed?value=N|max\"}\n"}));
  EXPECT_EQ(Call(f.control, "POST", "/pause?now=1").first, 400);
  EXPECT_EQ(Call(f.control, "GET", "/status?x").first, 400);
  EXPECT_FALSE(f.replayer.status().paused);
  EXPECT_DOUBLE_EQ(f.replayer.status().speed, 10);
}

TEST(ReplayControlServerTest, UnknownMethodsAre405WithAllow) {
  ControlFixture f;
  for (const char* method : {"DELETE", "PUT", "BREW", "OPTIONS"}) {
    EXPECT_EQ(Call(f.control, method, "/pause").first, 405) << method;
    EXPECT_EQ(Call(f.control, method, "/status").first, 405) << method;
  }
  const http::HttpHandler handler = [&f](const http::HttpRequest& r) { return f.control.Handle(r); };
  EXPECT_NE(http::ServeHttpBytes("PUT /status HTTP/1.0\r\n\r\n", handler).find("Allow: GET, HEAD\r\n"),
            std::string::npos);
}

TEST(ReplayControlServerTest, SeekWithoutASeekableSourceIs409) {
  core::ManualClock clock;
  core::InputErrors errors(nullptr);
  RecordingSink sink(clock);
  VectorSource source(ThreeJobs(), TimeRange{});
  Replayer replayer(source, sink, clock, errors, ReplayOptions{});
  ReplayControlServer control(replayer);
  EXPECT_EQ(Call(control, "POST", "/seek?t=0").first, 409);
}

TEST(ReplayControlServerTest, StatusHasProgressByTraceTime) {
  ReplayStatus s;
  s.records = 10;
  s.speed = 60;
  s.window_first_ms = 1'688'169'600'000;
  s.window_last_ms = s.window_first_ms + 3'600'000;
  s.progress.percent = 100.0 / 3;
  s.progress.eta_ms = 40'400;
  const std::string json = ReplayStatusJson(s);
  EXPECT_NE(json.find("\"window_end_ms\":1688173200000,\"percent\":33.3,\"eta_s\":40}"), std::string::npos) << json;
}

}  // namespace
}  // namespace acmetrace::producers
