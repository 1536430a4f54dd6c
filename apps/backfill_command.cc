// acmetrace backfill: the trace at its own dates as Prometheus TSDB blocks (or OpenMetrics text):
// what a Prometheus scraping `run --speed 1` every step would have stored, at full speed.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/core/time.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/history/alert_series.h"
#include "acmetrace/history/backfill.h"
#include "acmetrace/history/blocks.h"
#include "acmetrace/history/plan.h"
#include "acmetrace/history/remote_write_output.h"
#include "acmetrace/pipeline/pipeline.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/replay_config.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "commands.h"
#include "remote_write_flags.h"
#include "shutdown_signal.h"

namespace acmetrace::apps {

void RegisterBackfill(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string data, out, openmetrics;
    std::vector<std::string> rules;
    RemoteWriteFlags remote_write;
  };
  auto [cmd, keys] = registry.AddCommand(
      app, "backfill",
      "the trace at its own dates in Prometheus: TSDB blocks of what scraping `run --speed 1` would have stored");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--data", flags->data,
                  "release directory (DIR/data/...); without it, run's embedded default data set (run.default_*)");
  cmd->add_option("--out", flags->out,
                  "PROMDIR: a new or empty directory for the blocks (then a --storage.tsdb.path for prometheus)");
  // A table of flags: alike in shape with process's (and every command's), each its own keys and help.
  keys.Option("--step", "backfill.step_s", "seconds of trace time between two scrapes")
      .Option("--from", "replay.from", "first trace time (unix seconds or ISO 8601 with offset)")
      .Option("--to", "replay.to", "trace time to stop at, exclusive")
      .Option("--clusters", "replay.clusters", "comma-separated clusters, e.g. seren,kalos")
      .Option("--persona", "backfill.persona", "on|off: the per-node dcgm-exporter series too");
  cmd->add_option("--openmetrics", flags->openmetrics,
                  "write only the OpenMetrics text to FILE (- for stdout) instead of blocks");
  AddRemoteWriteFlags(cmd, keys, flags->remote_write,
                      "send the samples by Prometheus remote write to URL (e.g. http://HOST:8428/api/v1/write) instead "
                      "of blocks",
                      /*live=*/false);
  keys.Option("--promtool", "backfill.promtool", "promtool to run");
  cmd->add_option("--rules", flags->rules,
                  "Prometheus rule files whose recording rules are backfilled too (default: the shipped "
                  "configs/prometheus/rules/*.yml, built in)");
  registry.OnRunWithConfig(cmd, [&registry, flags](const core::Config& config) {
    if ((flags->out.empty() ? 0 : 1) + (flags->openmetrics.empty() ? 0 : 1) +
            (flags->remote_write.url.empty() ? 0 : 1) !=
        1) {
      core::LogError("backfill",
                     "give exactly one of --out PROMDIR (blocks), --openmetrics FILE (text only) and --remote-write URL");
      return 2;
    }
    if (!flags->remote_write.url.empty() && !flags->rules.empty()) {
      core::LogError("backfill",
                     "--rules: recording rules and ALERTS are backfilled into blocks only; with --remote-write the "
                     "receiver's ruler evaluates them");
      return 2;
    }
    // The remote write client, checked before any work: URL, credentials, queue settings (its
    // senders start below, once the signal mask they must inherit is set).
    const std::optional<RemoteWriteSetup> remote =
        CheckRemoteWrite(flags->remote_write, config, "backfill", remote_write::WriteMode::kBackfill);
    if (!remote) return 2;
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

    const pipeline::BackfillSettings settings = pipeline::BackfillSettingsFromConfig(config);
    const producers::ReplaySettings replay = producers::ReplaySettingsFromConfig(config);
    history::BackfillOptions options;
    options.step_ms = settings.step_ms;
    options.persona = settings.persona;
    options.process = processors::ProcessOptionsFromConfig(config);
    if (options.process.detectors) options.detectors = processors::MakeDetectorFactory(config);
    options.exporter = exporters::ExportOptionsFromConfig(config);
    replay.ApplyTo(options.stream);

    // Where the samples go, and what is needed, checked before any work: promtool, prometheus if
    // there are recording rules, every rule file through `promtool check rules`, PROMDIR empty.
    const int64_t chunk_bytes = settings.chunk_mb << 20;
    history::StopRequest stop;
    remote_write::RealSleeper sleeper;  // outlives output: the queue's senders wait with it
    std::unique_ptr<history::ScrapeOutput> output;
    // SIGINT/SIGTERM, from here on: the work stops at the next scrape, the children at once (their
    // process groups); the staging directory is removed as the stages unwind, PROMDIR is left as
    // it was.
    ShutdownOnSignal on_signal([&stop](int signal) { stop.Request(signal); }, /*announce=*/false);
    history::RemoteWriteOutput* remote_sink = nullptr;  // set below, read by stopped() and the report
    auto report_remote = [&remote_sink]() {
      const remote_write::QueueStats q = remote_sink->Stats();
      ReportRemoteWrite("backfill", remote_sink->series(), q, remote_sink->Refused(kRefusedSeriesNamed));
      return q;
    };
    auto stopped = [&](const char* phase) {
      const int signal = stop.signal();
      bool flushed = true;
      if (remote_sink != nullptr) {
        // What was scraped before the signal is sent (retries bounded), then the senders stop.
        core::Status finished = remote_sink->Finish();
        const remote_write::QueueStats q = report_remote();
        if (!finished.ok()) core::LogError("backfill", finished.message());
        flushed = finished.ok() && q.samples_failed == 0;
      }
      output.reset();  // stops promtool, removes the staging directory
      const std::string name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal";
      if (remote_sink != nullptr) {
        core::Logf(core::LogLevel::kInfo, "backfill", "stopped by %s during %s: %s", name.c_str(), phase,
                   flushed ? "the samples scraped so far were sent"
                           : "the samples scraped so far were sent but for the failed ones above");
      } else if (flags->out.empty()) {
        core::Logf(core::LogLevel::kInfo, "backfill", "stopped by %s during %s: %s holds an incomplete text",
                   name.c_str(), phase, flags->openmetrics.c_str());
      } else {
        core::Logf(core::LogLevel::kInfo, "backfill",
                   "stopped by %s during %s: every child stopped, temporary files removed, %s left as it was",
                   name.c_str(), phase, flags->out.c_str());
      }
      return 128 + signal;
    };
    history::PromtoolBlocks* blocks = nullptr;
    history::BlockOptions block_options;
    bool has_rules = false;
    if (!remote->url.empty()) {
      auto sink = std::make_unique<history::RemoteWriteOutput>(MakeWriteQueue(*remote, sleeper));
      remote_sink = sink.get();
      output = std::move(sink);
    } else if (!flags->openmetrics.empty()) {
      core::Result<std::unique_ptr<history::OpenMetricsFile>> file = history::OpenMetricsFile::Open(flags->openmetrics);
      if (!file.ok()) {
        core::LogError("backfill", file.status().message());
        return 1;
      }
      output = std::move(file).value();
    } else {
      block_options.promtool = settings.promtool;
      block_options.out_dir = flags->out;
      block_options.max_chunk_bytes = chunk_bytes;
      block_options.stop = &stop;
      core::Result<std::unique_ptr<history::PromtoolBlocks>> opened = history::PromtoolBlocks::Open(block_options);
      if (!opened.ok()) {
        core::LogError("backfill", opened.status().message());
        return 1;
      }
      blocks = opened.value().get();
      for (const std::string& removed : blocks->removed_stale()) {
        core::Logf(core::LogLevel::kInfo, "backfill", "removed %s: the staging directory of a backfill into %s that was killed",
                   removed.c_str(), flags->out.c_str());
      }
      output = std::move(opened).value();
      // Recording rules are backfilled, and alerting rules' ALERTS written, through a temporary Prometheus.
      for (const scoring::RuleFileText& file : rules) {
        scoring::RuleSet parsed;
        if (scoring::LoadRuleText(file, parsed).ok() && (!parsed.records.empty() || !parsed.alerts.empty())) {
          has_rules = true;
        }
      }
      const std::string& prometheus = settings.prometheus;
      if (has_rules && !history::FindExecutable(prometheus)) {
        core::LogError("backfill", "prometheus not found ('" + prometheus +
                                       "'): recording and alerting rules are evaluated through a temporary "
                                       "Prometheus (Debian: apt-get install prometheus; or --rules with files "
                                       "without rules)");
        return 1;
      }
      core::Status checked = history::CheckRuleFiles(*history::FindExecutable(block_options.promtool), rules,
                                                     blocks->staging_dir() + "/check", &stop);
      if (stop.requested()) return stopped("the checks");
      if (!checked.ok()) {
        const core::Status& s = checked;
        core::LogError("backfill", s.message());
        return 1;
      }
    }

    const std::optional<std::string> data_dir = DataDirOrDefault(flags->data, config, "backfill");
    if (!data_dir) return 1;
    options.stream.data_dir = *data_dir;

    // The window: --from/--to, else the telemetry's span (the job trace's without telemetry).
    core::Result<producers::DataDirFiles> files = producers::ListDataDir(options.stream.data_dir, options.stream.clusters);
    if (!files.ok()) {
      core::LogError("backfill", files.status().message());
      return 1;
    }
    history::BackfillPlan plan =
        history::PlanBackfill(files.value(), options.stream.range, options.step_ms, options.persona);
    options.stream.range = plan.window;
    // The window opens at --from (or the telemetry's first sample), but everything before it is
    // replayed too, unscraped: the jobs submitted or started before it (a slice of the release holds
    // them), and, for a --from inside the data, the state that reaches it, so that the first scrape
    // shows what the whole backfill's scrape then shows and slices add up to the whole.
    options.scrape_from_ms = plan.window.from_ms;
    options.stream.range.from_ms = INT64_MIN;
    options.close_at_end = plan.ends_with_data;
    const int64_t temp_bytes =
        blocks == nullptr ? 0 : std::min(history::MaxChunksOnDisk(block_options) * chunk_bytes, plan.text_bytes);
    history::PrintPlan(stderr, plan, options.stream.data_dir, temp_bytes, history::MaxChunksOnDisk(block_options),
                       chunk_bytes, blocks != nullptr ? history::PlanOutput::kBlocks
                       : remote_sink != nullptr ? history::PlanOutput::kRemoteWrite
                                                : history::PlanOutput::kText);
    if (blocks != nullptr) {
      const int64_t need = temp_bytes + plan.block_bytes;
      core::Result<int64_t> free_bytes = history::FreeDiskBytes(blocks->staging_dir());
      if (free_bytes.ok() && free_bytes.value() < need) {
        core::Logf(core::LogLevel::kError, "backfill",
                   "not enough disk space next to %s: about %.0f MB needed (%.0f MB temporary + %.0f MB of blocks), "
                   "%.0f MB free; narrow the window (--from/--to) or free space",
                   flags->out.c_str(), static_cast<double>(need) / 1e6, static_cast<double>(temp_bytes) / 1e6,
                   static_cast<double>(plan.block_bytes) / 1e6, static_cast<double>(free_bytes.value()) / 1e6);
        return 1;
      }
    }

    history::ProgressLine progress(stderr, ::isatty(STDERR_FILENO) != 0, plan);
    options.stop = &stop;
    options.on_scrape = [&progress](const history::BackfillStats& st) { progress.Scraped(st); };
    core::InputErrors errors(stderr, replay.strict, replay.max_error_lines);
    core::Result<history::BackfillStats> done = history::RunBackfill(options, errors, *output);
    errors.Finish();
    progress.Done();
    if (stop.requested()) return stopped(blocks != nullptr ? "the data phase (promtool running)" : "the data phase");
    if (!done.ok()) {
      if (remote_sink != nullptr) {
        (void)remote_sink->Finish();  // what is still queued is counted as failed, not left pending
        report_remote();
      }
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
    if (remote_sink != nullptr) {
      const remote_write::QueueStats q = report_remote();
      return q.samples_failed > 0 ? 1 : 0;
    }
    if (blocks == nullptr) return 0;
    core::Logf(core::LogLevel::kInfo, "backfill",
               "promtool: %lld chunks, %.1f MB of OpenMetrics, %.1f CPU s, peak RSS %.0f MB",
               static_cast<long long>(blocks->chunks()), static_cast<double>(blocks->text_bytes()) / 1e6,
               blocks->promtool_cpu_s(), static_cast<double>(blocks->promtool_max_rss_bytes()) / 1e6);

    history::RuleBackfillOptions rule_options;
    rule_options.promtool = settings.promtool;
    rule_options.prometheus = settings.prometheus;
    rule_options.blocks_dir = blocks->blocks_dir();
    rule_options.work_dir = blocks->staging_dir() + "/rules";
    rule_options.rules = rules;
    rule_options.from_ms = st.first_scrape_ms;
    // Through the step of the last scrape: the evaluations that read it (Prometheus offsets them
    // within the interval), none after.
    rule_options.to_ms = st.last_scrape_ms + std::max<int64_t>(options.step_ms - 1000, 0);
    rule_options.eval_interval_ms = options.step_ms;
    rule_options.slice_ms = settings.rules_slice_h * 3'600'000;
    rule_options.stop = &stop;
    rule_options.on_slice = [](int slice, int slices, int64_t from_ms) {
      core::Logf(core::LogLevel::kInfo, "backfill", "recording rules: slice %d of %d (from %s)", slice, slices,
                 core::FormatIsoTime(from_ms, 0).c_str());
    };
    core::Result<int> recorded = history::BackfillRecordingRules(rule_options);
    if (stop.requested()) return stopped("the recording-rule phase");
    if (!recorded.ok()) {
      core::LogError("backfill", recorded.status().message());
      return 1;
    }
    if (recorded.value() > 0) {
      core::Logf(core::LogLevel::kInfo, "backfill", "%d recording rules backfilled", recorded.value());
    }
    // The alerting rules' ALERTS and ALERTS_FOR_STATE, read from the blocks and the recording rules'.
    history::AlertBackfillOptions alert_options;
    alert_options.promtool = rule_options.promtool;
    alert_options.prometheus = rule_options.prometheus;
    alert_options.blocks_dir = rule_options.blocks_dir;
    alert_options.work_dir = blocks->staging_dir() + "/alerts";
    alert_options.rules = rules;
    alert_options.from_ms = rule_options.from_ms;
    alert_options.to_ms = rule_options.to_ms;
    alert_options.eval_interval_ms = rule_options.eval_interval_ms;
    alert_options.slice_ms = rule_options.slice_ms;
    alert_options.stop = &stop;
    alert_options.on_slice = [](int slice, int slices, int64_t from_ms) {
      core::Logf(core::LogLevel::kInfo, "backfill", "alerting rules: slice %d of %d (from %s)", slice, slices,
                 core::FormatIsoTime(from_ms, 0).c_str());
    };
    core::Result<history::AlertBackfillStats> alerted = history::BackfillAlerts(alert_options);
    if (stop.requested()) return stopped("the alerting-rule phase");
    if (!alerted.ok()) {
      core::LogError("backfill", alerted.status().message());
      return 1;
    }
    if (alerted.value().rules > 0) {
      core::Logf(core::LogLevel::kInfo, "backfill",
                 "%d alerting rules evaluated: %lld firings, %lld ALERTS and ALERTS_FOR_STATE samples",
                 alerted.value().rules, static_cast<long long>(alerted.value().firings),
                 static_cast<long long>(alerted.value().samples));
    }
    if (core::Status s = blocks->Commit(); !s.ok()) {
      core::LogError("backfill", s.message());
      return 1;
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
}

}  // namespace acmetrace::apps
