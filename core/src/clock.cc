// SteadyClock: the only place that reads the wall clock.
#include "acmetrace/core/clock.h"

#include <chrono>
#include <thread>

namespace acmetrace::core {

int64_t SteadyClock::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SteadyClock::SleepUntilMs(int64_t deadline_ms) {
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::milliseconds(deadline_ms)));
}

}  // namespace acmetrace::core
