// acmetrace summary FILE...: the release's cluster_summary.csv columns from job-trace files.
#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/producers/summary.h"
#include "commands.h"

namespace acmetrace::apps {

void RegisterSummary(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::vector<std::string> files;
    bool strict = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "summary", "print the release's cluster_summary.csv columns computed from job-trace files (CSV)");
  cmd->add_option("FILE", flags->files, "job-trace files (trace_seren.csv, trace_kalos.csv)")->required();
  cmd->add_flag("--strict", flags->strict, "fail (exit 1) at the first malformed row");
  cmd->callback([&registry, flags] {
    registry.OnRun([flags] {
      core::InputErrors errors(stderr, flags->strict);
      core::Result<std::string> csv = producers::SummarizeJobTraces(flags->files, errors);
      errors.Finish();
      if (!csv.ok()) {
        std::fprintf(stderr, "acmetrace summary: %s\n", csv.status().message().c_str());
        return 1;
      }
      std::fputs(csv.value().c_str(), stdout);
      if (errors.total() > 0) {
        std::fprintf(stderr, "acmetrace summary: %lld malformed rows skipped\n", static_cast<long long>(errors.total()));
      }
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
