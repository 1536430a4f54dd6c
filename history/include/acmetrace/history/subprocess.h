// The other programs a backfill drives (promtool, prometheus): started with their output in a log
// file, waited for, and reported by the log's last line when they fail.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::history {

/// The path of an executable: name itself if it holds a '/', else the first match on $PATH.
std::optional<std::string> FindExecutable(const std::string& name);

/// A started program whose stdout and stderr go to a log file. Kills (SIGTERM) and reaps the
/// program if still running when destroyed. Not thread-safe.
class Subprocess {
 public:
  /// Starts argv[0] (found as FindExecutable finds it), in working_dir if not empty.
  static core::Result<Subprocess> Start(const std::vector<std::string>& argv, const std::string& log_path,
                                        const std::string& working_dir = "");
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  /// Waits for the end: ok on exit status 0, else an error with the status and the log's last line.
  core::Status Wait();
  /// True while it runs (reaps it if it ended).
  bool Running();
  /// SIGTERM, then waits for it (SIGKILL after timeout_ms).
  void Terminate(int timeout_ms = 10'000);
  const std::string& log_path() const { return log_path_; }
  /// After Wait: the CPU seconds (user + system) and peak RSS (bytes) the program used.
  double cpu_s() const { return cpu_s_; }
  int64_t max_rss_bytes() const { return max_rss_bytes_; }

 private:
  Subprocess(pid_t pid, std::string name, std::string log_path)
      : pid_(pid), name_(std::move(name)), log_path_(std::move(log_path)) {}
  core::Status Reaped(int wait_status, const struct rusage& usage);
  pid_t pid_ = -1;
  std::string name_;
  std::string log_path_;
  double cpu_s_ = 0;
  int64_t max_rss_bytes_ = 0;
};

}  // namespace acmetrace::history
