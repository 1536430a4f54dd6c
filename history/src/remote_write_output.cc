#include "acmetrace/history/remote_write_output.h"

#include "acmetrace/history/openmetrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace acmetrace::history {

core::Status ParseSampleValue(std::string_view rest, double& value) {
  if (rest.empty() || rest[0] != ' ') return core::Status::Error("no value");
  rest.remove_prefix(1);
  const std::string_view text = rest.substr(0, rest.find(' '));
  if (text == "NaN") {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (text == "+Inf") {
    value = std::numeric_limits<double>::infinity();
  } else if (text == "-Inf") {
    value = -std::numeric_limits<double>::infinity();
  } else {
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
      return core::Status::Error("not a number: " + std::string(text.substr(0, 40)));
    }
  }
  return core::Status::Ok();
}

namespace {

bool IsNameChar(char c, bool first, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

// [a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*, Prometheus's data model.
bool IsMetricName(std::string_view name) {
  for (size_t k = 0; k < name.size(); ++k) {
    if (!IsNameChar(name[k], k == 0, true)) return false;
  }
  return !name.empty();
}
bool IsLabelName(std::string_view name) {
  for (size_t k = 0; k < name.size(); ++k) {
    if (!IsNameChar(name[k], k == 0, false)) return false;
  }
  return !name.empty();
}

}  // namespace

core::Status ParseOpenMetricsSample(std::string_view line, ParsedSample& out) {
  out.labels.clear();
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  if (i == 0) return core::Status::Error("no metric name");
  if (!IsMetricName(line.substr(0, i))) return core::Status::Error("not a metric name");
  out.labels.push_back({"__name__", std::string(line.substr(0, i))});
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      if (i >= line.size()) return core::Status::Error("unterminated labels");
      if (line[i] == '}') {
        ++i;
        break;
      }
      const size_t name_start = i;
      while (i < line.size() && line[i] != '=' && line[i] != '}' && line[i] != ',') ++i;
      if (i >= line.size() || line[i] != '=' || i == name_start) return core::Status::Error("a label without name=");
      // A label name as Prometheus has them: a quote in one would make SeriesTextEnd, which reads
      // quotes as the values' bounds, end the series elsewhere (found by remote_write_fuzz).
      if (!IsLabelName(line.substr(name_start, i - name_start))) return core::Status::Error("not a label name");
      remote_write::Label label;
      label.name.assign(line.substr(name_start, i - name_start));
      ++i;
      if (i >= line.size() || line[i] != '"') return core::Status::Error("a label value not in quotes");
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          label.value += c;
          continue;
        }
        if (i >= line.size()) break;
        const char e = line[i++];
        label.value += e == 'n' ? '\n' : e;  // \\ and \" stand for themselves
      }
      if (!closed) return core::Status::Error("unterminated label value");
      out.labels.push_back(std::move(label));
      if (i < line.size() && line[i] == ',') ++i;
    }
  }
  out.series = line.substr(0, i);
  if (core::Status s = ParseSampleValue(line.substr(i), out.value); !s.ok()) return s;
  std::sort(out.labels.begin(), out.labels.end(),
            [](const remote_write::Label& a, const remote_write::Label& b) { return a.name < b.name; });
  return core::Status::Ok();
}

namespace {

// The next line of text that is neither empty nor a comment, taken off text; line_no counts the
// lines taken (1-based). False at the end.
bool NextSampleLine(std::string_view& text, std::string_view& line, size_t& line_no) {
  while (!text.empty()) {
    ++line_no;
    const size_t eol = text.find('\n');
    line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.front() != '#') return true;
  }
  return false;
}

}  // namespace

