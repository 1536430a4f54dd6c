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
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    bool stopping = false;
    for (;;) {
      int signal = 0;
      if (sigwait(&set, &signal) != 0) return;
      if (signal == SIGUSR2) return;
      if (stopping) {
        core::LogWarn("acmetrace", "second signal, exiting now");
        std::_Exit(1);
      }
      stopping = true;
      if (announce_) core::Logf(core::LogLevel::kInfo, "acmetrace", "stopping (signal %d); flushing what was sent", signal);
      on_signal_(signal);
    }
  });
}

ShutdownOnSignal::~ShutdownOnSignal() {
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

}  // namespace acmetrace::apps
