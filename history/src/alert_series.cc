// ALERTS and ALERTS_FOR_STATE for backfilled blocks: each alerting rule asked over the window a slice at
// a time, each slice through a temporary Prometheus serving its blocks, replayed through Prometheus's
// state machine with the alerts' states carried across slices, written as OpenMetrics and made into
// blocks by promtool.
#include "acmetrace/history/alert_series.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "acmetrace/exporters/series_store.h"
#include "acmetrace/history/blocks.h"
#include "acmetrace/history/openmetrics.h"
#include "acmetrace/scoring/range_query.h"
#include "temporary_prometheus.h"

namespace acmetrace::history {
namespace fs = std::filesystem;

namespace {

// {name="value",...} with alertstate added when given (label names sort it in; Prometheus does not
// care about the order in the text).
std::string RenderLabels(const scoring::Labels& labels, std::string_view alertstate) {
  std::string out = "{";
  bool state_done = alertstate.empty();
  auto add = [&out](std::string_view name, std::string_view value) {
    if (out.size() > 1) out += ',';
    out += name;
    out += "=\"";
    exporters::AppendEscaped(out, value, true);
    out += '"';
  };
  for (const auto& [name, value] : labels) {
    if (name == "alertstate") continue;  // Prometheus's own label wins over a series' one
    if (!state_done && name > "alertstate") {
      add("alertstate", alertstate);
      state_done = true;
    }
    add(name, value);
  }
  if (!state_done) add("alertstate", alertstate);
  out += '}';
  return out;
}

// The first evaluation at or after from_ms of a group evaluated every step_ms (its multiples).
int64_t FirstEvaluationMs(int64_t from_ms, int64_t step_ms) { return (from_ms + step_ms - 1) / step_ms * step_ms; }

}  // namespace

void AppendAlertSamples(std::string& out, const scoring::Labels& labels, const scoring::AlertEvaluation& e) {
  AppendOpenMetricsSample(out, "ALERTS", RenderLabels(labels, e.firing ? "firing" : "pending"), "", 1.0, e.ts_ms);
  scoring::Labels for_state = labels;
  for_state.erase("alertstate");
  AppendOpenMetricsSample(out, "ALERTS_FOR_STATE", RenderLabels(for_state, ""), "",
                          static_cast<double>(e.active_at_ms / 1000), e.ts_ms);
}

core::Result<AlertBackfillStats> BackfillAlerts(const AlertBackfillOptions& options) {
  AlertBackfillStats stats;
  scoring::RuleSet rules;
  for (const scoring::RuleFileText& file : options.rules) {
    if (core::Status s = scoring::LoadRuleText(file, rules, options.eval_interval_ms); !s.ok()) return s;
  }
  if (rules.alerts.empty()) return stats;
  core::Result<RulePrograms> programs =
      FindRulePrograms(options.promtool, options.prometheus, "alerting rules are evaluated");
  if (!programs.ok()) return programs.status();
  const std::string& promtool = programs.value().promtool;
  const std::string& prometheus = programs.value().prometheus;
  const fs::path work = fs::absolute(options.work_dir);
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work / "blocks", ec);
  if (ec) return core::Status::Error(work.string() + ": " + ec.message());
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{work};
  core::Result<std::vector<BlockSpan>> blocks = ListBlocks(options.blocks_dir);
  if (!blocks.ok()) return blocks.status();
  if (blocks.value().empty()) return stats;
  const std::string config = (work / "prometheus.yml").string();
  if (core::Status s = WriteFile(config, "# acmetrace backfill: serves the blocks to the alerting rules; scrapes "
                                         "nothing\nglobal:\n  evaluation_interval: 1h\n");
      !s.ok()) {
    return s;
  }
  const int64_t lookback = RuleLookbackMs(options.rules);
  const std::string retention = RetentionFor(options.from_ms - lookback, options.to_ms);

