// Tests of the synthetic generator's formats, determinism, options and internal coherence. The files
// are parsed with the simple code below on purpose: the project's readers are tested on their own.
#include "acmetrace/producers/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "acmetrace/core/time.h"
#include "../suite_prepare.h"

namespace acmetrace::producers {
namespace {

using ::acmetrace::test::Prepared;
using ::acmetrace::test::PrepareSuiteOnce;

namespace fs = std::filesystem;

// A fresh directory under the test temp dir, removed when the test ends.
class ScratchDir {
 public:
  ScratchDir() : ScratchDir(CurrentTestName()) {}
  explicit ScratchDir(const std::string& name) {
    path_ = fs::path(testing::TempDir()) / ("synth_" + name + "_" + std::to_string(getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  static std::string CurrentTestName() {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->test_suite_name()) + "_" + info->name();
  }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  fs::path path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> Split(const std::string& line, char sep = ',') {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t next = line.find(sep, pos);
    out.push_back(line.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) return out;
    pos = next + 1;
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

double ToDouble(const std::string& s) {
  double v = NAN;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

int64_t ToInt(const std::string& s) {
  int64_t v = -1;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_TRUE(ec == std::errc() && ptr == s.data() + s.size()) << "not an integer: '" << s << "'";
  return v;
}

// A wide utilization file: column names and a matrix of values (NaN = empty cell).
struct Wide {
  std::vector<std::string> columns;  // without Time
  std::vector<int64_t> times;
  std::vector<std::vector<double>> rows;
  int Column(const std::string& name) const {
    auto it = std::find(columns.begin(), columns.end(), name);
    return it == columns.end() ? -1 : static_cast<int>(it - columns.begin());
  }
};

Wide ReadWide(const std::string& path) {
  Wide w;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  auto header = Split(line);
  w.columns.assign(header.begin() + 1, header.end());
  while (std::getline(in, line)) {
    auto fields = Split(line);
    w.times.push_back(ToInt(fields[0]));
    std::vector<double> row(fields.size() - 1, NAN);
    for (size_t i = 1; i < fields.size(); ++i) {
      if (!fields[i].empty()) row[i - 1] = ToDouble(fields[i]);
    }
    w.rows.push_back(std::move(row));
  }
  return w;
}

SynthOptions SmallOptions(const std::string& dir) {
  SynthOptions o;
  o.out_dir = dir;
  o.days = 1;
  o.scale = 0.05;
  o.seed = 7;
  return o;
}

constexpr const char* kSerenHeader =
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time";
constexpr const char* kKalosHeader =
    "job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,"
    "end_time,fail_time,stop_time,duration,queue,gpu_time";

TEST(SynthTest, MetricNamesListEveryTelemetryFile) {
  const auto names = SynthMetricNames();
  EXPECT_EQ(names.size(), 19u);
  for (const char* m : {"XID_ERRORS", "GPU_TEMP", "MEMORY_TEMP", "MEM_CLOCK", "MEM_COPY_UTIL", "FB_FREE", "FB_USED",
                        "DRAM_ACTIVE", "POWER_USAGE", "GPU_UTIL", "PIPE_TENSOR_ACTIVE", "SM_ACTIVE", "SM_OCCUPANCY",
                        "NODE_CPU_UTILIZATION", "NODE_MEMORY_UTILIZATION", "NODE_IB_SEND", "NODE_IB_RECEIVE", "IPMI", "none"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), m), names.end()) << m;
  }
}

TEST(SynthTest, MetricsNoneWritesOnlyTheJobTraces) {
  ScratchDir dir;
  SynthOptions o = SmallOptions(dir.str());
  o.metrics = {"none"};
  auto r = WriteSynthetic(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().files.size(), 2u);
  EXPECT_EQ(r.value().util_rows, 0);
  EXPECT_FALSE(fs::exists(dir / "data/utilization"));
  o.metrics = {"none", "GPU_UTIL"};
  EXPECT_FALSE(WriteSynthetic(o).ok());
}

TEST(SynthTest, WritesTheReleaseFilesAndHeaders) {
  ScratchDir dir;
  auto result = WriteSynthetic(SmallOptions(dir.str()));
  ASSERT_TRUE(result.ok()) << result.status().message();
  const SynthReport& report = result.value();

  EXPECT_EQ(Lines(ReadFile(dir / "data/job_trace/trace_seren.csv"))[0], kSerenHeader);
  EXPECT_EQ(Lines(ReadFile(dir / "data/job_trace/trace_kalos.csv"))[0], kKalosHeader);
  for (const char* cluster : {"seren", "kalos"}) {
    for (const char* m : {"XID_ERRORS", "GPU_TEMP", "MEMORY_TEMP", "MEM_CLOCK", "MEM_COPY_UTIL", "FB_FREE", "FB_USED",
                          "DRAM_ACTIVE", "POWER_USAGE", "GPU_UTIL", "PIPE_TENSOR_ACTIVE", "SM_ACTIVE", "SM_OCCUPANCY",
                          "NODE_CPU_UTILIZATION", "NODE_MEMORY_UTILIZATION"}) {
      EXPECT_TRUE(fs::exists(dir / ("data/utilization/" + std::string(cluster) + "/" + m + ".csv")))
          << cluster << " " << m;
    }
  }
  // InfiniBand and IPMI are published for Seren only.
  EXPECT_TRUE(fs::exists(dir / "data/utilization/seren/NODE_IB_SEND.csv"));
  EXPECT_TRUE(fs::exists(dir / "data/utilization/seren/NODE_IB_RECEIVE.csv"));
  EXPECT_FALSE(fs::exists(dir / "data/utilization/kalos/NODE_IB_SEND.csv"));
  for (const char* f : {"GPU_AB_Power.csv", "GPU_C_Power.csv", "CPU_D_Power.csv"}) {
    EXPECT_EQ(Lines(ReadFile(dir / ("data/utilization/ipmi/" + std::string(f))))[0],
              "Time,CPU_Power,MEM_Power,FAN_Power,Sys_Total_Power");
  }

  // DCGM columns are IP-gpuindex; node columns are IPs; IB columns carry the NIC suffix.
  const auto gpu_header = Split(Lines(ReadFile(dir / "data/utilization/seren/GPU_UTIL.csv"))[0]);
  ASSERT_EQ(gpu_header[0], "Time");
  EXPECT_EQ(gpu_header.size(), 1u + 8u * 14u);  // 0.05 * 286 nodes
  for (size_t i = 1; i < gpu_header.size(); ++i) {
    EXPECT_EQ(gpu_header[i].rfind("10.140.", 0), 0u) << gpu_header[i];
    EXPECT_EQ(gpu_header[i][gpu_header[i].size() - 2], '-');
  }
  const auto node_header = Split(Lines(ReadFile(dir / "data/utilization/seren/NODE_CPU_UTILIZATION.csv"))[0]);
  EXPECT_EQ(node_header.size(), 1u + 14u);
  const auto ib_header = Split(Lines(ReadFile(dir / "data/utilization/seren/NODE_IB_SEND.csv"))[0]);
  for (size_t i = 1; i < ib_header.size(); ++i) {
    EXPECT_EQ(ib_header[i], node_header[i] + "-mlx5_0");
  }

  EXPECT_EQ(report.nodes, 14 + 15);  // 0.05 * 286 and 0.05 * 302
  EXPECT_GT(report.jobs, 0);
  int64_t bytes = 0, util_rows = 0;
  for (const auto& f : report.files) {
    bytes += static_cast<int64_t>(fs::file_size(f));
    if (f.find("/data/utilization/") == std::string::npos) continue;
    const int64_t rows = static_cast<int64_t>(Lines(ReadFile(f)).size()) - 1;
    if (f.find("/ipmi/") == std::string::npos) {
      EXPECT_EQ(rows, 5760) << f;  // a day of 15 s rows
    }
    util_rows += rows;
  }
  EXPECT_EQ(report.bytes, bytes);
  EXPECT_EQ(report.util_rows, util_rows);
}

TEST(SynthTest, TimesUseEachClustersFormatAndOffset) {
  ScratchDir dir;
  SynthOptions o = SmallOptions(dir.str());
  o.metrics = {"GPU_UTIL", "IPMI"};
  ASSERT_TRUE(WriteSynthetic(o).ok());
  for (const auto& [cluster, offset] : {std::pair{"seren", "+08:00"}, std::pair{"kalos", "+00:00"}}) {
    const auto lines = Lines(ReadFile(dir / ("data/job_trace/trace_" + std::string(cluster) + ".csv")));
    const auto header = Split(lines[0]);
    const int submit = static_cast<int>(std::find(header.begin(), header.end(), "submit_time") - header.begin());
    ASSERT_GT(lines.size(), 10u);
    for (size_t i = 1; i < lines.size(); ++i) {
      const auto fields = Split(lines[i]);
      const std::string& t = fields[submit];
      ASSERT_EQ(t.size(), 25u) << t;
      EXPECT_EQ(t.substr(19), offset) << t;
      EXPECT_TRUE(core::ParseTimeMs(t).has_value()) << t;
    }
  }
  // Raw utilization files: Time in unix seconds, every 15 s from the start.
  const Wide util = ReadWide(dir / "data/utilization/kalos/GPU_UTIL.csv");
  ASSERT_EQ(util.times.size(), 5760u);
  EXPECT_EQ(util.times[0], o.start_ms / 1000);
  for (size_t i = 1; i < util.times.size(); ++i) EXPECT_EQ(util.times[i] - util.times[i - 1], 15);
  // IPMI: ISO times in Seren's zone, one row per server per minute.
  const auto ipmi = Lines(ReadFile(dir / "data/utilization/ipmi/CPU_D_Power.csv"));
  EXPECT_EQ(Split(ipmi[1])[0], "2023-07-01 00:00:00+08:00");
}

TEST(SynthTest, SameSeedGivesSameBytesAndOtherSeedDiffers) {
  ScratchDir dir;
  auto run = [&](const std::string& sub, uint64_t seed) {
    SynthOptions o = SmallOptions(dir / sub);
    o.seed = seed;
    o.metrics = {"GPU_UTIL", "POWER_USAGE", "NODE_CPU_UTILIZATION", "IPMI"};
    auto r = WriteSynthetic(o);
    EXPECT_TRUE(r.ok());
    std::map<std::string, std::string> files;
    for (const auto& f : r.value().files) files[fs::relative(f, dir / sub).string()] = ReadFile(f);
    return files;
  };
  const auto a = run("a", 11), b = run("b", 11), c = run("c", 12);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, content] : a) EXPECT_TRUE(b.at(name) == content) << name << " differs";
  EXPECT_NE(a.at("data/job_trace/trace_seren.csv"), c.at("data/job_trace/trace_seren.csv"));
  EXPECT_NE(a.at("data/utilization/kalos/GPU_UTIL.csv"), c.at("data/utilization/kalos/GPU_UTIL.csv"));
}

TEST(SynthTest, FirstDayDoesNotDependOnHowManyDaysFollow) {
  ScratchDir dir;
  auto trace = [&](const std::string& sub, int days) {
    SynthOptions o = SmallOptions(dir / sub);
    o.clusters = {"seren"};
    o.days = days;
    o.metrics = {"none"};
    EXPECT_TRUE(WriteSynthetic(o).ok());
    return Lines(ReadFile(dir / (sub + "/data/job_trace/trace_seren.csv")));
  };
  const auto one = trace("one", 1), two = trace("two", 2);
  ASSERT_GT(two.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "row " << i;
}

TEST(SynthTest, MetricsOptionLimitsTheFiles) {
  ScratchDir dir;
  SynthOptions o = SmallOptions(dir.str());
  o.metrics = {"GPU_UTIL", "NODE_CPU_UTILIZATION"};
  auto r = WriteSynthetic(o);
  ASSERT_TRUE(r.ok());
  std::set<std::string> files;
  for (const auto& f : r.value().files) files.insert(fs::relative(f, dir.str()).string());
  EXPECT_EQ(files, (std::set<std::string>{"data/job_trace/trace_seren.csv", "data/job_trace/trace_kalos.csv",
                                          "data/utilization/seren/GPU_UTIL.csv",
                                          "data/utilization/seren/NODE_CPU_UTILIZATION.csv",
                                          "data/utilization/kalos/GPU_UTIL.csv",
                                          "data/utilization/kalos/NODE_CPU_UTILIZATION.csv"}));
  EXPECT_FALSE(fs::exists(dir / "data/utilization/ipmi"));
}

TEST(SynthTest, ScaleChangesTheNodeCount) {
  ScratchDir dir;
  auto columns = [&](const std::string& sub, double scale) {
    SynthOptions o = SmallOptions(dir / sub);
    o.clusters = {"kalos"};
    o.scale = scale;
    o.metrics = {"MEM_CLOCK"};
    auto r = WriteSynthetic(o);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.value().nodes, std::max<int64_t>(1, std::lround(302 * scale)));
    return Split(Lines(ReadFile(dir / (sub + "/data/utilization/kalos/MEM_CLOCK.csv")))[0]).size() - 1;
  };
  EXPECT_EQ(columns("small", 0.05), 8u * 15u);
  EXPECT_EQ(columns("larger", 0.1), 8u * 30u);
  EXPECT_EQ(columns("tiny", 0.0001), 8u);  // at least one node
}

TEST(SynthTest, KalosNamesSomeNodesByPod) {
  ScratchDir dir;
  SynthOptions o = SmallOptions(dir.str());
  o.clusters = {"kalos"};
  o.scale = 0.2;
  o.metrics = {"GPU_UTIL", "NODE_MEMORY_UTILIZATION"};
  ASSERT_TRUE(WriteSynthetic(o).ok());
  const auto header = Split(Lines(ReadFile(dir / "data/utilization/kalos/GPU_UTIL.csv"))[0]);
  int pods = 0, ips = 0;
  for (size_t i = 1; i < header.size(); ++i) {
    const std::string& c = header[i];
    if (c.rfind("lingjun-pod", 0) == 0) {
      ++pods;
      // lingjun-podP-NNNN-g: node lingjun-podP-NNNN, GPU g.
      const auto parts = Split(c, '-');
      ASSERT_EQ(parts.size(), 4u) << c;
      EXPECT_EQ(parts[2].size(), 4u) << c;
      EXPECT_TRUE(parts[3].size() == 1 && parts[3][0] >= '0' && parts[3][0] <= '7') << c;
    } else {
      ++ips;
      EXPECT_EQ(c.rfind("10.150.", 0), 0u) << c;
    }
  }
  EXPECT_GT(pods, 0);
  EXPECT_GT(ips, pods);
  const auto node_header = Split(Lines(ReadFile(dir / "data/utilization/kalos/NODE_MEMORY_UTILIZATION.csv"))[0]);
  EXPECT_TRUE(std::any_of(node_header.begin(), node_header.end(),
                          [](const std::string& c) { return c.rfind("lingjun-pod", 0) == 0 && c.size() == 17; }));
}

// Checks every job row against the release's rules, for one cluster; returns the jobs that never
// started.
int CheckJobRows(const std::string& path, bool kalos) {
  const auto lines = Lines(ReadFile(path));
  EXPECT_GT(lines.size(), 50u);
  if (lines.empty()) return 0;
  const auto header = Split(lines[0]);
  auto col = [&](const char* name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t c_id = col("job_id"), c_user = col("user"), c_nodes = col("node_num"), c_gpus = col("gpu_num"),
               c_type = col("type"), c_state = col("state"), c_submit = col("submit_time"),
               c_start = col("start_time"), c_end = col("end_time"), c_dur = col("duration"), c_queue = col("queue"),
               c_gt = col("gpu_time");
  const std::set<std::string> types = {"Pretrain", "Eval", "SFT", "MLLM", "Debug", "Other"};
  const std::set<std::string> states = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"};
  int64_t last_submit = INT64_MIN;
  int never_started = 0, cpu_jobs = 0;
  std::set<std::string> ids;
  for (size_t i = 1; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    const auto f = Split(lines[i]);
    EXPECT_EQ(f.size(), header.size());
    if (f.size() != header.size()) continue;
    EXPECT_TRUE(ids.insert(f[c_id]).second) << "duplicate id";
    if (kalos) {
      EXPECT_EQ(f[c_id].size(), 16u);
      EXPECT_EQ(f[c_id].rfind("dlc", 0), 0u);
    } else {
      EXPECT_GT(ToInt(f[c_id]), 0);
    }
    EXPECT_EQ(f[c_user].size(), 5u);
    EXPECT_EQ(f[c_user][0], 'u');
    EXPECT_TRUE(types.count(f[c_type]));
    EXPECT_TRUE(states.count(f[c_state]));
    const int64_t gpus = ToInt(f[c_gpus]);
    const int64_t nodes = ToInt(f[c_nodes]);
    EXPECT_GE(nodes, 1);
    if (gpus == 0) ++cpu_jobs;
    if (gpus > 0) {
      EXPECT_EQ(nodes, (gpus + 7) / 8);
    }
    const int64_t submit = core::ParseTimeMs(f[c_submit]).value_or(0) / 1000;
    const int64_t end = core::ParseTimeMs(f[c_end]).value_or(0) / 1000;
    EXPECT_GE(submit, last_submit) << "rows must be in submit order";
    last_submit = submit;
    const int64_t duration = ToInt(f[c_dur]);
    // gpu_time = duration * gpu_num, written as a float.
    EXPECT_GE(f[c_gt].size(), 3u);
    EXPECT_EQ(f[c_gt].substr(f[c_gt].size() - std::min<size_t>(2, f[c_gt].size())), ".0");
    EXPECT_EQ(ToDouble(f[c_gt]), static_cast<double>(duration * gpus));
    if (f[c_start].empty()) {
      // Cancelled while pending: nothing ran, so no queue, duration 0 and no GPU time.
      ++never_started;
      EXPECT_EQ(f[c_state], "CANCELLED");
      EXPECT_TRUE(f[c_queue].empty());
      EXPECT_EQ(duration, 0);
      EXPECT_GT(end, submit);
      continue;
    }
    const int64_t start = core::ParseTimeMs(f[c_start]).value_or(0) / 1000;
    EXPECT_LE(submit, start);
    EXPECT_LT(start, end);
    if (kalos) {
      EXPECT_EQ(f[c_queue].substr(f[c_queue].size() - 2), ".0") << "Kalos queue is a float";
      EXPECT_EQ(ToDouble(f[c_queue]), static_cast<double>(start - submit));
      EXPECT_EQ(duration, end - submit);  // Kalos: end - submit
      const auto fail = f[col("fail_time")], stop = f[col("stop_time")];
      const bool failed = f[c_state] == "FAILED" || f[c_state] == "NODE_FAIL" || f[c_state] == "TIMEOUT";
      EXPECT_EQ(!fail.empty(), failed);
      if (failed) {
        EXPECT_EQ(fail, f[c_end]);
      }
      EXPECT_EQ(!stop.empty(), f[c_state] == "CANCELLED");
      EXPECT_FALSE(f[col("mem_per_pod_GB")].empty());
      EXPECT_NE(f[col("shared_mem_per_pod")].find('.'), std::string::npos);
    } else {
      EXPECT_EQ(ToInt(f[c_queue]), start - submit);
      EXPECT_EQ(duration, end - start);  // Seren: end - start
    }
  }
  EXPECT_GT(cpu_jobs, 0);
  return never_started;
}

TEST(SynthTest, EveryJobRowIsInternallyConsistent) {
  ScratchDir dir;
  SynthOptions o = SmallOptions(dir.str());
  o.scale = 0.5;
  o.days = 2;
  o.metrics = {"none"};
  ASSERT_TRUE(WriteSynthetic(o).ok());
  EXPECT_GT(CheckJobRows(dir / "data/job_trace/trace_seren.csv", false), 0);
  EXPECT_GT(CheckJobRows(dir / "data/job_trace/trace_kalos.csv", true), 0);
}

// Telemetry and schedule of one small Seren day, shared by the coherence tests.
class SynthCoherenceTest : public testing::Test {
 protected:
  void SetUp() override { PrepareSuiteOnce(prepared_, &Prepare); }
  // Made once per process by the first test (suite_prepare.h).
  static void Prepare() {
    dir_ = new ScratchDir("coherence");
    SynthOptions o;
    o.out_dir = dir_->str();
    o.clusters = {"seren"};
    o.scale = 0.1;
    o.seed = 3;
    o.metrics = {"GPU_UTIL", "POWER_USAGE", "GPU_TEMP", "FB_USED", "FB_FREE", "XID_ERRORS"};
    o.write_schedule = true;
    auto r = WriteSynthetic(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    for (const char* m : {"GPU_UTIL", "POWER_USAGE", "GPU_TEMP", "FB_USED", "FB_FREE", "XID_ERRORS"}) {
      (*files_)[m] = ReadWide(*dir_ / ("data/utilization/seren/" + std::string(m) + ".csv"));
    }
    const auto lines = Lines(ReadFile(*dir_ / "schedule.csv"));
    EXPECT_EQ(lines[0], "cluster,job_id,in_trace,node,gpus,start,end,xid");
    for (size_t i = 1; i < lines.size(); ++i) {
      const auto f = Split(lines[i]);
      Placement p{f[1], f[3], {}, ToInt(f[5]), ToInt(f[6]), static_cast<int>(ToInt(f[7]))};
      for (const auto& g : Split(f[4], ';')) p.gpus.push_back(static_cast<int>(ToInt(g)));
      placements_->push_back(p);
    }
  }
  static inline Prepared prepared_ = Prepared::kNotYet;
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  struct Placement {
    std::string job;
    std::string node;
    std::vector<int> gpus;
    int64_t start, end;
    int xid;
  };

  // For every (row, column) of the GPU files: is a job running there? (-1: idle)
  static std::vector<std::vector<int>> Occupancy() {
    const Wide& util = (*files_)["GPU_UTIL"];
    std::vector<std::vector<int>> occ(util.rows.size(), std::vector<int>(util.columns.size(), -1));
    for (size_t i = 0; i < placements_->size(); ++i) {
      const Placement& p = (*placements_)[i];
      for (int g : p.gpus) {
        const int c = util.Column(p.node + "-" + std::to_string(g));
        EXPECT_GE(c, 0) << p.node;
        for (size_t r = 0; r < util.times.size(); ++r) {
          if (util.times[r] >= p.start && util.times[r] < p.end) occ[r][c] = static_cast<int>(i);
        }
      }
    }
    return occ;
  }

  // Calls fn with the values in file of each placement of two or more GPUs, at every scrape while it runs
  // past its first 10 minutes (any start-up).
  template <class Fn>
  static void ForEachJobScrape(const Wide& file, const std::vector<Placement>& placements, Fn fn) {
    std::vector<double> values;
    for (const Placement& p : placements) {
      if (p.gpus.size() < 2) continue;
      std::vector<int> columns;
      for (int g : p.gpus) columns.push_back(file.Column(p.node + "-" + std::to_string(g)));
      for (size_t r = 0; r < file.times.size(); ++r) {
        if (file.times[r] < p.start + 600 || file.times[r] >= p.end) continue;
        values.clear();
        for (int c : columns) values.push_back(file.rows[r][c]);
        fn(values);
      }
    }
  }

  static ScratchDir* dir_;
  static std::map<std::string, Wide>* files_;
  static std::vector<Placement>* placements_;
};

ScratchDir* SynthCoherenceTest::dir_ = nullptr;
std::map<std::string, Wide>* SynthCoherenceTest::files_ = new std::map<std::string, Wide>();
std::vector<SynthCoherenceTest::Placement>* SynthCoherenceTest::placements_ =
    new std::vector<SynthCoherenceTest::Placement>();

TEST_F(SynthCoherenceTest, BusyGpusWorkAndIdleGpusRest) {
  const auto occ = Occupancy();
  const Wide& util = (*files_)["GPU_UTIL"];
  const Wide& power = (*files_)["POWER_USAGE"];
  const Wide& temp = (*files_)["GPU_TEMP"];
  const Wide& fb = (*files_)["FB_USED"];
  const Wide& fb_free = (*files_)["FB_FREE"];
  ASSERT_EQ(power.columns, util.columns);
  double busy = 0, busy_active = 0, busy_util = 0, busy_power = 0, busy_temp = 0;
  double idle = 0, idle_util_zero = 0, idle_power = 0, idle_temp = 0, idle_fb_zero = 0;
  std::vector<double> idle_powers;
  for (size_t r = 0; r < util.rows.size(); ++r) {
    for (size_t c = 0; c < util.columns.size(); ++c) {
      const double u = util.rows[r][c];
      if (std::isnan(u)) continue;
      EXPECT_NEAR(fb.rows[r][c] + fb_free.rows[r][c], 81920, 0.5);
      const int p = occ[r][c];
      if (p >= 0) {
        // Past the job's first five minutes (loading) and clear of the previous job's heat.
        if (util.times[r] < (*placements_)[p].start + 300) continue;
        ++busy;
        busy_active += u > 0;
        busy_util += u;
        busy_power += power.rows[r][c];
        busy_temp += temp.rows[r][c];
      } else {
        if (r > 0 && occ[r - 1][c] >= 0) continue;  // just released: still warm
        ++idle;
        idle_util_zero += u == 0;
        idle_fb_zero += fb.rows[r][c] == 0;
        idle_power += power.rows[r][c];
        idle_temp += temp.rows[r][c];
        idle_powers.push_back(power.rows[r][c]);
      }
    }
  }
  ASSERT_GT(busy, 10000);
  ASSERT_GT(idle, 10000);
  EXPECT_GT(busy_active / busy, 0.8) << "a GPU running a job is mostly busy";
  EXPECT_GT(busy_util / busy, 70);
  EXPECT_EQ(idle_util_zero, idle) << "a GPU nobody holds reads 0";
  EXPECT_EQ(idle_fb_zero, idle) << "and has no memory allocated";
  std::sort(idle_powers.begin(), idle_powers.end());
  EXPECT_NEAR(idle_powers[idle_powers.size() / 2], 63, 5) << "idle A100s draw about 60 W";
  EXPECT_LT(idle_powers[idle_powers.size() * 99 / 100], 80);
  EXPECT_GT(busy_power / busy, 2 * idle_power / idle);
  EXPECT_GT(busy_temp / busy, idle_temp / idle + 8);
  EXPECT_LT(idle_temp / idle, 36);
}

TEST_F(SynthCoherenceTest, MultiNodeJobsMoveTogether) {
  const Wide& power = (*files_)["POWER_USAGE"];
  // Group placements by job; take the multi-node jobs with at least an hour inside the window.
  std::map<std::string, std::vector<const Placement*>> by_job;
  for (const auto& p : *placements_) by_job[p.job].push_back(&p);
  int checked = 0;
  double min_corr = 1;
  for (const auto& [job, parts] : by_job) {
    if (parts.size() < 2) continue;
    const int64_t from = std::max(parts[0]->start + 300, power.times.front());
    const int64_t to = std::min(parts[0]->end, power.times.back());
    if (to - from < 3600) continue;
    // Mean power of each of two nodes over time: the job's shared phases must show on both.
    std::vector<double> a, b;
    for (size_t r = 0; r < power.times.size(); ++r) {
      if (power.times[r] < from || power.times[r] >= to) continue;
      double sa = 0, sb = 0;
      int na = 0, nb = 0;
      for (int g : parts[0]->gpus) {
        const double v = power.rows[r][power.Column(parts[0]->node + "-" + std::to_string(g))];
        if (!std::isnan(v)) sa += v, ++na;
      }
      for (int g : parts[1]->gpus) {
        const double v = power.rows[r][power.Column(parts[1]->node + "-" + std::to_string(g))];
        if (!std::isnan(v)) sb += v, ++nb;
      }
      if (na && nb) {
        a.push_back(sa / na);
        b.push_back(sb / nb);
      }
    }
    const double n = static_cast<double>(a.size());
    double ma = 0, mb = 0;
    for (size_t i = 0; i < a.size(); ++i) ma += a[i] / n, mb += b[i] / n;
    double cov = 0, va = 0, vb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      cov += (a[i] - ma) * (b[i] - mb);
      va += (a[i] - ma) * (a[i] - ma);
      vb += (b[i] - mb) * (b[i] - mb);
    }
    if (va <= 0 || vb <= 0) continue;
    min_corr = std::min(min_corr, cov / std::sqrt(va * vb));
    ++checked;
  }
  EXPECT_GE(checked, 3) << "the day should hold several multi-node jobs";
  EXPECT_GT(min_corr, 0.6) << "nodes of one job rise and fall together";
}

// A job's GPUs compute or pause together (issue #14): past its start-up, at any scrape either every GPU
// of a job's placement reads GPU_UTIL 0 or none does. When each GPU drew its own zeros, single GPUs of
// a busy job dipped to 0 while the others worked, and the straggler detector took them for new jobs.
TEST_F(SynthCoherenceTest, AJobsGpusPauseTogether) {
  int64_t scrapes = 0, paused = 0, split = 0;
  ForEachJobScrape((*files_)["GPU_UTIL"], *placements_, [&](const std::vector<double>& gpus) {
    int zero = 0, seen = 0;
    for (const double u : gpus) {
      if (std::isnan(u)) continue;
      ++seen;
      zero += u == 0;
    }
    if (seen < 2) return;
    ++scrapes;
    paused += zero == seen;
    split += zero > 0 && zero < seen;
  });
  ASSERT_GT(scrapes, 10000);
  EXPECT_GT(paused, 100) << "jobs do pause (the release's zero samples are not all idle GPUs)";
  EXPECT_EQ(split, 0) << "scrapes where some GPUs of a job read 0 and others work, of " << scrapes;
}

// A computing job's GPUs run kernels for the same share of a scrape (issue #14): past its start-up, when
// every GPU of a job's placement computes, their GPU_UTIL values lie within a few points of each other.
// Before, a GPU's own noise, stretched across the release's steep step from 0 to ~50%, had single GPUs
// read 1 while their peers read 40-98; the straggler detector took such a GPU for one idling alone, not
// its job's, and never compared it with its peers again.
TEST_F(SynthCoherenceTest, AComputingJobsGpusReadTheSameUtilization) {
  int64_t scrapes = 0, low_step = 0, apart = 0;
  double widest = 0;
  ForEachJobScrape((*files_)["GPU_UTIL"], *placements_, [&](const std::vector<double>& gpus) {
    double lo = 101, hi = -1;
    for (const double u : gpus) {
      if (std::isnan(u) || u == 0) return;  // not every GPU computes
      lo = std::min(lo, u);
      hi = std::max(hi, u);
    }
    ++scrapes;
    low_step += hi < 60;  // on the release's step from 0 to ~50%, where the GPUs' own noise spread widest
    apart += hi - lo > 7;
    widest = std::max(widest, hi - lo);
  });
  ASSERT_GT(scrapes, 10000);
  EXPECT_GT(low_step, 10) << "jobs do compute lightly at times";
  EXPECT_EQ(apart, 0) << "scrapes where a computing job's GPUs read GPU_UTIL more than 7 points apart, of " << scrapes
                      << " (widest " << widest << ")";
}

TEST_F(SynthCoherenceTest, FailedJobsLeaveTheirXidOnOneOfTheirGpus) {
  const Wide& xid = (*files_)["XID_ERRORS"];
  int checked = 0;
  for (const auto& p : *placements_) {
    if (p.xid == 0 || p.end <= xid.times.front() || p.end + 15 > xid.times.back()) continue;
    // The row at or just after the job's end.
    const size_t r = static_cast<size_t>(std::lower_bound(xid.times.begin(), xid.times.end(), p.end) - xid.times.begin());
    // The register holds the last code: a later job failing on the same node before that scrape may
    // have replaced it.
    bool replaced = false;
    for (const auto& q : *placements_) {
      replaced |= q.xid != 0 && q.job != p.job && q.node == p.node && q.end >= p.end && q.end <= xid.times[r];
    }
    if (replaced) continue;
    bool seen = false;
    for (const auto& q : *placements_) {
      if (q.job != p.job) continue;
      for (int g : q.gpus) {
        const double v = xid.rows[r][xid.Column(q.node + "-" + std::to_string(g))];
        seen |= v == p.xid || std::isnan(v);  // or the scrape was missed
      }
    }
    EXPECT_TRUE(seen) << "job " << p.job << " xid " << p.xid;
    ++checked;
  }
  EXPECT_GT(checked, 0);
  // Outside those windows XID reads 0: the codes are rare.
  double zeros = 0, cells = 0;
  for (const auto& row : xid.rows) {
    for (double v : row) {
      if (std::isnan(v)) continue;
      ++cells;
      zeros += v == 0;
    }
  }
  EXPECT_GT(zeros / cells, 0.97);
}

TEST(SynthTest, RejectsBadOptions) {
  ScratchDir dir;
  SynthOptions o = SmallOptions(dir.str());
  o.clusters = {"helios"};
  EXPECT_FALSE(WriteSynthetic(o).ok());
  o = SmallOptions(dir.str());
  o.metrics = {"GPU_UTILISATION"};
  EXPECT_FALSE(WriteSynthetic(o).ok());
  o = SmallOptions(dir.str());
  o.days = 0;
  EXPECT_FALSE(WriteSynthetic(o).ok());
  o = SmallOptions(dir.str());
  o.scale = 0;
  EXPECT_FALSE(WriteSynthetic(o).ok());
  o = SmallOptions(dir.str());
  o.out_dir.clear();
  EXPECT_FALSE(WriteSynthetic(o).ok());
}

}  // namespace
}  // namespace acmetrace::producers
