// acmetrace backfill --remote-write into Debian's VictoriaMetrics (label victoria-metrics) and
// Debian's Prometheus with --web.enable-remote-write-receiver and an out-of-order window (label
// prometheus): every sample read back equals what the blocks path is given (the same backfill's
// OpenMetrics text, promtool's input), at its trace time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "local_processes.h"

namespace {

namespace fs = std::filesystem;
using namespace acmetrace::test;  // NOLINT: the local process helpers
// "name{k=v,...}" (labels sorted) -> ts_ms -> value; finite values only (NaN is not a value to compare).
using Samples = std::map<std::string, std::map<int64_t, double>>;

constexpr int64_t kStart = 1688140800;  // synth's default start
constexpr int64_t kFrom = kStart + 6 * 3600;
constexpr int64_t kTo = kFrom + 2 * 3600;  // two hours of trace: a short test

std::string Key(const std::map<std::string, std::string>& labels) {
  std::string key = labels.count("__name__") ? labels.at("__name__") : "";
  key += '{';
  for (const auto& [k, v] : labels) {
    if (k != "__name__") key += k + "=\"" + v + "\",";
  }
  return key + '}';
}

// The OpenMetrics text of --openmetrics: name{labels} value seconds[.ms].
Samples ParseOpenMetrics(const std::string& text) {
  Samples out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t i = line.find_first_of("{ ");
    std::map<std::string, std::string> labels{{"__name__", line.substr(0, i)}};
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const size_t eq = line.find('=', i);
        std::string v;
        size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            v += line[j] == 'n' ? '\n' : line[j];
          } else {
            v += line[j];
          }
        }
        labels[line.substr(i, eq - i)] = v;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    const size_t space = line.find(' ', i + 1);
    const double value = std::stod(line.substr(i + 1, space - i - 1));
    const int64_t ts_ms = std::llround(std::stod(line.substr(space + 1)) * 1000);
    if (std::isfinite(value)) out[Key(labels)][ts_ms] = value;
  }
  return out;
}

std::map<std::string, std::string> Labels(const nlohmann::json& metric) {
  std::map<std::string, std::string> labels;
  for (const auto& [k, v] : metric.items()) labels[k] = v.get<std::string>();
  return labels;
}

// The first difference between two sample sets (values to 1e-12 relative), or "".
std::string FirstDifference(const Samples& want, const Samples& got) {
  if (want.size() != got.size()) {
    for (const auto& [key, _] : want) {
      if (!got.count(key)) return "missing series " + key + " (" + std::to_string(got.size()) + " of " +
                                  std::to_string(want.size()) + " series)";
    }
    for (const auto& [key, _] : got) {
      if (!want.count(key)) return "unexpected series " + key;
    }
  }
  for (const auto& [key, points] : want) {
    const auto& other = got.at(key);
    if (points.size() != other.size()) {
      return key + ": " + std::to_string(other.size()) + " samples, want " + std::to_string(points.size());
    }
    for (const auto& [ts, v] : points) {
      auto it = other.find(ts);
      if (it == other.end()) return key + ": no sample at " + std::to_string(ts);
      if (std::fabs(it->second - v) > 1e-12 * std::max(1.0, std::fabs(v))) {
        return key + " at " + std::to_string(ts) + ": " + std::to_string(it->second) + ", want " + std::to_string(v);
      }
    }
  }
  return "";
}

int64_t Count(const Samples& s) {
  int64_t n = 0;
  for (const auto& [_, points] : s) n += static_cast<int64_t>(points.size());
  return n;
}

class BackfillRemoteWriteTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = fs::temp_directory_path() / ("acmetrace-remote-write-" + std::to_string(::getpid()));
    fs::create_directories(work_);
    ASSERT_EQ(RunShell("cd " + work_.string() + " && " + Binary() +
                       " synth --out day --days 1 --scale 0.01 --inject-faults > synth.log 2>&1"),
              0)
        << ReadFile((work_ / "synth.log").string());
    ASSERT_EQ(RunShell("cd " + work_.string() + " && " + Binary() + " backfill --data day " + Window() +
                       " --openmetrics ref.om > ref.out 2> ref.err"),
              0)
        << ReadFile((work_ / "ref.err").string());
    reference_ = ParseOpenMetrics(ReadFile((work_ / "ref.om").string()));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(work_, ec);
  }
  static std::string Window() { return "--from " + std::to_string(kFrom) + " --to " + std::to_string(kTo); }
  // backfill --remote-write URL (extra flags appended); its exit code, stderr in err.
  static int Backfill(const std::string& url, const std::string& extra, std::string& err) {
    const std::string log = (work_ / "rw.err").string();
    const int rc = RunShell("cd " + work_.string() + " && " + Binary() + " backfill --data day " + Window() +
                            " --remote-write " + url + " " + extra + " > rw.out 2> " + log);
    err = ReadFile(log);
    return rc;
  }
  static inline fs::path work_;
  static inline Samples reference_;
};

