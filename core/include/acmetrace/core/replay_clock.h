// The replay clock: maps trace time to wall time, wall = wall0 + (trace - trace0) / speed, with
// pause, resume, seek and speed changes re-anchoring it so no drift accumulates.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

namespace acmetrace::core {

/// Trace-to-wall schedule of one replay. Thread-safe: the replay loop reads it while a control
/// endpoint changes it.
class ReplayClock {
 public:
  /// speed = trace seconds per wall second; 0 = max (every record is due at once).
  explicit ReplayClock(double speed = 0) : speed_(speed) {}

  /// Anchors trace_ms (the first record) at wall_ms.
  void Start(int64_t wall_ms, int64_t trace_ms);
  bool started() const;

  /// When the record at trace_ms is due, in wall ms; nullopt while paused. At max speed every
  /// record is due at once (returns wall0, which is never in the future).
  std::optional<int64_t> DueWallMs(int64_t trace_ms) const;

  /// The trace time the clock shows at wall_ms (where a paced replay should be by now).
  int64_t TraceNowMs(int64_t wall_ms) const;

  void Pause(int64_t wall_ms);
  void Resume(int64_t wall_ms);
  /// Changes the speed keeping the current trace position (0 = max).
  void SetSpeed(double speed, int64_t wall_ms);
  /// Moves the clock to trace_ms now.
  void Seek(int64_t trace_ms, int64_t wall_ms);

  double speed() const;
  bool paused() const;
  /// Changes on every Pause/Resume/SetSpeed/Seek: a waiter that sees it change re-plans.
  uint64_t generation() const;

 private:
  int64_t TraceNowLocked(int64_t wall_ms) const;
  // Runs on from trace_ms at wall_ms (a new generation).
  void RestartLocked(int64_t trace_ms, int64_t wall_ms);

  mutable std::mutex mutex_;
  double speed_;
  bool started_ = false;
  bool paused_ = false;
  int64_t wall0_ms_ = 0;
  int64_t trace0_ms_ = 0;
  int64_t paused_trace_ms_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace acmetrace::core
