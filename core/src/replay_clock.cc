// ReplayClock: every change re-anchors (wall0, trace0) at the current position, so schedules are
// computed from one absolute anchor and never from accumulated sleeps.
#include "acmetrace/core/replay_clock.h"

#include <cmath>
#include <cstdint>

#include "acmetrace/core/locked.h"

namespace acmetrace::core {
namespace {

// Schedules saturate instead of overflowing: llround of a value past long long is undefined, and a
// tiny speed over months of trace time must mean "far in the future", not "now".
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

int64_t RoundSaturating(double ms) {
  constexpr double kLimit = 4'611'686'018'427'387'904.0;  // 2^62
  if (std::isnan(ms)) return 0;
  if (ms >= kLimit) return static_cast<int64_t>(kLimit);
  if (ms <= -kLimit) return -static_cast<int64_t>(kLimit);
  return static_cast<int64_t>(std::llround(ms));
}

}  // namespace

void ReplayClock::Start(int64_t wall_ms, int64_t trace_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  started_ = true;
  wall0_ms_ = wall_ms;
  trace0_ms_ = trace_ms;
  paused_trace_ms_ = trace_ms;
}

bool ReplayClock::started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

std::optional<int64_t> ReplayClock::DueWallMs(int64_t trace_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (paused_) return std::nullopt;
  if (speed_ <= 0) return wall0_ms_;
  return SaturatingAdd(wall0_ms_, RoundSaturating(static_cast<double>(trace_ms - trace0_ms_) / speed_));
}

int64_t ReplayClock::TraceNowLocked(int64_t wall_ms) const {
  if (paused_) return paused_trace_ms_;
  if (speed_ <= 0) return trace0_ms_;
  return SaturatingAdd(trace0_ms_, RoundSaturating(static_cast<double>(wall_ms - wall0_ms_) * speed_));
}

int64_t ReplayClock::TraceNowMs(int64_t wall_ms) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return TraceNowLocked(wall_ms);
}

void ReplayClock::Pause(int64_t wall_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (paused_) return;
  paused_trace_ms_ = TraceNowLocked(wall_ms);
  paused_ = true;
  ++generation_;
}

void ReplayClock::RestartLocked(int64_t trace_ms, int64_t wall_ms) {
  wall0_ms_ = wall_ms;
  trace0_ms_ = trace_ms;
  paused_trace_ms_ = trace_ms;
  ++generation_;
}

void ReplayClock::Resume(int64_t wall_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!paused_) return;
  paused_ = false;
  RestartLocked(paused_trace_ms_, wall_ms);
}

void ReplayClock::SetSpeed(double speed, int64_t wall_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = TraceNowLocked(wall_ms);
  speed_ = speed;
  RestartLocked(now, wall_ms);
}

void ReplayClock::Seek(int64_t trace_ms, int64_t wall_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  RestartLocked(trace_ms, wall_ms);
}

double ReplayClock::speed() const { return ReadLocked(mutex_, speed_); }

bool ReplayClock::paused() const { return ReadLocked(mutex_, paused_); }

uint64_t ReplayClock::generation() const { return ReadLocked(mutex_, generation_); }

}  // namespace acmetrace::core
