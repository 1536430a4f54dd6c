#include "acmetrace/history/remote_write_output.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace acmetrace::history {

core::Status ParseOpenMetricsSample(std::string_view line, ParsedSample& out) {
  out.labels.clear();
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  if (i == 0) return core::Status::Error("no metric name");
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
  if (i >= line.size() || line[i] != ' ') return core::Status::Error("no value");
  ++i;
  size_t end = line.find(' ', i);
  if (end == std::string_view::npos) end = line.size();
  const std::string_view value = line.substr(i, end - i);
  if (value == "NaN") {
    out.value = std::numeric_limits<double>::quiet_NaN();
  } else if (value == "+Inf") {
    out.value = std::numeric_limits<double>::infinity();
  } else if (value == "-Inf") {
    out.value = -std::numeric_limits<double>::infinity();
  } else {
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out.value);
    if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
      return core::Status::Error("not a number: " + std::string(value.substr(0, 40)));
    }
  }
  std::sort(out.labels.begin(), out.labels.end(),
            [](const remote_write::Label& a, const remote_write::Label& b) { return a.name < b.name; });
  return core::Status::Ok();
}

core::Status RemoteWriteOutput::Scrape(int64_t ts_ms, std::string_view samples) {
  size_t line_no = 0;
  while (!samples.empty()) {
    ++line_no;
    const size_t eol = samples.find('\n');
    const std::string_view line = samples.substr(0, eol);
    samples.remove_prefix(eol == std::string_view::npos ? samples.size() : eol + 1);
    if (line.empty() || line.front() == '#') continue;
    if (core::Status s = ParseOpenMetricsSample(line, scratch_); !s.ok()) {
      return core::Status::Error("scrape sample line " + std::to_string(line_no) + ": " + s.message());
    }
    key_.assign(scratch_.series);
    auto it = ids_.find(key_);
    if (it == ids_.end()) it = ids_.emplace(key_, queue_->AddSeries(scratch_.labels)).first;
    if (core::Status s = queue_->Append(it->second, {ts_ms, scratch_.value}); !s.ok()) return s;
  }
  return core::Status::Ok();
}

core::Status RemoteWriteOutput::Finish() { return queue_->Close(); }

}  // namespace acmetrace::history