core::Status RemoteWriteOutput::LineSeries(std::string_view line, uint32_t& id, double& value) {
  // A known series (every scrape but its first) costs a lookup and a number: its labels were
  // parsed once, when it was new.
  // The scraper writes "series value timestamp": neither number holds a space, so the series text
  // ends at the second space from the end, found without scanning the labels.
  const size_t last = line.rfind(' ');
  size_t end = last == std::string_view::npos || last == 0 ? std::string_view::npos : line.rfind(' ', last - 1);
  if (end == std::string_view::npos) end = SeriesTextEnd(line);
  auto it = end == std::string_view::npos ? ids_.end() : ids_.find(line.substr(0, end));
  if (it != ids_.end()) {
    id = it->second;
    return ParseSampleValue(line.substr(end), value);
  }
  if (core::Status parsed = ParseOpenMetricsSample(line, scratch_); !parsed.ok()) return parsed;
  it = ids_.find(scratch_.series);  // the series text as parsed, when the quick split missed it
  if (it == ids_.end()) it = ids_.emplace(std::string(scratch_.series), queue_->AddSeries(scratch_.labels)).first;
  id = it->second;
  value = scratch_.value;
  return core::Status::Ok();
}

core::Status RemoteWriteOutput::Scrape(int64_t ts_ms, std::string_view samples) {
  size_t line_no = 0;
  std::string_view line;
  while (NextSampleLine(samples, line, line_no)) {
    uint32_t id = 0;
    double value = 0;
    if (core::Status parsed = LineSeries(line, id, value); !parsed.ok()) {
      return core::Status::Error("scrape sample line " + std::to_string(line_no) + ": " + parsed.message());
    }
    if (core::Status s = queue_->Append(id, {ts_ms, value}); !s.ok()) return s;
  }
  return core::Status::Ok();
}

core::Status RemoteWriteOutput::TargetSample(int64_t at_ms, const exporters::SeriesStore::TargetSample& sample,
                                             std::string_view target_labels) {
  // Any NaN goes as the text path's "NaN" would (one bit pattern, whatever the store held).
  const double value = std::isnan(sample.value) ? std::numeric_limits<double>::quiet_NaN() : sample.value;
  if (sample.serial >= id_of_serial_.size()) id_of_serial_.resize(sample.serial + 1, kNoId);
  uint32_t& id = id_of_serial_[sample.serial];
  if (id == kNoId) {
    // New here: its sample line, as the text path has it, gives the series its queue id, once (a
    // serial's labels and target never change).
    line_.clear();
    AppendOpenMetricsSample(line_, sample.family.name, sample.labels_text, target_labels, value, at_ms);
    line_.pop_back();  // the line break
    double parsed = 0;
    uint32_t found = kNoId;
    if (core::Status s = LineSeries(line_, found, parsed); !s.ok()) {
      return core::Status::Error("series " + std::string(sample.family.name) + std::string(sample.labels_text) + ": " +
                                 s.message());
    }
    id = found;
  }
  return queue_->Append(id, {at_ms, value});
}

core::Status RemoteWriteOutput::TargetExposition(int64_t at_ms, std::string_view exposition,
                                                 std::string_view target_labels, int64_t& samples) {
  if (target_labels != exposition_target_) {
    exposition_ids_.clear();
    exposition_target_.assign(target_labels);
  }
  size_t line_no = 0;
  std::string_view line;
  while (NextSampleLine(exposition, line, line_no)) {
    // "series value": a known series is a lookup and a number (the value holds no space).
    const size_t last = line.rfind(' ');
    auto it = last == std::string_view::npos ? exposition_ids_.end() : exposition_ids_.find(line.substr(0, last));
    uint32_t id = 0;
    double value = 0;
    core::Status parsed = core::Status::Ok();
    if (it != exposition_ids_.end()) {
      id = it->second;
      parsed = ParseSampleValue(line.substr(last), value);
    } else {
      // New: the sample line the text path makes of it gives its labels, once.
      line_.clear();
      if (!AppendOpenMetricsSamples(line_, line, target_labels, at_ms).ok()) {
        parsed = core::Status::Error("not a sample");
      } else {
        line_.pop_back();  // the line break
        parsed = LineSeries(line_, id, value);
      }
      if (parsed.ok()) exposition_ids_.emplace(std::string(line.substr(0, SeriesTextEnd(line))), id);
    }
    if (!parsed.ok()) return core::Status::Error("exposition line " + std::to_string(line_no) + ": " + parsed.message());
    ++samples;
    if (core::Status s = queue_->Append(id, {at_ms, value}); !s.ok()) return s;
  }
  return core::Status::Ok();
}

core::Status RemoteWriteOutput::Finish() { return queue_->Close(); }

}  // namespace acmetrace::history
