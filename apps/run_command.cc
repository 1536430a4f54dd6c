// acmetrace run: replay -> processors -> exporter in one process (in-process queues, or Kafka with
// --brokers), serving /metrics; without --data on the embedded default (a synthesized day with
// injected faults).
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <thread>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/core/settings.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/exporter.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/producers/replay_config.h"
#include "commands.h"
#include "serving.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {
void RegisterRun(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string data;
    bool until_end = false;
    ServingFlags serving;
  };
  auto [cmd, keys] = registry.AddCommand(
      app, "run", "replay, process and export in one process: the live pipeline, served on /metrics for Prometheus");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--data", flags->data,
                  "release directory (DIR/data/...); without it, a synthesized day of both clusters with injected "
                  "faults (run.default_*), replayed at run.default_speed");
  keys.Option("--speed", "replay.speed", "trace seconds per wall second, or max")
      .Option("--listen", "export.listen",
              "HOST:PORT to serve /metrics on (port 0 picks one; the URL is printed on stdout)")
      .Option("--brokers", "kafka.brokers",
              "Kafka bootstrap brokers: every hop goes through Kafka instead of in-process queues")
      .AlsoSets("run.transport", "kafka")
      .Option("--clusters", "replay.clusters", "comma-separated clusters to replay")
      .Option("--pause-at", "replay.pause_at",
              "trace time (unix seconds or ISO 8601 with offset) to pause at: the state then stays on /metrics");
  cmd->add_flag("--until-end", flags->until_end,
                "exit once everything is replayed, processed and exported (else keep serving until SIGINT/SIGTERM)");
  keys.Flag("--strict", "replay.strict", "exit 1 at the first malformed row");
  AddServingFlags(cmd, keys, flags->serving, "its wall and trace time");
  registry.OnRunWithConfig(cmd, [&registry, flags, key_flags = &keys](const core::Config& config) {
    const std::optional<RemoteWriteSetup> remote =
        CheckRemoteWrite(flags->serving.remote_write, config, "run", remote_write::WriteMode::kLive);
    if (!remote) return 2;

    const producers::ReplaySettings replay = producers::ReplaySettingsFromConfig(config);
    const pipeline::RunSettings run_settings = pipeline::RunSettingsFromConfig(config);
    const double speed = flags->data.empty() && !key_flags->given("--speed") ? run_settings.default_speed : replay.speed;
    const exporters::ExportOptions export_options = exporters::ExportOptionsFromConfig(config);
    pipeline::PipelineOptions options;
    options.process = processors::ProcessOptionsFromConfig(config);
    if (options.process.detectors) options.detectors = processors::MakeDetectorFactory(config);
    // A window of the trace, as replay and backfill take it (replay.from, replay.to: --config or the environment).
    replay.ApplyTo(options.stream);
    options.replay.speed = speed;
    options.replay.progress_out = stderr;
    options.replay.progress_tty = ::isatty(STDERR_FILENO) != 0;
    options.replay.progress_interval_ms = replay.progress_interval_ms;
    options.replay.pause_at_ms = replay.pause_at_ms;

    const std::optional<std::string> data_dir = DataDirOrDefault(flags->data, config, "run");
    if (!data_dir) return 1;
    options.stream.data_dir = *data_dir;

    core::InputErrors errors(stderr, replay.strict, replay.max_error_lines);
    exporters::Exporter exporter(export_options, &errors);
    // In-process queues, or the transport run.transport names on every hop (--brokers: Kafka): the
    // same stages either way.
    core::Result<std::unique_ptr<pipeline::Transport>> made = pipeline::MakeRunTransport(config);
    if (!made.ok()) {
      core::LogError("run", made.status().message());
      return 1;
    }
    std::unique_ptr<pipeline::Transport> transport = std::move(made).value();
    const std::string& transport_name = run_settings.transport;
    const bool over_kafka = transport_name == "kafka";
    pipeline::Pipeline run(options, *transport, exporter, errors);
    pipeline::StopLatch stop;
    ShutdownOnSignal shutdown([&stop, &run] {
      stop.Trigger();
      run.Stop();
    });
    // Alertmanager's notifications are stamped with the replay clock's trace time when they arrive.
    const std::unique_ptr<Serving> serving = Serving::Start(
        flags->serving, *remote, export_options, exporter,
        [&run, &exporter] {
          const producers::ReplayStatus st = run.replay_status();
          if (st.clock_trace_ms > 0) return std::optional<int64_t>(st.clock_trace_ms);
          if (st.trace_ms > 0) return std::optional<int64_t>(st.trace_ms);
          return exporter.NewestTraceTimeMs();
        },
        "run");
    if (!serving) return 1;
    const std::string hops =
        over_kafka                        ? ", every hop through Kafka at " + kafka::KafkaSettingsFromConfig(config).brokers
        : transport_name != "in-process" ? ", every hop through " + transport_name
                                         : std::string();
    core::Logf(core::LogLevel::kInfo, "run", "replaying %s at speed %s%s", options.stream.data_dir.c_str(),
               speed > 0 ? core::SettingNumberText(speed).c_str() : "max", hops.c_str());

    // The replay's speed and lag, for acmetrace_replay_speed and acmetrace_replay_lag_seconds.
    pipeline::StopLatch run_done;
    std::thread status_thread([&] {
      do {
        const producers::ReplayStatus st = run.replay_status();
        exporter.SetReplayStatus(st.running || st.records > 0 ? st.speed : speed,
                                 static_cast<double>(st.lag_ms) / 1000.0);
      } while (!run_done.WaitFor(250));
    });
    const core::Status s = run.Run();
    run_done.Trigger();
    status_thread.join();
    errors.Finish();
    int rc = 0;
    if (!s.ok()) {
      core::LogError("run", s.message());
      rc = 1;
    } else if (errors.must_stop()) {
      rc = 1;
    } else {
      const processors::ProcessStats& ps = run.process_stats();
      core::Logf(core::LogLevel::kInfo, "run",
                   "done: %lld records processed (%lld late), %lld windows, %lld anomaly transitions, "
                   "%lld series, %lld input errors",
                   static_cast<long long>(ps.records), static_cast<long long>(ps.late),
                   static_cast<long long>(ps.windows), static_cast<long long>(ps.anomalies),
                   static_cast<long long>(exporter.store().total_series()), static_cast<long long>(errors.total()));
      if (!flags->until_end && !stop.triggered()) {
        core::Logf(core::LogLevel::kInfo, "run", "replay finished; serving the final state until SIGINT/SIGTERM");
        while (!stop.WaitFor(1000)) {
        }
      }
    }
    if (!serving->Finish(exporter)) rc = 1;
    serving->ReportNotifications();
    return rc;
  });
}

}  // namespace acmetrace::apps
