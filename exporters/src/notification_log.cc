// NotificationLog: Alertmanager's webhook bodies checked and appended as JSON lines.
#include "acmetrace/exporters/notification_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/locked.h"
#include "acmetrace/http/http_connection.h"

namespace acmetrace::exporters {

core::Result<std::unique_ptr<NotificationLog>> NotificationLog::Open(const std::string& path,
                                                                     TraceTimeSource trace_time, WallClock wall) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return core::Status::Error("--notifications: " + path + ": cannot open: " + std::strerror(errno));
  std::FILE* file = ::fdopen(fd, "a");
  if (file == nullptr) {
    const int error = errno;
    ::close(fd);
    return core::Status::Error("--notifications: " + path + ": cannot open: " + std::strerror(error));
  }
  if (!wall) wall = core::SystemNowMs;
  return std::unique_ptr<NotificationLog>(new NotificationLog(file, path, std::move(trace_time), std::move(wall)));
}

NotificationLog::NotificationLog(std::FILE* file, std::string path, TraceTimeSource trace_time, WallClock wall)
    : file_(file), path_(std::move(path)), trace_time_(std::move(trace_time)), wall_(std::move(wall)) {}

NotificationLog::~NotificationLog() { std::fclose(file_); }

http::HttpResponse NotificationLog::Receive(const http::HttpRequest& request) {
  core::Result<core::AlertNotification> parsed = core::ParseAlertmanagerWebhook(request.body);
  if (!parsed.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++refused_;
    return http::ErrorResponse(400, "webhook body: " + parsed.status().message());
  }
  core::AlertNotification& n = parsed.value();
  n.received_ms = wall_();
  if (trace_time_) n.trace_ms = trace_time_();
  const std::string line = core::FormatNotificationLine(n);
  std::lock_guard<std::mutex> lock(mutex_);
  // One write of the whole line, then flushed: a reader never sees half a notification.
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    const int error = errno;
    std::clearerr(file_);
    return http::ErrorResponse(500, "cannot record the notification: " + path_ + ": " + std::strerror(error));
  }
  ++recorded_;
  return http::HttpResponse::Text(200, "recorded\n");
}

int64_t NotificationLog::recorded() const { return core::ReadLocked(mutex_, recorded_); }

int64_t NotificationLog::refused() const { return core::ReadLocked(mutex_, refused_); }

}  // namespace acmetrace::exporters
