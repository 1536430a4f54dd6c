// The run.* keys (`acmetrace run`: its transport, queues and embedded default data set) and the
// backfill.* keys (`acmetrace backfill`), and how they map onto RunSettings and BackfillSettings.
// Backfill's keys live here, not in history/, because every command declares every key and the
// declaring list (config_keys.h) sits below history.
#pragma once

#include <cstdint>
#include <string>

#include "acmetrace/core/config.h"

namespace acmetrace::pipeline {

/// The run.* keys. Value type.
struct RunSettings {
  std::string transport = "in-process";  // what makes the hops between run's stages
  int64_t queue_capacity = 4096;         // records per in-process queue
  int default_days = 1;                  // synthesized without --data
  double default_scale = 0.05;
  double default_speed = 60;             // replay speed without --data (unless --speed); 0 = max
  std::string cache_dir;                 // where the default data set is kept; empty = the user's cache
  bool operator==(const RunSettings&) const = default;
};

/// The backfill.* keys. Value type.
struct BackfillSettings {
  int64_t step_ms = 15'000;  // trace time between two simulated scrapes
  bool persona = true;
  std::string promtool = "promtool";
  std::string prometheus = "prometheus";
  int64_t chunk_mb = 512;     // OpenMetrics text per promtool run at most
  int64_t rules_slice_h = 24; // trace hours of recording and alerting rules per temporary prometheus
  bool operator==(const BackfillSettings&) const = default;
};

/// Declares the run.* keys in config.
void DeclareRunConfig(core::Config& config);
/// Declares the backfill.* keys in config.
void DeclareBackfillConfig(core::Config& config);

/// The run.* (backfill.*) keys of a configuration. A malformed value throws std::invalid_argument
/// naming the key (a usage error at start-up).
RunSettings RunSettingsFromConfig(const core::Config& config);
BackfillSettings BackfillSettingsFromConfig(const core::Config& config);

}  // namespace acmetrace::pipeline
