// Table, JSON and HTML of a score run. The HTML timeline is inline SVG drawn here, so the page needs
// no script and no network when viewed.
#include "acmetrace/scoring/report.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "acmetrace/core/time.h"
#include "acmetrace/scoring/range_query.h"
#include "incident_json.h"

namespace acmetrace::scoring {

namespace {

using Json = nlohmann::ordered_json;

// Text from the rule files, the answers or faults.csv on a terminal: control characters written as C
// escapes, as core/log.h writes them in log lines, so that a rule name cannot move the cursor, retitle
// the window or hide rows. C1 controls (U+0080-U+009F, which some terminals act on like ESC [) too.
std::string TerminalSafe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    char buf[8];
    if (u == '\\') {
      out += "\\\\";
    } else if (u < 0x20 || u == 0x7f) {
      switch (u) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          out += buf;
      }
    } else if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[i + 1]));
      out += buf;
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Ratio(const std::optional<double>& v) { return v ? Fixed(*v, 2) : "-"; }

std::string Seconds(const std::optional<double>& v) { return v ? Fixed(*v, 0) + " s" : "-"; }

int64_t Caught(const RuleScore& s) {
  int64_t n = 0;
  for (const IncidentOutcome& o : s.incidents) n += o.caught ? 1 : 0;
  return n;
}

// How the scorecard says that a critical rule is scored on its tier only (matcher.h, ScoredOn).
constexpr const char* kCriticalTier = "severity critical: incidents marked warning not counted";

std::string ByKind(const RuleScore& s) {
  std::string out;
  for (const auto& [kind, count] : s.by_kind) {
    if (!out.empty()) out += ", ";
    out += TerminalSafe(kind) + " " + std::to_string(count.caught) + "/" + std::to_string(count.total);
  }
  if (out.empty()) out = "no incidents of its kinds";
  return s.critical ? out + " (" + kCriticalTier + ")" : out;
}

std::string Time(int64_t ms) { return core::FormatIsoTime(ms, 0); }

Json TimeJson(int64_t ms) {
  if (ms % 1000 == 0) return ms / 1000;
  return static_cast<double>(ms) / 1000.0;
}

