// The other programs a backfill drives (promtool, prometheus): started in a process group of their
// own with their output in a log file, stopped with the backfill (a signal to it, or its death),
// waited for, and reported by the line of their log that says why they failed.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::history {

/// The path of an executable: name itself if it holds a '/', else the first match on $PATH.
std::optional<std::string> FindExecutable(const std::string& name);

/// The line of a program's log that says why it failed: the last line that mentions an error
/// (error, err=, panic:, fatal, "no space left"), else the last non-empty line; at most 400 chars.
std::string MeaningfulLogLine(const std::string& log_path);

/// A stop asked for from another thread (the signal thread of `acmetrace backfill`): the backfill's
/// loops poll it, and every program started with it is stopped (SIGTERM to its process group) as
/// soon as it is requested, and at once if started after. Thread-safe.
class StopRequest {
 public:
  /// Records the signal (the first one wins) and sends SIGTERM to every registered process group.
  void Request(int signal);
  /// The signal asked for, 0 if none.
  int signal() const { return signal_.load(); }
  bool requested() const { return signal() != 0; }

  /// Subprocess bookkeeping: a group to stop with the request (false: already requested; the
  /// caller stops it itself).
  bool Register(pid_t group);
  void Unregister(pid_t group);

 private:
  std::atomic<int> signal_{0};
  std::mutex mutex_;
  std::set<pid_t> groups_;
};

/// A started program whose stdout and stderr go to a log file, in a process group of its own (so
/// whatever it starts is stopped with it) and killed by the kernel if the thread that started it
/// dies (PR_SET_PDEATHSIG: a killed backfill leaves no promtool or prometheus behind). Stops
/// (SIGTERM to the group, SIGKILL after a while) and reaps the program if still running when
/// destroyed. Not thread-safe.
class Subprocess {
 public:
  /// Starts argv[0] (found as FindExecutable finds it), in working_dir if not empty; registered
  /// with stop (if given) until reaped. Fails if the program cannot be executed.
  static core::Result<Subprocess> Start(const std::vector<std::string>& argv, const std::string& log_path,
                                        const std::string& working_dir = "", StopRequest* stop = nullptr);
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  /// Waits for the end: ok on exit status 0, else an error with the status and MeaningfulLogLine.
  core::Status Wait();
  /// True while it runs. If it ended, reaps it: Wait then returns its status.
  bool Running();
  /// SIGTERM to its group, then waits for it (SIGKILL to the group after timeout_ms).
  void Terminate(int timeout_ms = 10'000);
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  /// After Wait: the CPU seconds (user + system) and peak RSS (bytes) the program used.
  double cpu_s() const { return cpu_s_; }
  int64_t max_rss_bytes() const { return max_rss_bytes_; }

 private:
  Subprocess(pid_t pid, std::string name, std::string log_path, StopRequest* stop)
      : pid_(pid), name_(std::move(name)), log_path_(std::move(log_path)), stop_(stop) {}
  core::Status Reaped(int wait_status, const struct rusage& usage);
  pid_t pid_ = -1;
  std::string name_;
  std::string log_path_;
  StopRequest* stop_ = nullptr;
  std::optional<core::Status> reaped_;  // Running() reaped it: what Wait returns
  double cpu_s_ = 0;
  int64_t max_rss_bytes_ = 0;
};

}  // namespace acmetrace::history
