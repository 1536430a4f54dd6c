// acmetrace export: records (from the transport export.source names) into Prometheus state served on /metrics.
#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/exporters/metrics_server.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/pipeline/stages.h"
#include "commands.h"
#include "key_flags.h"
#include "remote_write_flags.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {

void RegisterExport(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    explicit Flags(CLI::App* cmd) : keys(cmd) {}
    std::string metrics_out, notifications;
    bool until_end = false;
    bool strict = false;
    KeyFlags keys;
    RemoteWriteFlags remote_write;
  };
  CLI::App* cmd = app.add_subcommand(
      "export", "serve acme.metrics, acme.anomalies and acme.util (dcgm-exporter persona) on /metrics for Prometheus");
  auto flags = std::make_shared<Flags>(cmd);
  flags->keys.Option("--source", "export.source", "stdin (JSON lines, as process/replay --sink stdout write), kafka, file, ...")
      .Option("--brokers", "kafka.brokers", "Kafka bootstrap brokers host:port[,...]")
      .Option("--group", "kafka.group_id",
              "accepted for compatibility: the exporter reads every partition from its beginning by assignment and "
              "joins no group")
      .Option("--listen", "export.listen",
              "HOST:PORT to serve /metrics on (port 0 picks one; the URL is printed on stdout)");
  cmd->add_flag("--until-end", flags->until_end,
                "exit once the input is consumed (stdin: at its end; kafka: every partition read to its end) instead of "
                "serving until SIGINT/SIGTERM");
  cmd->add_option("--metrics-out", flags->metrics_out, "write the final exposition text to FILE when exiting");
  cmd->add_flag("--strict", flags->strict, "exit 1 at the first malformed record");
  cmd->add_option("--notifications", flags->notifications,
                  "receive Alertmanager's webhook on POST /alertmanager/webhook and append each notification, with "
                  "its wall time and the newest trace time exported, to FILE (JSON lines)");
  AddRemoteWriteFlags(cmd, flags->keys, flags->remote_write,
                      "also send what /metrics serves by Prometheus remote write to URL, scraped every "
                      "--remote-write-interval ms as the shipped prometheus.yml scrapes it",
                      /*live=*/true);
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags] {
      if (!LoadConfig(registry, flags->keys.Overrides())) return 2;
      const core::Config& config = registry.config();
      const std::optional<RemoteWriteSetup> remote = CheckRemoteWrite(flags->remote_write, config, "export");
      if (!remote) return 2;
      const exporters::ExportOptions options = exporters::ExportOptionsFromConfig(config);
      core::InputErrors errors(stderr, flags->strict);
      exporters::Exporter exporter(options, &errors);
      pipeline::StopLatch stop;
      ShutdownOnSignal shutdown([&stop] { stop.Trigger(); });
      // Alertmanager's notifications, stamped with the newest trace time exported when they arrive.
      std::unique_ptr<exporters::NotificationLog> notifications;
      if (!flags->notifications.empty()) {
        auto opened = exporters::NotificationLog::Open(flags->notifications,
                                                       [&exporter] { return exporter.NewestTraceTimeMs(); });
        if (!opened.ok()) {
          core::LogError("export", opened.status().message());
          return 1;
        }
        notifications = std::move(opened).value();
      }
      exporters::MetricsServer server(
          exporter, {options.listen, options.basic_auth_user, options.basic_auth_password, options.http_threads,
                     options.render_cache_ms});
      server.SetNotificationLog(notifications.get());
      if (core::Status s = server.Start(); !s.ok()) {
        core::LogError("export", s.message());
        return 1;
      }
      std::printf("listening on %s", server.url().c_str());
      std::fflush(stdout);
      std::unique_ptr<history::LiveRemoteWrite> live =
          StartLiveRemoteWrite(*remote, exporter, HostPortOf(server.url()), "export");
      // The transport export.source names makes the input (every partition from its beginning: the
      // exporter's state is rebuilt from it, whatever an earlier instance had read).
      core::Result<pipeline::WiredStage> wired = pipeline::WireExportStage(config, flags->until_end);
      if (!wired.ok()) {
        core::LogError("export", wired.status().message());
        server.Stop();
        return 1;
      }
      core::Status s = pipeline::RunExportStage(*wired.value().input, exporter, errors, wired.value().options, stop.flag());
      if (s.ok() && errors.must_stop()) s = core::Status::Error("stopping at the first input error (strict)");
      errors.Finish();
      int rc = 0;
      if (!s.ok()) {
        core::LogError("export", s.message());
        rc = 1;
      } else if (!flags->until_end && !stop.triggered()) {
        core::Logf(core::LogLevel::kInfo, "export", "input ended; serving until SIGINT/SIGTERM");
        while (!stop.WaitFor(1000)) {
        }
      }
      // The final state goes out by remote write as --metrics-out writes it.
      if (live && !FinishLiveRemoteWrite(*live, "export")) rc = 1;
      if (!flags->metrics_out.empty()) {
        if (core::Status w = pipeline::WriteExposition(exporter, flags->metrics_out); !w.ok()) {
          core::LogError("export", w.message());
          rc = 1;
        }
      }
      server.Stop();
      core::Logf(core::LogLevel::kInfo, "export", "%lld series, %lld input errors",
                   static_cast<long long>(exporter.store().total_series()), static_cast<long long>(errors.total()));
      if (notifications) {
        core::Logf(core::LogLevel::kInfo, "export", "%lld Alertmanager notifications recorded in %s (%lld bodies refused)",
                   static_cast<long long>(notifications->recorded()), notifications->path().c_str(),
                   static_cast<long long>(notifications->refused()));
      }
      return rc;
    });
  });
}

}  // namespace acmetrace::apps
