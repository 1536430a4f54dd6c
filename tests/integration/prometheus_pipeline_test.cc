// acmetrace run against the real Prometheus (Debian's `prometheus` binary): the test starts
// Prometheus on 127.0.0.1 (free port, temporary data dir, 1 s scrapes of the run's address), checks
// the series through Prometheus' HTTP API, and checks "stream equals batch": the exported
// cumulative job counters equal counts taken directly from the job-trace CSV files.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "local_processes.h"
#include "../suite_prepare.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

namespace {

namespace fs = std::filesystem;
using namespace acmetrace::test;  // NOLINT: the local process helpers

class PrometheusPipelineTest : public testing::Test {
 protected:
  void SetUp() override { PrepareSuiteOnce(prepared_, &Prepare); }
  // Made once per process by the first test (suite_prepare.h).
  static void Prepare() {
    work_ = fs::temp_directory_path() / ("acmetrace-prom-" + std::to_string(::getpid()));
    fs::create_directories(work_);
    data_ = (work_ / "day").string();
    const std::string cmd = std::string(Binary()) + " synth --out " + data_ +
                            " --days 1 --scale 0.05 --inject-faults > " + (work_ / "synth.log").string() + " 2>&1";
    ASSERT_EQ(RunShell(cmd), 0) << ReadFile((work_ / "synth.log").string());
  }
  static inline Prepared prepared_ = Prepared::kNotYet;
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(work_, ec);
  }

  // Starts `acmetrace run` and returns its port (read from the "listening on" line).
  int StartRun(std::unique_ptr<Child>& run, const std::vector<std::string>& extra, const std::string& name) {
    std::vector<std::string> argv = {Binary(), "run", "--data", data_, "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string out = (work_ / (name + ".out")).string();
    run = std::make_unique<Child>(argv, out, (work_ / (name + ".err")).string());
    int port = 0;
    WaitUntil(
        [&] {
          const std::string text = ReadFile(out);
          const std::string prefix = "listening on http://127.0.0.1:";
          const size_t at = text.find(prefix);
          if (at == std::string::npos) return false;
          port = std::atoi(text.c_str() + at + prefix.size());
          return port > 0;
        },
        30);
    return port;
  }

  static fs::path work_;
  static std::string data_;
};

fs::path PrometheusPipelineTest::work_;
std::string PrometheusPipelineTest::data_;

// Prometheus on a free port with a temporary data dir, scraping target every second, plus the
// multi-target job (one target per node through /targets and ?target=).
class Prometheus {
 public:
  Prometheus(const fs::path& dir, int target_port) : port_(FreePort()) {
    fs::create_directories(dir / "tsdb");
    const std::string target = "127.0.0.1:" + std::to_string(target_port);
    std::ofstream(dir / "prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                          << "scrape_configs:\n"
                                          << "  - job_name: acmetrace\n"
                                          << "    static_configs: [{targets: ['" << target << "']}]\n"
                                          << "  - job_name: acmetrace-gpu-nodes\n"
                                          << "    http_sd_configs: [{url: 'http://" << target
                                          << "/targets', refresh_interval: 5s}]\n"
                                          << "    relabel_configs:\n"
                                          << "      - {source_labels: [__address__], target_label: __param_target}\n"
                                          << "      - {source_labels: [__param_target], target_label: instance}\n"
                                          << "      - {target_label: __address__, replacement: '" << target << "'}\n";
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
                                 "--storage.tsdb.path=" + (dir / "tsdb").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        (dir / "prometheus.out").string(), (dir / "prometheus.err").string());
  }
  ~Prometheus() {
    if (child_) child_->Signal(SIGTERM);
  }
  bool Ready() { return HttpGet(port_, "/-/ready").status == 200; }
  // The instant query's result array text ("[]" if empty).
  std::string Query(const std::string& promql) {
    const HttpResponse r = HttpGet(port_, "/api/v1/query?query=" + UrlEncode(promql));
    const size_t at = r.body.find("\"result\":");
    return at == std::string::npos ? "" : r.body.substr(at + 9);
  }
  bool HasData(const std::string& promql) {
    const std::string result = Query(promql);
    return !result.empty() && result.rfind("[]", 0) != 0;
  }

