// acmetrace export: records (from the transport export.source names) into Prometheus state served on /metrics.
#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/pipeline/stages.h"
#include "commands.h"
#include "serving.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {

void RegisterExport(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    bool until_end = false;
    bool strict = false;
    ServingFlags serving;
  };
  auto [cmd, keys] = registry.AddCommand(
      app, "export", "serve acme.metrics, acme.anomalies and acme.util (dcgm-exporter persona) on /metrics for Prometheus");
  auto flags = std::make_shared<Flags>();
  keys.Option("--source", "export.source", "stdin (JSON lines, as process/replay --sink stdout write), kafka, file, ...")
      .Option("--brokers", "kafka.brokers", "Kafka bootstrap brokers host:port[,...]")
      .Option("--group", "kafka.group_id",
              "accepted for compatibility: the exporter reads every partition from its beginning by assignment and "
              "joins no group")
      .Option("--listen", "export.listen",
              "HOST:PORT to serve /metrics on (port 0 picks one; the URL is printed on stdout)");
  cmd->add_flag("--until-end", flags->until_end,
                "exit once the input is consumed (stdin: at its end; kafka: every partition read to its end) instead of "
                "serving until SIGINT/SIGTERM");
  cmd->add_flag("--strict", flags->strict, "exit 1 at the first malformed record");
  AddServingFlags(cmd, keys, flags->serving, "its wall time and the newest trace time exported");
  registry.OnRunWithConfig(cmd, [&registry, flags](const core::Config& config) {
    const std::optional<RemoteWriteSetup> remote =
        CheckRemoteWrite(flags->serving.remote_write, config, "export", remote_write::WriteMode::kLive);
    if (!remote) return 2;
    const exporters::ExportOptions options = exporters::ExportOptionsFromConfig(config);
    core::InputErrors errors(stderr, flags->strict);
    exporters::Exporter exporter(options, &errors);
    pipeline::StopLatch stop;
    ShutdownOnSignal shutdown([&stop] { stop.Trigger(); });
    // Alertmanager's notifications are stamped with the newest trace time exported when they arrive.
    const std::unique_ptr<Serving> serving = Serving::Start(
        flags->serving, *remote, options, exporter, [&exporter] { return exporter.NewestTraceTimeMs(); }, "export");
    if (!serving) return 1;
    // The transport export.source names makes the input (every partition from its beginning: the
    // exporter's state is rebuilt from it, whatever an earlier instance had read).
    core::Result<pipeline::WiredStage> wired = pipeline::WireExportStage(config, flags->until_end);
    if (!wired.ok()) {
      core::LogError("export", wired.status().message());
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
    if (!serving->Finish(exporter)) rc = 1;
    core::Logf(core::LogLevel::kInfo, "export", "%lld series, %lld input errors",
               static_cast<long long>(exporter.store().total_series()), static_cast<long long>(errors.total()));
    serving->ReportNotifications();
    return rc;
  });
}

}  // namespace acmetrace::apps
