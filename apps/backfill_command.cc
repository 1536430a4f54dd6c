// acmetrace backfill: the trace at its own dates as Prometheus TSDB blocks (or OpenMetrics text):
// what a Prometheus scraping `run --speed 1` every step would have stored, at full speed.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/core/time.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/history/backfill.h"
#include "acmetrace/history/blocks.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "commands.h"

namespace acmetrace::apps {

void RegisterBackfill(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string data, out, step, from, to, clusters, persona, openmetrics, promtool;
    std::vector<std::string> rules;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "backfill",
      "the trace at its own dates in Prometheus: TSDB blocks of what scraping `run --speed 1` would have stored");
  cmd->add_option("--data", flags->data,
                  "release directory (DIR/data/...); without it, run's embedded default data set (run.default_*)");
  cmd->add_option("--out", flags->out,
                  "PROMDIR: a new or empty directory for the blocks (then a --storage.tsdb.path for prometheus)");
  cmd->add_option("--step", flags->step, "seconds of trace time between two scrapes [backfill.step_s]");
  cmd->add_option("--from", flags->from, "first trace time (unix seconds or ISO 8601 with offset) [replay.from]");
  cmd->add_option("--to", flags->to, "trace time to stop at, exclusive [replay.to]");
  cmd->add_option("--clusters", flags->clusters, "comma-separated clusters, e.g. seren,kalos [replay.clusters]");
  cmd->add_option("--persona", flags->persona, "on|off: the per-node dcgm-exporter series too [backfill.persona]");
  cmd->add_option("--openmetrics", flags->openmetrics,
                  "write only the OpenMetrics text to FILE (- for stdout) instead of blocks");
  cmd->add_option("--promtool", flags->promtool, "promtool to run [backfill.promtool]");
  cmd->add_option("--rules", flags->rules,
                  "Prometheus rule files whose recording rules are backfilled too (default: the shipped "
                  "configs/prometheus/rules/*.yml, built in)");
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags] {
      std::vector<std::pair<std::string, std::string>> overrides;
      if (!flags->step.empty()) overrides.emplace_back("backfill.step_s", flags->step);
      if (!flags->from.empty()) overrides.emplace_back("replay.from", flags->from);
      if (!flags->to.empty()) overrides.emplace_back("replay.to", flags->to);
      if (!flags->clusters.empty()) overrides.emplace_back("replay.clusters", flags->clusters);
      if (!flags->promtool.empty()) overrides.emplace_back("backfill.promtool", flags->promtool);
      if (!flags->persona.empty()) {
        const std::string& p = flags->persona;
        overrides.emplace_back("backfill.persona", p == "on" ? "true" : p == "off" ? "false" : p);
      }
      if (!LoadConfig(registry, overrides)) return 2;
      const core::Config& config = registry.config();
      if (flags->out.empty() == flags->openmetrics.empty()) {
        core::LogError("backfill", "give exactly one of --out PROMDIR (blocks) and --openmetrics FILE (text only)");
        return 2;
      }
      std::vector<scoring::RuleFileText> rules = scoring::ShippedRules();
      if (!flags->rules.empty()) rules.clear();
      for (const std::string& path : flags->rules) {
        core::Result<scoring::RuleFileText> read = scoring::ReadRuleFile(path);
        if (!read.ok()) {
          core::LogError("backfill", read.status().message());
          return 2;
        }
        rules.push_back(std::move(read).value());
      }
      for (const scoring::RuleFileText& file : rules) {  // a bad rule file is known before hours of work
        if (core::Result<int> n = history::CountRecordingRules(file); !n.ok()) {
          core::LogError("backfill", n.status().message());
          return 2;
        }
      }

      history::BackfillOptions options;
      options.step_ms = config.GetInt("backfill.step_s") * 1000;
      options.persona = config.GetBool("backfill.persona");
      options.process = processors::ProcessOptionsFromConfig(config);
      if (options.process.detectors) options.detectors = processors::MakeDetectorFactory(config);
      options.exporter = exporters::ExportOptionsFromConfig(config);
      options.stream.clusters = config.GetList("replay.clusters");
      options.stream.range.from_ms = ParseTimeFlag("replay.from", config.GetString("replay.from"),
                                                   options.stream.range.from_ms);
      options.stream.range.to_ms = ParseTimeFlag("replay.to", config.GetString("replay.to"), options.stream.range.to_ms);
      options.stream.job_reorder_window_ms = config.GetInt("replay.job_reorder_window_s") * 1000;

      // Where the samples go: checked (promtool there, PROMDIR empty) before the data is read.
      std::unique_ptr<history::ScrapeOutput> output;
      history::PromtoolBlocks* blocks = nullptr;
      if (!flags->openmetrics.empty()) {
        core::Result<std::unique_ptr<history::OpenMetricsFile>> file = history::OpenMetricsFile::Open(flags->openmetrics);
        if (!file.ok()) {
          core::LogError("backfill", file.status().message());
          return 1;
        }
        output = std::move(file).value();
      } else {
        history::BlockOptions block_options;
        block_options.promtool = config.GetString("backfill.promtool");
        block_options.out_dir = flags->out;
        block_options.max_chunk_bytes = config.GetInt("backfill.chunk_mb") << 20;
        core::Result<std::unique_ptr<history::PromtoolBlocks>> opened = history::PromtoolBlocks::Open(block_options);
        if (!opened.ok()) {
          core::LogError("backfill", opened.status().message());
          return 1;
        }
        blocks = opened.value().get();
        output = std::move(opened).value();
      }

      if (flags->data.empty()) {
        core::Result<std::string> dir = pipeline::PrepareDefaultData(
            config, [](const std::string& line) { core::LogInfo("backfill", line); });
        if (!dir.ok()) {
          core::LogError("backfill", "default data set: " + dir.status().message());
          return 1;
        }
        options.stream.data_dir = dir.value();
      } else {
        options.stream.data_dir = flags->data;
      }

      core::InputErrors errors(stderr, config.GetBool("replay.strict"), config.GetInt("replay.max_error_lines"));
      core::Logf(core::LogLevel::kInfo, "backfill", "replaying %s, a scrape every %lld s of trace time%s",
                 options.stream.data_dir.c_str(), static_cast<long long>(options.step_ms / 1000),
                 blocks != nullptr ? ", blocks by promtool" : "");
      core::Result<history::BackfillStats> done = history::RunBackfill(options, errors, *output);
      errors.Finish();
      if (!done.ok()) {
        core::LogError("backfill", done.status().message());
        return 1;
      }
      if (errors.must_stop()) return 1;
      const history::BackfillStats& st = done.value();
      core::Logf(core::LogLevel::kInfo, "backfill",
                 "%lld records, %lld scrapes from %s to %s, %lld samples, %lld windows, %lld anomaly transitions, "
                 "%lld input errors",
                 static_cast<long long>(st.records), static_cast<long long>(st.scrapes),
                 core::FormatIsoTime(st.first_scrape_ms, 0).c_str(), core::FormatIsoTime(st.last_scrape_ms, 0).c_str(),
                 static_cast<long long>(st.samples), static_cast<long long>(st.process.windows),
                 static_cast<long long>(st.process.anomalies), static_cast<long long>(errors.total()));
      // acmetrace's own share (the children, promtool, are counted apart): bench/backfill_day.sh.
      struct rusage self {};
      ::getrusage(RUSAGE_SELF, &self);
      core::Logf(core::LogLevel::kInfo, "backfill", "acmetrace: %.1f CPU s, peak RSS %.0f MB",
                 static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                     static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6,
                 static_cast<double>(self.ru_maxrss) / 1e3);
      if (blocks == nullptr) return 0;
      core::Logf(core::LogLevel::kInfo, "backfill",
                 "promtool: %lld chunks, %.1f MB of OpenMetrics, %.1f CPU s, peak RSS %.0f MB",
                 static_cast<long long>(blocks->chunks()), static_cast<double>(blocks->text_bytes()) / 1e6,
                 blocks->promtool_cpu_s(), static_cast<double>(blocks->promtool_max_rss_bytes()) / 1e6);

      history::RuleBackfillOptions rule_options;
      rule_options.promtool = config.GetString("backfill.promtool");
      rule_options.prometheus = config.GetString("backfill.prometheus");
      rule_options.out_dir = flags->out;
      rule_options.rules = rules;
      rule_options.from_ms = st.first_scrape_ms;
      rule_options.to_ms = st.last_scrape_ms;
      rule_options.eval_interval_ms = options.step_ms;
      rule_options.slice_ms = config.GetInt("backfill.rules_slice_h") * 3'600'000;
      core::Result<int> recorded = history::BackfillRecordingRules(rule_options);
      if (!recorded.ok()) {
        core::LogError("backfill", recorded.status().message());
        return 1;
      }
      if (recorded.value() > 0) {
        core::Logf(core::LogLevel::kInfo, "backfill", "%d recording rules backfilled", recorded.value());
      }
      const std::string retention = history::RetentionFor(st.first_scrape_ms, st.last_scrape_ms);
      std::printf(
          "blocks in %s: %s .. %s\n"
          "serve them: scripts/prometheus-history %s   (or: prometheus --storage.tsdb.path=%s "
          "--storage.tsdb.retention.time=%s)\n"
          "Prometheus deletes blocks older than its retention counted from the newest block: keep at least %s, and "
          "do not scrape live targets into this directory (a sample of today makes every trace block too old).\n",
          flags->out.c_str(), core::FormatIsoTime(st.first_scrape_ms, 0).c_str(),
          core::FormatIsoTime(st.last_scrape_ms, 0).c_str(), flags->out.c_str(), flags->out.c_str(), retention.c_str(),
          retention.c_str());
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
