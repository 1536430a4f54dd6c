// Does a synthesized job trace describe the cluster its telemetry shows? Checked as a user would check it,
// from the files alone: the GPUs held by the trace's jobs at each moment (start_time, end_time, gpu_num)
// never exceed the GPUs of the telemetry, and the GPUs that compute (GPU_UTIL above 0) are GPUs the
// jobs hold. Both clusters, small to large scales, with and without injected incidents, on seeds the
// generator was not tuned on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "acmetrace/core/time.h"
#include "acmetrace/producers/synth.h"

namespace acmetrace::producers {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    const size_t next = line.find(',', pos);
    out.push_back(line.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos) return out;
    pos = next + 1;
  }
}

int64_t ParseTime(std::string_view text) {
  const auto ms = core::ParseTimeMs(text);
  EXPECT_TRUE(ms.has_value()) << text;
  return ms.value_or(0) / 1000;
}

// (time, +gpus) at a job's start and (time, -gpus) at its end, for every job of the trace that started.
std::vector<std::pair<int64_t, int64_t>> HoldEvents(const std::string& trace) {
  std::vector<std::pair<int64_t, int64_t>> events;
  std::istringstream in(trace);
  std::string line;
  std::getline(in, line);
  const auto header = Fields(line);
  auto column = [&](std::string_view name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t gpus_at = column("gpu_num"), start_at = column("start_time"), end_at = column("end_time");
  while (std::getline(in, line)) {
    const auto f = Fields(line);
    int64_t gpus = 0;
    std::from_chars(f[gpus_at].data(), f[gpus_at].data() + f[gpus_at].size(), gpus);
    if (gpus == 0 || f[start_at].empty()) continue;
    const int64_t start = ParseTime(f[start_at]), end = ParseTime(f[end_at]);
    if (end <= start) continue;
    events.emplace_back(start, gpus);
    events.emplace_back(end, -gpus);
  }
  std::sort(events.begin(), events.end());  // at one instant, ends before starts: a GPU handed over
  return events;
}

struct Coherence {
  int64_t gpus = 0;         // columns of GPU_UTIL.csv
  int64_t most_held = 0;    // most GPUs the trace's jobs hold at one instant
  double busy_beyond = 0;   // sum over rows of max(0, busy - held) / GPU-samples
  double zero_share = 0;    // GPU_UTIL samples at 0 / samples
};

Coherence Measure(const std::string& dir, const std::string& cluster) {
  Coherence c;
  const auto events = HoldEvents(ReadFile(dir + "/data/job_trace/trace_" + cluster + ".csv"));
  int64_t level = 0;
  for (const auto& [t, delta] : events) c.most_held = std::max(c.most_held, level += delta);
  const std::string util = ReadFile(dir + "/data/utilization/" + cluster + "/GPU_UTIL.csv");
  std::string_view rest(util);
  auto next_line = [&] {
    const size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    return line;
  };
  c.gpus = static_cast<int64_t>(Fields(next_line()).size()) - 1;
  size_t e = 0;
  int64_t held = 0, beyond = 0, zeros = 0, cells = 0;
  while (!rest.empty()) {
    const std::string_view line = next_line();
    const size_t comma = line.find(',');
    int64_t t = 0;
    std::from_chars(line.data(), line.data() + comma, t);
    while (e < events.size() && events[e].first <= t) held += events[e++].second;
    int64_t busy = 0;
    for (size_t pos = comma; pos != std::string_view::npos;) {
      const size_t next = line.find(',', pos + 1);
      const std::string_view cell = line.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
      pos = next;
      if (cell.empty()) continue;
      ++cells;
      if (cell == "0") {
        ++zeros;
      } else {
        ++busy;
      }
    }
    beyond += std::max<int64_t>(0, busy - held);
  }
  c.busy_beyond = cells > 0 ? static_cast<double>(beyond) / static_cast<double>(cells) : 0;
  c.zero_share = cells > 0 ? static_cast<double>(zeros) / static_cast<double>(cells) : 0;
  return c;
}

// cluster, scale, inject faults, seed. Seeds from 900 up: the generator and its tolerances were tuned on
// seeds below 200.
using Config = std::tuple<const char*, double, bool, uint64_t>;

class SynthCapacityTest : public testing::TestWithParam<Config> {};

std::string ConfigName(const testing::TestParamInfo<Config>& info) {
  const auto& [cluster, scale, faults, seed] = info.param;
  return std::string(cluster) + "Scale" + std::to_string(static_cast<int>(scale * 100)) + (faults ? "Faults" : "") +
         "Seed" + std::to_string(seed);
}

TEST_P(SynthCapacityTest, TheTracesJobsHoldTheGpusTheTelemetryShowsBusy) {
  const auto& [cluster, scale, faults, seed] = GetParam();
  const fs::path dir = fs::path(testing::TempDir()) /
                       ("synth_capacity_" + std::to_string(getpid()) + "_" + std::string(cluster) + "_" +
                        std::to_string(static_cast<int>(scale * 100)) + (faults ? "_f" : "") + "_" + std::to_string(seed));
  fs::remove_all(dir);
  SynthOptions o;
  o.out_dir = dir.string();
  o.clusters = {cluster};
  o.scale = scale;
  o.seed = seed;
  o.inject_faults = faults;
  o.metrics = {"GPU_UTIL"};
  auto r = WriteSynthetic(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Coherence c = Measure(dir.string(), cluster);
  fs::remove_all(dir);
  EXPECT_GT(c.gpus, 0);
  EXPECT_LE(c.most_held, c.gpus) << "the trace's jobs hold more GPUs at once than the cluster has";
  EXPECT_LE(c.busy_beyond, 0.03) << "GPUs compute that no job of the trace holds";
  EXPECT_GT(c.most_held, c.gpus / 2) << "the trace should keep the cluster busy";
}

INSTANTIATE_TEST_SUITE_P(
    Clusters, SynthCapacityTest,
    testing::Values(Config{"seren", 0.02, false, 901}, Config{"seren", 0.02, true, 902},
                    Config{"kalos", 0.02, false, 903}, Config{"kalos", 0.02, true, 904},
                    Config{"seren", 0.05, false, 905}, Config{"seren", 0.05, true, 906},
                    Config{"kalos", 0.05, false, 907}, Config{"kalos", 0.05, true, 908},
                    Config{"seren", 0.2, false, 909}, Config{"seren", 0.2, true, 910},
                    Config{"kalos", 0.2, false, 911}, Config{"kalos", 0.2, true, 912},
                    Config{"seren", 0.5, true, 913}, Config{"kalos", 0.5, false, 914},
                    Config{"seren", 1.0, false, 915}, Config{"seren", 1.0, true, 916},
                    Config{"kalos", 1.0, false, 917}, Config{"kalos", 1.0, true, 918}),
    ConfigName);

}  // namespace
}  // namespace acmetrace::producers
