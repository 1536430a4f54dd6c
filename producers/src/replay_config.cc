// replay.* keys: one table (core::Settings) declares them with their ReplaySettings members.
#include "acmetrace/producers/replay_config.h"

#include <limits>

#include "acmetrace/core/settings.h"

namespace acmetrace::producers {

namespace {

// replay.shard: what ParseShard accepts.
core::ConfigType ShardType() {
  static constexpr std::string_view kWhat = "i/n with 0 <= i < n <= 1000000";
  return core::ConfigType::Custom(
      std::string(kWhat),
      [](std::string_view v) -> std::optional<std::string> {
        if (!ParseShard(v)) return "expected " + std::string(kWhat) + ", got " + core::QuoteConfigValue(v);
        return std::nullopt;
      },
      {"1", "1/1", "-1/2", "a/b", "0/0", "0/1000001"}, {"0/1", "3/4", "999999/1000000"});
}

// The replay.* keys: each once, with the ReplaySettings member it fills (default: the member's).
core::Settings<ReplaySettings> ReplaySettingsTable() {
  using core::ConfigType;
  using S = ReplaySettings;
  return core::Settings<S>("replay")
      .Custom("speed", "max", SpeedType(), "trace seconds replayed per wall second, or max (no pacing)",
              [](const core::Config& c, const std::string& key, S& s) { s.speed = *ParseAcceptedSpeed(c.GetString(key)); })
      .Text("sink", &S::sink, ConfigType::Enum({"stdout", "null", "kafka"}),
            "where records go: a transport that writes (stdout: JSON lines; null: count only)")
      .TextList("clusters", &S::clusters, ConfigType::List(ConfigType::String()),
                "clusters to replay, comma-separated (empty = all found)")
      .OptionalTime("from", &S::from_ms, "first trace time replayed (unix seconds or ISO 8601 with offset; empty = start)")
      .OptionalTime("to", &S::to_ms, "trace time where the replay stops, exclusive (empty = end)")
      .OptionalTime("pause_at", &S::pause_at_ms,
                    "trace time at which the replay pauses, before the first record past it, and holds (`run "
                    "--pause-at`: the pipeline's state at that time stays on /metrics; empty = never)")
      .Bool("loop", &S::loop, "start over at the end, trace time kept rising")
      .SecondsAsMs("loop_gap_s", &S::loop_gap_ms, 0, "trace seconds between the last record and the next loop's first")
      .OptionalTime("start_at", &S::start_at_ms,
                    "wall time to start at (unix seconds or ISO 8601 with offset; empty = now): replayers in lockstep")
      .Custom("shard", "0/1", ShardType(), "i/n: replay only shard i of n (a disjoint share of jobs and nodes)",
              [](const core::Config& c, const std::string& key, S& s) {
                std::tie(s.shard_index, s.shard_count) = *ParseShard(c.GetString(key));
              })
      .Text("control", &S::control, ConfigType::HostPort().OrEmpty(),
            "address of the HTTP control endpoint, e.g. 127.0.0.1:8089 (empty = none)")
      .Bool("strict", &S::strict, "stop with exit 1 at the first malformed row instead of skipping it")
      .SecondsAsMs("job_reorder_window_s", &S::job_reorder_window_ms, 0,
                   "tolerance for job rows out of submit order; later ones are emitted late and counted")
      .SecondsAsMs("progress_interval_s", &S::progress_interval_ms, 1,
                   "seconds between progress log lines when not on a terminal")
      .Int("max_error_lines", &S::max_error_lines, 0, std::numeric_limits<int32_t>::max(),
           "input errors printed before the rest are only counted");
}

}  // namespace

void ReplaySettings::ApplyTo(EventStreamOptions& stream) const {
  stream.clusters = clusters;
  if (from_ms) stream.range.from_ms = *from_ms;
  if (to_ms) stream.range.to_ms = *to_ms;
  stream.job_reorder_window_ms = job_reorder_window_ms;
}

void DeclareReplayConfig(core::Config& config) { ReplaySettingsTable().Declare(config); }

ReplaySettings ReplaySettingsFromConfig(const core::Config& config) { return ReplaySettingsTable().Fill(config); }

}  // namespace acmetrace::producers
