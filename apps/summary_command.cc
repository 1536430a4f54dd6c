// acmetrace summary FILE...: the release's cluster_summary.csv columns from job-trace files.
#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/producers/summary.h"
#include "commands.h"

namespace acmetrace::apps {

void RegisterSummary(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::vector<std::string> files;
    bool strict = false;
    bool check = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "summary", "print the release's cluster_summary.csv columns computed from job-trace files (CSV)");
  cmd->add_option("FILE", flags->files, "job-trace files (trace_seren.csv, trace_kalos.csv)")->required();
  cmd->add_flag("--strict", flags->strict, "fail (exit 1) at the first malformed row");
  cmd->add_flag("--check", flags->check,
                "compare with the release's published cluster_summary.csv (embedded); exit 1 on any difference");
  cmd->callback([&registry, flags] {
    registry.OnRun([flags] {
      core::InputErrors errors(stderr, flags->strict);
      core::Result<std::string> csv = producers::SummarizeJobTraces(flags->files, errors);
      errors.Finish();
      if (!csv.ok()) {
        core::LogError("summary", csv.status().message());
        return 1;
      }
      std::fputs(csv.value().c_str(), stdout);
      if (flags->check) {
        const std::vector<std::string> diffs = producers::CompareWithPublishedSummary(csv.value());
        for (const std::string& d : diffs) core::LogError("summary", "differs from the release: " + d);
        if (!diffs.empty()) return 1;
        core::LogInfo("summary", "every column matches the release's cluster_summary.csv");
      }
      if (errors.total() > 0) {
        core::Logf(core::LogLevel::kWarn, "summary", "%lld malformed rows skipped", static_cast<long long>(errors.total()));
      }
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
