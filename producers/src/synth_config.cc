// synth.* keys: defaults give one day of both clusters at full size from seed 1.
#include "acmetrace/producers/synth_config.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "acmetrace/core/time.h"

namespace acmetrace::producers {

void DeclareSynthConfig(core::Config& config) {
  using core::ConfigType;
  config.Declare("synth.clusters", "seren,kalos", "clusters to generate, comma-separated",
                 ConfigType::List(ConfigType::Enum({"seren", "kalos"}), 1));
  config.Declare("synth.start", "2023-07-01 00:00:00+08:00", "first trace time (unix seconds or ISO 8601 with offset)",
                 ConfigType::Time());
  config.Declare("synth.days", "1", "days of trace to generate", ConfigType::Int(1, 400));
  config.Declare("synth.seed", "1", "random seed: the same options and seed give the same bytes",
                 ConfigType::Int(0, std::numeric_limits<int64_t>::max()));
  config.Declare("synth.scale", "1.0", "scales node count and job arrivals (0.2 = a fifth of each cluster)",
                 ConfigType::Double(0, 100, ConfigType::Bound::kOpen));
  config.Declare("synth.metrics", "", "telemetry files to write, comma-separated (empty = all; see --help)",
                 ConfigType::List(ConfigType::Enum(SynthMetricNames())));
  config.Declare("synth.load", "utilization_logs",
                 "GPU-job arrival rate: utilization_logs (GPUs as busy as the published telemetry) or "
                 "trace_average (the job trace's long-run average)",
                 ConfigType::Enum({"utilization_logs", "trace_average"}));
}

SynthOptions SynthOptionsFromConfig(const core::Config& config) {
  config.RequireValidSection("synth");  // types and ranges; what follows checks across keys
  SynthOptions options;
  options.clusters = config.GetList("synth.clusters");
  for (const std::string& c : options.clusters) {
    if (c != "seren" && c != "kalos") throw std::invalid_argument("synth.clusters: unknown cluster '" + c + "' (seren, kalos)");
  }
  if (options.clusters.empty()) throw std::invalid_argument("synth.clusters: empty");
  const std::string start = config.GetString("synth.start");
  std::optional<int64_t> start_ms = core::ParseTimeMs(start);
  if (!start_ms) throw std::invalid_argument("synth.start: not unix seconds or ISO 8601 with an offset: '" + start + "'");
  options.start_ms = *start_ms;
  const int64_t days = config.GetInt("synth.days");
  if (days < 1 || days > 400) throw std::invalid_argument("synth.days: must be 1..400");
  options.days = static_cast<int>(days);
  const int64_t seed = config.GetInt("synth.seed");
  options.seed = static_cast<uint64_t>(seed);
  options.scale = config.GetDouble("synth.scale");
  if (!(options.scale > 0) || options.scale > 100) throw std::invalid_argument("synth.scale: must be in (0, 100]");
  options.metrics = config.GetList("synth.metrics");
  const std::vector<std::string> known = SynthMetricNames();
  for (const std::string& m : options.metrics) {
    if (std::find(known.begin(), known.end(), m) == known.end()) {
      throw std::invalid_argument("synth.metrics: unknown metric '" + m + "'");
    }
  }
  const std::string load = config.GetString("synth.load");
  if (load == "utilization_logs") {
    options.load = SynthLoad::kUtilizationLogs;
  } else if (load == "trace_average") {
    options.load = SynthLoad::kTraceAverage;
  } else {
    throw std::invalid_argument("synth.load: expected utilization_logs or trace_average, got '" + load + "'");
  }
  return options;
}

}  // namespace acmetrace::producers
