// run.* and backfill.* keys: one table (core::Settings) each declares them with their members.
#include "acmetrace/pipeline/run_config.h"

#include "acmetrace/core/settings.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::pipeline {

namespace {

using core::ConfigType;

core::Settings<RunSettings> RunSettingsTable() {
  using S = RunSettings;
  return core::Settings<S>("run")
      .Text("transport", &S::transport, ConfigType::NonEmptyString(),
            "what makes the hops between run's stages: in-process queues, or a transport between processes "
            "(docs/design.md \"Transports\"); --brokers chooses kafka")
      .Int("queue_capacity", &S::queue_capacity, 1, 16'777'216,
           "records per in-process queue between stages (memory bound; a full queue blocks its writer)")
      .Int("default_days", &S::default_days, 1, 400, "days synthesized for `acmetrace run` without --data")
      .Double("default_scale", &S::default_scale, ConfigType::Double(0, 100, ConfigType::Bound::kOpen),
              "cluster scale synthesized for `acmetrace run` without --data")
      .Custom("default_speed", core::SettingNumberText(S{}.default_speed), producers::SpeedType(),
              "replay speed of `acmetrace run` without --data (unless --speed)",
              [](const core::Config& c, const std::string& key, S& s) {
                s.default_speed = *producers::ParseAcceptedSpeed(c.GetString(key));
              })
      .Text("cache_dir", &S::cache_dir, ConfigType::String(),
            "where the default data set is synthesized once and reused; empty = $XDG_CACHE_HOME/acmetrace or "
            "~/.cache/acmetrace");
}

core::Settings<BackfillSettings> BackfillSettingsTable() {
  using S = BackfillSettings;
  return core::Settings<S>("backfill")
      .SecondsAsMs("step_s", &S::step_ms, 1, 86'400,
                   "trace seconds between two simulated scrapes (the shipped scrape interval)")
      .Bool("persona", &S::persona, "also backfill the per-node dcgm-exporter persona series")
      .Text("promtool", &S::promtool, ConfigType::NonEmptyString(), "Prometheus's promtool (a path, or a name on $PATH)")
      .Text("prometheus", &S::prometheus, ConfigType::NonEmptyString(),
            "the prometheus that serves the blocks while recording and alerting rules are backfilled")
      .Int("chunk_mb", &S::chunk_mb, 1, 1'048'576,
           "OpenMetrics text per promtool run at most (MB; a chunk also ends at every 2 h block boundary)")
      .Int("rules_slice_h", &S::rules_slice_h, 1, 8'760,
           "recording and alerting rules are backfilled this many trace hours at a time, each slice through a "
           "prometheus serving only the blocks it reads (its memory is bounded by a slice's blocks)");
}

}  // namespace

void DeclareRunConfig(core::Config& config) { RunSettingsTable().Declare(config); }
void DeclareBackfillConfig(core::Config& config) { BackfillSettingsTable().Declare(config); }

RunSettings RunSettingsFromConfig(const core::Config& config) { return RunSettingsTable().Fill(config); }
BackfillSettings BackfillSettingsFromConfig(const core::Config& config) { return BackfillSettingsTable().Fill(config); }

}  // namespace acmetrace::pipeline
