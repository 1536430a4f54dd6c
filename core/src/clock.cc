// SteadyClock: the only place that reads the wall clock and sleeps.
#include "acmetrace/core/clock.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

namespace acmetrace::core {

struct SteadyClock::Timer {
  boost::asio::io_context io;
  boost::asio::steady_timer timer{io};
};

SteadyClock::SteadyClock() : timer_(std::make_unique<Timer>()) {}
SteadyClock::~SteadyClock() = default;

int64_t SteadyClock::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SteadyClock::SleepUntilMs(int64_t deadline_ms) {
  const auto deadline = std::chrono::steady_clock::time_point(std::chrono::milliseconds(deadline_ms));
  if (deadline <= std::chrono::steady_clock::now()) return;
  bool done = false;
  timer_->timer.expires_at(deadline);
  timer_->timer.async_wait([&done](const boost::system::error_code&) { done = true; });
  // Runs the timer's handler, or an Interrupt()'s cancel and then the (aborted) handler.
  while (!done) timer_->io.run_one();
  timer_->io.restart();
}

void SteadyClock::Interrupt() {
  boost::asio::post(timer_->io, [timer = timer_.get()] { timer->timer.cancel(); });
}

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace acmetrace::core