TEST_F(BackfillRemoteWriteTest, VictoriaMetricsHoldsEverySampleOfTheBlocksPath) {
  ASSERT_GT(Count(reference_), 100'000);  // the persona's GPUs, the jobs, the injected faults
  const int port = FreePort();
  const fs::path dir = work_ / "vm";
  fs::create_directories(dir);
  Child vm({"/usr/bin/victoria-metrics", "-httpListenAddr=127.0.0.1:" + std::to_string(port),
            "-storageDataPath=" + (dir / "data").string(), "-retentionPeriod=100y"},
           (dir / "vm.out").string(), (dir / "vm.err").string());
  ASSERT_TRUE(WaitUntil([&] { return HttpGet(port, "/health").status == 200; }, 30)) << ReadFile((dir / "vm.err").string());

  std::string err;
  ASSERT_EQ(Backfill("http://127.0.0.1:" + std::to_string(port) + "/api/v1/write", "--header 'X-Scope-OrgID: t1'", err),
            0)
      << err;
  EXPECT_NE(err.find("remote write: "), std::string::npos) << err;
  EXPECT_NE(err.find(" 0 failed"), std::string::npos) << err;
  ASSERT_EQ(HttpGet(port, "/internal/force_flush").status, 200);

  const HttpResponse r = HttpGet(port, "/api/v1/export?match%5B%5D=" + UrlEncode("{__name__=~\".+\"}") +
                                           "&start=" + std::to_string(kFrom - 60) + "&end=" + std::to_string(kTo + 60));
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  Samples got;
  std::istringstream lines(r.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const nlohmann::json row = nlohmann::json::parse(line);
    auto& points = got[Key(Labels(row["metric"]))];
    for (size_t i = 0; i < row["timestamps"].size(); ++i) {
      const double v = row["values"][i].get<double>();
      if (std::isfinite(v)) points[row["timestamps"][i].get<int64_t>()] = v;
    }
  }
  EXPECT_EQ(FirstDifference(reference_, got), "");
  EXPECT_EQ(Count(got), Count(reference_));
}

TEST_F(BackfillRemoteWriteTest, PrometheusWithAnOutOfOrderWindowHoldsEverySampleOfTheBlocksPath) {
  const int port = FreePort();
  const fs::path dir = work_ / "prom";
  fs::create_directories(dir);
  // History is hours to months old: without an out-of-order window Prometheus refuses what is older
  // than its head (HTTP 400 "out of bounds").
  std::ofstream(dir / "prometheus.yml") << "storage:\n  tsdb:\n    out_of_order_time_window: 3650d\n";
  Child prom({"/usr/bin/prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
              "--storage.tsdb.path=" + (dir / "data").string(), "--storage.tsdb.retention.time=100y",
              "--web.listen-address=127.0.0.1:" + std::to_string(port), "--web.enable-remote-write-receiver"},
             (dir / "prom.out").string(), (dir / "prom.err").string());
  ASSERT_TRUE(WaitUntil([&] { return HttpGet(port, "/-/ready").status == 200; }, 60))
      << ReadFile((dir / "prom.err").string());

  std::string err;
  ASSERT_EQ(Backfill("http://127.0.0.1:" + std::to_string(port) + "/api/v1/write", "", err), 0) << err;

  // Every raw sample of the window: a range selector over it, evaluated at its end.
  const int64_t span_s = kTo - kFrom + 120;
  const HttpResponse r =
      HttpGet(port, "/api/v1/query?time=" + std::to_string(kTo + 60) + "&query=" +
                        UrlEncode("{__name__=~\".+\"}[" + std::to_string(span_s) + "s]"));
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  Samples got;
  for (const auto& s : nlohmann::json::parse(r.body)["data"]["result"]) {
    auto& points = got[Key(Labels(s["metric"]))];
    for (const auto& p : s["values"]) {
      const double v = std::stod(p[1].get<std::string>());
      if (std::isfinite(v)) points[std::llround(p[0].get<double>() * 1000)] = v;
    }
  }
  EXPECT_EQ(FirstDifference(reference_, got), "");
}

}  // namespace
