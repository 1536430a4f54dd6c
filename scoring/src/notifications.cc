// Alertmanager's notifications against the incidents: each alert matched once, at its first
// notification, with the rules' protocol (Detects); the notifications counted per incident.
#include "acmetrace/scoring/notifications.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "acmetrace/core/line_reader.h"
#include "acmetrace/core/time.h"
#include "incident_json.h"

namespace acmetrace::scoring {

namespace {

using Json = nlohmann::ordered_json;

// Receiver names and labels come from a file anyone could have written: one line each on a terminal.
std::string Printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// An alert's identity across notifications: Alertmanager's fingerprint of its labels and when it
// started (a new firing of the same labels is a new alert).
std::string AlertKey(const core::NotifiedAlert& a) {
  std::string key = a.fingerprint;
  if (key.empty()) {
    for (const auto& [name, value] : a.labels) key += name + '\x1f' + value + '\x1e';
  }
  return key + '\x1d' + a.starts_at;
}

void Finish(ReceiverScore& s, const std::vector<Incident>& incidents) {
  std::vector<int64_t> ttn;
  int64_t notified = 0, notices = 0;
  for (const IncidentNotice& n : s.incidents) {
    KindCount& count = s.by_kind[incidents[n.incident].kind];
    ++count.total;
    if (n.notifications == 0) continue;
    ++count.caught;
    ++notified;
    notices += n.notifications;
    s.max_notifications_per_incident = std::max(s.max_notifications_per_incident, n.notifications);
    if (n.ttn_ms) ttn.push_back(*n.ttn_ms);
  }
  if (!s.incidents.empty()) s.recall = static_cast<double>(notified) / static_cast<double>(s.incidents.size());
  if (notified > 0) s.notifications_per_incident = static_cast<double>(notices) / static_cast<double>(notified);
  if (!ttn.empty()) {
    std::sort(ttn.begin(), ttn.end());
    const size_t k = ttn.size();
    s.ttn_median_s = (k % 2 == 1 ? static_cast<double>(ttn[k / 2]) : (ttn[k / 2 - 1] + ttn[k / 2]) / 2.0) / 1000.0;
    s.ttn_worst_s = static_cast<double>(ttn.back()) / 1000.0;
  }
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A signed trace-time span: "+2m30s", "-45s".
std::string Span(const std::optional<double>& seconds) {
  if (!seconds) return "-";
  const int64_t s = std::llround(*seconds);  // whole seconds: a replay's notification times are not finer
  return (s < 0 ? "-" : "+") + FormatDuration((s < 0 ? -s : s) * 1000);
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

Json OptionalJson(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json LabelsJson(const core::AlertLabelSet& labels) {
  Json out = Json::object();
  for (const auto& [name, value] : labels) out[name] = value;
  return out;
}

Json ReceiverJson(const ReceiverScore& s, const std::vector<Incident>& incidents) {
  Json out;
  out["receiver"] = s.receiver;
  out["pages"] = s.firing;
  out["resolved"] = s.resolved;
  out["incidents_notified"] = s.notified();
  out["incidents_total"] = s.incidents.size();
  out["recall"] = OptionalJson(s.recall);
  out["ttn_median_s"] = OptionalJson(s.ttn_median_s);
  out["ttn_worst_s"] = OptionalJson(s.ttn_worst_s);
  out["notifications_per_incident"] = OptionalJson(s.notifications_per_incident);
  out["max_notifications_per_incident"] = s.max_notifications_per_incident;
  out["unmatched_pages"] = s.unmatched;
  out["by_kind"] = ByKindJson(s.by_kind, "notified");
  Json list = Json::array();
  for (const IncidentNotice& n : s.incidents) {
    const Incident& i = incidents[n.incident];
    Json entry = IncidentEntryJson(i);
    entry["start"] = i.start_ms / 1000;
    entry["end"] = i.end_ms / 1000;
    entry["notifications"] = n.notifications;
    entry["ttn_s"] = n.ttn_ms ? Json(static_cast<double>(*n.ttn_ms) / 1000.0) : Json(nullptr);
    list.push_back(std::move(entry));
  }
  out["incidents"] = list;
  Json pages = Json::array();
  for (const UnmatchedPage& p : s.unmatched_pages) {
    pages.push_back({{"trace_time", core::FormatIsoTime(p.trace_ms, 0)},
                     {"trace_ms", p.trace_ms},
                     {"receiver", p.receiver},
                     {"alertnames", p.alertnames},
                     {"group_labels", LabelsJson(p.group_labels)}});
  }
  out["unmatched"] = pages;
  return out;
}

}  // namespace

int64_t ReceiverScore::notified() const {
  int64_t n = 0;
  for (const IncidentNotice& i : incidents) n += i.notifications > 0 ? 1 : 0;
  return n;
}

core::Result<std::vector<core::AlertNotification>> LoadNotifications(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return core::Status::Error(path + ": cannot open the notifications file: " + std::strerror(errno));
  }
  struct FileCloser {
    std::FILE* f;
    ~FileCloser() { std::fclose(f); }
  } closer{file};
  struct stat st {};
  if (::fstat(::fileno(file), &st) == 0 && S_ISDIR(st.st_mode)) {
    return core::Status::Error(path + ": a directory, not a notifications file");
  }
  core::LineReader reader(file, core::kMaxNotificationLineBytes);
  std::vector<core::AlertNotification> out;
  std::string_view line;
  while (true) {
    const core::LineReader::Result r = reader.Next(line);
    if (r == core::LineReader::Result::kEnd) break;
    const std::string where = path + ":" + std::to_string(reader.line_no()) + ": ";
    if (r == core::LineReader::Result::kTooLong) return core::Status::Error(where + "line: " + reader.TooLongReason());
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    core::Result<core::AlertNotification> n = core::ParseNotificationLine(line);
    if (!n.ok()) return core::Status::Error(where + n.status().message());
    out.push_back(std::move(n).value());
  }
  if (reader.failed()) return core::Status::Error(path + ": read error: " + std::strerror(errno));
  return out;
}

NotificationReport ScoreNotifications(const std::vector<core::AlertNotification>& notifications,
                                      const std::vector<Incident>& all_incidents,
                                      const std::map<std::string, std::set<std::string>>& kinds_by_alertname,
                                      int64_t from_ms, int64_t to_ms, const MatchWindow& window) {
  NotificationReport report;
  report.from_ms = from_ms;
  report.to_ms = to_ms;
  report.window = window;
  for (const Incident& i : all_incidents) {
    if (i.start_ms >= from_ms && i.start_ms <= to_ms) report.incidents.push_back(i);
  }
  const std::vector<Incident>& incidents = report.incidents;
  static const std::set<std::string> kEveryKind;
  auto kinds_of = [&](const core::AlertLabelSet& labels) -> const std::set<std::string>& {
    auto name = labels.find("alertname");
    if (name == labels.end()) return kEveryKind;
    auto it = kinds_by_alertname.find(name->second);
    return it == kinds_by_alertname.end() ? kEveryKind : it->second;
  };
  // In the order they arrived.
  std::vector<const core::AlertNotification*> ordered;
  for (const core::AlertNotification& n : notifications) {
    report.truncated_alerts += n.truncated_alerts;
    if (!n.trace_ms) {
      ++report.without_trace_time;
    } else if (*n.trace_ms < from_ms || *n.trace_ms > to_ms + window.after_ms) {
      ++report.outside_window;
    } else {
      ordered.push_back(&n);
    }
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
    return a->received_ms < b->received_ms;
  });

  std::map<std::string, ReceiverScore> receivers;
  auto fresh = [&](const std::string& name) {
    ReceiverScore s;
    s.receiver = name;
    for (size_t i = 0; i < incidents.size(); ++i) s.incidents.push_back({i, 0, std::nullopt});
    return s;
  };
  report.total = fresh("any receiver");
  // Per receiver, the incidents each alert detects (matched at its first firing notification there).
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> detected;
  // The whole set: an incident counts the notifications to any receiver.
  for (const core::AlertNotification* n : ordered) {
    auto [it, inserted] = receivers.try_emplace(n->receiver);
    if (inserted) it->second = fresh(n->receiver);
    ReceiverScore& s = it->second;
    if (n->status != "firing") {
      ++s.resolved;
      ++report.total.resolved;
      continue;
    }
    ++s.firing;
    ++report.total.firing;
    std::set<size_t> notified;
    std::set<std::string> alertnames;
    for (const core::NotifiedAlert& a : n->alerts) {
      if (a.status != "firing") continue;
      if (auto name = a.labels.find("alertname"); name != a.labels.end()) alertnames.insert(name->second);
      auto [d, first] = detected.try_emplace({n->receiver, AlertKey(a)});
      if (first) {
        for (size_t i = 0; i < incidents.size(); ++i) {
          if (Detects(a.labels, *n->trace_ms, kinds_of(a.labels), incidents[i], window)) d->second.push_back(i);
        }
      }
      notified.insert(d->second.begin(), d->second.end());
    }
    if (notified.empty()) {
      UnmatchedPage page{*n->trace_ms, n->receiver, alertnames, n->group_labels};
      ++s.unmatched;
      ++report.total.unmatched;
      s.unmatched_pages.push_back(page);
      report.total.unmatched_pages.push_back(std::move(page));
      continue;
    }
    for (size_t i : notified) {
      for (ReceiverScore* score : {&s, &report.total}) {
        IncidentNotice& notice = score->incidents[i];
        ++notice.notifications;
        const int64_t ttn = *n->trace_ms - incidents[i].start_ms;
        if (!notice.ttn_ms || ttn < *notice.ttn_ms) notice.ttn_ms = ttn;
      }
    }
  }
  for (auto& [name, s] : receivers) {
    Finish(s, incidents);
    report.receivers.push_back(std::move(s));
  }
  Finish(report.total, incidents);
  return report;
}

std::string FormatNotificationTable(const NotificationReport& r) {
  std::string out = "Alertmanager notifications";
  if (!r.file.empty()) out += " (" + Printable(r.file) + ")";
  out += ": " + std::to_string(r.total.firing) + " firing, " + std::to_string(r.total.resolved) + " resolved, to " +
         std::to_string(r.receivers.size()) + " receiver" + (r.receivers.size() == 1 ? "" : "s") + "; " +
         std::to_string(r.incidents.size()) + " incidents from " + core::FormatIsoTime(r.from_ms, 0) + " to " +
         core::FormatIsoTime(r.to_ms, 0) + "\n";
  if (r.without_trace_time > 0 || r.outside_window > 0) {
    out += "skipped: " + std::to_string(r.without_trace_time) + " received before the replay's first record, " +
           std::to_string(r.outside_window) + " outside the window\n";
  }
  if (r.truncated_alerts > 0) {
    out += std::to_string(r.truncated_alerts) +
           " alerts left out of the bodies by Alertmanager (max_alerts): raise it to score them\n";
  }
  out += Pad("receiver", 24) + " " + PadLeft("pages", 6) + " " + PadLeft("resolved", 8) + " " +
         PadLeft("notified", 9) + " " + PadLeft("recall", 6) + " " + PadLeft("ttn median", 11) + " " +
         PadLeft("ttn worst", 11) + " " + PadLeft("pages/incident", 14) + " " + PadLeft("max", 4) + " " +
         PadLeft("unmatched", 9) + "\n";
  auto row = [&](const ReceiverScore& s) {
    out += Pad(Printable(s.receiver), 24) + " " + PadLeft(std::to_string(s.firing), 6) + " " +
           PadLeft(std::to_string(s.resolved), 8) + " " +
           PadLeft(std::to_string(s.notified()) + "/" + std::to_string(s.incidents.size()), 9) + " " +
           PadLeft(s.recall ? Fixed(*s.recall, 2) : "-", 6) + " " + PadLeft(Span(s.ttn_median_s), 11) + " " +
           PadLeft(Span(s.ttn_worst_s), 11) + " " +
           PadLeft(s.notifications_per_incident ? Fixed(*s.notifications_per_incident, 2) : "-", 14) + " " +
           PadLeft(std::to_string(s.max_notifications_per_incident), 4) + " " +
           PadLeft(std::to_string(s.unmatched), 9) + "\n";
  };
  for (const ReceiverScore& s : r.receivers) row(s);
  row(r.total);
  out += "ttn: time to notify, trace time from the incident's start to its first notification (group_wait included)\n";
  if (!r.total.unmatched_pages.empty()) {
    out += "pages that matched no incident:\n";
    size_t shown = 0;
    for (const UnmatchedPage& p : r.total.unmatched_pages) {
      if (++shown > 20) {
        out += "  ... and " + std::to_string(r.total.unmatched_pages.size() - 20) + " more (--json lists them all)\n";
        break;
      }
      std::string names, group;
      for (const std::string& n : p.alertnames) names += (names.empty() ? "" : ",") + Printable(n);
      for (const auto& [name, value] : p.group_labels) {
        group += (group.empty() ? "" : ",") + Printable(name) + "=\"" + Printable(value) + "\"";
      }
      out += "  " + core::FormatIsoTime(p.trace_ms, 0) + "  " + Pad(Printable(p.receiver), 20) + " " + names + " {" +
             group + "}\n";
    }
  }
  return out;
}

std::string AddJsonMember(const std::string& object_json, const std::string& key, const std::string& value_json) {
  Json doc = Json::parse(object_json, nullptr, false);
  if (!doc.is_object()) doc = Json::object();
  doc[key] = Json::parse(value_json, nullptr, false);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string FormatNotificationJson(const NotificationReport& r) {
  Json out;
  out["file"] = r.file;
  out["window"] = {{"from", r.from_ms / 1000},
                   {"to", r.to_ms / 1000},
                   {"before_s", r.window.before_ms / 1000},
                   {"after_s", r.window.after_ms / 1000}};
  out["without_trace_time"] = r.without_trace_time;
  out["outside_window"] = r.outside_window;
  out["truncated_alerts"] = r.truncated_alerts;
  Json receivers = Json::array();
  for (const ReceiverScore& s : r.receivers) receivers.push_back(ReceiverJson(s, r.incidents));
  out["receivers"] = receivers;
  out["total"] = ReceiverJson(r.total, r.incidents);
  return out.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace acmetrace::scoring