Json Optional(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

void AppendRow(std::string& out, const RuleScore& s, const std::string& for_text) {
  out += Pad(TerminalSafe(s.rule), 34) + " " + Pad(TerminalSafe(s.group), 22) + " " + PadLeft(for_text, 6) + " " +
         PadLeft(std::to_string(s.onsets), 7) + " " + PadLeft(std::to_string(s.false_alerts()), 6) + " " +
         PadLeft(Ratio(s.precision), 9) + " " +
         PadLeft(std::to_string(Caught(s)) + "/" + std::to_string(s.incidents.size()), 9) + " " +
         PadLeft(Ratio(s.recall), 6) + " " + PadLeft(Seconds(s.ttd_median_s), 10) + " " +
         PadLeft(Seconds(s.ttd_worst_s), 10) + "\n";
}

std::string Header() {
  return Pad("rule", 34) + " " + Pad("group", 22) + " " + PadLeft("for", 6) + " " + PadLeft("onsets", 7) + " " +
         PadLeft("false", 6) + " " + PadLeft("precision", 9) + " " + PadLeft("caught", 9) + " " +
         PadLeft("recall", 6) + " " + PadLeft("ttd median", 10) + " " + PadLeft("ttd worst", 10) + "\n";
}

// The page lists only the kinds something was caught of (the JSON and the table have every kind).
std::string CaughtKinds(const RuleScore& s) {
  std::string out;
  for (const auto& [kind, count] : s.by_kind) {
    if (count.caught == 0) continue;
    if (!out.empty()) out += ", ";
    out += kind + " " + std::to_string(count.caught) + "/" + std::to_string(count.total);
  }
  return out.empty() ? "-" : out;
}

std::string ForText(const RuleScore& s) { return s.source == "flag" ? "-" : FormatDuration(s.for_ms); }

// The zone the cluster's people read times in: both clusters of the release are on UTC+8 (their users
// work in Shanghai, docs/synth.md), whatever zone their files are written in.
std::optional<int> ClusterOffsetMinutes(const std::string& cluster) {
  if (cluster == "seren" || cluster == "kalos") return 480;
  return std::nullopt;
}

std::string ClusterOf(const Labels& labels) {
  auto it = labels.find("cluster");
  return it == labels.end() ? std::string() : it->second;
}

// "2023-07-01 20:00:00+08:00" in the cluster's zone, or "" when its zone is not known.
std::string ClusterTime(int64_t ms, const std::string& cluster) {
  const std::optional<int> offset = ClusterOffsetMinutes(cluster);
  return offset ? core::FormatIsoTime(ms, *offset) : std::string();
}

std::string DurationText(int64_t ms) { return FormatDuration(std::max<int64_t>(0, ms) / 1000 * 1000); }

// An expression on one line: its line breaks and indentation as single spaces.
std::string OneLine(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// A look at [start, end] with half an hour either side, in whole minutes.
struct LookWindow {
  int64_t from_ms;
  int64_t to_ms;
};
LookWindow LookAround(int64_t start_ms, int64_t end_ms) {
  constexpr int64_t kMargin = 30 * 60'000;
  const int64_t from = (start_ms - kMargin) / 60'000 * 60'000;
  const int64_t to = (end_ms + kMargin + 59'999) / 60'000 * 60'000;
  return {from, to};
}

// The server's graph page with one panel per expression over the look window (Prometheus reads
// end_input as UTC "YYYY-MM-DD HH:MM:SS").
std::string GraphUrl(const ReportLinks& links, const std::vector<std::string>& exprs, int64_t start_ms,
                     int64_t end_ms) {
  if (links.prometheus.empty() || exprs.empty()) return "";
  const LookWindow w = LookAround(start_ms, end_ms);
  const std::string end_input = core::FormatIsoTime(w.to_ms, 0).substr(0, 19);
  // One unit: the graph page (2.42) reads "70m" but not "1h10m" (no resolution then, no graph).
  const int64_t minutes = (w.to_ms - w.from_ms) / 60'000;
  const std::string range = minutes % 60 == 0 ? std::to_string(minutes / 60) + "h" : std::to_string(minutes) + "m";
  std::string url = links.prometheus + "/graph?";
  for (size_t i = 0; i < exprs.size(); ++i) {
    const std::string g = "g" + std::to_string(i) + ".";
    url += (i > 0 ? "&" : "") + g + "expr=" + UrlEncode(exprs[i]) + "&" + g + "tab=0&" + g +
           "range_input=" + UrlEncode(range) + "&" + g + "end_input=" + UrlEncode(end_input);
  }
  return url;
}

// Grafana's Explore with the expressions as queries A, B, ... of its Prometheus data source.
std::string ExploreUrl(const ReportLinks& links, const std::vector<std::string>& exprs, int64_t start_ms,
                       int64_t end_ms) {
  if (links.grafana.empty() || exprs.empty()) return "";
  const LookWindow w = LookAround(start_ms, end_ms);
  Json left;
  left["datasource"] = links.grafana_datasource;
  Json queries = Json::array();
  for (size_t i = 0; i < exprs.size(); ++i) {
    queries.push_back({{"refId", std::string(1, static_cast<char>('A' + i % 26)) + (i >= 26 ? std::to_string(i) : "")},
                       {"expr", exprs[i]},
                       {"datasource", {{"type", "prometheus"}, {"uid", links.grafana_datasource}}}});
  }
  left["queries"] = queries;
  left["range"] = {{"from", std::to_string(w.from_ms)}, {"to", std::to_string(w.to_ms)}};
  return links.grafana + "/explore?orgId=1&left=" + UrlEncode(left.dump());
}

// Noise: how often a rule starts firing and how long it fires, per day of the window.
struct Noise {
  double onsets_per_day = 0;
  double alert_minutes_per_day = 0;
};
Noise NoiseOf(const RuleFirings& f, int64_t from_ms, int64_t to_ms) {
  const double days = std::max(1.0 / 1440.0, static_cast<double>(to_ms - from_ms) / 86'400'000.0);
  double minutes = 0;
  for (const FiringInterval& i : f.intervals) minutes += static_cast<double>(i.end_ms - i.start_ms) / 60'000.0;
  return {static_cast<double>(f.intervals.size()) / days, minutes / days};
}

// The firing intervals of a rule that detect nothing.
std::vector<size_t> FalseAlerts(const RuleFirings& f, const RuleScore& s) {
  std::vector<size_t> out;
  for (size_t k = 0; k < f.intervals.size(); ++k) {
    if (k >= s.onset_detects.size() || s.onset_detects[k] == 0) out.push_back(k);
  }
  return out;
}

// The expressions of the rules speaking for an incident's kind (at most four: one graph page).
std::vector<std::string> ExprsForIncident(const ScoreReport& report, const Incident& incident) {
  std::vector<std::string> exprs;
  for (const RuleFirings& f : report.firings) {
    if (f.source != "rule" || f.expr.empty()) continue;
    if (!ScoredOn(f.kinds, f.critical, incident)) continue;
    if (std::find(exprs.begin(), exprs.end(), f.expr) != exprs.end()) continue;
    exprs.push_back(f.expr);
    if (exprs.size() == 4) break;
  }
  return exprs;
}

// A rule's score now against the baseline's.
struct Change {
  std::string rule;
  std::string source;
  const BaselineRule* before = nullptr;  // null: new since
  const RuleScore* now = nullptr;        // null: gone since
};
std::vector<Change> Changes(const ScoreReport& report) {
  std::vector<Change> out;
  if (!report.baseline) return out;
  const std::vector<BaselineRule>& old = report.baseline->rules;
  std::vector<char> matched(old.size(), 0);
  for (const RuleScore& s : report.scores) {
    Change c{s.rule, s.source, nullptr, &s};
    for (size_t i = 0; i < old.size(); ++i) {
      if (!matched[i] && old[i].rule == s.rule && old[i].source == s.source) {
        matched[i] = 1;
        c.before = &old[i];
        break;
      }
    }
    out.push_back(c);
  }
  for (size_t i = 0; i < old.size(); ++i) {
    if (!matched[i]) out.push_back({old[i].rule, old[i].source, &old[i], nullptr});
  }
  if (report.baseline->total) out.push_back({report.total.rule, report.total.source, &*report.baseline->total, &report.total});
  return out;
}

std::string Delta(const std::optional<double>& before, const std::optional<double>& now) {
  if (!before || !now) return "";
  const double d = *now - *before;
  if (std::abs(d) < 0.005) return "=";
  return (d > 0 ? "+" : "") + Fixed(d, 2);
}

std::string CountDelta(int64_t before, int64_t now) {
  const int64_t d = now - before;
  return d == 0 ? "=" : (d > 0 ? "+" : "") + std::to_string(d);
}

// How a change reads in the table: "0.50 -> 0.75 (+0.25)".
std::string RatioChange(const std::optional<double>& before, const std::optional<double>& now) {
  const std::string d = Delta(before, now);
  return Ratio(before) + " -> " + Ratio(now) + (d.empty() ? "" : " (" + d + ")");
}

/// At most this many false alerts per rule in the text table, and on the page.
constexpr size_t kFalseAlertsInTable = 10;
constexpr size_t kFalseAlertsOnPage = 200;

Json ScoreJson(const RuleScore& s, const std::vector<Incident>& incidents, const RuleFirings* firings, int64_t from_ms,
               int64_t to_ms) {
  Json j;
  j["rule"] = s.rule;
  j["group"] = s.group;
  j["source"] = s.source;
  j["kinds"] = Json::array();
  for (const std::string& k : s.kinds) j["kinds"].push_back(k);
  j["critical"] = s.critical;
  if (firings != nullptr && s.source == "rule") {
    j["expr"] = firings->expr;
    j["file"] = firings->file;
    j["line"] = firings->line;
    j["for_s"] = static_cast<double>(firings->for_ms) / 1000.0;
    j["keep_firing_for_s"] = static_cast<double>(firings->keep_firing_for_ms) / 1000.0;
    j["interval_s"] = static_cast<double>(firings->interval_ms) / 1000.0;
  }
  j["onsets"] = s.onsets;
  j["false_alerts"] = s.false_alerts();
  if (firings != nullptr) {
    const Noise noise = NoiseOf(*firings, from_ms, to_ms);
    j["onsets_per_day"] = noise.onsets_per_day;
    j["alert_minutes_per_day"] = noise.alert_minutes_per_day;
  }
  j["precision"] = Optional(s.precision);
  j["recall"] = Optional(s.recall);
  j["caught"] = Caught(s);
  j["total_incidents"] = s.incidents.size();
  j["ttd_median_s"] = Optional(s.ttd_median_s);
  j["ttd_worst_s"] = Optional(s.ttd_worst_s);
  j["by_kind"] = ByKindJson(s.by_kind, "caught");
  Json list = Json::array();
  for (const IncidentOutcome& o : s.incidents) {
    const Incident& i = incidents[o.incident];
    Json entry = IncidentEntryJson(i);
    entry["severity"] = SeverityName(i.severity);
    entry["start"] = TimeJson(i.start_ms);
    entry["end"] = TimeJson(i.end_ms);
    entry["caught"] = o.caught;
    entry["ttd_s"] = o.ttd_ms ? Json(static_cast<double>(*o.ttd_ms) / 1000.0) : Json(nullptr);
    list.push_back(std::move(entry));
  }
  j["incidents"] = list;
  if (firings != nullptr) {
    Json firing = Json::array();
    for (size_t f = 0; f < firings->intervals.size(); ++f) {
      const FiringInterval& interval = firings->intervals[f];
      Json labels = Json::object();
      for (const auto& [name, value] : interval.labels) labels[name] = value;
      firing.push_back({{"labels", labels},
                        {"start", TimeJson(interval.start_ms)},
                        {"end", TimeJson(interval.end_ms)},
                        {"open", interval.open},
                        {"detects", f < s.onset_detects.size() && s.onset_detects[f] != 0}});
    }
    j["firing"] = firing;
  }
  return j;
}

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string LabelsText(const Labels& labels) {
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ", ";
    out += name + "=\"" + value + "\"";
  }
  return out + "}";
}


}  // namespace

std::string FormatTable(const ScoreReport& report) {
  std::string out = "acmetrace score: " + Time(report.from_ms) + " .. " + Time(report.to_ms) + ", " +
                    std::to_string(report.incidents.size()) + " incidents";
  if (report.incidents_outside > 0) out += " (" + std::to_string(report.incidents_outside) + " outside the window left out)";
  out += "; an onset detects an incident in [start - " + FormatDuration(report.window.before_ms) + ", end + " +
         FormatDuration(report.window.after_ms) + "]\n\n";
  out += Header();
  auto section = [&](const RuleScore& total, const std::string& source) {
    for (size_t r = 0; r < report.scores.size(); ++r) {
      const RuleScore& s = report.scores[r];
      if (s.source != source) continue;
      AppendRow(out, s, ForText(s));
      out += "    caught by kind: " + ByKind(s) + "\n";
      if (r >= report.firings.size()) continue;
      const RuleFirings& f = report.firings[r];
      if (!f.expr.empty()) out += "    expr: " + TerminalSafe(OneLine(f.expr)) + "\n";
      const Noise noise = NoiseOf(f, report.from_ms, report.to_ms);
      out += "    noise: " + Fixed(noise.onsets_per_day, 1) + " onsets/day, " + Fixed(noise.alert_minutes_per_day, 0) +
             " alert-minutes/day\n";
      const std::vector<size_t> false_alerts = FalseAlerts(f, s);
      for (size_t n = 0; n < false_alerts.size() && n < kFalseAlertsInTable; ++n) {
        const FiringInterval& i = f.intervals[false_alerts[n]];
        const std::string local = ClusterTime(i.start_ms, ClusterOf(i.labels));
        out += "    false alert: " + TerminalSafe(LabelsText(i.labels)) + " " + Time(i.start_ms) + " .. " +
               Time(i.end_ms) + (i.open ? " (still firing)" : "") + ", " + DurationText(i.end_ms - i.start_ms) +
               (local.empty() ? "" : ", starts " + local);
        const std::string graph = GraphUrl(report.links, {f.expr}, i.start_ms, i.end_ms);
        if (!graph.empty()) out += "\n      " + graph;
        out += "\n";
      }
      if (false_alerts.size() > kFalseAlertsInTable) {
        out += "    ... and " + std::to_string(false_alerts.size() - kFalseAlertsInTable) +
               " more false alerts (all in --json, " + std::to_string(kFalseAlertsOnPage) + " on the --html page)\n";
      }
    }
    AppendRow(out, total, "");
    out += "    caught by kind: " + ByKind(total) + "\n\n";
  };
  section(report.total, report.total.source);
  if (report.flags_total) section(*report.flags_total, "flag");
  if (!report.sweep.empty()) {
    out += "for: sweep\n" + Header();
    for (const SweepRow& row : report.sweep) AppendRow(out, row.score, FormatDuration(row.score.for_ms));
    out += "\n";
  }
  if (report.baseline) {
    out += "since " + TerminalSafe(report.baseline->file) + ":\n" + Pad("rule", 34) + " " + Pad("precision", 26) + " " +
           Pad("recall", 26) + " false alerts\n";
    for (const Change& c : Changes(report)) {
      std::string line = Pad(TerminalSafe(c.rule), 34) + " ";
      if (c.before == nullptr) {
        line += "new: precision " + Ratio(c.now->precision) + ", recall " + Ratio(c.now->recall) + ", " +
                std::to_string(c.now->false_alerts()) + " false alerts";
      } else if (c.now == nullptr) {
        line += "gone (was precision " + Ratio(c.before->precision) + ", recall " + Ratio(c.before->recall) + ")";
      } else {
        line += Pad(RatioChange(c.before->precision, c.now->precision), 26) + " " +
                Pad(RatioChange(c.before->recall, c.now->recall), 26) + " " + std::to_string(c.before->false_alerts) +
                " -> " + std::to_string(c.now->false_alerts()) + " (" +
                CountDelta(c.before->false_alerts, c.now->false_alerts()) + ")";
      }
      out += line + "\n";
    }
  }
  return out;
}

std::string FormatJson(const ScoreReport& report) {
  Json doc;
  doc["window"] = {{"from", TimeJson(report.from_ms)},
                   {"to", TimeJson(report.to_ms)},
                   {"detect_before_s", report.window.before_ms / 1000.0},
                   {"detect_after_s", report.window.after_ms / 1000.0}};
  doc["incidents_outside_window"] = report.incidents_outside;
  Json rules = Json::array();
  for (size_t i = 0; i < report.scores.size(); ++i) {
    rules.push_back(ScoreJson(report.scores[i], report.incidents, &report.firings[i], report.from_ms, report.to_ms));
  }
  doc["rules"] = rules;
  doc["total"] = ScoreJson(report.total, report.incidents, nullptr, report.from_ms, report.to_ms);
  if (report.flags_total) {
    doc["flags_total"] = ScoreJson(*report.flags_total, report.incidents, nullptr, report.from_ms, report.to_ms);
  }
  Json sweep = Json::array();
  for (const SweepRow& row : report.sweep) {
    const RuleScore& s = row.score;
    sweep.push_back({{"rule", s.rule},
                     {"group", s.group},
                     {"for_s", static_cast<double>(s.for_ms) / 1000.0},
                     {"onsets", s.onsets},
                     {"false_alerts", s.false_alerts()},
                     {"precision", Optional(s.precision)},
                     {"recall", Optional(s.recall)},
                     {"caught", Caught(s)},
                     {"total_incidents", s.incidents.size()},
                     {"ttd_median_s", Optional(s.ttd_median_s)},
                     {"ttd_worst_s", Optional(s.ttd_worst_s)}});
  }
  doc["sweep"] = sweep;
  if (report.baseline) {
    Json changes = Json::array();
    for (const Change& c : Changes(report)) {
      Json j{{"rule", c.rule}, {"source", c.source}};
      j["status"] = c.before == nullptr ? "new" : c.now == nullptr ? "gone" : "scored";
      if (c.before != nullptr) {
        j["before"] = {{"precision", Optional(c.before->precision)},
                       {"recall", Optional(c.before->recall)},
                       {"false_alerts", c.before->false_alerts}};
      }
      if (c.now != nullptr) {
        j["now"] = {{"precision", Optional(c.now->precision)},
                    {"recall", Optional(c.now->recall)},
                    {"false_alerts", c.now->false_alerts()}};
      }
      changes.push_back(j);
    }
    doc["baseline"] = {{"file", report.baseline->file}, {"rules", changes}};
  }
  doc["warnings"] = report.warnings;
  return doc.dump(2) + "\n";
}

std::string FormatHtml(const ScoreReport& report) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>acmetrace score</title>\n<style>\n"
       "body{font-family:sans-serif;margin:16px;color:#222}table{border-collapse:collapse;margin:8px 0 16px}"
       "td,th{border:1px solid #ccc;padding:1px 6px;font-size:12px;text-align:right;white-space:nowrap}td.l,th.l{text-align:left}td.k{white-space:normal;max-width:320px}"
       "tr.total td{font-weight:bold;background:#f3f3f3}h2{margin-top:24px}.missed{color:#b00}.caught{color:#070}"
       ".legend span{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px}"
       "svg text{font-size:11px;font-family:sans-serif}pre.expr{background:#f6f6f6;padding:4px 8px;font-size:12px;"
       "white-space:pre-wrap;max-width:1300px}div.rule h3{margin-bottom:2px}div.rule p{margin:2px 0;font-size:13px}\n</style></head><body>\n";
  h += "<h1>acmetrace score</h1>\n<p>Window " + Escape(Time(report.from_ms)) + " .. " + Escape(Time(report.to_ms)) +
       ", " + std::to_string(report.incidents.size()) + " incidents. An alert's onset detects an incident when it "
       "falls in [start - " + FormatDuration(report.window.before_ms) + ", end + " +
       FormatDuration(report.window.after_ms) + "] and its labels agree (docs/monitoring.md).</p>\n";
  // The table.
  h += "<table id=\"scores\"><tr><th class=\"l\">rule</th><th class=\"l\">group</th><th>for</th><th>onsets</th>"
       "<th>false alerts</th><th>precision</th><th>caught</th><th>recall</th><th>ttd median</th><th>ttd worst</th>"
       "<th>onsets/day</th><th>alert-min/day</th><th class=\"l\">caught (by kind)</th></tr>\n";
  auto row = [&](const RuleScore& s, const RuleFirings* f) {
    const bool total = f == nullptr;
    std::string noise = "<td></td><td></td>";
    if (f != nullptr) {
      const Noise n = NoiseOf(*f, report.from_ms, report.to_ms);
      noise = "<td>" + Fixed(n.onsets_per_day, 1) + "</td><td>" + Fixed(n.alert_minutes_per_day, 0) + "</td>";
    }
    h += std::string(total ? "<tr class=\"total\">" : "<tr>") + "<td class=\"l\">" + Escape(s.rule) +
         "</td><td class=\"l\">" + Escape(s.group) + "</td><td>" + (total ? "" : Escape(ForText(s))) + "</td><td>" +
         std::to_string(s.onsets) + "</td><td>" + std::to_string(s.false_alerts()) + "</td><td>" +
         Ratio(s.precision) + "</td><td>" + std::to_string(Caught(s)) + "/" + std::to_string(s.incidents.size()) +
         "</td><td>" + Ratio(s.recall) + "</td><td>" + Seconds(s.ttd_median_s) + "</td><td>" +
         Seconds(s.ttd_worst_s) + "</td>" + noise + "<td class=\"l k\">" + Escape(CaughtKinds(s)) + "</td></tr>\n";
  };
  auto firings_of = [&](size_t r) { return r < report.firings.size() ? &report.firings[r] : nullptr; };
  for (size_t r = 0; r < report.scores.size(); ++r) {
    if (report.scores[r].source == report.total.source) row(report.scores[r], firings_of(r));
  }
  row(report.total, nullptr);
  if (report.flags_total) {
    for (size_t r = 0; r < report.scores.size(); ++r) {
      if (report.scores[r].source == "flag") row(report.scores[r], firings_of(r));
    }
    row(*report.flags_total, nullptr);
  }
  h += "</table>\n";
  h += "<p>Times are UTC, and in the cluster's zone where it is known (seren and kalos: UTC+8). Noise: onsets and "
       "minutes of firing per day of the window.</p>\n";
  if (report.baseline) {
    h += "<h2>Since the baseline</h2>\n<p>Compared with " + Escape(report.baseline->file) +
         " (a previous <code>score --json</code>).</p>\n<table id=\"baseline\"><tr><th class=\"l\">rule</th>"
         "<th>precision</th><th>change</th><th>recall</th><th>change</th><th>false alerts</th><th>change</th></tr>\n";
    for (const Change& c : Changes(report)) {
      h += "<tr><td class=\"l\">" + Escape(c.rule) + "</td>";
      if (c.before == nullptr) {
        h += "<td>" + Ratio(c.now->precision) + "</td><td>new</td><td>" + Ratio(c.now->recall) + "</td><td>new</td><td>" +
             std::to_string(c.now->false_alerts()) + "</td><td>new</td></tr>\n";
      } else if (c.now == nullptr) {
        h += "<td>" + Ratio(c.before->precision) + "</td><td>gone</td><td>" + Ratio(c.before->recall) +
             "</td><td>gone</td><td>" + std::to_string(c.before->false_alerts) + "</td><td>gone</td></tr>\n";
      } else {
        h += "<td>" + Ratio(c.before->precision) + " &rarr; " + Ratio(c.now->precision) + "</td><td>" +
             Delta(c.before->precision, c.now->precision) + "</td><td>" + Ratio(c.before->recall) + " &rarr; " +
             Ratio(c.now->recall) + "</td><td>" + Delta(c.before->recall, c.now->recall) + "</td><td>" +
             std::to_string(c.before->false_alerts) + " &rarr; " + std::to_string(c.now->false_alerts()) + "</td><td>" +
             CountDelta(c.before->false_alerts, c.now->false_alerts()) + "</td></tr>\n";
      }
    }
    h += "</table>\n";
  }
  // Which rules caught each incident (for the bands' colour and the list).
  std::vector<std::vector<std::string>> caught_by(report.incidents.size());
  for (const RuleScore& s : report.scores) {
    for (const IncidentOutcome& o : s.incidents) {
      if (o.caught) {
        caught_by[o.incident].push_back(s.rule + " (" + Fixed(static_cast<double>(*o.ttd_ms) / 1000.0, 0) + " s)");
      }
    }
  }
  // The clusters: of the incidents and of the alerts; alerts without a cluster label go to every one.
  std::vector<std::string> clusters;
  auto add_cluster = [&](const std::string& c) {
    if (std::find(clusters.begin(), clusters.end(), c) == clusters.end()) clusters.push_back(c);
  };
  for (const Incident& i : report.incidents) add_cluster(i.cluster);
  for (const RuleFirings& f : report.firings) {
    for (const FiringInterval& interval : f.intervals) {
      auto it = interval.labels.find("cluster");
      if (it != interval.labels.end()) add_cluster(it->second);
    }
  }
  std::sort(clusters.begin(), clusters.end());
  if (clusters.empty()) clusters.push_back("");

  constexpr double kLeft = 290, kWidth = 1030, kRowH = 14, kTop = 30;
  const double span = std::max<double>(1.0, static_cast<double>(report.to_ms - report.from_ms));
  auto x_of = [&](int64_t ms) {
    const double clamped = std::clamp<double>(static_cast<double>(ms - report.from_ms), 0.0, span);
    return kLeft + clamped / span * kWidth;
  };
  h += "<h2>Timelines</h2>\n<p class=\"legend\"><span style=\"background:rgba(40,160,40,.25)\"></span>incident "
       "caught<span style=\"background:rgba(220,40,40,.25)\"></span>incident missed<span style=\"background:#2a8a2a\">"
       "</span>firing, detects an incident<span style=\"background:#d04040\"></span>firing, false alert"
       "<span style=\"background:#888\"></span>bar starting before the window: already firing</p>\n";
  for (const std::string& cluster : clusters) {
    const double height = kTop + kRowH * static_cast<double>(report.firings.size() + 1) + 10;
    h += "<h3>cluster " + Escape(cluster.empty() ? "(none)" : cluster) + "</h3>\n";
    h += "<svg class=\"timeline\" data-cluster=\"" + Escape(cluster) + "\" xmlns=\"http://www.w3.org/2000/svg\" "
         "width=\"" + Fixed(kLeft + kWidth + 20, 0) + "\" height=\"" + Fixed(height, 0) + "\">\n";
    // Time axis: eight ticks.
    for (int t = 0; t <= 8; ++t) {
      const int64_t ms = report.from_ms + static_cast<int64_t>(span * t / 8);
      const double x = x_of(ms);
      h += "<line x1=\"" + Fixed(x, 1) + "\" y1=\"" + Fixed(kTop - 4, 0) + "\" x2=\"" + Fixed(x, 1) + "\" y2=\"" +
           Fixed(height - 10, 0) + "\" stroke=\"#ddd\"/>";
      // "07-01 12:00" (the heading gives the window with its year): at 1/8 of the axis apart, a label
      // with the year (16 characters, ~110 px) overlapped its neighbour's.
      const std::string label = Time(ms).substr(5, 11);
      h += "<text x=\"" + Fixed(x, 1) + "\" y=\"12\" text-anchor=\"" + (t == 8 ? "end" : t == 0 ? "start" : "middle") +
           "\">" + Escape(label) + "</text>\n";
    }
    // Incidents: bands over every row.
    h += "<text x=\"4\" y=\"" + Fixed(kTop + 13, 0) + "\">incidents</text>\n";
    for (size_t i = 0; i < report.incidents.size(); ++i) {
      const Incident& inc = report.incidents[i];
      if (inc.cluster != cluster) continue;
      const bool caught = !caught_by[i].empty();
      const double x = x_of(inc.start_ms);
      const double w = std::max(2.0, x_of(inc.end_ms) - x);
      h += "<rect class=\"incident\" x=\"" + Fixed(x, 1) + "\" y=\"" + Fixed(kTop, 0) + "\" width=\"" + Fixed(w, 1) +
           "\" height=\"" + Fixed(height - kTop - 10, 0) + "\" fill=\"" +
           (caught ? "rgba(40,160,40,.25)" : "rgba(220,40,40,.25)") + "\"><title>" +
           Escape(inc.kind + " " + inc.subject + " " + Time(inc.start_ms) + " .. " + Time(inc.end_ms) +
                  (caught ? ": caught" : ": missed")) +
           "</title></rect>\n";
    }
    // One row per rule.
    for (size_t r = 0; r < report.firings.size(); ++r) {
      const RuleFirings& f = report.firings[r];
      const double y = kTop + kRowH * static_cast<double>(r + 1);
      h += "<text x=\"4\" y=\"" + Fixed(y + 11, 0) + "\">" + Escape(f.rule) + "</text>\n";
      const RuleScore& s = report.scores[r];
      for (size_t k = 0; k < f.intervals.size(); ++k) {
        const FiringInterval& interval = f.intervals[k];
        auto it = interval.labels.find("cluster");
        if (it != interval.labels.end() ? it->second != cluster : false) continue;
        const double x = x_of(interval.start_ms);
        const double w = std::max(2.0, x_of(interval.end_ms) - x);
        const bool detects = k < s.onset_detects.size() && s.onset_detects[k] != 0;
        const bool from_start = interval.start_ms <= report.from_ms;
        h += "<rect class=\"firing\" x=\"" + Fixed(x, 1) + "\" y=\"" + Fixed(y + 2, 0) + "\" width=\"" + Fixed(w, 1) +
             "\" height=\"" + Fixed(kRowH - 4, 0) + "\" fill=\"" +
             (detects ? "#2a8a2a" : from_start ? "#888" : "#d04040") + "\"><title>" +
             Escape(f.rule + " " + LabelsText(interval.labels) + " " + Time(interval.start_ms) + " .. " +
                    Time(interval.end_ms) + (detects ? ": detects" : ": false alert")) +
             "</title></rect>\n";
      }
    }
    h += "</svg>\n";
  }

  if (!report.sweep.empty()) {
    // One row per rule, one column per for: value (the values in the order given).
    std::vector<int64_t> values;
    for (const SweepRow& r : report.sweep) {
      if (std::find(values.begin(), values.end(), r.score.for_ms) == values.end()) values.push_back(r.score.for_ms);
    }
    h += "<h2>for: sweep</h2>\n<p>Each rule again at each for: value: precision / recall, median time to detect."
         "</p>\n<table id=\"sweep\"><tr><th class=\"l\">rule</th><th class=\"l\">group</th>";
    for (int64_t v : values) h += "<th>for: " + FormatDuration(v) + "</th>";
    h += "</tr>\n";
    for (size_t i = 0; i < report.sweep.size(); i += values.size()) {
      h += "<tr><td class=\"l\">" + Escape(report.sweep[i].score.rule) + "</td><td class=\"l\">" +
           Escape(report.sweep[i].score.group) + "</td>";
      for (size_t k = 0; k < values.size() && i + k < report.sweep.size(); ++k) {
        const RuleScore& s = report.sweep[i + k].score;
        h += "<td>" + Ratio(s.precision) + " / " + Ratio(s.recall) + ", " + Seconds(s.ttd_median_s) + "</td>";
      }
      h += "</tr>\n";
    }
    h += "</table>\n";
  }

  auto links = [&](const std::vector<std::string>& exprs, int64_t start_ms, int64_t end_ms) {
    std::string out;
    const std::string graph = GraphUrl(report.links, exprs, start_ms, end_ms);
    if (!graph.empty()) out += "<a class=\"graph\" href=\"" + Escape(graph) + "\">graph</a>";
    const std::string explore = ExploreUrl(report.links, exprs, start_ms, end_ms);
    if (!explore.empty()) out += std::string(out.empty() ? "" : " ") + "<a class=\"explore\" href=\"" + Escape(explore) + "\">explore</a>";
    return out;
  };
  h += "<h2>Incidents</h2>\n<table id=\"incidents\"><tr><th class=\"l\">cluster</th><th class=\"l\">kind</th>"
       "<th class=\"l\">subject</th><th class=\"l\">start (UTC)</th><th class=\"l\">start (cluster)</th>"
       "<th class=\"l\">end (UTC)</th><th class=\"l\">caught by (time to detect)</th><th class=\"l\">look</th></tr>\n";
  for (size_t i = 0; i < report.incidents.size(); ++i) {
    const Incident& inc = report.incidents[i];
    std::string by;
    for (const std::string& b : caught_by[i]) by += (by.empty() ? "" : ", ") + b;
    const std::string_view severity = SeverityName(inc.severity);
    h += "<tr><td class=\"l\">" + Escape(inc.cluster) + "</td><td class=\"l\">" + Escape(inc.kind) +
         (severity.empty() ? std::string() : " (" + std::string(severity) + ")") +
         "</td><td class=\"l\">" + (inc.subject.empty() ? std::string("(any)") : Escape(inc.subject)) +
         "</td><td class=\"l\">" + Escape(Time(inc.start_ms)) + "</td><td class=\"l\">" +
         Escape(ClusterTime(inc.start_ms, inc.cluster)) + "</td><td class=\"l\">" + Escape(Time(inc.end_ms)) +
         "</td><td class=\"l k " + (by.empty() ? "missed\">missed" : "caught\">" + Escape(by)) + "</td><td class=\"l\">" +
         links(ExprsForIncident(report, inc), inc.start_ms, inc.end_ms) + "</td></tr>\n";
  }
  h += "</table>\n";

  // Each rule: where it is written, its expression, its noise and its false alerts.
  h += "<h2>Rules and their false alerts</h2>\n";
  for (size_t r = 0; r < report.firings.size() && r < report.scores.size(); ++r) {
    const RuleFirings& f = report.firings[r];
    const RuleScore& s = report.scores[r];
    const Noise noise = NoiseOf(f, report.from_ms, report.to_ms);
    const std::vector<size_t> false_alerts = FalseAlerts(f, s);
    h += "<div class=\"rule\" id=\"rule-" + std::to_string(r) + "\"><h3>" + Escape(f.rule) + "</h3>\n<p>";
    if (!f.file.empty()) h += Escape(f.file + ":" + std::to_string(f.line)) + ", ";
    h += "group " + Escape(f.group) + (f.source == "rule" ? ", for: " + Escape(FormatDuration(f.for_ms)) : "") +
         ", kinds " + Escape(f.kinds.empty() ? std::string("(every kind)") : [&] {
           std::string k;
           for (const std::string& kind : f.kinds) k += (k.empty() ? "" : ", ") + kind;
           return k;
         }()) +
         (f.critical ? std::string(" (") + kCriticalTier + ")" : std::string()) + "; noise " + Fixed(noise.onsets_per_day, 1) + " onsets/day, " + Fixed(noise.alert_minutes_per_day, 0) +
         " alert-minutes/day; " + std::to_string(false_alerts.size()) + " false alert" +
         (false_alerts.size() == 1 ? "" : "s") + "</p>\n";
    if (!f.expr.empty()) h += "<pre class=\"expr\">" + Escape(f.expr) + "</pre>\n";
    if (false_alerts.empty()) {
      h += "</div>\n";
      continue;
    }
    h += "<table class=\"false-alerts\"><tr><th class=\"l\">labels</th><th class=\"l\">start (UTC)</th>"
         "<th class=\"l\">start (cluster)</th><th class=\"l\">end (UTC)</th><th>duration</th><th class=\"l\">look</th>"
         "</tr>\n";
    for (size_t n = 0; n < false_alerts.size() && n < kFalseAlertsOnPage; ++n) {
      const FiringInterval& i = f.intervals[false_alerts[n]];
      const std::vector<std::string> exprs = f.expr.empty() ? std::vector<std::string>{} : std::vector<std::string>{f.expr};
      h += "<tr class=\"false-alert\"><td class=\"l k\">" + Escape(LabelsText(i.labels)) + "</td><td class=\"l\">" +
           Escape(Time(i.start_ms)) + "</td><td class=\"l\">" + Escape(ClusterTime(i.start_ms, ClusterOf(i.labels))) +
           "</td><td class=\"l\">" + Escape(Time(i.end_ms)) + (i.open ? " (still firing)" : "") + "</td><td>" +
           Escape(DurationText(i.end_ms - i.start_ms)) + "</td><td class=\"l\">" + links(exprs, i.start_ms, i.end_ms) +
           "</td></tr>\n";
    }
    h += "</table>\n";
    if (false_alerts.size() > kFalseAlertsOnPage) {
      h += "<p>... and " + std::to_string(false_alerts.size() - kFalseAlertsOnPage) +
           " more false alerts (all of them in --json).</p>\n";
    }
    h += "</div>\n";
  }
  if (!report.warnings.empty()) {
    h += "<h2>Warnings</h2>\n<ul>\n";
    for (const std::string& w : report.warnings) h += "<li>" + Escape(w) + "</li>\n";
    h += "</ul>\n";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace acmetrace::scoring
