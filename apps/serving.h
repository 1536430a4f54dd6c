// What run and export serve beside their input: /metrics (export.*), Alertmanager's webhook into
// --notifications, live --remote-write, and --metrics-out at the end.
#pragma once

#include <memory>
#include <string>

#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/exporters/metrics_server.h"
#include "acmetrace/exporters/notification_log.h"
#include "acmetrace/history/live_remote_write.h"
#include "remote_write_flags.h"

namespace acmetrace::apps {

/// The notification log, the /metrics server and live remote write of one command, started and
/// finished in the order they depend on each other. One thread.
class Serving {
 public:
  /// Opens notifications_path (if given; each notification stamped with trace_now()), starts the
  /// server and prints its URL on stdout, then starts live remote write (if remote has a URL).
  /// Logs under command and returns nullptr when one of them fails.
  static std::unique_ptr<Serving> Start(const std::string& notifications_path, const RemoteWriteSetup& remote,
                                        const exporters::ExportOptions& options, exporters::Exporter& exporter,
                                        exporters::NotificationLog::TraceTimeSource trace_now, const char* command);
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

  /// The final state out: the last remote write scrape and its report, metrics_out written (if
  /// given), then the server stopped. False (logged) if a sample was not delivered or the file not written.
  bool Finish(exporters::Exporter& exporter, const std::string& metrics_out);
  /// "N Alertmanager notifications recorded in FILE (M bodies refused)", with --notifications.
  void ReportNotifications() const;

 private:
  explicit Serving(const char* command) : command_(command) {}
  const char* command_;
  // Declared in the order that destroys the server first: live remote write outlives it, and the
  // server writes into the notification log.
  std::unique_ptr<exporters::NotificationLog> notifications_;
  std::unique_ptr<history::LiveRemoteWrite> live_;
  std::unique_ptr<exporters::MetricsServer> server_;
};

}  // namespace acmetrace::apps