 private:
  int port_;
  std::unique_ptr<Child> child_;
};

TEST_F(PrometheusPipelineTest, PrometheusScrapesTheLiveRunSeveralTimes) {
  ASSERT_TRUE(fs::exists("/usr/bin/prometheus")) << "the Debian prometheus package is required (scripts/setup)";
  std::unique_ptr<Child> run;
  // One day at 1440x: a minute of wall time, dozens of scrapes.
  const int port = StartRun(run, {"--speed", "1440"}, "live");
  ASSERT_GT(port, 0) << ReadFile((work_ / "live.err").string());
  Prometheus prometheus(work_ / "prom-live", port);
  ASSERT_TRUE(WaitUntil([&] { return prometheus.Ready(); }, 60)) << "prometheus did not become ready";

  const std::vector<std::string> required = {
      "up{job=\"acmetrace\"} == 1",
      "acmetrace_replay_trace_time_seconds",
      "acmetrace_replay_speed == 1440",
      "acmetrace_records_total{stage=\"replay\"}",
      "acmetrace_records_total{stage=\"process\",topic=\"acme.metrics\"}",
      "acmetrace_jobs_submitted_total",
      "acmetrace_jobs_running",
      "acmetrace_gpus_allocated",
      "acmetrace_gpus_capacity",
      "acmetrace_cluster_gpu_util_ratio{stat=\"p95\"}",
      "acmetrace_cluster_gpu_power_watts",
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\"}",
      "DCGM_FI_PROF_SM_ACTIVE",
      "DCGM_FI_DEV_FB_FREE",
      "up{job=\"acmetrace-gpu-nodes\"} == 1",
      "acmetrace_job_queue_seconds{quantile=\"0.99\"}",
      "acmetrace_anomalies_total",
  };
  for (const std::string& q : required) {
    EXPECT_TRUE(WaitUntil([&] { return prometheus.HasData(q); }, 120)) << q << " -> " << prometheus.Query(q);
  }
  // Several scrapes, and trace time moving between them.
  EXPECT_TRUE(WaitUntil(
      [&] { return prometheus.HasData("count_over_time(acmetrace_replay_trace_time_seconds{cluster=\"seren\"}[5m]) >= 5"); },
      60));
  EXPECT_TRUE(prometheus.HasData("delta(acmetrace_replay_trace_time_seconds{cluster=\"seren\"}[5m]) > 0"));
  // The per-node job: each target serves only its own node's series.
  EXPECT_TRUE(prometheus.HasData("count by (instance) (DCGM_FI_DEV_GPU_UTIL{job=\"acmetrace-gpu-nodes\"}) == 8"));
  EXPECT_FALSE(prometheus.HasData(
      "count by (instance) (DCGM_FI_DEV_GPU_UTIL{job=\"acmetrace-gpu-nodes\"}) > 8"));
  // No sample timestamps: Prometheus stamps samples at scrape time, so replayed 2023 data is "now".
  EXPECT_TRUE(prometheus.HasData("time() - timestamp(acmetrace_gpus_capacity) < 30"));

  EXPECT_EQ(run->Signal(SIGTERM), 0) << ReadFile((work_ / "live.err").string());
}

// One row of the job trace: what the stream's counters must add up to.
struct CsvCounts {
  std::map<std::tuple<std::string, std::string>, double> submitted;                          // cluster, type
  std::map<std::tuple<std::string, std::string, std::string, std::string>, double> finished;  // + kind, state
  std::map<std::tuple<std::string, std::string, std::string>, double> gpu_seconds;           // cluster, type, state
};

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

void CountCsv(const std::string& path, const std::string& cluster, CsvCounts& counts) {
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << path;
  const std::vector<std::string> header = SplitCsv(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* c : {"type", "state", "gpu_num", "end_time", "gpu_time"}) ASSERT_TRUE(col.count(c)) << path << c;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = SplitCsv(line);
    const std::string& type = f[col["type"]];
    const std::string& state = f[col["state"]];
    counts.submitted[{cluster, type}] += 1;
    if (f[col["end_time"]].empty()) continue;
    const std::string kind = std::stod(f[col["gpu_num"]]) > 0 ? "gpu" : "cpu";
    counts.finished[{cluster, kind, type, state}] += 1;
    if (!f[col["gpu_time"]].empty()) counts.gpu_seconds[{cluster, type, state}] += std::stod(f[col["gpu_time"]]);
  }
}

