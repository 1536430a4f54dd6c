// acmetrace replay: the release's files as one time-ordered feed of framed JSON lines.
#include <unistd.h>

#include <cstdio>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/core/time.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/producers/replay_config.h"
#include "acmetrace/producers/replay_control.h"
#include "commands.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {
void RegisterReplay(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string data;
  };
  auto [cmd, keys] = registry.AddCommand(app, "replay", "replay a data directory as one event-time-ordered feed");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--data", flags->data, "release directory (DIR/data/job_trace, DIR/data/utilization)")->required();
  // A table of flags: alike in shape with synth's (and every command's), each its own keys and help.
  keys.Option("--speed", "replay.speed", "trace seconds per wall second, or max")
      .Option("--sink", "replay.sink", "stdout (JSON lines), null (count only), kafka, file, ...")
      .Option("--brokers", "kafka.brokers", "Kafka bootstrap brokers host:port[,...] for --sink kafka")
      .Option("--clusters", "replay.clusters", "comma-separated clusters, e.g. seren,kalos")
      .Option("--from", "replay.from", "first trace time (unix seconds or ISO 8601 with offset)")
      .Option("--to", "replay.to", "trace time to stop at, exclusive")
      .Flag("--strict", "replay.strict", "exit 1 at the first malformed row")
      .Flag("--loop", "replay.loop", "start over at the end, trace time kept rising")
      .Option("--start-at", "replay.start_at",
              "wall time to start at (unix seconds or ISO 8601 with offset): replayers in lockstep")
      .Option("--shard", "replay.shard", "i/n: replay shard i of n, a disjoint share of jobs and nodes")
      .Option("--control", "replay.control",
              "HOST:PORT of the HTTP control endpoint (GET /status; POST /pause /resume /seek?t=T /speed?value=N; "
              "port 0 picks one)");
  registry.OnRunWithConfig(cmd, [&registry, flags](const core::Config& config) {
    const producers::ReplaySettings settings = producers::ReplaySettingsFromConfig(config);
    producers::EventStreamOptions options;
    options.data_dir = flags->data;
    settings.ApplyTo(options);

    core::InputErrors errors(stderr, settings.strict, settings.max_error_lines);
    // Opened once here so a bad directory fails before anything starts; seek and loop reopen it.
    core::Result<std::unique_ptr<producers::EventStream>> first = producers::EventStream::Open(options, errors);
    if (!first.ok()) {
      core::LogError("replay", first.status().message());
      return 1;
    }
    std::unique_ptr<producers::EventStream> first_stream = std::move(first).value();
    int64_t out_of_order = 0;
    producers::EventStream* current_stream = nullptr;
    producers::SourceFactory factory =
        [&](producers::TimeRange range) -> core::Result<std::unique_ptr<producers::RecordSource>> {
      if (current_stream != nullptr) out_of_order += current_stream->out_of_order();
      std::unique_ptr<producers::EventStream> stream;
      if (first_stream && range.from_ms == options.range.from_ms) {
        stream = std::move(first_stream);
      } else {
        producers::EventStreamOptions reopened = options;
        reopened.range = range;
        core::Result<std::unique_ptr<producers::EventStream>> opened = producers::EventStream::Open(reopened, errors);
        if (!opened.ok()) return opened.status();
        stream = std::move(opened).value();
      }
      current_stream = stream.get();
      return std::unique_ptr<producers::RecordSource>(std::move(stream));
    };
    // The transport replay.sink names makes the output: the processors' topics, in trace-time order
    // (it tells readers how far it has got and when it is done, partition by partition).
    core::Result<pipeline::WiredStage> wired = pipeline::WireReplayStage(config);
    if (!wired.ok()) {
      core::LogError("replay", wired.status().message());
      return 1;
    }
    core::RecordSink* sink = wired.value().sink.get();
    producers::ReplayOptions replay_options;
    replay_options.speed = settings.speed;
    replay_options.progress_out = stderr;
    replay_options.progress_tty = ::isatty(STDERR_FILENO) != 0;
    replay_options.progress_interval_ms = settings.progress_interval_ms;
    replay_options.loop = settings.loop;
    replay_options.loop_gap_ms = settings.loop_gap_ms;
    replay_options.shard_index = settings.shard_index;
    replay_options.shard_count = settings.shard_count;
    core::SteadyClock clock;
    if (settings.start_at_ms) {
      // Agreed between machines in system time, waited for on the steady clock.
      replay_options.start_at_ms = clock.NowMs() + (*settings.start_at_ms - core::SystemNowMs());
    }
    producers::Replayer replayer(factory, options.range, *sink, clock, errors, replay_options);
    ShutdownOnSignal shutdown([&replayer] { replayer.Stop(); });
    producers::ReplayControlServer control(replayer);
    if (!settings.control.empty()) {
      if (core::Status s = control.Start(settings.control); !s.ok()) {
        core::LogError("replay", s.message());
        return 1;
      }
      core::Logf(core::LogLevel::kInfo, "replay", "control endpoint on %s", control.url().c_str());
    }
    core::Result<producers::ReplayStats> stats = replayer.Run();
    control.Stop();
    // The last record is written (or the replay was stopped): the stream ends here.
    if (core::Status s = sink->End({}); !s.ok() && stats.ok()) stats = s;
    errors.Finish();
    if (current_stream != nullptr) out_of_order += current_stream->out_of_order();
    if (const std::string report = sink->Report(); !report.empty()) {
      core::Logf(core::LogLevel::kInfo, "replay", "%s", report.c_str());
    }
    if (!stats.ok()) {
      core::LogError("replay", stats.status().message());
      return 1;
    }
    const producers::ReplayStats& s = stats.value();
    std::string per_topic;
    for (const auto& [topic, n] : s.records) per_topic += " " + topic + "=" + std::to_string(n);
    const double seconds = static_cast<double>(s.wall_ms) / 1000.0;
    core::Logf(core::LogLevel::kInfo, "replay",
                 "%lld records (%s) in %.2f s, %.1f MB read (%.1f MB/s), %lld input errors, "
                 "%lld job events out of order",
                 static_cast<long long>(s.total), per_topic.empty() ? " none" : per_topic.c_str() + 1, seconds,
                 static_cast<double>(s.bytes_read) / 1e6,
                 seconds > 0 ? static_cast<double>(s.bytes_read) / 1e6 / seconds : 0.0,
                 static_cast<long long>(errors.total()), static_cast<long long>(out_of_order));
    if (replay_options.speed > 0) {
      core::Logf(core::LogLevel::kInfo, "replay", "worst lateness behind schedule %lld ms",
                   static_cast<long long>(s.max_lateness_ms));
    }
    return 0;
  });
}

}  // namespace acmetrace::apps
