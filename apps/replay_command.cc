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
#include "acmetrace/producers/replay_control.h"
#include "shutdown_signal.h"
#include "commands.h"

namespace acmetrace::apps {
void RegisterReplay(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string data;
    std::string speed, sink, brokers, clusters, from, to, start_at, shard, control;
    bool strict = false;
    bool loop = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("replay", "replay a data directory as one event-time-ordered feed");
  cmd->add_option("--data", flags->data, "release directory (DIR/data/job_trace, DIR/data/utilization)")->required();
  cmd->add_option("--speed", flags->speed, "trace seconds per wall second, or max [replay.speed]");
  cmd->add_option("--sink", flags->sink, "stdout (JSON lines), null (count only), kafka, file, ... [replay.sink]");
  cmd->add_option("--brokers", flags->brokers, "Kafka bootstrap brokers host:port[,...] for --sink kafka [kafka.brokers]");
  cmd->add_option("--clusters", flags->clusters, "comma-separated clusters, e.g. seren,kalos [replay.clusters]");
  cmd->add_option("--from", flags->from, "first trace time (unix seconds or ISO 8601 with offset) [replay.from]");
  cmd->add_option("--to", flags->to, "trace time to stop at, exclusive [replay.to]");
  cmd->add_flag("--strict", flags->strict, "exit 1 at the first malformed row [replay.strict]");
  cmd->add_flag("--loop", flags->loop, "start over at the end, trace time kept rising [replay.loop]");
  cmd->add_option("--start-at", flags->start_at,
                  "wall time to start at (unix seconds or ISO 8601 with offset): replayers in lockstep [replay.start_at]");
  cmd->add_option("--shard", flags->shard, "i/n: replay shard i of n, a disjoint share of jobs and nodes [replay.shard]");
  cmd->add_option("--control", flags->control,
                  "HOST:PORT of the HTTP control endpoint (GET /status; POST /pause /resume /seek?t=T /speed?value=N; "
                  "port 0 picks one) [replay.control]");
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags] {
      std::vector<std::pair<std::string, std::string>> overrides;
      if (!flags->speed.empty()) overrides.emplace_back("replay.speed", flags->speed);
      if (!flags->sink.empty()) overrides.emplace_back("replay.sink", flags->sink);
      if (!flags->brokers.empty()) overrides.emplace_back("kafka.brokers", flags->brokers);
      if (!flags->clusters.empty()) overrides.emplace_back("replay.clusters", flags->clusters);
      if (!flags->from.empty()) overrides.emplace_back("replay.from", flags->from);
      if (!flags->to.empty()) overrides.emplace_back("replay.to", flags->to);
      if (flags->strict) overrides.emplace_back("replay.strict", "true");
      if (flags->loop) overrides.emplace_back("replay.loop", "true");
      if (!flags->start_at.empty()) overrides.emplace_back("replay.start_at", flags->start_at);
      if (!flags->shard.empty()) overrides.emplace_back("replay.shard", flags->shard);
      if (!flags->control.empty()) overrides.emplace_back("replay.control", flags->control);
      if (!LoadConfig(registry, overrides)) return 2;
      const core::Config& config = registry.config();

      std::optional<double> speed = producers::ParseSpeed(config.GetString("replay.speed"));
      if (!speed) throw std::invalid_argument("replay.speed: not max or a positive number: '" + config.GetString("replay.speed") + "'");
      producers::EventStreamOptions options;
      options.data_dir = flags->data;
      options.clusters = config.GetList("replay.clusters");
      options.range.from_ms = ParseTimeFlag("replay.from", config.GetString("replay.from"), options.range.from_ms);
      options.range.to_ms = ParseTimeFlag("replay.to", config.GetString("replay.to"), options.range.to_ms);
      options.job_reorder_window_ms = config.GetInt("replay.job_reorder_window_s") * 1000;

      const std::string shard_text = config.GetString("replay.shard");
      const std::optional<std::pair<uint32_t, uint32_t>> shard = producers::ParseShard(shard_text);
      if (!shard) throw std::invalid_argument("replay.shard: expected i/n with 0 <= i < n, got '" + shard_text + "'");

      core::InputErrors errors(stderr, config.GetBool("replay.strict"), config.GetInt("replay.max_error_lines"));
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
      replay_options.speed = *speed;
      replay_options.progress_out = stderr;
      replay_options.progress_tty = ::isatty(STDERR_FILENO) != 0;
      replay_options.progress_interval_ms = config.GetInt("replay.progress_interval_s") * 1000;
      replay_options.loop = config.GetBool("replay.loop");
      replay_options.loop_gap_ms = config.GetInt("replay.loop_gap_s") * 1000;
      replay_options.shard_index = shard->first;
      replay_options.shard_count = shard->second;
      core::SteadyClock clock;
      const std::string start_at = config.GetString("replay.start_at");
      if (!start_at.empty()) {
        // Agreed between machines in system time, waited for on the steady clock.
        const int64_t start_ms = ParseTimeFlag("replay.start_at", start_at, 0);
        replay_options.start_at_ms = clock.NowMs() + (start_ms - core::SystemNowMs());
      }
      producers::Replayer replayer(factory, options.range, *sink, clock, errors, replay_options);
      ShutdownOnSignal shutdown([&replayer] { replayer.Stop(); });
      producers::ReplayControlServer control(replayer);
      if (const std::string address = config.GetString("replay.control"); !address.empty()) {
        if (core::Status s = control.Start(address); !s.ok()) {
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
  });
}

}  // namespace acmetrace::apps
