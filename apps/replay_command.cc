// acmetrace replay: the release's files as one time-ordered feed of framed JSON lines.
#include <unistd.h>

#include <cstdio>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/time.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/replay.h"
#include "commands.h"

namespace acmetrace::apps {
namespace {

int64_t ParseTimeFlag(const std::string& key, const std::string& text, int64_t if_empty) {
  if (text.empty()) return if_empty;
  std::optional<int64_t> ms = core::ParseTimeMs(text);
  if (!ms) throw std::invalid_argument(key + ": not unix seconds or ISO 8601 with an offset: '" + text + "'");
  return *ms;
}

}  // namespace

void RegisterReplay(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string data;
    std::string speed, sink, clusters, from, to;
    bool strict = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("replay", "replay a data directory as one event-time-ordered feed");
  cmd->add_option("--data", flags->data, "release directory (DIR/data/job_trace, DIR/data/utilization)")->required();
  cmd->add_option("--speed", flags->speed, "trace seconds per wall second, or max [replay.speed]");
  cmd->add_option("--sink", flags->sink, "stdout (JSON lines) or null (count only) [replay.sink]");
  cmd->add_option("--clusters", flags->clusters, "comma-separated clusters, e.g. seren,kalos [replay.clusters]");
  cmd->add_option("--from", flags->from, "first trace time (unix seconds or ISO 8601 with offset) [replay.from]");
  cmd->add_option("--to", flags->to, "trace time to stop at, exclusive [replay.to]");
  cmd->add_flag("--strict", flags->strict, "exit 1 at the first malformed row [replay.strict]");
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags] {
      std::vector<std::pair<std::string, std::string>> overrides;
      if (!flags->speed.empty()) overrides.emplace_back("replay.speed", flags->speed);
      if (!flags->sink.empty()) overrides.emplace_back("replay.sink", flags->sink);
      if (!flags->clusters.empty()) overrides.emplace_back("replay.clusters", flags->clusters);
      if (!flags->from.empty()) overrides.emplace_back("replay.from", flags->from);
      if (!flags->to.empty()) overrides.emplace_back("replay.to", flags->to);
      if (flags->strict) overrides.emplace_back("replay.strict", "true");
      if (!LoadConfig(registry, overrides)) return 2;
      const core::Config& config = registry.config();

      std::optional<double> speed = producers::ParseSpeed(config.GetString("replay.speed"));
      if (!speed) throw std::invalid_argument("replay.speed: not max or a positive number: '" + config.GetString("replay.speed") + "'");
      const std::string sink_name = config.GetString("replay.sink");
      std::unique_ptr<core::RecordSink> sink;
      if (sink_name == "stdout") {
        sink = std::make_unique<core::StdioSink>(stdout);
      } else if (sink_name == "null") {
        sink = std::make_unique<core::NullSink>();
      } else {
        throw std::invalid_argument("replay.sink: expected stdout or null, got '" + sink_name + "'");
      }
      producers::EventStreamOptions options;
      options.data_dir = flags->data;
      options.clusters = config.GetList("replay.clusters");
      options.range.from_ms = ParseTimeFlag("replay.from", config.GetString("replay.from"), options.range.from_ms);
      options.range.to_ms = ParseTimeFlag("replay.to", config.GetString("replay.to"), options.range.to_ms);
      options.job_reorder_window_ms = config.GetInt("replay.job_reorder_window_s") * 1000;

      core::InputErrors errors(stderr, config.GetBool("replay.strict"), config.GetInt("replay.max_error_lines"));
      core::Result<std::unique_ptr<producers::EventStream>> stream = producers::EventStream::Open(options, errors);
      if (!stream.ok()) {
        std::fprintf(stderr, "acmetrace replay: %s\n", stream.status().message().c_str());
        return 1;
      }
      producers::ReplayOptions replay_options;
      replay_options.speed = *speed;
      replay_options.progress_out = stderr;
      replay_options.progress_tty = ::isatty(STDERR_FILENO) != 0;
      replay_options.progress_interval_ms = config.GetInt("replay.progress_interval_s") * 1000;
      core::SteadyClock clock;
      producers::Replayer replayer(*stream.value(), *sink, clock, errors, replay_options);
      core::Result<producers::ReplayStats> stats = replayer.Run();
      errors.Finish();
      if (!stats.ok()) {
        std::fprintf(stderr, "acmetrace replay: %s\n", stats.status().message().c_str());
        return 1;
      }
      const producers::ReplayStats& s = stats.value();
      std::string per_topic;
      for (const auto& [topic, n] : s.records) per_topic += " " + topic + "=" + std::to_string(n);
      const double seconds = static_cast<double>(s.wall_ms) / 1000.0;
      std::fprintf(stderr,
                   "acmetrace replay: %lld records (%s) in %.2f s, %.1f MB read (%.1f MB/s), %lld input errors, "
                   "%lld job events out of order\n",
                   static_cast<long long>(s.total), per_topic.empty() ? " none" : per_topic.c_str() + 1, seconds,
                   static_cast<double>(s.bytes_read) / 1e6,
                   seconds > 0 ? static_cast<double>(s.bytes_read) / 1e6 / seconds : 0.0,
                   static_cast<long long>(errors.total()), static_cast<long long>(stream.value()->out_of_order()));
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