  const std::string text_path = (work / "alerts.om").string();
  std::FILE* text_file = std::fopen(text_path.c_str(), "wb");
  if (text_file == nullptr) return core::Status::Error(text_path + ": " + std::strerror(errno));
  struct FileCloser {
    std::FILE*& f;
    ~FileCloser() {
      if (f != nullptr) std::fclose(f);
    }
  } closer{text_file};
  // Each rule's alerts still pending or firing at the end of the slice before.
  std::vector<scoring::CarriedAlerts> carried(rules.alerts.size());
  std::string text;
  // One rule over one slice's evaluations: its group's interval's multiples in the slice, as `score`
  // evaluates them.
  auto evaluate = [&](size_t i, const WindowSlice& slice, scoring::PrometheusClient& client) -> core::Status {
    const scoring::AlertRule& rule = rules.alerts[i];
    const int64_t step = rule.interval_ms;
    const int64_t start = FirstEvaluationMs(std::max(slice.from_ms, options.from_ms), step);
    if (start > slice.to_ms) return core::Status::Ok();
    core::Result<scoring::RangeAnswer> answer = client.QueryRange(rule.expr, start, slice.to_ms, step);
    if (!answer.ok()) {
      return core::Status::Error("alerting rule " + rule.name + " (" + rule.file + ":" + std::to_string(rule.line) +
                                 "): " + answer.status().message());
    }
    text.clear();
    scoring::ReplayAlertStates(
        answer.value().series, rule, {start, slice.to_ms, step, rule.for_ms, rule.keep_firing_for_ms},
        [&](const scoring::Labels& labels, const scoring::AlertEvaluation& e) {
          if (e.onset) ++stats.firings;
          AppendAlertSamples(text, labels, e);
          stats.samples += 2;
        },
        &carried[i]);
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), text_file) != text.size()) {
      return core::Status::Error(text_path + ": " + std::strerror(errno));
    }
    return core::Status::Ok();
  };
  const std::vector<WindowSlice> slices =
      SliceWindow(options.from_ms, options.to_ms, options.slice_ms, options.eval_interval_ms);
  for (size_t n = 0; n < slices.size(); ++n) {
    const WindowSlice& slice = slices[n];
    if (options.stop != nullptr && options.stop->requested()) return core::Status::Error("stopped");
    if (options.on_slice) options.on_slice(static_cast<int>(n + 1), static_cast<int>(slices.size()), slice.from_ms);
    // Served even without blocks (a gap in the data): the carried alerts then go inactive, or stay held
    // by keep_firing_for, as the whole window would tell them.
    core::Result<int> linked = LinkBlocksOfSpan(blocks.value(), slice.from_ms - lookback, slice.to_ms, work / "serving");
    if (!linked.ok()) return linked.status();
    int port = 0;
    core::Result<Subprocess> server = StartReadyPrometheus(prometheus, config, work / "serving", retention,
                                                           (work / "prometheus.log").string(), options.stop, port);
    if (!server.ok()) return server.status();
    core::Result<std::unique_ptr<scoring::PrometheusClient>> client =
        scoring::PrometheusClient::Create("http://127.0.0.1:" + std::to_string(port), 120'000);
    if (!client.ok()) return client.status();
    for (size_t i = 0; i < rules.alerts.size(); ++i) {
      if (options.stop != nullptr && options.stop->requested()) return core::Status::Error("stopped");
      if (core::Status s = evaluate(i, slice, *client.value()); !s.ok()) return s;
    }
    server.value().Terminate();
  }
  stats.rules = static_cast<int>(std::count_if(rules.alerts.begin(), rules.alerts.end(), [&](const scoring::AlertRule& r) {
    return FirstEvaluationMs(options.from_ms, r.interval_ms) <= options.to_ms;
  }));
  if (std::fwrite(kOpenMetricsEnd.data(), 1, kOpenMetricsEnd.size(), text_file) != kOpenMetricsEnd.size() ||
      std::fclose(text_file) != 0) {
    text_file = nullptr;
    return core::Status::Error(text_path + ": " + std::strerror(errno));
  }
  text_file = nullptr;
  if (stats.samples == 0) return stats;
  core::Result<Subprocess> tool =
      Subprocess::Start({promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", text_path,
                         (work / "blocks").string()},
                        (work / "promtool.log").string(), work.string(), options.stop);
  if (!tool.ok()) return tool.status();
  if (core::Status s = tool.value().Wait(); !s.ok()) return core::Status::Error("ALERTS: " + s.message());
  if (core::Status s = MoveBlocks(work / "blocks", options.blocks_dir); !s.ok()) return s;
  return stats;
}

}  // namespace acmetrace::history
