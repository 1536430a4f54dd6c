// synth.* keys: defaults give one day of both clusters at full size from seed 1. One table
// (core::Settings) declares them with their SynthOptions members.
#include "acmetrace/producers/synth_config.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "acmetrace/core/settings.h"
#include "acmetrace/core/time.h"

namespace acmetrace::producers {

namespace {

// The synth.* keys: each once, with the SynthOptions member it fills (default: the member's).
core::Settings<SynthOptions> SynthSettings() {
  using O = SynthOptions;
  return core::Settings<O>("synth")
      .TextList("clusters", &O::clusters, core::ConfigType::List(core::ConfigType::Enum({"seren", "kalos"}), 1),
                "clusters to generate, comma-separated")
      .Custom("start", core::FormatIsoTime(O{}.start_ms, 8 * 60), core::ConfigType::Time(),
              "first trace time (unix seconds or ISO 8601 with offset)",
              [](const core::Config& c, const std::string& key, O& o) { o.start_ms = *core::ParseTimeMs(c.GetString(key)); })
      .Int("days", &O::days, 1, 400, "days of trace to generate")
      .Int("seed", &O::seed, 0, std::numeric_limits<int64_t>::max(),
           "random seed: the same options and seed give the same bytes")
      .Double("scale", &O::scale, core::ConfigType::Double(0, 100, core::ConfigType::Bound::kOpen),
              "scales node count and job arrivals (0.2 = a fifth of each cluster)")
      .TextList("metrics", &O::metrics, core::ConfigType::List(core::ConfigType::Enum(SynthMetricNames())),
                "telemetry files to write, comma-separated (empty = all; see --help)")
      .Choice("load", &O::load, {{"utilization_logs", SynthLoad::kUtilizationLogs}, {"trace_average", SynthLoad::kTraceAverage}},
              "GPU-job arrival rate: utilization_logs (GPUs as busy as the published telemetry) or "
              "trace_average (the job trace's long-run average)");
}

}  // namespace

void DeclareSynthConfig(core::Config& config) { SynthSettings().Declare(config); }

SynthOptions SynthOptionsFromConfig(const core::Config& config) { return SynthSettings().Fill(config); }

}  // namespace acmetrace::producers
