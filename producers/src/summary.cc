// Summary statistics with pandas semantics: NaN is skipped by mean/median/max/sum; the median of
// an even count is the mean of the two middle values; a missing group gives an empty cell.
#include "acmetrace/producers/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "acmetrace/core/record.h"
#include "acmetrace/producers/published_data.h"

namespace acmetrace::producers {
namespace {

bool IsFailed(const std::string& state) {
  return state == "FAILED" || state == "TIMEOUT" || state == "NODE_FAIL";
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return (lower + upper) / 2;
}

double Max(const std::vector<double>& v) {
  return v.empty() ? NAN : *std::max_element(v.begin(), v.end());
}

void PushIfSample(std::vector<double>& v, double x) {
  if (core::IsSample(x)) v.push_back(x);
}

}  // namespace

std::string FormatSummaryNumber(double x) {
  if (std::isnan(x)) return "";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", x);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.push_back('0');
  if (s == "-0.0") s = "0.0";
  return s;
}

const std::vector<std::string>& SummaryColumns() {
  static const std::vector<std::string> kColumns = {
      "id", "job_num", "cpu_job_num", "gpu_job_num", "avg_run_time_gpu", "avg_que_time_gpu",
      "avg_gpu_num", "med_run_time_gpu", "med_que_time_gpu", "med_gpu_num", "max_run_time_gpu",
      "max_gpu", "complete_rate_gpu", "cancel_rate_gpu", "fail_rate_gpu", "complete_gpu_time",
      "cancel_gpu_time", "fail_gpu_time", "complete_rate_gpu_time", "cancel_rate_gpu_time",
      "fail_rate_gpu_time", "avg_run_time_cpu", "avg_que_time_cpu", "med_run_time_cpu",
      "med_que_time_cpu", "complete_rate_cpu", "cancel_rate_cpu", "fail_rate_cpu"};
  return kColumns;
}

void ClusterSummary::Add(const JobRow& row) {
  ++job_num_;
  Group& g = row.gpu_num > 0 ? gpu_ : cpu_;
  ++g.count;
  PushIfSample(g.run, row.duration_s);
  PushIfSample(g.queue, row.queue_s);
  g.gpus.push_back(static_cast<double>(row.gpu_num));
  ++g.state_count[row.state];
  if (core::IsSample(row.gpu_time)) g.state_gpu_time[row.state] += row.gpu_time;
}

std::vector<std::string> ClusterSummary::Values(const std::string& id) const {
  auto count_of = [](const Group& g, auto pred) {
    int64_t n = 0;
    for (const auto& [state, c] : g.state_count) n += pred(state) ? c : 0;
    return n;
  };
  auto time_of = [](const Group& g, auto pred) {
    double t = 0;
    for (const auto& [state, x] : g.state_gpu_time) t += pred(state) ? x : 0;
    return t;
  };
  auto completed = [](const std::string& s) { return s == "COMPLETED"; };
  auto cancelled = [](const std::string& s) { return s == "CANCELLED"; };
  auto failed = [](const std::string& s) { return IsFailed(s); };
  auto share = [](double part, double whole) { return whole > 0 ? part / whole : NAN; };
  auto f = FormatSummaryNumber;
  auto i = [](int64_t n) { return std::to_string(n); };

  const double gpu_n = static_cast<double>(gpu_.count);
  const double cpu_n = static_cast<double>(cpu_.count);
  const double complete_t = time_of(gpu_, completed);
  const double cancel_t = time_of(gpu_, cancelled);
  const double fail_t = time_of(gpu_, failed);
  double total_t = 0;
  for (const auto& [state, x] : gpu_.state_gpu_time) total_t += x;

  // One cell per column of the published summary (GPU jobs, then CPU jobs): a table row, alike in shape only.
  return {id,
          i(job_num_),
          i(cpu_.count),
          i(gpu_.count),
          f(Mean(gpu_.run)),
          f(Mean(gpu_.queue)),
          f(Mean(gpu_.gpus)),
          f(Median(gpu_.run)),
          f(Median(gpu_.queue)),
          f(Median(gpu_.gpus)),
          f(Max(gpu_.run)),
          f(Max(gpu_.gpus)),
          f(share(count_of(gpu_, completed), gpu_n)),
          f(share(count_of(gpu_, cancelled), gpu_n)),
          f(share(count_of(gpu_, failed), gpu_n)),
          gpu_.count > 0 ? f(complete_t) : "",
          gpu_.count > 0 ? f(cancel_t) : "",
          gpu_.count > 0 ? f(fail_t) : "",
          f(share(complete_t, total_t)),
          f(share(cancel_t, total_t)),
          f(share(fail_t, total_t)),
          f(Mean(cpu_.run)),
          f(Mean(cpu_.queue)),
          f(Median(cpu_.run)),
          f(Median(cpu_.queue)),
          f(share(count_of(cpu_, completed), cpu_n)),
          f(share(count_of(cpu_, cancelled), cpu_n)),
          f(share(count_of(cpu_, failed), cpu_n))};
}

core::Result<std::string> SummarizeJobTraces(const std::vector<std::string>& files, core::InputErrors& errors) {
  std::vector<std::pair<std::string, ClusterSummary>> clusters;
  for (const std::string& path : files) {
    JobTraceReader reader(errors);
    if (core::Status s = reader.Open(path); !s.ok()) return s;
    auto it = std::find_if(clusters.begin(), clusters.end(),
                           [&](const auto& c) { return c.first == reader.cluster(); });
    if (it == clusters.end()) {
      clusters.emplace_back(reader.cluster(), ClusterSummary());
      it = clusters.end() - 1;
    }
    JobRow row;
    while (reader.Next(row)) it->second.Add(row);
    if (!reader.status().ok()) return reader.status();
    if (errors.must_stop()) return core::Status::Error("stopped at the first bad row (--strict): " + errors.first());
  }
  std::string out;
  const auto& columns = SummaryColumns();
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c > 0) out.push_back(',');
    out += columns[c];
  }
  out.push_back('\n');
  for (const auto& [cluster, summary] : clusters) {
    std::string id = cluster;
    if (!id.empty()) id[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(id[0])));
    const std::vector<std::string> values = summary.Values(id);
    for (size_t c = 0; c < values.size(); ++c) {
      if (c > 0) out.push_back(',');
      out += values[c];
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace acmetrace::producers

namespace acmetrace::producers {
namespace {

std::vector<std::vector<std::string>> SplitCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) {
      std::vector<std::string> cells;
      size_t c = 0;
      while (true) {
        size_t comma = line.find(',', c);
        cells.push_back(line.substr(c, comma == std::string::npos ? std::string::npos : comma - c));
        if (comma == std::string::npos) break;
        c = comma + 1;
      }
      rows.push_back(std::move(cells));
    }
    start = end + 1;
  }
  return rows;
}

}  // namespace

std::vector<std::string> CompareWithPublishedSummary(const std::string& computed_csv) {
  const auto published = SplitCsv(PublishedClusterSummaryCsv());
  const auto computed = SplitCsv(computed_csv);
  std::vector<std::string> diffs;
  if (published.empty() || computed.empty()) return {"no rows to compare"};
  const auto& header = published[0];
  for (size_t r = 1; r < computed.size(); ++r) {
    const auto& row = computed[r];
    auto it = std::find_if(published.begin() + 1, published.end(),
                           [&](const auto& p) { return !p.empty() && p[0] == row[0]; });
    if (it == published.end()) {
      diffs.push_back(row[0] + ": the release has no row with this id");
      continue;
    }
    for (size_t c = 1; c < header.size() && c < row.size() && c < it->size(); ++c) {
      if (row[c] != (*it)[c]) diffs.push_back(row[0] + "," + header[c] + ": " + row[c] + " != " + (*it)[c]);
    }
  }
  return diffs;
}

}  // namespace acmetrace::producers
