// acmetrace process: the stream processors, from the transport process.source names (stdin, Kafka,
// files) to process.sink's (acme.metrics, acme.anomalies).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/stages.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"
#include "commands.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {
namespace {

// Progress lines every 10 s (ACMETRACE_PROGRESS_MS overrides, for tests).
int64_t ProgressIntervalMs() {
  static const int64_t ms = [] {
    const char* p = std::getenv("ACMETRACE_PROGRESS_MS");
    return p != nullptr ? std::max<int64_t>(100, std::atoll(p)) : int64_t{10'000};
  }();
  return ms;
}

void PrintSummary(const processors::ProcessStats& s, const core::InputErrors& errors, int64_t wall_ms) {
  const double seconds = static_cast<double>(wall_ms) / 1000.0;
  core::Logf(core::LogLevel::kInfo, "process",
               "%lld records processed, %lld skipped, %lld late, %lld input errors; wrote %lld "
               "windows and %lld anomaly transitions (%lld windows already written before a restore) in %.2f s "
               "(%.0f records/s)",
               static_cast<long long>(s.records), static_cast<long long>(s.skipped), static_cast<long long>(s.late),
               static_cast<long long>(errors.total()), static_cast<long long>(s.windows),
               static_cast<long long>(s.anomalies), static_cast<long long>(s.suppressed), seconds,
               seconds > 0 ? static_cast<double>(s.records + s.skipped) / seconds : 0.0);
}

}  // namespace

void RegisterProcess(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    bool until_end = false;
    bool strict = false;
  };
  auto [cmd, keys] = registry.AddCommand(
      app, "process", "compute rolling cluster metrics (acme.metrics) and anomaly flags (acme.anomalies) in event time");
  auto flags = std::make_shared<Flags>();
  keys.Option("--source", "process.source", "stdin (JSON lines, as replay --sink stdout writes), kafka, file, ...")
      .Option("--sink", "process.sink", "stdout (JSON lines), kafka, file, ...")
      .Option("--brokers", "kafka.brokers", "Kafka bootstrap brokers host:port[,...]")
      .Option("--group", "kafka.group_id", "consumer group: instances of one group share the clusters")
      .Option("--state-dir", "process.state_dir", "directory of state snapshots for restarts");
  cmd->add_flag("--until-end", flags->until_end,
                "stop once everything in the input at start is consumed and every window it opened is closed "
                "(stdin always does)");
  cmd->add_flag("--strict", flags->strict, "exit 1 at the first malformed record");
  registry.OnRunWithConfig(cmd, [&registry, flags](const core::Config& config) {
    const processors::ProcessOptions options = processors::ProcessOptionsFromConfig(config);
    // Signals first: every thread made after this (sink, processor, consumer) inherits their mask.
    std::atomic<bool> stop{false};
    ShutdownOnSignal shutdown([&stop] { stop.store(true); });
    auto fail = [](const core::Status& s) {
      core::LogError("process", s.message());
      return 1;
    };
    // The transports process.source and process.sink name make the input, its cluster ownership
    // and the sink.
    core::Result<pipeline::WiredStage> wired = pipeline::WireProcessStage(
        config, options, flags->until_end, [](const std::string& line) { core::LogInfo("process", line); });
    if (!wired.ok()) return fail(wired.status());
    core::RecordInput& input = *wired.value().input;
    core::RecordSink& sink = *wired.value().sink;
    processors::DetectorFactory detectors;
    if (options.detectors) {
      detectors = processors::MakeDetectorFactory(config);
    }
    processors::StreamProcessor processor(options, sink, detectors);
    core::InputErrors errors(stderr, flags->strict);
    pipeline::StageOptions stage = wired.value().options;
    stage.progress_interval_ms = ProgressIntervalMs();
    int64_t last_items = 0;
    stage.on_progress = [&last_items](const pipeline::StageProgress& p) {
      std::string watermarks;
      for (const std::string& w : p.watermarks) watermarks += " " + w;
      core::Logf(core::LogLevel::kInfo, "process", "%lld records read (%.0f/s), watermark%s%s",
                   static_cast<long long>(p.items),
                   static_cast<double>(p.items - last_items) * 1000.0 / static_cast<double>(ProgressIntervalMs()),
                   watermarks.empty() ? " none" : watermarks.c_str(),
                   p.writer_paused ? " (the replay is paused: waiting for it, not ended)" : "");
      last_items = p.items;
    };
    const auto started = std::chrono::steady_clock::now();
    int rc = 0;
    if (core::Status s = pipeline::RunProcessStage(input, processor, sink, errors, *wired.value().ownership, stage, stop);
        !s.ok()) {
      rc = fail(s);
    }
    errors.Finish();
    if (rc == 0 && errors.must_stop()) rc = 1;
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    PrintSummary(processor.stats(), errors, wall.count());
    return rc;
  });
}

}  // namespace acmetrace::apps
