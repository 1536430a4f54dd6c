// WriteSynthetic: validates the options, then per cluster simulates the jobs and their placement and
// writes the job trace, the utilization files and (Seren) the IPMI files.
#include "acmetrace/producers/synth.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "synth/faults.h"
#include "synth/layout.h"
#include "synth/model.h"
#include "synth/output.h"
#include "synth/schedule.h"
#include "synth/writers.h"

namespace acmetrace::producers {
namespace {

constexpr int kMaxDays = 400;  // as synth.days in synth_config.cc
constexpr double kMaxScale = 100.0;  // as synth.scale

core::Status Validate(const SynthOptions& o) {
  if (o.out_dir.empty()) return core::Status::Error("synth: out_dir is empty");
  if (o.clusters.empty()) return core::Status::Error("synth: no cluster selected");
  for (const auto& c : o.clusters) {
    if (c != "seren" && c != "kalos") {
      return core::Status::Error("synth: unknown cluster '" + c + "' (expected seren or kalos)");
    }
  }
  if (o.days < 1 || o.days > kMaxDays) {
    return core::Status::Error("synth: days must be between 1 and " + std::to_string(kMaxDays));
  }
  if (!(o.scale > 0) || o.scale > kMaxScale) {
    return core::Status::Error("synth: scale must be above 0 and at most " +
                               std::to_string(static_cast<int>(kMaxScale)));
  }
  const auto names = SynthMetricNames();
  for (const auto& m : o.metrics) {
    if (m == "none" && o.metrics.size() > 1) {
      return core::Status::Error("synth: metric 'none' cannot be combined with other metrics");
    }
    if (std::find(names.begin(), names.end(), m) == names.end()) {
      return core::Status::Error("synth: unknown metric '" + m + "'");
    }
  }
  return core::Status::Ok();
}

}  // namespace

std::vector<std::string> SynthMetricNames() {
  std::vector<std::string> names;
  for (const char* m : synth::kDcgmMetrics) names.emplace_back(m);
  for (const char* m : synth::kNodeMetrics) names.emplace_back(m);
  names.emplace_back("IPMI");
  names.emplace_back("none");  // job traces only
  return names;
}

core::Result<SynthReport> WriteSynthetic(const SynthOptions& options) {
  if (auto status = Validate(options); !status.ok()) return status;
  namespace fs = std::filesystem;
  const std::string root = options.out_dir;
  const std::string trace_dir = root + "/data/job_trace";
  std::error_code ec;
  fs::create_directories(trace_dir, ec);
  if (ec) return core::Status::Error(trace_dir + ": cannot create: " + ec.message());

  std::vector<std::string> metrics;
  bool ipmi = options.metrics.empty();
  for (const char* m : synth::kDcgmMetrics) {
    if (options.metrics.empty() || std::count(options.metrics.begin(), options.metrics.end(), m)) metrics.emplace_back(m);
  }
  for (const char* m : synth::kNodeMetrics) {
    if (options.metrics.empty() || std::count(options.metrics.begin(), options.metrics.end(), m)) metrics.emplace_back(m);
  }
  ipmi |= std::count(options.metrics.begin(), options.metrics.end(), std::string("IPMI")) > 0;

  SynthReport report;
  std::string schedule_rows;
  std::string fault_rows;
  // Clusters in a fixed order, each once, whatever order the caller listed them in.
  for (const char* cluster : {"seren", "kalos"}) {
    if (std::find(options.clusters.begin(), options.clusters.end(), cluster) == options.clusters.end()) continue;
    const synth::ClusterModel model =
        synth::MakeClusterModel(cluster, options.load == SynthLoad::kUtilizationLogs);
    if (model.summary.empty()) return core::Status::Error(std::string("synth: no published summary for ") + cluster);
    synth::SimulationParams params;
    params.seed = options.seed;
    params.scale = options.scale;
    // Whole seconds: the release's times have no fractions.
    params.window_start_s = static_cast<int64_t>(std::floor(static_cast<double>(options.start_ms) / 1000.0));
    params.days = options.days;
    synth::Schedule schedule = synth::SimulateCluster(model, params);
    synth::FaultPlan faults;
    if (options.inject_faults) {
      // Large jobs that must wait for room change the whole schedule after them: simulated again.
      params.extra_jobs = synth::FaultPlan::PlanLargeJobs(model, schedule, options.seed);
      if (!params.extra_jobs.empty()) schedule = synth::SimulateCluster(model, params);
      faults = synth::FaultPlan::Inject(model, schedule, options.seed);
    }
    const synth::ClusterLayout layout = synth::MakeLayout(model, schedule.nodes);
    const std::vector<std::string> ids = synth::MakeJobIds(model, schedule, options.seed);
    report.nodes += schedule.nodes;

    synth::WrittenFile trace;
    const std::string trace_path = trace_dir + "/trace_" + model.name + ".csv";
    if (auto status = synth::WriteJobTrace(model, schedule, layout, ids, trace_path, trace); !status.ok()) {
      return status;
    }
    report.jobs += trace.rows;
    report.bytes += trace.bytes;
    report.files.push_back(trace.path);

    synth::TelemetryRequest request;
    request.utilization_dir = root + "/data/utilization/" + model.name;
    request.ipmi_dir = root + "/data/utilization/ipmi";
    request.metrics = metrics;
    request.ipmi = ipmi;
    request.seed = options.seed;
    request.faults = options.inject_faults ? &faults : nullptr;
    std::vector<synth::WrittenFile> written;
    const bool any_telemetry = !metrics.empty() || (ipmi && model.has_ipmi);
    if (any_telemetry) {
      if (auto status = synth::WriteTelemetry(model, schedule, layout, request, written); !status.ok()) {
        return status;
      }
    }
    for (const auto& f : written) {
      report.util_rows += f.rows;
      report.bytes += f.bytes;
      report.files.push_back(f.path);
    }
    if (options.write_schedule) synth::AppendScheduleRows(model, schedule, layout, ids, schedule_rows);
    if (options.inject_faults) faults.AppendRows(model, layout, ids, metrics, fault_rows);
  }
  // The faults and the schedule: a header, then the rows of every cluster.
  auto write_table = [&](const std::string& name, std::string_view header, std::string_view rows) -> core::Status {
    synth::OutputFile out;
    if (auto status = out.Open(root + "/" + name); !status.ok()) return status;
    out.Append(header);
    out.Append(rows);
    report.bytes += out.bytes();
    report.files.push_back(out.path());
    return out.Close();
  };
  if (options.inject_faults) {
    if (auto status = write_table("faults.csv", "cluster,kind,subject,start,end,severity\n", fault_rows); !status.ok()) {
      return status;
    }
  }
  if (options.write_schedule) {
    if (auto status = write_table("schedule.csv", "cluster,job_id,in_trace,node,gpus,start,end,xid\n", schedule_rows);
        !status.ok()) {
      return status;
    }
  }
  return report;
}

}  // namespace acmetrace::producers
