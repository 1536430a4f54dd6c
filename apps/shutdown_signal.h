// Turns SIGINT/SIGTERM/SIGHUP into a clean stop: a thread waits for the signal and calls a function, so
// the stop path may lock, flush and log (none of which a signal handler may do).
#pragma once

#include <functional>
#include <thread>

namespace acmetrace::apps {

/// While alive, SIGINT, SIGTERM and SIGHUP call on_signal (once) on a dedicated thread; a second
/// signal is logged and waited out (the stop goes on to its final snapshot and output); a third
/// exits at once with 128 + the signal, saying what is lost. Construct before any other thread
/// starts, so all inherit the mask.
class ShutdownOnSignal {
 public:
  explicit ShutdownOnSignal(std::function<void()> on_signal);
  /// The same, given the signal's number; announce = false leaves the saying to on_signal.
  ShutdownOnSignal(std::function<void(int signal)> on_signal, bool announce);
  ~ShutdownOnSignal();
  ShutdownOnSignal(const ShutdownOnSignal&) = delete;
  ShutdownOnSignal& operator=(const ShutdownOnSignal&) = delete;

 private:
  std::function<void(int)> on_signal_;
  bool announce_ = true;
  std::thread thread_;
};

}  // namespace acmetrace::apps
