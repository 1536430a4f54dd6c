// acmetrace score: how good is an alerting setup on this trace (docs/monitoring.md, "Scoring alert rules").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/log.h"
#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"
#include "acmetrace/scoring/baseline.h"
#include "acmetrace/scoring/incidents.h"
#include "acmetrace/scoring/notifications.h"
#include "acmetrace/scoring/range_query.h"
#include "acmetrace/scoring/report.h"
#include "acmetrace/scoring/rule_file.h"
#include "acmetrace/scoring/score_run.h"
#include "commands.h"

namespace acmetrace::apps {

namespace {

// At most this many --sweep-for values: each one is every rule scored again.
constexpr size_t kMaxSweepValues = 64;

// Can path be written? Checked before any query, so that a typo does not cost the whole run: it
// must not be a directory, its directory must exist, and a file must be creatable there. The probe
// creates nothing that stays (an existing file is opened for writing, not truncated).
core::Status CheckOutputPath(const std::string& flag, const std::string& path) {
  auto refused = [&](const std::string& why) {
    return core::Status::Error(flag + ": " + path + ": cannot write there: " + why);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return refused("a directory");
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return refused(std::strerror(errno));
    ::close(fd);
    return core::Status::Ok();
  }
  if (errno != ENOENT) return refused(std::strerror(errno));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return refused(std::strerror(errno));
  ::close(fd);
  ::unlink(path.c_str());
  return core::Status::Ok();
}

bool WriteFile(const std::string& flag, const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  int error = out == nullptr ? errno : 0;
  if (out != nullptr) {
    if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) error = errno;
    if (std::fclose(out) != 0 && error == 0) error = errno;
  }
  if (error != 0) {
    core::LogError("score", flag + ": " + path + ": cannot write: " + std::strerror(error));
    return false;
  }
  return true;
}

// A base URL that paths are appended to.
std::string WithoutTrailingSlashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

void RegisterScore(CLI::App& app, CommandRegistry& registry) {
  struct Flags {
    std::string prometheus, faults, anomalies, notifications, from, to, json, html, sweep_for;
    std::string grafana, baseline;
    HttpClientFlags http;
    std::string grafana_datasource = "prometheus";
    std::vector<std::string> rules;
    std::string timeout_s = "60";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "score", "score alerting rules (and acmetrace's anomaly flags) against the incidents of a faults.csv");
  cmd->add_option("--prometheus", flags->prometheus,
                  "Prometheus (or VictoriaMetrics, Mimir, Thanos...) holding the trace's series, "
                  "http://HOST:PORT[/PREFIX] or https://...");
  AddHttpClientFlags(cmd, flags->http);
  cmd->add_option("--grafana", flags->grafana,
                  "a Grafana's URL: the report links each incident and false alert to its Explore page");
  cmd->add_option("--grafana-datasource", flags->grafana_datasource,
                  "the uid of that Grafana's Prometheus data source")
      ->capture_default_str();
  cmd->add_option("--baseline", flags->baseline,
                  "a previous `score --json` FILE: the report shows what changed since (precision, recall, false "
                  "alerts per rule)");
  cmd->add_option("--faults", flags->faults, "faults.csv of synth --inject-faults (cluster,kind,subject,start,end)")
      ->required();
  cmd->add_option("--rules", flags->rules,
                  "Prometheus rule files (default: the shipped configs/prometheus/rules/*.yml)");
  cmd->add_option("--anomalies", flags->anomalies,
                  "acme.anomalies records (JSON lines of `process --sink stdout`) to score as well");
  cmd->add_option("--notifications", flags->notifications,
                  "Alertmanager notifications recorded by run/export --notifications (JSON lines): score what paged, "
                  "per receiver");
  cmd->add_option("--from", flags->from,
                  "first evaluation, unix seconds or ISO 8601 with offset (default: an hour before the first incident)");
  cmd->add_option("--to", flags->to, "last evaluation (default: an hour after the last incident ends)");
  cmd->add_option("--json", flags->json, "also write the scores as JSON to FILE");
  cmd->add_option("--html", flags->html, "also write a self-contained HTML page (table and timelines) to FILE");
  cmd->add_option("--sweep-for", flags->sweep_for, "score each rule again at each of these for: values, e.g. 0s,1m,5m,15m");
  // A string checked below: CLI11's Range lets "nan" through (every comparison with it is false).
  cmd->add_option("--timeout-s", flags->timeout_s, "timeout of each request to Prometheus, seconds (0.1-3600)")
      ->capture_default_str();
  cmd->callback([&registry, flags] {
    registry.OnRun([&registry, flags]() -> int {
      if (!LoadConfig(registry)) return 2;
      auto usage = [](const std::string& message) {
        core::LogError("score", message);
        return 2;
      };
      if (flags->prometheus.empty() && flags->anomalies.empty() && flags->notifications.empty()) {
        return usage("give --prometheus (to score rules), --anomalies (to score acmetrace's flags) or --notifications "
                     "(to score what Alertmanager paged), or several");
      }
      if (flags->prometheus.empty() && flags->anomalies.empty() && !flags->html.empty()) {
        return usage("--html draws rules and flags (--prometheus, --anomalies); what --notifications scores is in the "
                     "table and --json");
      }
      if (flags->prometheus.empty() && flags->notifications.empty() && !flags->rules.empty()) {
        return usage("--rules needs --prometheus to query (or --notifications, for the kinds of its alerts)");
      }
      if (flags->prometheus.empty()) {
        if (const char* flag = flags->http.first_given()) return usage(std::string(flag) + " needs --prometheus");
      }
      core::Result<scoring::ClientOptions> client_flags = ClientOptionsFromFlags(flags->http);
      if (!client_flags.ok()) return usage(client_flags.status().message());
      scoring::ClientOptions client_options = std::move(client_flags).value();
      scoring::ReportLinks links;
      links.grafana_datasource = flags->grafana_datasource;
      if (!flags->grafana.empty()) {
        // A link on the page: the same checks as a server URL, so that no other scheme gets there.
        auto grafana = scoring::ParsePrometheusUrl(flags->grafana);
        if (!grafana.ok()) return usage("--grafana: " + core::QuotedValue(flags->grafana) + ": not an http:// or https:// URL");
        links.grafana = WithoutTrailingSlashes(flags->grafana);
      }
      if (flags->grafana_datasource.empty()) return usage("--grafana-datasource: empty");
      std::optional<scoring::Baseline> baseline;
      if (!flags->baseline.empty()) {
        auto loaded = scoring::LoadBaseline(flags->baseline);
        if (!loaded.ok()) return usage(loaded.status().message());
        baseline = std::move(loaded).value();
      }
      const std::optional<double> timeout_s = core::ParseDouble(flags->timeout_s);
      if (!timeout_s || !(*timeout_s >= 0.1 && *timeout_s <= 3600.0)) {
        return usage("--timeout-s: must be a number of seconds in 0.1-3600, not " + core::QuotedValue(flags->timeout_s));
      }
      std::unique_ptr<scoring::PrometheusClient> client;
      if (!flags->prometheus.empty()) {
        client_options.timeout_ms = std::llround(*timeout_s * 1000);
        auto created = scoring::PrometheusClient::Create(flags->prometheus, std::move(client_options));
        if (!created.ok()) return usage(created.status().message());
        client = std::move(created).value();
        links.prometheus = WithoutTrailingSlashes(flags->prometheus);  // as the user wrote it, checked above
      }
      // Rules.
      scoring::RuleSet rules;
      if (client) {
        if (flags->rules.empty()) {
          for (const scoring::RuleFileText& file : scoring::ShippedRules()) {
            if (core::Status s = scoring::LoadRuleText(file, rules); !s.ok()) return usage(s.message());
          }
        }
        for (const std::string& file : flags->rules) {
          if (core::Status s = scoring::LoadRuleFile(file, rules); !s.ok()) return usage(s.message());
        }
        if (rules.alerts.empty()) return usage("the rule files hold no alerting rule");
      }
      std::vector<int64_t> sweep;
      if (!flags->sweep_for.empty()) {
        size_t start = 0;
        while (start <= flags->sweep_for.size()) {
          size_t comma = flags->sweep_for.find(',', start);
          if (comma == std::string::npos) comma = flags->sweep_for.size();
          const std::string_view item = std::string_view(flags->sweep_for).substr(start, comma - start);
          auto d = scoring::ParseDurationMs(item);
          if (!d.ok()) return usage("--sweep-for: " + d.status().message());
          sweep.push_back(d.value());
          if (sweep.size() > kMaxSweepValues) {
            return usage("--sweep-for: more than " + std::to_string(kMaxSweepValues) + " values");
          }
          start = comma + 1;
        }
      }
      // Incidents and the window.
      auto incidents = scoring::LoadFaultsCsv(flags->faults);
      if (!incidents.ok()) return usage(incidents.status().message());
      scoring::ScoreOptions options;
      options.sweep_for_ms = sweep;
      if (!incidents.value().empty()) {
        int64_t first = INT64_MAX, last = INT64_MIN;
        for (const scoring::Incident& i : incidents.value()) {
          first = std::min(first, i.start_ms);
          last = std::max(last, i.end_ms);
        }
        options.from_ms = (first - 3'600'000) / 60'000 * 60'000;  // whole minutes
        options.to_ms = last + 3'600'000;
      }
      for (const auto& [text, into, name] : {std::tuple{&flags->from, &options.from_ms, "--from"},
                                             std::tuple{&flags->to, &options.to_ms, "--to"}}) {
        if (text->empty()) continue;
        std::optional<int64_t> ms = core::ParseTimeMs(*text);
        if (!ms) {
          return usage(std::string(name) + ": not a time (unix seconds or ISO 8601 with offset): " +
                       core::QuotedValue(*text));
        }
        if (!core::IsTraceTimeMs(*ms)) {
          return usage(std::string(name) + ": " + core::QuotedValue(*text) + " is " +
                       std::string(core::kTraceTimeRangeReason) + " of the trace");
        }
        *into = *ms;
      }
      if (incidents.value().empty() && (flags->from.empty() || flags->to.empty())) {
        return usage("the faults file has no incident: give --from and --to");
      }
      if (core::Status s = scoring::CheckScoreWindow(rules, options.from_ms, options.to_ms); !s.ok()) {
        return usage(s.message());
      }
      // The outputs before any query: a typo must not cost the whole run.
      for (const auto& [flag, path] : {std::pair{"--json", &flags->json}, std::pair{"--html", &flags->html}}) {
        if (path->empty()) continue;
        if (core::Status s = CheckOutputPath(flag, *path); !s.ok()) {
          core::LogError("score", s.message());
          return 1;
        }
      }
      std::vector<scoring::FlagKind> flag_kinds;
      if (!flags->anomalies.empty()) {
        int64_t duplicates = 0;
        auto loaded = scoring::LoadAnomalyFlags(flags->anomalies, options.from_ms, options.to_ms, &duplicates);
        if (!loaded.ok()) return usage(loaded.status().message());
        flag_kinds = std::move(loaded).value();
        if (duplicates > 0) {
          core::Logf(core::LogLevel::kInfo, "score",
                     "%s: %lld records read again skipped (the same cluster, kind, subject, state and ts_ms)",
                     flags->anomalies.c_str(), static_cast<long long>(duplicates));
        }
      }
      // What paged: the notifications, the alerts' kinds from the rules (shipped, or --rules).
      std::optional<scoring::NotificationReport> notification_report;
      if (!flags->notifications.empty()) {
        auto loaded = scoring::LoadNotifications(flags->notifications);
        if (!loaded.ok()) return usage(loaded.status().message());
        scoring::RuleSet kind_rules = rules;
        if (!client) {  // the rules were not loaded for queries
          if (flags->rules.empty()) {
            for (const scoring::RuleFileText& file : scoring::ShippedRules()) {
              if (core::Status s = scoring::LoadRuleText(file, kind_rules); !s.ok()) return usage(s.message());
            }
          }
          for (const std::string& file : flags->rules) {
            if (core::Status s = scoring::LoadRuleFile(file, kind_rules); !s.ok()) return usage(s.message());
          }
        }
        std::set<std::string> known_kinds = scoring::DetectorKinds();
        for (const scoring::Incident& i : incidents.value()) known_kinds.insert(i.kind);
        std::map<std::string, std::set<std::string>> kinds_by_alertname;
        for (const scoring::AlertRule& rule : kind_rules.alerts) {
          const std::set<std::string> kinds = scoring::KindsOfRule(rule, known_kinds);
          kinds_by_alertname[rule.name].insert(kinds.begin(), kinds.end());
        }
        notification_report = scoring::ScoreNotifications(loaded.value(), incidents.value(), kinds_by_alertname,
                                                          options.from_ms, options.to_ms, options.window);
        notification_report->file = flags->notifications;
      }
      size_t done = 0;
      auto report = scoring::ScoreRules(rules, client.get(), std::move(flag_kinds), incidents.value(), options,
                                        [&](const scoring::AlertRule& rule) {
                                          // Progress: a long window is many requests per rule.
                                          const size_t requests =
                                              scoring::SplitRange(options.from_ms, options.to_ms, rule.interval_ms,
                                                                  scoring::kPointsPerRequest)
                                                  .size();
                                          core::Logf(core::LogLevel::kInfo, "score",
                                                     "rule %zu/%zu: %s (%zu request%s)", ++done, rules.alerts.size(),
                                                     rule.name.c_str(), requests, requests == 1 ? "" : "s");
                                        });
      if (!report.ok()) {
        core::LogError("score", report.status().message());
        return 1;
      }
      report.value().links = links;
      report.value().baseline = std::move(baseline);
      for (const std::string& w : report.value().warnings) core::LogWarn("score", w);
      const bool rules_or_flags = client || !flags->anomalies.empty();
      if (rules_or_flags) std::fputs(scoring::FormatTable(report.value()).c_str(), stdout);
      std::string json = rules_or_flags ? scoring::FormatJson(report.value()) : "{}";
      if (notification_report) {
        if (rules_or_flags) std::fputs("\n", stdout);
        std::fputs(scoring::FormatNotificationTable(*notification_report).c_str(), stdout);
        json = scoring::AddJsonMember(json, "notifications", scoring::FormatNotificationJson(*notification_report));
      }
      if (!flags->json.empty() && !WriteFile("--json", flags->json, json)) return 1;
      if (!flags->html.empty() && !WriteFile("--html", flags->html, scoring::FormatHtml(report.value()))) return 1;
      if (client) {
        core::Logf(core::LogLevel::kInfo, "score", "%zu rules over %s .. %s in %lld requests to %s",
                   rules.alerts.size(), core::FormatIsoTime(options.from_ms, 0).c_str(),
                   core::FormatIsoTime(options.to_ms, 0).c_str(), static_cast<long long>(client->requests()),
                   flags->prometheus.c_str());
      }
      return 0;
    });
  });
}

}  // namespace acmetrace::apps
