// ALERTS and ALERTS_FOR_STATE for backfilled blocks: each alerting rule asked once over the window
// through a temporary Prometheus, replayed through Prometheus's state machine, written as OpenMetrics
// and made into blocks by promtool.
#include "acmetrace/history/alert_series.h"

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
  fs::create_directories(work / "serving", ec);
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
  int64_t first_ms = INT64_MAX, last_ms = INT64_MIN;
  for (const BlockSpan& b : blocks.value()) {
    fs::copy(b.dir, work / "serving" / b.dir.filename(),
             fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
    if (ec) return core::Status::Error("linking " + b.dir.string() + ": " + ec.message());
    first_ms = std::min(first_ms, b.min_ms);
    last_ms = std::max(last_ms, b.max_ms);
  }
  const std::string config = (work / "prometheus.yml").string();
  if (core::Status s = WriteFile(config, "# acmetrace backfill: serves the blocks to the alerting rules; scrapes "
                                         "nothing\nglobal:\n  evaluation_interval: 1h\n");
      !s.ok()) {
    return s;
  }
  int port = 0;
  core::Result<Subprocess> server =
      StartReadyPrometheus(prometheus, config, work / "serving", RetentionFor(first_ms, last_ms),
                           (work / "prometheus.log").string(), options.stop, port);
  if (!server.ok()) return server.status();
  core::Result<std::unique_ptr<scoring::PrometheusClient>> client =
      scoring::PrometheusClient::Create("http://127.0.0.1:" + std::to_string(port), 120'000);
  if (!client.ok()) return client.status();

  const std::string text_path = (work / "alerts.om").string();
  std::FILE* text_file = std::fopen(text_path.c_str(), "wb");
  if (text_file == nullptr) return core::Status::Error(text_path + ": " + std::strerror(errno));
  struct FileCloser {
    std::FILE*& f;
    ~FileCloser() {
      if (f != nullptr) std::fclose(f);
    }
  } closer{text_file};
  std::string text;
  for (const scoring::AlertRule& rule : rules.alerts) {
    if (options.stop != nullptr && options.stop->requested()) return core::Status::Error("stopped");
    const int64_t step = rule.interval_ms;
    // The group's evaluations: its interval's multiples in the window, as `score` evaluates them.
    const int64_t start = (options.from_ms + step - 1) / step * step;
    if (start > options.to_ms) continue;
    core::Result<scoring::RangeAnswer> answer = client.value()->QueryRange(rule.expr, start, options.to_ms, step);
    if (!answer.ok()) {
      return core::Status::Error("alerting rule " + rule.name + " (" + rule.file + ":" + std::to_string(rule.line) +
                                 "): " + answer.status().message());
    }
    ++stats.rules;
    text.clear();
    bool was_firing = false;
    const scoring::Labels* previous = nullptr;
    scoring::ReplayAlertStates(answer.value().series, rule,
                               {start, options.to_ms, step, rule.for_ms, rule.keep_firing_for_ms},
                               [&](const scoring::Labels& labels, const scoring::AlertEvaluation& e) {
                                 if (previous != &labels) was_firing = false;
                                 if (e.firing && (!was_firing || e.active_at_ms == e.ts_ms)) ++stats.firings;
                                 was_firing = e.firing;
                                 previous = &labels;
                                 AppendAlertSamples(text, labels, e);
                                 stats.samples += 2;
                               });
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), text_file) != text.size()) {
      return core::Status::Error(text_path + ": " + std::strerror(errno));
    }
  }
  server.value().Terminate();
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
  for (const fs::directory_entry& block : fs::directory_iterator(work / "blocks", ec)) {
    fs::rename(block.path(), fs::path(options.blocks_dir) / block.path().filename(), ec);
    if (ec) return core::Status::Error("moving " + block.path().string() + ": " + ec.message());
  }
  return stats;
}

}  // namespace acmetrace::history
