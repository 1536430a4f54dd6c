#include "serving.h"

#include <cstdio>

#include "acmetrace/core/log.h"
#include "acmetrace/pipeline/pipeline.h"

namespace acmetrace::apps {

void AddServingFlags(CLI::App* cmd, KeyFlags& keys, ServingFlags& flags, const std::string& stamped) {
  cmd->add_option("--metrics-out", flags.metrics_out, "write the final exposition text to FILE when exiting");
  cmd->add_option("--notifications", flags.notifications,
                  "receive Alertmanager's webhook on POST /alertmanager/webhook and append each notification, with " +
                      stamped + ", to FILE (JSON lines)");
  AddRemoteWriteFlags(cmd, keys, flags.remote_write,
                      "also send what /metrics serves by Prometheus remote write to URL, scraped every "
                      "--remote-write-interval ms as the shipped prometheus.yml scrapes it",
                      /*live=*/true);
}

std::unique_ptr<Serving> Serving::Start(const ServingFlags& flags, const RemoteWriteSetup& remote,
                                        const exporters::ExportOptions& options, exporters::Exporter& exporter,
                                        exporters::NotificationLog::TraceTimeSource trace_now, const char* command) {
  std::unique_ptr<Serving> serving(new Serving(flags.metrics_out, command));
  if (!flags.notifications.empty()) {
    auto opened = exporters::NotificationLog::Open(flags.notifications, std::move(trace_now));
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

bool Serving::Finish(exporters::Exporter& exporter) {
  bool ok = true;
  // The final state goes out by remote write as --metrics-out writes it.
  if (live_ && !FinishLiveRemoteWrite(*live_, command_)) ok = false;
  if (!metrics_out_.empty()) {
    if (core::Status w = pipeline::WriteExposition(exporter, metrics_out_); !w.ok()) {
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
