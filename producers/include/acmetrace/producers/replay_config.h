// The replay.* configuration keys and how they map onto ReplaySettings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/replay.h"

namespace acmetrace::producers {

/// The replay.* keys as the commands that replay take them (replay, run, backfill); each command
/// uses the ones it honours. Defaults are ReplayOptions' and EventStreamOptions'. Value type.
struct ReplaySettings {
  double speed = 0;                    // trace seconds per wall second; 0 = max (no pacing)
  std::string sink = "stdout";         // the transport that writes the replay's output
  std::vector<std::string> clusters;   // empty = all found
  std::optional<int64_t> from_ms;      // first trace time replayed; none = the start
  std::optional<int64_t> to_ms;        // trace time where the replay stops, exclusive; none = the end
  std::optional<int64_t> pause_at_ms;  // trace time to pause at; none = never
  bool loop = ReplayOptions{}.loop;
  int64_t loop_gap_ms = ReplayOptions{}.loop_gap_ms;
  std::optional<int64_t> start_at_ms;  // wall (system) time to start at; none = now
  uint32_t shard_index = ReplayOptions{}.shard_index;
  uint32_t shard_count = ReplayOptions{}.shard_count;
  std::string control;                 // HOST:PORT of the HTTP control endpoint; empty = none
  bool strict = false;                 // stop at the first malformed row
  int64_t job_reorder_window_ms = EventStreamOptions{}.job_reorder_window_ms;
  int64_t progress_interval_ms = ReplayOptions{}.progress_interval_ms;
  int64_t max_error_lines = 1000;      // input errors printed before the rest are only counted

  bool operator==(const ReplaySettings&) const = default;

  /// The stream's clusters, window and reorder tolerance (its data_dir is the caller's).
  void ApplyTo(EventStreamOptions& stream) const;
};

/// Declares the replay.* configuration keys (defaults and help) in config.
void DeclareReplayConfig(core::Config& config);

/// The replay.* keys of a configuration. A malformed value throws std::invalid_argument naming the
/// key (a usage error at start-up).
ReplaySettings ReplaySettingsFromConfig(const core::Config& config);

}  // namespace acmetrace::producers
