#include "acmetrace/history/openmetrics.h"

#include <algorithm>

#include "acmetrace/exporters/series_store.h"

namespace acmetrace::history {
namespace {

// Integral seconds as digits, else seconds with milliseconds ("1688169615", "1688169615.250").
void AppendSeconds(std::string& out, int64_t ts_ms) {
  const bool negative = ts_ms < 0;
  const uint64_t abs_ms = negative ? 0 - static_cast<uint64_t>(ts_ms) : static_cast<uint64_t>(ts_ms);
  if (negative) out += '-';
  out += std::to_string(abs_ms / 1000);
  if (const uint64_t ms = abs_ms % 1000; ms != 0) {
    char frac[5] = {'.', static_cast<char>('0' + ms / 100), static_cast<char>('0' + ms / 10 % 10),
                    static_cast<char>('0' + ms % 10), 0};
    out += frac;
  }
}

// name{target_labels,inner} where labels_text is "{inner}" or empty.
void AppendSeries(std::string& out, std::string_view name, std::string_view labels_text,
                  std::string_view target_labels) {
  out += name;
  out += '{';
  out += target_labels;
  if (labels_text.size() > 2) {
    if (!target_labels.empty()) out += ',';
    out += labels_text.substr(1, labels_text.size() - 2);
  }
  out += '}';
}

}  // namespace

size_t SeriesTextEnd(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  if (i == 0) return std::string_view::npos;
  if (i == line.size() || line[i] == ' ') return i;
  bool quoted = false;
  for (++i; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

std::string RenderTargetLabels(std::string_view job, std::string_view instance) {
  std::string out = "job=\"";
  exporters::AppendEscaped(out, job, true);
  out += "\",instance=\"";
  exporters::AppendEscaped(out, instance, true);
  out += '"';
  return out;
}

void AppendOpenMetricsSample(std::string& out, std::string_view name, std::string_view labels_text,
                             std::string_view target_labels, double value, int64_t ts_ms) {
  AppendSeries(out, name, labels_text, target_labels);
  out += ' ';
  exporters::AppendSampleValue(out, value);
  out += ' ';
  AppendSeconds(out, ts_ms);
  out += '\n';
}

core::Status AppendOpenMetricsSamples(std::string& out, std::string_view exposition, std::string_view target_labels,
                                      int64_t ts_ms) {
  size_t line_no = 0;
  while (!exposition.empty()) {
    ++line_no;
    const size_t eol = exposition.find('\n');
    std::string_view line = exposition.substr(0, eol);
    exposition.remove_prefix(eol == std::string_view::npos ? exposition.size() : eol + 1);
    if (line.empty() || line.front() == '#') continue;
    // name, then {labels} (values quoted, with \" and \\ escapes), then ' ' and the value.
    const size_t i = SeriesTextEnd(line);
    if (i == std::string_view::npos || i >= line.size() || line[i] != ' ' || i + 1 >= line.size()) {
      return core::Status::Error("exposition line " + std::to_string(line_no) + ": not a sample");
    }
    const size_t brace = line.find('{');
    const std::string_view name = line.substr(0, std::min(brace, i));
    const std::string_view labels = brace < i ? line.substr(brace, i - brace) : std::string_view();
    const std::string_view value = line.substr(i + 1);
    AppendSeries(out, name, labels, target_labels);
    out += ' ';
    out += value;  // as the exporter wrote it: OpenMetrics reads the same numbers, NaN and +Inf
    out += ' ';
    AppendSeconds(out, ts_ms);
    out += '\n';
  }
  return core::Status::Ok();
}

}  // namespace acmetrace::history
