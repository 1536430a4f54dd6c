// A live `run` at the end of its telemetry, seen where a user sees it: on /metrics, polled while the
// replay still paces the job events that end days after the telemetry's last sample (a synthesized
// day's trace runs on to its last job end). A real exporter whose GPUs stop reporting disappears; so
// must the persona, one series TTL (export.series_ttl_s, event time) after the last sample, and every
// telemetry flag with it (docs/metrics.md, docs/anomalies.md "Where the data ends").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "local_processes.h"
#include "test_files.h"

namespace acmetrace::test {
namespace {

constexpr int64_t kSeriesTtlS = 300;  // export.series_ttl_s, as configured below

// The Time cell of a utilization CSV's last row: the telemetry's last sample.
int64_t LastSampleTime(const std::string& csv) {
  std::istringstream in(ReadFile(csv));
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return std::stoll(last.substr(0, last.find(',')));
}

// The GPUs a utilization CSV's header names (every column after Time).
size_t GpuColumns(const std::string& csv) {
  std::istringstream in(ReadFile(csv));
  std::string header;
  std::getline(in, header);
  return static_cast<size_t>(std::count(header.begin(), header.end(), ','));
}

// The value of each sample line starting with `prefix` (a family name and its opening brace).
std::vector<std::pair<std::string, double>> Samples(const std::string& text, const std::string& prefix) {
  std::vector<std::pair<std::string, double>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t space = line.rfind(' ');
    out.emplace_back(line.substr(0, space), std::stod(line.substr(space + 1)));
  }
  return out;
}

bool IsTelemetryKind(const std::string& labels) {
  for (const char* kind : {"gpu_overheat", "xid_error", "gpu_straggler", "telemetry_gap", "util_drop"}) {
    if (labels.find(std::string("kind=\"") + kind + "\"") != std::string::npos) return true;
  }
  return false;
}

TEST(LiveEdgesTest, ThePersonaAndTelemetryFlagsLeaveOneTtlAfterTheTelemetryEndsWhileJobsGoOn) {
  const std::string dir = TestDir();
  ASSERT_EQ(RunShell(std::string(Binary()) + " synth --out " + dir + "/day --days 1 --scale 0.02 --inject-faults 2>/dev/null"), 0);
  const int64_t telemetry_end = std::max(LastSampleTime(dir + "/day/data/utilization/seren/GPU_UTIL.csv"),
                                         LastSampleTime(dir + "/day/data/utilization/kalos/GPU_UTIL.csv"));
  // Closed flags stay exposed for two scrape intervals of wall time; a short one lets the test see the 0s.
  std::ofstream(dir + "/edges.yaml") << "export:\n  series_ttl_s: " << kSeriesTtlS << "\n  scrape_interval_s: 0.2\n";
  const size_t gpus_in_data = GpuColumns(dir + "/day/data/utilization/seren/GPU_UTIL.csv") +
                              GpuColumns(dir + "/day/data/utilization/kalos/GPU_UTIL.csv");
  const int port = FreePort();
  // 20,000x: the day takes 4.3 s, the ten days of job ends after it about 45 s.
  Child run({Binary(), "--config", dir + "/edges.yaml", "run", "--data", dir + "/day/data", "--speed", "20000",
             "--listen", "127.0.0.1:" + std::to_string(port)},
            dir + "/run.out", dir + "/run.err");
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(dir + "/run.out").find("listening on") != std::string::npos; }, 60))
      << ReadFile(dir + "/run.err");

  size_t most_gpus_seen = 0;
  bool checked_after_the_end = false;
  for (int poll = 0; poll < 2400 && !checked_after_the_end; ++poll) {  // at most 10 minutes
    std::this_thread::sleep_for(std::chrono::milliseconds(250));       // integration test: polling a live run
    const std::string text = HttpGet(port, "/metrics").body;
    const auto clocks = Samples(text, "acmetrace_replay_trace_time_seconds{");
    if (clocks.size() < 2) continue;
    double clock = clocks[0].second;
    for (const auto& c : clocks) clock = std::min(clock, c.second);
    const size_t gpus = Samples(text, "DCGM_FI_DEV_GPU_UTIL{").size();
    most_gpus_seen = std::max(most_gpus_seen, gpus);
    // Both clusters' replay clocks (job events) past the telemetry's end, one TTL, and an hour of trace
    // time for the closed flags' two scrape intervals: the persona and every telemetry flag are gone.
    if (clock < static_cast<double>(telemetry_end + kSeriesTtlS + 3600)) continue;
    EXPECT_EQ(ReadFile(dir + "/run.err").find("replay finished"), std::string::npos)
        << "the replay had ended before the check: it must happen while job events still go on";
    EXPECT_EQ(gpus, 0u) << "persona series outlive the telemetry (ended " << telemetry_end << ", replay at "
                        << static_cast<int64_t>(clock) << ")";
    EXPECT_EQ(Samples(text, "DCGM_FI_DEV_GPU_TEMP{").size(), 0u);
    for (const auto& [labels, value] : Samples(text, "acmetrace_anomaly_active{")) {
      if (IsTelemetryKind(labels)) {
        EXPECT_EQ(value, 0.0) << labels << " is still open after the telemetry ended";
      }
    }
    checked_after_the_end = true;
  }
  EXPECT_EQ(most_gpus_seen, gpus_in_data) << "the persona never showed the day's GPUs";
  EXPECT_TRUE(checked_after_the_end) << "the replay clock never passed the telemetry's end:\n" << ReadFile(dir + "/run.err");
}

}  // namespace
}  // namespace acmetrace::test
