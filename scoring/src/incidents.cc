// faults.csv and anomaly-flag files: read whole (they are small next to the telemetry), errors with
// file, line and field.
#include "acmetrace/scoring/incidents.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "acmetrace/core/input_errors.h"

#include "acmetrace/core/line_reader.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/time.h"

namespace acmetrace::scoring {

namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

}  // namespace

core::Result<std::vector<Incident>> LoadFaultsCsv(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return core::Status::Error(path + ": cannot open the faults file: " + std::strerror(errno));
  struct FileCloser {
    std::FILE* f;
    ~FileCloser() { std::fclose(f); }
  } closer{file};
  // A directory opens, then reads as nothing: it would be a file of no incident, every flag false.
  struct stat st {};
  if (::fstat(::fileno(file), &st) == 0 && S_ISDIR(st.st_mode)) {
    return core::Status::Error(path + ": a directory, not a faults file");
  }
  core::LineReader reader(file, kMaxFaultsLineBytes);
  std::vector<Incident> incidents;
  std::string_view view;
  bool any_line = false;
  static const char* const kColumns[] = {"cluster", "kind", "subject", "start", "end"};
  while (true) {
    const core::LineReader::Result r = reader.Next(view);
    if (r == core::LineReader::Result::kEnd) break;
    const int64_t line_no = reader.line_no();
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (r == core::LineReader::Result::kTooLong) return core::Status::Error(where + "row: " + reader.TooLongReason());
    std::string line(view);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    any_line = true;
    if (line_no == 1 && line.rfind("cluster,", 0) == 0) {
      if (line != "cluster,kind,subject,start,end") {
        return core::Status::Error(path + ":1: header: expected \"cluster,kind,subject,start,end\", got " +
                                   core::QuotedValue(line));
      }
      continue;
    }
    const std::vector<std::string> f = SplitCsv(line);
    if (f.size() != 5) {
      return core::Status::Error(where + "row: " + std::to_string(f.size()) +
                                 " fields, expected 5 (cluster,kind,subject,start,end)");
    }
    for (int i = 0; i < 3; ++i) {
      if (f[i].empty()) return core::Status::Error(where + kColumns[i] + ": empty");
    }
    Incident incident{f[0], f[1], f[2], 0, 0};
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
    incidents.push_back(std::move(incident));
  }
  if (reader.failed()) return core::Status::Error(path + ": cannot read the faults file: " + std::strerror(errno));
  if (!any_line) {
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
