// ShutdownOnSignal: sigwait on a dedicated thread; SIGUSR2 (sent to ourselves) ends the thread.
#include "shutdown_signal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "acmetrace/core/log.h"

namespace acmetrace::apps {

ShutdownOnSignal::ShutdownOnSignal(std::function<void()> on_signal)
    : ShutdownOnSignal([on_signal = std::move(on_signal)](int) { on_signal(); }, true) {}

ShutdownOnSignal::ShutdownOnSignal(std::function<void(int)> on_signal, bool announce)
    : on_signal_(std::move(on_signal)), announce_(announce) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  // A closing terminal or ssh session: the same clean stop, not a death with nothing saved.
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    int received = 0;
    for (;;) {
      int signal = 0;
      if (sigwait(&set, &signal) != 0) return;
      if (signal == SIGUSR2) return;
      ++received;
      if (received == 1) {
        if (announce_) core::Logf(core::LogLevel::kInfo, "acmetrace", "stopping (signal %d); flushing what was sent", signal);
        on_signal_(signal);
      } else if (received == 2) {
        // A supervisor and a process group often both forward one: the second is no hurry to lose data.
        core::Logf(core::LogLevel::kWarn, "acmetrace",
                   "signal %d: already stopping; finishing the final snapshot and output (another signal exits "
                   "at once without them)",
                   signal);
      } else {
        core::Logf(core::LogLevel::kWarn, "acmetrace",
                   "signal %d: exiting now; lost: the final state snapshot, --metrics-out and records not yet "
                   "flushed or delivered",
                   signal);
        std::_Exit(128 + signal);
      }
    }
  });
}

ShutdownOnSignal::~ShutdownOnSignal() {
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

}  // namespace acmetrace::apps
