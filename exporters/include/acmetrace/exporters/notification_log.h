// Alertmanager's webhook on the exporter's server: each notification it posts is checked and
// appended, with its wall time and the replay's trace time then, as one JSON line to
// `--notifications FILE` (the format: core/alert_notification.h, docs/http.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "acmetrace/core/alert_notification.h"
#include "acmetrace/core/status.h"
#include "acmetrace/http/http_message.h"

namespace acmetrace::exporters {

/// The path Alertmanager's webhook_configs post to.
inline constexpr char kAlertmanagerWebhookPath[] = "/alertmanager/webhook";

/// Where notifications are recorded: a file opened for appending (never truncated: a restarted run
/// adds to it), one line per notification, flushed line by line, so a reader (or a crash) sees whole
/// lines. Thread-safe: the server's threads record concurrently, lines never interleave.
class NotificationLog {
 public:
  /// The trace time of the replay now (none before the first record).
  using TraceTimeSource = std::function<std::optional<int64_t>()>;
  /// Wall time now, unix ms (tests pass their own; the default reads the system clock).
  using WallClock = std::function<int64_t()>;

  /// Opens path for appending (created 0644 if absent). Error: "--notifications: PATH: cannot open: REASON".
  static core::Result<std::unique_ptr<NotificationLog>> Open(const std::string& path, TraceTimeSource trace_time,
                                                             WallClock wall = nullptr);
  ~NotificationLog();
  NotificationLog(const NotificationLog&) = delete;
  NotificationLog& operator=(const NotificationLog&) = delete;

  /// Checks one webhook body and records it: 200 "recorded"; 400 with one line naming the field for a
  /// body that is not Alertmanager's (nothing recorded); 500 when the file cannot be written.
  http::HttpResponse Receive(const http::HttpRequest& request);

  /// Notifications recorded so far, and bodies refused.
  int64_t recorded() const;
  int64_t refused() const;
  const std::string& path() const { return path_; }

 private:
  NotificationLog(std::FILE* file, std::string path, TraceTimeSource trace_time, WallClock wall);

  std::FILE* file_;
  std::string path_;
  TraceTimeSource trace_time_;
  WallClock wall_;
  mutable std::mutex mutex_;  // guards file_ and the counts
  int64_t recorded_ = 0;
  int64_t refused_ = 0;
};

}  // namespace acmetrace::exporters
