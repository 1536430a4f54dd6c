// faults.csv and anomaly-flag files: read whole (they are small next to the telemetry), errors with
// file, line and field.
#include "acmetrace/scoring/incidents.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "acmetrace/core/csv_reader.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/line_reader.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/time.h"

namespace acmetrace::scoring {

namespace {

std::optional<IncidentSeverity> ParseSeverity(std::string_view text) {
  for (IncidentSeverity s : {IncidentSeverity::kUntiered, IncidentSeverity::kWarning, IncidentSeverity::kCritical}) {
    if (text == SeverityName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace

std::string_view SeverityName(IncidentSeverity severity) {
  switch (severity) {
    case IncidentSeverity::kWarning: return "warning";
    case IncidentSeverity::kCritical: return "critical";
    case IncidentSeverity::kUntiered: break;
  }
  return "";
}

core::Result<std::vector<Incident>> LoadFaultsCsv(const std::string& path) {
  // A directory opens, then reads as nothing: it would be a file of no incident, every flag false.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return core::Status::Error(path + ": a directory, not a faults file");
  }
  // core::CsvReader: RFC 4180 quoted cells, a UTF-8 BOM, LF, CRLF or CR line ends (spreadsheets
  // write all of these); a row it cannot read is the file's error here, not a skipped row.
  core::CsvReader reader;
  if (core::Status s = reader.Open(path, 64 * 1024); !s.ok()) {
    return core::Status::Error(path + ": cannot open the faults file: " + std::strerror(errno));
  }
  reader.set_max_row_bytes(kMaxFaultsLineBytes);
  std::optional<core::Status> unreadable;
  reader.set_error_sink([&](int64_t line, std::string_view field, std::string_view reason) {
    if (unreadable) return;
    reason = reason.substr(0, reason.find("; row skipped"));
    unreadable = core::Status::Error(path + ":" + std::to_string(line) + ": " + std::string(field) + ": " +
                                     std::string(reason));
  });
  std::vector<Incident> incidents;
  std::vector<std::string_view> f;
  bool any_row = false;
  // The sixth column, severity, came later: files of five columns still read (incidents of no tier).
  static const char* const kColumns[] = {"cluster", "kind", "subject", "start", "end", "severity"};
  static const std::vector<std::string_view> kOldHeader(std::begin(kColumns), std::end(kColumns) - 1);
  static const std::vector<std::string_view> kHeader(std::begin(kColumns), std::end(kColumns));
  while (!unreadable && reader.NextRow(f)) {
    if (unreadable) break;
    const bool first = !any_row;
    any_row = true;
    const std::string where = path + ":" + std::to_string(reader.line()) + ": ";
    if (first && !f.empty() && f[0] == "cluster") {
      if (f != kHeader && f != kOldHeader) {
        std::string got;
        for (size_t i = 0; i < f.size() && got.size() < 200; ++i) got += (i > 0 ? "," : "") + std::string(f[i]);
        return core::Status::Error(where + "header: expected \"cluster,kind,subject,start,end,severity\" (or " +
                                   "without severity), got " + core::QuotedValue(got));
      }
      continue;
    }
    if (f.size() != 5 && f.size() != 6) {
      return core::Status::Error(where + "row: " + std::to_string(f.size()) +
                                 " fields, expected 6 (cluster,kind,subject,start,end,severity) or 5");
    }
    // An empty subject is an incident whose subject is unknown (a node failure seen in the job
    // trace names no node): it matches any subject of its kind and cluster.
    for (int i = 0; i < 2; ++i) {
      if (f[i].empty()) return core::Status::Error(where + kColumns[i] + ": empty");
    }
    Incident incident{std::string(f[0]), std::string(f[1]), std::string(f[2]), 0, 0, IncidentSeverity::kUntiered};
    for (int i = 3; i < 5; ++i) {
      std::optional<int64_t> ms = core::ParseTimeMs(f[i]);
      if (!ms) {
        return core::Status::Error(where + kColumns[i] + ": not a time (unix seconds or ISO 8601 with offset): " +
                                   core::QuotedValue(f[i]));
      }
      if (!core::IsTraceTimeMs(*ms)) {
        return core::Status::Error(where + kColumns[i] + ": " + std::string(core::kTraceTimeRangeReason));
      }
      (i == 3 ? incident.start_ms : incident.end_ms) = *ms;
    }
    if (incident.end_ms < incident.start_ms) return core::Status::Error(where + "end: before start");
    if (f.size() == 6) {
      std::optional<IncidentSeverity> severity = ParseSeverity(f[5]);
      if (!severity) {
        return core::Status::Error(where + "severity: expected warning, critical or empty, got " +
                                   core::QuotedValue(f[5]));
      }
      incident.severity = *severity;
    }
    incidents.push_back(std::move(incident));
  }
  if (unreadable) return *unreadable;
  if (!reader.status().ok()) return core::Status::Error(path + ": cannot read the faults file: " + reader.status().message());
  if (!any_row) {
    return core::Status::Error(path + ": empty, not a faults file (synth writes a header, then a row per incident)");
  }
  std::stable_sort(incidents.begin(), incidents.end(),
                   [](const Incident& a, const Incident& b) { return a.start_ms < b.start_ms; });
  return incidents;
}

core::Result<std::vector<FlagKind>> LoadAnomalyFlags(const std::string& path, int64_t start_ms, int64_t end_ms,
                                                     int64_t* duplicates_out) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return core::Status::Error(path + ": cannot open the anomalies file");
  core::LineReader reader(file);
  core::RecordParser parser;
  core::Record record;
  std::map<std::string, FlagKind> kinds;
  // Open flags by (cluster, kind, subject): their onset.
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> open;
  // Records already read, by identity: Kafka delivers at least once, and a record delivered twice is
  // one flag, not two onsets.
  std::set<std::tuple<std::string, std::string, std::string, bool, int64_t>> seen;
  int64_t duplicates = 0;
  std::string_view line;
  core::Status failure = core::Status::Ok();
  while (true) {
    const core::LineReader::Result r = reader.Next(line);
    if (r == core::LineReader::Result::kEnd) break;
    const std::string where = path + ":" + std::to_string(reader.line_no()) + ": ";
    if (r == core::LineReader::Result::kTooLong) {
      failure = core::Status::Error(where + "line: " + reader.TooLongReason());
      break;
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    // Framed lines carry their topic; a bare value is taken for an acme.anomalies record.
    const bool framed = line.find("\"topic\"") != std::string_view::npos;
    core::Status s = framed ? parser.ParseFramedLine(line, record) : parser.ParseValue("acme.anomalies", line, record);
    if (!s.ok()) {
      failure = core::Status::Error(where + s.message());
      break;
    }
    const auto* event = std::get_if<core::AnomalyEvent>(&record);
    if (event == nullptr) continue;
    if (!seen.emplace(event->cluster, event->kind, event->subject, event->open, event->ts_ms).second) {
      ++duplicates;
      continue;
    }
    auto key = std::make_tuple(event->cluster, event->kind, event->subject);
    FlagKind& kind = kinds[event->kind];
    kind.kind = event->kind;
    if (event->open) {
      open.try_emplace(key, event->ts_ms);  // a repeated open keeps the first onset
    } else if (auto it = open.find(key); it != open.end()) {
      if (it->second >= start_ms && it->second <= end_ms) {
        kind.intervals.push_back({{{"cluster", event->cluster}, {"kind", event->kind}, {"subject", event->subject}},
                                  it->second, std::min(event->ts_ms, end_ms), false});
      }
      open.erase(it);
    }
  }
  const bool read_error = reader.failed();
  std::fclose(file);
  if (!failure.ok()) return failure;
  if (read_error) return core::Status::Error(path + ": read error");
  if (duplicates_out != nullptr) *duplicates_out = duplicates;
  for (const auto& [key, onset] : open) {
    if (onset < start_ms || onset > end_ms) continue;
    const auto& [cluster, kind, subject] = key;
    kinds[kind].intervals.push_back({{{"cluster", cluster}, {"kind", kind}, {"subject", subject}}, onset, end_ms, true});
  }
  std::vector<FlagKind> out;
  for (auto& [name, kind] : kinds) {
    std::sort(kind.intervals.begin(), kind.intervals.end(),
              [](const FiringInterval& a, const FiringInterval& b) { return a.start_ms < b.start_ms; });
    out.push_back(std::move(kind));
  }
  return out;
}

}  // namespace acmetrace::scoring
