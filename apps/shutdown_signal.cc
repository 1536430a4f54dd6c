// ShutdownOnSignal: sigwait on a dedicated thread; SIGUSR2 (sent to ourselves) ends the thread.
#include "shutdown_signal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace acmetrace::apps {

ShutdownOnSignal::ShutdownOnSignal(std::function<void()> on_signal) : on_signal_(std::move(on_signal)) {
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
        std::fprintf(stderr, "acmetrace: second signal, exiting now\n");
        std::_Exit(1);
      }
      stopping = true;
      std::fprintf(stderr, "acmetrace: stopping (signal %d); flushing what was sent\n", signal);
      on_signal_();
    }
  });
}

ShutdownOnSignal::~ShutdownOnSignal() {
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

}  // namespace acmetrace::apps