// "name{a="x",b="y"} value" lines of one family -> label values in order, value.
std::map<std::vector<std::string>, double> Family(const std::string& exposition, const std::string& name) {
  std::map<std::vector<std::string>, double> out;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    std::vector<std::string> values;
    size_t at = name.size() + 1;
    const size_t close = line.find('}', at);
    while (at < close) {
      const size_t open = line.find("=\"", at);
      const size_t end = line.find('"', open + 2);
      values.push_back(line.substr(open + 2, end - open - 2));
      at = end + 2;
    }
    out[values] = std::stod(line.substr(close + 2));
  }
  return out;
}

TEST_F(PrometheusPipelineTest, StreamEqualsBatch) {
  const std::string metrics_out = (work_ / "final.prom").string();
  std::unique_ptr<Child> run;
  const int port = StartRun(run, {"--speed", "max", "--until-end", "--metrics-out", metrics_out}, "batch");
  ASSERT_GT(port, 0) << ReadFile((work_ / "batch.err").string());
  ASSERT_EQ(run->Wait(), 0) << ReadFile((work_ / "batch.err").string());
  const std::string text = ReadFile(metrics_out);
  ASSERT_FALSE(text.empty());

  CsvCounts csv;
  CountCsv(data_ + "/data/job_trace/trace_seren.csv", "seren", csv);
  CountCsv(data_ + "/data/job_trace/trace_kalos.csv", "kalos", csv);
  ASSERT_FALSE(csv.submitted.empty());

  // Every known label set exists (at 0 if the CSV has none): 2 clusters x 6 types (x 2 kinds x 5 states).
  const auto submitted = Family(text, "acmetrace_jobs_submitted_total");
  EXPECT_EQ(submitted.size(), 2u * 6u);
  for (const auto& [k, n] : csv.submitted) {
    const auto& [cluster, type] = k;
    EXPECT_EQ(submitted.at({cluster, type}), n) << cluster << " " << type;
  }
  for (const auto& [labels, n] : submitted) {
    if (!csv.submitted.count({labels[0], labels[1]})) {
      EXPECT_EQ(n, 0) << labels[0] << " " << labels[1];
    }
  }
  const auto finished = Family(text, "acmetrace_jobs_finished_total");
  EXPECT_EQ(finished.size(), 2u * 2u * 6u * 5u);
  for (const auto& [k, n] : csv.finished) {
    const auto& [cluster, kind, type, state] = k;
    EXPECT_EQ(finished.at({cluster, kind, type, state}), n) << cluster << " " << kind << " " << type << " " << state;
  }
  int64_t nonzero = 0;
  for (const auto& [labels, n] : finished) nonzero += n != 0;
  EXPECT_EQ(nonzero, static_cast<int64_t>(csv.finished.size()));
  const auto gpu_seconds = Family(text, "acmetrace_job_gpu_seconds_total");
  for (const auto& [k, s] : csv.gpu_seconds) {
    const auto& [cluster, type, state] = k;
    ASSERT_TRUE(gpu_seconds.count({cluster, type, state})) << cluster << " " << type << " " << state;
    EXPECT_NEAR(gpu_seconds.at({cluster, type, state}), s, 1e-9 * std::max(1.0, s))
        << cluster << " " << type << " " << state;
  }
  // The injected faults surface as anomalies.
  EXPECT_FALSE(Family(text, "acmetrace_anomalies_total").empty());
}

}  // namespace
