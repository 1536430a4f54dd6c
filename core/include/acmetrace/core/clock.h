// Wall-clock access behind an interface so tests drive time by hand and never sleep.
#pragma once

#include <cstdint>

namespace acmetrace::core {

/// A source of wall time in milliseconds. Implementations say whether they are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Monotonic milliseconds (arbitrary epoch).
  virtual int64_t NowMs() = 0;
  /// Blocks until NowMs() >= deadline_ms (returns at once if already past).
  virtual void SleepUntilMs(int64_t deadline_ms) = 0;
};

/// std::chrono::steady_clock. Thread-safe.
class SteadyClock : public Clock {
 public:
  int64_t NowMs() override;
  void SleepUntilMs(int64_t deadline_ms) override;
};

/// Time that moves only when told to; SleepUntilMs jumps to the deadline and records it.
/// Not thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0) : now_ms_(now_ms) {}
  int64_t NowMs() override { return now_ms_; }
  void SleepUntilMs(int64_t deadline_ms) override {
    if (deadline_ms > now_ms_) now_ms_ = deadline_ms;
    ++sleeps_;
  }
  void AdvanceMs(int64_t delta_ms) { now_ms_ += delta_ms; }
  int64_t sleeps() const { return sleeps_; }

 private:
  int64_t now_ms_;
  int64_t sleeps_ = 0;
};

}  // namespace acmetrace::core
