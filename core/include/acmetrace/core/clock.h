// Wall-clock access behind an interface so tests drive time by hand and never sleep.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace acmetrace::core {

/// A source of wall time in milliseconds. Implementations say whether they are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Monotonic milliseconds (arbitrary epoch).
  virtual int64_t NowMs() = 0;
  /// Blocks until NowMs() >= deadline_ms (returns at once if already past), or until
  /// Interrupt() is called from another thread; callers re-check their deadline after it returns.
  virtual void SleepUntilMs(int64_t deadline_ms) = 0;
  /// Wakes a SleepUntilMs in progress (or the next one) early. Thread-safe.
  virtual void Interrupt() {}
};

/// std::chrono::steady_clock, sleeping on a Boost.Asio steady_timer so a control action can cut a
/// sleep short. One thread may sleep at a time; Interrupt() is thread-safe.
class SteadyClock : public Clock {
 public:
  SteadyClock();
  ~SteadyClock() override;
  int64_t NowMs() override;
  void SleepUntilMs(int64_t deadline_ms) override;
  void Interrupt() override;

 private:
  struct Timer;
  std::unique_ptr<Timer> timer_;
};

/// Milliseconds since the unix epoch from the system clock (for --start-at: wall times agreed
/// between machines). Reads the wall clock: not for tests.
int64_t SystemNowMs();

/// Time that moves only when told to; SleepUntilMs jumps to the deadline and records it.
/// Not thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0) : now_ms_(now_ms) {}
  int64_t NowMs() override { return now_ms_; }
  void SleepUntilMs(int64_t deadline_ms) override {
    if (deadline_ms > now_ms_) now_ms_ = deadline_ms;
    ++sleeps_;
    if (on_sleep_) on_sleep_(now_ms_);
  }
  /// Called after every sleep (tests use it to act "while" the code under test waits).
  void OnSleep(std::function<void(int64_t now_ms)> hook) { on_sleep_ = std::move(hook); }
  void AdvanceMs(int64_t delta_ms) { now_ms_ += delta_ms; }
  int64_t sleeps() const { return sleeps_; }

 private:
  int64_t now_ms_;
  int64_t sleeps_ = 0;
  std::function<void(int64_t)> on_sleep_;
};

}  // namespace acmetrace::core
