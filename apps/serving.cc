#include "serving.h"

#include <cstdio>

#include "acmetrace/core/log.h"
#include "acmetrace/pipeline/pipeline.h"

namespace acmetrace::apps {

std::unique_ptr<Serving> Serving::Start(const std::string& notifications_path, const RemoteWriteSetup& remote,
                                        const exporters::ExportOptions& options, exporters::Exporter& exporter,
                                        exporters::NotificationLog::TraceTimeSource trace_now, const char* command) {
  std::unique_ptr<Serving> serving(new Serving(command));
  if (!notifications_path.empty()) {
    auto opened = exporters::NotificationLog::Open(notifications_path, std::move(trace_now));
    if (!opened.ok()) {
      core::LogError(command, opened.status().message());
      return nullptr;
    }
    serving->notifications_ = std::move(opened).value();
  }
  serving->server_ = std::make_unique<exporters::MetricsServer>(
      exporter, exporters::ServerOptions{options.listen, options.basic_auth_user, options.basic_auth_password,
                                         options.http_threads, options.render_cache_ms});
  serving->server_->SetNotificationLog(serving->notifications_.get());
  if (core::Status s = serving->server_->Start(); !s.ok()) {
    core::LogError(command, s.message());
    return nullptr;
  }
  std::printf("listening on %s", serving->server_->url().c_str());
  std::fflush(stdout);
  serving->live_ = StartLiveRemoteWrite(remote, exporter, HostPortOf(serving->server_->url()), command);
  return serving;
}

bool Serving::Finish(exporters::Exporter& exporter, const std::string& metrics_out) {
  bool ok = true;
  // The final state goes out by remote write as --metrics-out writes it.
  if (live_ && !FinishLiveRemoteWrite(*live_, command_)) ok = false;
  if (!metrics_out.empty()) {
    if (core::Status w = pipeline::WriteExposition(exporter, metrics_out); !w.ok()) {
      core::LogError(command_, w.message());
      ok = false;
    }
  }
  server_->Stop();
  return ok;
}

void Serving::ReportNotifications() const {
  if (!notifications_) return;
  core::Logf(core::LogLevel::kInfo, command_, "%lld Alertmanager notifications recorded in %s (%lld bodies refused)",
             static_cast<long long>(notifications_->recorded()), notifications_->path().c_str(),
             static_cast<long long>(notifications_->refused()));
}

}  // namespace acmetrace::apps
