// What run and export serve beside their input: /metrics (export.*), Alertmanager's webhook into
// --notifications, live --remote-write, and --metrics-out at the end.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/exporters/metrics_server.h"
#include "acmetrace/exporters/notification_log.h"
#include "acmetrace/history/live_remote_write.h"
#include "key_flags.h"
#include "remote_write_flags.h"

namespace acmetrace::apps {

/// --metrics-out, --notifications and the live --remote-write flags of run and export.
struct ServingFlags {
  std::string metrics_out, notifications;
  RemoteWriteFlags remote_write;
};
/// Declares them on cmd (--remote-write-interval in keys); stamped: what each notification is
/// stamped with, for the help ("its wall and trace time").
void AddServingFlags(CLI::App* cmd, KeyFlags& keys, ServingFlags& flags, const std::string& stamped);

/// The notification log, the /metrics server and live remote write of one command, started and
/// finished in the order they depend on each other. One thread.
class Serving {
 public:
  /// Opens --notifications (if given; each notification stamped with trace_now()), starts the
  /// server and prints its URL on stdout, then starts live remote write (if remote has a URL).
  /// Logs under command and returns nullptr when one of them fails.
  static std::unique_ptr<Serving> Start(const ServingFlags& flags, const RemoteWriteSetup& remote,
                                        const exporters::ExportOptions& options, exporters::Exporter& exporter,
                                        exporters::NotificationLog::TraceTimeSource trace_now, const char* command);
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

  /// The final state out: the last remote write scrape and its report, --metrics-out written (if
  /// given), then the server stopped. False (logged) if a sample was not delivered or the file not written.
  bool Finish(exporters::Exporter& exporter);
  /// "N Alertmanager notifications recorded in FILE (M bodies refused)", with --notifications.
  void ReportNotifications() const;

 private:
  Serving(std::string metrics_out, const char* command) : metrics_out_(std::move(metrics_out)), command_(command) {}
  std::string metrics_out_;
  const char* command_;
  // Declared in the order that destroys the server first: live remote write outlives it, and the
  // server writes into the notification log.
  std::unique_ptr<exporters::NotificationLog> notifications_;
  std::unique_ptr<history::LiveRemoteWrite> live_;
  std::unique_ptr<exporters::MetricsServer> server_;
};

}  // namespace acmetrace::apps
