// Replays a record source into a sink, paced by the replay clock:
// wall = wall0 + (trace - trace0) / speed (speed 0 = max: no pacing).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/config.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/producers/record_source.h"

namespace acmetrace::producers {

/// Declares the replay.* configuration keys (defaults and help) in config.
void DeclareReplayConfig(core::Config& config);

/// Parses "max" (0) or a positive factor; nullopt if neither.
std::optional<double> ParseSpeed(std::string_view text);

struct ReplayOptions {
  double speed = 0;                       // trace seconds per wall second; 0 = as fast as possible
  int64_t progress_interval_ms = 10'000;  // plain log lines when not on a terminal (0 = none)
  std::FILE* progress_out = nullptr;      // nullptr = no progress
  bool progress_tty = false;              // redraw one line instead of logging
};

/// What a replay did.
struct ReplayStats {
  std::map<std::string, int64_t> records;  // per topic
  int64_t total = 0;
  int64_t first_ts_ms = 0;
  int64_t last_ts_ms = 0;
  int64_t bytes_read = 0;
  int64_t wall_ms = 0;
};

/// Drives one replay. Not thread-safe.
class Replayer {
 public:
  Replayer(RecordSource& source, core::RecordSink& sink, core::Clock& clock, core::InputErrors& errors,
           ReplayOptions options)
      : source_(source), sink_(sink), clock_(clock), errors_(errors), options_(options) {}

  /// Runs to the end of the source. Fails on a sink error, a read error, or (strict mode) the
  /// first input error.
  core::Result<ReplayStats> Run();

 private:
  void Progress(const ReplayStats& stats, int64_t now_ms, bool final);

  RecordSource& source_;
  core::RecordSink& sink_;
  core::Clock& clock_;
  core::InputErrors& errors_;
  ReplayOptions options_;
  int64_t wall0_ms_ = 0;
  int64_t next_progress_ms_ = 0;
};

}  // namespace acmetrace::producers
