// Replays a record source into a sink, paced by the replay clock:
// wall = wall0 + (trace - trace0) / speed (speed 0 = max: no pacing, backpressure only).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/config.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/replay_clock.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::producers {

/// Declares the replay.* configuration keys (defaults and help) in config.
void DeclareReplayConfig(core::Config& config);

/// What replay.speed and run.default_speed accept: max, or trace seconds per wall second in
/// [0.001, 1e9] (slower never gets anywhere; faster is max).
core::ConfigType SpeedType();

/// Parses "max" (0) or a positive factor; nullopt if neither.
std::optional<double> ParseSpeed(std::string_view text);

/// Parses "i/n" (0 <= i < n); nullopt if malformed.
std::optional<std::pair<uint32_t, uint32_t>> ParseShard(std::string_view text);

/// True if the record belongs to shard index of count: a stable hash of its key (cluster/job,
/// cluster/node, cluster/model), so each instance replays a disjoint share of jobs and nodes.
bool InShard(const core::Record& record, uint32_t index, uint32_t count);

struct ReplayOptions {
  double speed = 0;                        // trace seconds per wall second; 0 = as fast as possible
  bool loop = false;                       // start over at the end, trace time kept rising
  int64_t loop_gap_ms = 15'000;            // trace time between the last record and the next loop's first
  std::optional<int64_t> start_at_ms;      // the clock's NowMs() at which to start (lockstep replayers)
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  int64_t progress_interval_ms = 10'000;   // plain log lines when not on a terminal (0 = none)
  std::FILE* progress_out = nullptr;       // nullptr = no progress
  bool progress_tty = false;               // redraw one line instead of logging
};

/// What a replay did.
struct ReplayStats {
  std::map<std::string, int64_t> records;  // per topic
  int64_t total = 0;
  int64_t first_ts_ms = 0;
  int64_t last_ts_ms = 0;
  int64_t bytes_read = 0;
  int64_t wall_ms = 0;
  int64_t max_lateness_ms = 0;  // worst delay of a record behind its schedule (paced replays)
  int64_t loops = 0;
};

/// A live view of a replay, for the control endpoint and progress lines.
struct ReplayStatus {
  int64_t trace_ms = 0;       // trace time of the last record sent (0 before the first)
  int64_t clock_trace_ms = 0; // where the replay clock is (ahead of trace_ms when the replay lags)
  double speed = 0;
  bool paused = false;
  bool running = false;
  int64_t records = 0;
  int64_t lag_ms = 0;           // wall ms the replay runs behind its schedule now (paced replays)
  int64_t max_lateness_ms = 0;
};

/// Opens a source over a trace-time range (for seek and loop).
using SourceFactory = std::function<core::Result<std::unique_ptr<RecordSource>>(TimeRange)>;

/// Drives one replay. Run() on one thread; the control methods and status() from any thread.
class Replayer {
 public:
  /// A single pass over source: seek and loop need the factory form.
  Replayer(RecordSource& source, core::RecordSink& sink, core::Clock& clock, core::InputErrors& errors,
           ReplayOptions options);
  /// Opens range through factory; seek and loop reopen it.
  Replayer(SourceFactory factory, TimeRange range, core::RecordSink& sink, core::Clock& clock,
           core::InputErrors& errors, ReplayOptions options);

  /// Runs to the end of the source (or until Stop()). Fails on a sink error, a read error, or
  /// (strict mode) the first input error.
  core::Result<ReplayStats> Run();

  void Pause();
  void Resume();
  void SetSpeed(double speed);
  /// Jumps to trace_ms (reopening the source there). Fails without a factory.
  core::Status Seek(int64_t trace_ms);
  /// Ends Run() after the current record; what was sent is flushed.
  void Stop();
  ReplayStatus status() const;

 private:
  bool WaitUntilDue(int64_t ts_ms, int64_t& due_ms);  // false if a seek or stop interrupted
  void Progress(int64_t now_ms, bool final);
  core::Status Reopen(TimeRange range);

  SourceFactory factory_;
  TimeRange range_;
  std::unique_ptr<RecordSource> owned_source_;
  RecordSource* source_ = nullptr;
  core::RecordSink& sink_;
  core::Clock& clock_;
  core::InputErrors& errors_;
  ReplayOptions options_;
  core::ReplayClock replay_clock_;

  mutable std::mutex mutex_;  // guards seek_to_ and the status fields below
  std::optional<int64_t> seek_to_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> control_dirty_{true};  // a control action happened: re-check seek and speed
  ReplayStats stats_;
  int64_t last_lateness_ms_ = 0;   // of the last record sent
  int64_t due_now_ms_ = -1;        // schedule of the record being handed over, -1 when none
  bool running_ = false;
  int64_t wall0_ms_ = 0;
  int64_t next_progress_ms_ = 0;
};

}  // namespace acmetrace::producers
