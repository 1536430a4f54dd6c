// acmetrace synth: AcmeTrace-format files with the release's statistics (see docs/synth.md).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "acmetrace/core/log.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/synth.h"
#include "acmetrace/producers/synth_config.h"
#include "commands.h"

namespace acmetrace::apps {

void RegisterSynth(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string out;
    bool inject_faults = false;
  };
  std::string metric_names;
  for (const std::string& m : producers::SynthMetricNames()) metric_names += (metric_names.empty() ? "" : ",") + m;
  auto [cmd, keys] = registry.AddCommand(app, "synth", "write synthetic data in the release's exact format and statistics");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--out", flags->out, "output directory (gets data/job_trace and data/utilization)")->required();
  keys.Option("--clusters", "synth.clusters", "seren,kalos")
      .Option("--start", "synth.start", "first trace time, unix seconds or ISO 8601 with offset")
      .Option("--days", "synth.days", "days to generate")
      .Option("--seed", "synth.seed", "random seed")
      .Option("--scale", "synth.scale", "scale of node count and job arrivals")
      .Option("--metrics", "synth.metrics", "telemetry files to write (default all): " + metric_names)
      .Option("--load", "synth.load", "utilization_logs or trace_average");
  cmd->add_flag("--inject-faults", flags->inject_faults, "also write DIR/faults.csv with injected incidents");
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags] {
      if (!LoadConfig(registry)) return 2;
      producers::SynthOptions options = producers::SynthOptionsFromConfig(registry.config());
      options.out_dir = flags->out;
      options.inject_faults = flags->inject_faults;
      // Readers refuse the directory while the marker is there: a synth stopped mid-write (killed,
      // a full disk) leaves cut files that would otherwise replay with no error at all.
      std::error_code ec;
      std::filesystem::create_directories(flags->out, ec);
      const std::string incomplete = flags->out + "/" + std::string(producers::kSynthIncompleteMarker);
      if (std::FILE* f = std::fopen(incomplete.c_str(), "wb"); f == nullptr || std::fclose(f) != 0) {
        core::LogError("synth", incomplete + ": cannot write: " + std::strerror(errno));
        return 1;
      }
      core::Result<producers::SynthReport> report = producers::WriteSynthetic(options);
      if (!report.ok()) {
        core::LogError("synth", report.status().message());
        return 1;
      }
      if (std::remove(incomplete.c_str()) != 0) {
        core::LogError("synth", incomplete + ": cannot remove: " + std::strerror(errno));
        return 1;
      }
      const producers::SynthReport& r = report.value();
      core::Logf(core::LogLevel::kInfo, "synth", "%lld jobs, %lld nodes, %lld utilization rows, %zu files, %.1f MB in %s",
                 static_cast<long long>(r.jobs), static_cast<long long>(r.nodes), static_cast<long long>(r.util_rows),
                 r.files.size(), static_cast<double>(r.bytes) / 1e6, flags->out.c_str());
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
