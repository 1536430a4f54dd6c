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

/// The speeds, in trace seconds per wall second, that the replay takes besides max: from --speed,
/// replay.speed, run.default_speed and the control endpoint's POST /speed alike. Slower never gets
/// anywhere; faster is max.
inline constexpr double kMinSpeed = 0.001;
inline constexpr double kMaxSpeed = 1e9;

/// What replay.speed and run.default_speed accept: max, or a speed in [kMinSpeed, kMaxSpeed].
core::ConfigType SpeedType();

/// Parses "max" (0) or a positive factor; nullopt if neither.
std::optional<double> ParseSpeed(std::string_view text);
/// Parses "max" (0) or a speed in [kMinSpeed, kMaxSpeed]; nullopt otherwise (SpeedType's check).
std::optional<double> ParseAcceptedSpeed(std::string_view text);
/// Describes what ParseAcceptedSpeed accepts, for messages: "max or a number in [0.001, 1000000000]".
std::string AcceptedSpeedRange();

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
  std::optional<int64_t> pause_at_ms;      // trace time to pause at, before the first record past it
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  int64_t progress_interval_ms = 10'000;   // log lines (core/log.h) when not on a terminal (0 = none)
  // While waiting for its next record's time, or paused, the replay tells its sink that it is alive
  // and how far its clock has got (RecordSink::Heartbeat) this often, in wall ms (0 = never).
  int64_t heartbeat_interval_ms = 1'000;
  std::FILE* progress_out = nullptr;       // nullptr = no progress
  bool progress_tty = false;               // redraw one line instead of logging (text log format only)
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

/// How far a replay is by trace time over its window, and the wall time left at the current speed.
struct ReplayProgress {
  int64_t at_ms = 0;              // the trace time the replay is at: the last record sent, or while it waits, its clock
  std::optional<double> percent;  // of the window's trace time replayed (0..100); nullopt: end unknown
  std::optional<int64_t> eta_ms;  // wall ms to the window's end; nullopt: unknown (paused, end or rate unknown)
};

/// Progress when the last record sent has trace time trace_ms, in the window [first_ms, last_ms]
/// (last_ms nullopt if unknown). Paced (speed > 0) the time left is the trace time left over the
/// speed; at max speed (0) it is extrapolated from the trace time covered in elapsed_wall_ms. Pure.
ReplayProgress ComputeReplayProgress(int64_t first_ms, std::optional<int64_t> last_ms, int64_t trace_ms,
                                     double speed, bool paused, int64_t elapsed_wall_ms);

/// "1:02:03" (hours unbounded), for ETAs.
std::string FormatDurationMs(int64_t ms);

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
  int64_t window_first_ms = 0;  // the replayed window by trace time (0 = not known yet)
  int64_t window_last_ms = 0;   // its end: --to, or the data's last time (0 = unknown)
  ReplayProgress progress;
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
  // False if a seek or stop interrupted, or sending failed (send_status_). Sends what the sink
  // buffers before it sleeps (RecordSink::Send): what was written before a wait must reach the
  // reader before the wait, not a buffer's worth later.
  bool WaitUntilDue(int64_t ts_ms, int64_t& due_ms);
  void SendBeforeWait();
  void Progress(int64_t now_ms, bool final, bool waiting = false);
  // Sends a heartbeat while waiting for a record at ts_ms, if one is due.
  void HeartbeatIfDue(int64_t now_ms, int64_t ts_ms);
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
  int64_t next_heartbeat_ms_ = 0;  // Run's thread only
  bool unsent_ = false;             // records written since the sink last sent
  core::Status send_status_ = core::Status::Ok();
  TraceSpan span_;                  // of the source, at the start
  std::optional<int64_t> window_first_ms_;  // the window's start: --from, else the first record's time
  int64_t progress_trace_ms_ = 0;   // trace time of the last record sent, before any loop offset
  int64_t loop_offset_ms_ = 0;      // trace time added to this pass's records (--loop)
  bool waiting_ = false;            // in WaitUntilDue's sleep (or its progress line): all that is due is out
  int64_t progress_interval_ms_ = 0;  // 0 = no progress lines (Run's thread only)
};

}  // namespace acmetrace::producers
