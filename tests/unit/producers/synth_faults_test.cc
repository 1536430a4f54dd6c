// Fault injection of the generator (--inject-faults): faults.csv's format and contents, that every
// listed incident is really in the files with the documented magnitude, that incidents on one subject
// do not overlap, determinism, and that the rest of the job trace is the clean run's. The files are
// parsed with the simple code below on purpose.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "acmetrace/core/time.h"
#include "acmetrace/producers/synth.h"
#include "../suite_prepare.h"
#include "test_files.h"

namespace acmetrace::producers {
namespace {

using ::acmetrace::test::Prepared;
using ::acmetrace::test::PrepareSuiteOnce;

namespace fs = std::filesystem;

constexpr int64_t kStartS = 1688140800;  // synth's default start, 2023-07-01 00:00:00+08:00
constexpr int64_t kEndS = kStartS + 86400;

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

double ToDouble(const std::string& s) {
  if (s.empty()) return NAN;
  double v = NAN;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct FaultRow {
  std::string cluster, kind, subject;
  int64_t start = 0, end = 0;
  std::string severity;
};

std::vector<FaultRow> ReadFaults(const std::string& path, std::string* header = nullptr) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (header != nullptr) *header = line;
  std::vector<FaultRow> rows;
  while (std::getline(in, line)) {
    const auto f = Split(line);
    EXPECT_EQ(f.size(), 6u) << line;
    if (f.size() != 6) continue;
    rows.push_back({f[0], f[1], f[2], std::stoll(f[3]), std::stoll(f[4]), f[5]});
  }
  return rows;
}

// A wide utilization file: times and rows of values (NaN = empty cell).
struct Wide {
  std::vector<std::string> columns;  // without Time
  std::vector<int64_t> times;
  std::vector<std::vector<double>> rows;
  int Column(const std::string& name) const {
    auto it = std::find(columns.begin(), columns.end(), name);
    return it == columns.end() ? -1 : static_cast<int>(it - columns.begin());
  }
  std::vector<int> NodeColumns(const std::string& node) const {
    std::vector<int> out;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].rfind(node + "-", 0) == 0 || columns[i] == node) out.push_back(static_cast<int>(i));
    }
    return out;
  }
};

Wide ReadWide(const std::string& path) {
  Wide w;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  w.columns = Split(line);
  w.columns.erase(w.columns.begin());
  while (std::getline(in, line)) {
    const auto f = Split(line);
    w.times.push_back(std::stoll(f[0]));
    std::vector<double> row(f.size() - 1);
    for (size_t i = 1; i < f.size(); ++i) row[i - 1] = ToDouble(f[i]);
    w.rows.push_back(std::move(row));
  }
  return w;
}

struct TraceRow {
  std::string id, user, type, state;
  int64_t gpus = 0, submit = 0, start = -1, end = 0;
};

std::vector<TraceRow> ReadTrace(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const auto header = Split(line);
  auto col = [&](const char* name) { return std::find(header.begin(), header.end(), name) - header.begin(); };
  const auto c_user = col("user"), c_gpus = col("gpu_num"), c_type = col("type"), c_state = col("state"),
             c_submit = col("submit_time"), c_start = col("start_time"), c_end = col("end_time");
  std::vector<TraceRow> rows;
  while (std::getline(in, line)) {
    const auto f = Split(line);
    TraceRow r;
    r.id = f[0];
    r.user = f[c_user];
    r.type = f[c_type];
    r.state = f[c_state];
    r.gpus = std::stoll(f[c_gpus]);
    r.submit = *core::ParseIsoTimeMs(f[c_submit]) / 1000;
    if (!f[c_start].empty()) r.start = *core::ParseIsoTimeMs(f[c_start]) / 1000;
    r.end = *core::ParseIsoTimeMs(f[c_end]) / 1000;
    rows.push_back(r);
  }
  return rows;
}

const std::vector<std::string> kMetrics = {"GPU_TEMP", "XID_ERRORS", "GPU_UTIL", "SM_ACTIVE", "FB_USED",
                                           "NODE_CPU_UTILIZATION"};

SynthOptions Options(const std::string& dir, bool faults, double scale = 0.05,
                     std::vector<std::string> metrics = kMetrics) {
  SynthOptions o;
  o.out_dir = dir;
  o.days = 1;
  o.scale = scale;
  o.seed = 7;
  o.inject_faults = faults;
  o.metrics = std::move(metrics);
  return o;
}

// One faulted and one clean day at scale 0.05, generated once for the suite.
class SynthFaultsTest : public testing::Test {
 protected:
  void SetUp() override { PrepareSuiteOnce(prepared_, &Prepare); }
  // Made once per process by the first test (suite_prepare.h).
  static void Prepare() {
    faulted_ = new ScratchDir("synth_faults", "faulted");
    clean_ = new ScratchDir("synth_faults", "clean");
    auto r = WriteSynthetic(Options(faulted_->str(), true));
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto c = WriteSynthetic(Options(clean_->str(), false));
    ASSERT_TRUE(c.ok()) << c.status().message();
    faults_ = new std::vector<FaultRow>(ReadFaults(faulted_->str() + "/faults.csv"));
  }
  static inline Prepared prepared_ = Prepared::kNotYet;
  static void TearDownTestSuite() {
    delete faulted_;
    delete clean_;
    delete faults_;
  }
  static std::string File(const std::string& cluster, const std::string& metric) {
    return faulted_->str() + "/data/utilization/" + cluster + "/" + metric + ".csv";
  }
  static std::vector<FaultRow> Of(const std::string& kind) {
    std::vector<FaultRow> out;
    for (const FaultRow& f : *faults_) {
      if (f.kind == kind) out.push_back(f);
    }
    return out;
  }

  static ScratchDir* faulted_;
  static ScratchDir* clean_;
  static std::vector<FaultRow>* faults_;
};
ScratchDir* SynthFaultsTest::faulted_ = nullptr;
ScratchDir* SynthFaultsTest::clean_ = nullptr;
std::vector<FaultRow>* SynthFaultsTest::faults_ = nullptr;

TEST_F(SynthFaultsTest, FaultsCsvListsAFewOfEveryKindPerClusterInTheWindow) {
  std::string header;
  ReadFaults(faulted_->str() + "/faults.csv", &header);
  EXPECT_EQ(header, "cluster,kind,subject,start,end,severity");
  EXPECT_FALSE(fs::exists(clean_->str() + "/faults.csv"));
  std::map<std::pair<std::string, std::string>, int> count;
  for (const FaultRow& f : *faults_) {
    ++count[{f.cluster, f.kind}];
    EXPECT_LE(f.start, f.end);
    EXPECT_LT(f.start, kEndS);
    EXPECT_GE(f.end, kStartS);
  }
  for (const char* cluster : {"seren", "kalos"}) {
    for (const char* kind : {"gpu_overheat", "telemetry_gap", "util_drop"}) {
      EXPECT_GE((count[{cluster, kind}]), 2) << cluster << " " << kind;
      EXPECT_LE((count[{cluster, kind}]), 4) << cluster << " " << kind;
    }
    // A straggler needs a node one busy job holds whole, a burst at least one extra failed job: a
    // small Kalos day may offer neither.
    EXPECT_LE((count[{cluster, "gpu_straggler"}]), 4) << cluster;
    EXPECT_LE((count[{cluster, "failure_burst"}]), 4) << cluster;
    // Plus the generator's own XIDs and NODE_FAIL jobs. A node failure needs a GPU job of the trace
    // running at the time: a small Kalos day has few.
    EXPECT_GE((count[{cluster, "xid_error"}]), 2) << cluster;
    EXPECT_GE((count[{cluster, "node_failure"}]), 1) << cluster;
  }
  EXPECT_GE((count[{"seren", "gpu_straggler"}] + count[{"kalos", "gpu_straggler"}]), 2);
  EXPECT_GE((count[{"seren", "failure_burst"}] + count[{"kalos", "failure_burst"}]), 2);
  // Sorted by start time within a cluster.
  for (size_t i = 1; i < faults_->size(); ++i) {
    if ((*faults_)[i].cluster == (*faults_)[i - 1].cluster) {
      EXPECT_GE((*faults_)[i].start, (*faults_)[i - 1].start);
    }
  }
}

TEST_F(SynthFaultsTest, IncidentsOnOneSubjectOrNodeDoNotOverlap) {
  // Subjects: GPU "node-i", node, cluster, job. GPU and node incidents of one node stay apart too.
  auto node_of = [](const FaultRow& f) {
    if (f.kind == "telemetry_gap") return f.subject;
    if (f.kind == "gpu_overheat" || f.kind == "gpu_straggler" || f.kind == "xid_error") {
      return f.subject.substr(0, f.subject.rfind('-'));
    }
    return std::string();
  };
  for (size_t i = 0; i < faults_->size(); ++i) {
    for (size_t j = i + 1; j < faults_->size(); ++j) {
      const FaultRow& a = (*faults_)[i];
      const FaultRow& b = (*faults_)[j];
      // Job incidents are per job; a backlog (the queue) may overlap a drop or a burst (the GPUs).
      auto per_job = [](const FaultRow& f) { return f.kind == "node_failure" || f.kind == "large_job_failure"; };
      if (a.cluster != b.cluster || per_job(a) || per_job(b)) continue;
      if (a.kind != b.kind && (a.kind == "queue_backlog" || b.kind == "queue_backlog")) continue;
      const bool natural_xids = a.kind == "xid_error" && b.kind == "xid_error";  // the generator's own may touch
      const bool same_subject = a.subject == b.subject && !natural_xids;
      const bool same_node = !node_of(a).empty() && node_of(a) == node_of(b) && !(a.kind == "xid_error" || b.kind == "xid_error");
      const bool cluster_wide = a.subject == a.cluster && b.subject == b.cluster;
      if (same_subject || same_node || cluster_wide) {
        EXPECT_TRUE(a.end <= b.start || b.end <= a.start)
            << a.kind << " " << a.subject << " [" << a.start << "," << a.end << ") and " << b.kind << " " << b.subject
            << " [" << b.start << "," << b.end << ")";
      }
    }
  }
}

TEST_F(SynthFaultsTest, OverheatingGpusRunAt86To88COrCriticallyAt91CAndNothingElseAbove80) {
  for (const char* cluster : {"seren", "kalos"}) {
    const Wide temp = ReadWide(File(cluster, "GPU_TEMP"));
    std::vector<FaultRow> overheats;
    for (const FaultRow& f : Of("gpu_overheat")) {
      if (f.cluster == cluster) overheats.push_back(f);
    }
    ASSERT_FALSE(overheats.empty());
    for (const FaultRow& f : overheats) {
      EXPECT_GE(f.end - f.start, 120);
      EXPECT_LE(f.end - f.start, 1200);
      const int c = temp.Column(f.subject);
      ASSERT_GE(c, 0) << f.subject;
      double hottest = 0, coolest = 1000;
      for (size_t r = 0; r < temp.times.size(); ++r) {
        const int64_t t = temp.times[r];
        const double v = temp.rows[r][c];
        if (t >= f.start + 90 && t < f.end && !std::isnan(v)) {
          hottest = std::max(hottest, v);
          coolest = std::min(coolest, v);
        }
      }
      // The level, held within the degree of jitter once heated up: 86-88 C, or 91 C for a critical one.
      EXPECT_GE(coolest, f.severity == "critical" ? 90 : 85) << f.subject << " " << f.start;
      EXPECT_GE(hottest, 86) << f.subject << " " << f.start;
      EXPECT_LE(hottest, f.severity == "critical" ? 92 : 89) << f.subject << " " << f.start;
    }
    for (size_t r = 0; r < temp.times.size(); ++r) {
      for (size_t c = 0; c < temp.columns.size(); ++c) {
        if (!(temp.rows[r][c] > 80)) continue;
        const bool listed = std::any_of(overheats.begin(), overheats.end(), [&](const FaultRow& f) {
          return f.subject == temp.columns[c] && temp.times[r] >= f.start && temp.times[r] < f.end;
        });
        EXPECT_TRUE(listed) << temp.columns[c] << " at " << temp.times[r] << ": " << temp.rows[r][c];
      }
    }
  }
}

TEST_F(SynthFaultsTest, EveryXidStartOfTheFilesIsListed) {
  const std::set<double> injected = {31, 43, 48, 79, 94, 95};
  for (const char* cluster : {"seren", "kalos"}) {
    const Wide xid = ReadWide(File(cluster, "XID_ERRORS"));
    std::vector<FaultRow> rows;
    for (const FaultRow& f : Of("xid_error")) {
      if (f.cluster == cluster) rows.push_back(f);
    }
    // Every listed XID holds a code during its interval.
    for (const FaultRow& f : rows) {
      const int c = xid.Column(f.subject);
      ASSERT_GE(c, 0) << f.subject;
      int coded = 0, samples = 0;
      for (size_t r = 0; r < xid.times.size(); ++r) {
        if (xid.times[r] < f.start || xid.times[r] >= f.end || std::isnan(xid.rows[r][c])) continue;
        ++samples;
        coded += xid.rows[r][c] != 0;
      }
      EXPECT_EQ(coded, samples) << f.subject << " " << f.start;
    }
    // Every appearance of a code in the file starts inside a listed interval.
    std::vector<double> last(xid.columns.size(), 0);
    int starts = 0, injected_codes = 0;
    for (size_t r = 0; r < xid.times.size(); ++r) {
      for (size_t c = 0; c < xid.columns.size(); ++c) {
        const double v = xid.rows[r][c];
        if (std::isnan(v)) continue;
        if (v != 0 && last[c] == 0) {
          ++starts;
          injected_codes += injected.count(v) > 0;
          const bool listed = std::any_of(rows.begin(), rows.end(), [&](const FaultRow& f) {
            return f.subject == xid.columns[c] && xid.times[r] >= f.start && xid.times[r] < f.end;
          });
          EXPECT_TRUE(listed) << xid.columns[c] << " at " << xid.times[r];
        }
        last[c] = v;
      }
    }
    EXPECT_GT(starts, 0);
    EXPECT_GT(injected_codes, 0);
  }
}

// The thresholds of the shipped DCGM rules whose tiers faults.csv marks: DcgmGpuTemperatureCritical's
// temperature and DcgmGpuXidHardwareError's XID codes, read from configs/prometheus/rules/dcgm.yml.
struct ShippedTiers {
  double critical_c = NAN;
  std::set<double> hardware_xids;
};
ShippedTiers ReadShippedTiers() {
  const std::string text = ReadFile(std::string(ACMETRACE_FIXTURES) + "/../../configs/prometheus/rules/dcgm.yml");
  ShippedTiers tiers;
  auto expr_of = [&](const std::string& alert) {
    const size_t at = text.find("alert: " + alert + "\n");
    if (at == std::string::npos) return std::string();
    const size_t expr = text.find("expr: ", at);
    return text.substr(expr + 6, text.find('\n', expr) - expr - 6);
  };
  const std::string temp = expr_of("DcgmGpuTemperatureCritical");
  if (const size_t ge = temp.find(">= "); ge != std::string::npos) tiers.critical_c = ToDouble(temp.substr(ge + 3));
  const std::string xid = expr_of("DcgmGpuXidHardwareError");
  if (const size_t re = xid.find("xid=~\""); re != std::string::npos) {
    for (const std::string& code : Split(xid.substr(re + 6, xid.find('"', re + 6) - re - 6), '|')) {
      tiers.hardware_xids.insert(ToDouble(code));
    }
  }
  return tiers;
}

TEST_F(SynthFaultsTest, SeverityMarksTheTierTheTelemetryShowsByTheShippedRulesThresholds) {
  const ShippedTiers tiers = ReadShippedTiers();
  ASSERT_EQ(tiers.critical_c, 90);
  ASSERT_EQ(tiers.hardware_xids, (std::set<double>{48, 63, 64, 74, 79, 92, 94, 95}));
  std::map<std::string, std::map<std::string, int>> count;  // kind -> severity -> incidents
  for (const FaultRow& f : *faults_) {
    ++count[f.kind][f.severity];
    if (f.kind != "gpu_overheat" && f.kind != "xid_error") {
      EXPECT_EQ(f.severity, "") << f.kind << " " << f.subject;  // kinds without tiers
      continue;
    }
    const Wide w = ReadWide(File(f.cluster, f.kind == "gpu_overheat" ? "GPU_TEMP" : "XID_ERRORS"));
    const int c = w.Column(f.subject);
    ASSERT_GE(c, 0) << f.subject;
    std::set<double> values;
    for (size_t r = 0; r < w.times.size(); ++r) {
      if (w.times[r] >= f.start && w.times[r] < f.end && !std::isnan(w.rows[r][c])) values.insert(w.rows[r][c]);
    }
    ASSERT_FALSE(values.empty()) << f.subject << " " << f.start;
    if (f.kind == "gpu_overheat") {
      // Critical if and only if the GPU's temperature reached the critical rule's threshold.
      EXPECT_EQ(f.severity, *values.rbegin() >= tiers.critical_c ? "critical" : "warning")
          << f.subject << " " << f.start << " peaks at " << *values.rbegin();
    } else {
      // One code held over the incident, critical if and only if the hardware rule selects it.
      ASSERT_EQ(values.size(), 1u) << f.subject << " " << f.start;
      EXPECT_EQ(f.severity, tiers.hardware_xids.count(*values.begin()) > 0 ? "critical" : "warning")
          << f.subject << " " << f.start << " holds XID " << *values.begin();
    }
  }
  // Both tiers of both kinds occur in the day, so both tiers of the rules can be scored.
  for (const char* kind : {"gpu_overheat", "xid_error"}) {
    EXPECT_GE(count[kind]["critical"], 1) << kind;
    EXPECT_GE(count[kind]["warning"], 1) << kind;
  }
}

TEST_F(SynthFaultsTest, TelemetryGapsEmptyTheNodesCellsInEveryFile) {
  for (const char* cluster : {"seren", "kalos"}) {
    std::vector<FaultRow> gaps;
    for (const FaultRow& f : Of("telemetry_gap")) {
      if (f.cluster == cluster) gaps.push_back(f);
    }
    ASSERT_FALSE(gaps.empty());
    for (const std::string& metric : kMetrics) {
      const Wide w = ReadWide(File(cluster, metric));
      for (const FaultRow& f : gaps) {
        EXPECT_GE(f.end - f.start, 60);
        EXPECT_LE(f.end - f.start, 600);
        const std::vector<int> cols = w.NodeColumns(f.subject);
        ASSERT_FALSE(cols.empty()) << metric << " " << f.subject;
        int inside = 0, present_around = 0;
        for (size_t r = 0; r < w.times.size(); ++r) {
          const int64_t t = w.times[r];
          const bool in_gap = t >= f.start && t < f.end;
          const bool near = (t >= f.start - 300 && t < f.start) || (t >= f.end && t < f.end + 300);
          for (int c : cols) {
            if (in_gap) {
              EXPECT_TRUE(std::isnan(w.rows[r][c])) << metric << " " << w.columns[c] << " at " << t;
              ++inside;
            } else if (near) {
              present_around += !std::isnan(w.rows[r][c]);
            }
          }
        }
        EXPECT_GT(inside, 0);
        EXPECT_GT(present_around, 0);
      }
    }
  }
}

TEST_F(SynthFaultsTest, StragglersRunAtAFifthToAHalfOfTheirBusyPeers) {
  for (const char* cluster : {"seren", "kalos"}) {
    const Wide sm = ReadWide(File(cluster, "SM_ACTIVE"));
    for (const FaultRow& f : Of("gpu_straggler")) {
      if (f.cluster != cluster) continue;
      EXPECT_GE(f.end - f.start, 300);
      EXPECT_LE(f.end - f.start, 1800);
      const int c = sm.Column(f.subject);
      const std::string node = f.subject.substr(0, f.subject.rfind('-'));
      double own = 0, peers = 0;
      for (size_t r = 0; r < sm.times.size(); ++r) {
        if (sm.times[r] < f.start || sm.times[r] >= f.end || std::isnan(sm.rows[r][c])) continue;
        own += sm.rows[r][c];
        int n = 0;
        double sum = 0;
        for (int p : sm.NodeColumns(node)) {
          if (p != c && !std::isnan(sm.rows[r][p])) sum += sm.rows[r][p], ++n;
        }
        peers += n > 0 ? sum / n : 0;
      }
      ASSERT_GT(peers, 0) << f.subject;
      EXPECT_GE(own / peers, 0.1) << f.subject;  // 0.2-0.5 of its own level, which its peers share up to noise
      EXPECT_LE(own / peers, 0.6) << f.subject;
    }
  }
}

TEST_F(SynthFaultsTest, UtilizationDropsTakeTwentyToSixtyPointsOffTheCluster) {
  for (const char* cluster : {"seren", "kalos"}) {
    const Wide util = ReadWide(File(cluster, "GPU_UTIL"));
    std::vector<double> mean(util.times.size());
    for (size_t r = 0; r < util.times.size(); ++r) {
      double sum = 0;
      int n = 0;
      for (double v : util.rows[r]) {
        if (!std::isnan(v)) sum += v, ++n;
      }
      mean[r] = n ? sum / n : 0;
    }
    auto average = [&](int64_t from, int64_t to) {
      double sum = 0;
      int n = 0;
      for (size_t r = 0; r < util.times.size(); ++r) {
        if (util.times[r] >= from && util.times[r] < to) sum += mean[r], ++n;
      }
      return n ? sum / n : NAN;
    };
    for (const FaultRow& f : Of("util_drop")) {
      if (f.cluster != cluster) continue;
      EXPECT_EQ(f.subject, cluster);
      EXPECT_GE(f.end - f.start, 600);
      EXPECT_LE(f.end - f.start, 3600);
      const double before = average(f.start - 600, f.start);
      const double during = average(f.start, f.end);
      // Sized against the 10 minutes before; jobs come and go meanwhile, hence the margins.
      EXPECT_GE(before - during, 12) << cluster << " " << f.start << ": " << before << " -> " << during;
      EXPECT_LE(before - during, 70) << cluster << " " << f.start << ": " << before << " -> " << during;
    }
  }
}

// The faulted trace is the clean one plus the incidents' jobs. Where the cluster runs large jobs,
// running ones fail (restarted 1-3 minutes later) and every other job keeps its start; where it runs
// none (Seren at 0.05), the failing large jobs are new and wait for room in the queue like any other
// job, so jobs after them may start later, and a pretraining campaign's next job follows its last one's
// end: then every other job is still there with its submit time and run, pretraining jobs aside.
TEST_F(SynthFaultsTest, JobTraceIsTheCleanOnePlusBurstsBacklogsLargeFailuresAndNodeFailures) {
  for (const char* cluster : {"seren", "kalos"}) {
    const std::string name = std::string("/data/job_trace/trace_") + cluster + ".csv";
    const std::vector<TraceRow> clean = ReadTrace(clean_->str() + name);
    const std::vector<TraceRow> faulted = ReadTrace(faulted_->str() + name);
    std::set<std::string> node_failures, large_failures;
    std::vector<FaultRow> bursts, backlogs;
    for (const FaultRow& f : *faults_) {
      if (f.cluster == cluster && f.kind == "node_failure") node_failures.insert(f.subject);
      if (f.cluster == cluster && f.kind == "large_job_failure") large_failures.insert(f.subject);
      if (f.cluster == cluster && f.kind == "failure_burst") bursts.push_back(f);
      if (f.cluster == cluster && f.kind == "queue_backlog") backlogs.push_back(f);
    }
    // Job ids shift on Seren (they rise in submit order): match rows by their other fields, the start
    // too while the schedule is the clean one.
    auto key = [](const TraceRow& r, bool with_start) {
      return r.user + "|" + r.type + "|" + std::to_string(r.gpus) + "|" + std::to_string(r.submit) + "|" +
             (with_start ? std::to_string(r.start) : std::string());
    };
    std::map<const TraceRow*, const TraceRow*> match;  // clean row -> faulted row
    auto match_all = [&](bool with_start) {
      match.clear();
      std::multimap<std::string, const TraceRow*> by_key;
      for (const TraceRow& r : faulted) by_key.emplace(key(r, with_start), &r);
      std::set<const TraceRow*> used;
      for (const TraceRow& r : clean) {
        auto [lo, hi] = by_key.equal_range(key(r, with_start));
        for (auto it = lo; it != hi; ++it) {
          if (used.insert(it->second).second) {
            match[&r] = it->second;
            break;
          }
        }
      }
    };
    match_all(true);
    const bool rescheduled = match.size() != clean.size();
    if (rescheduled) match_all(false);
    std::set<const TraceRow*> matched;
    for (const auto& [c, f] : match) matched.insert(f);
    std::vector<const TraceRow*> restarts;  // the large jobs made to fail
    int changed = 0, large = 0;
    for (const TraceRow& r : clean) {
      auto it = match.find(&r);
      if (it == match.end()) {
        // Only a campaign's pretraining job can be gone: its campaign resubmitted at another time.
        EXPECT_TRUE(rescheduled) << cluster << " clean job " << r.id << " missing with faults";
        EXPECT_EQ(r.type, "Pretrain") << cluster << " clean job " << r.id << " missing with faults";
        continue;
      }
      const TraceRow* m = it->second;
      if (!rescheduled) {
        EXPECT_EQ(m->start, r.start) << m->id;
      }
      if (m->state != r.state || m->end - m->start != r.end - r.start) {
        ++changed;
        EXPECT_LT(m->end - m->start, r.end - r.start) << m->id;
        if (large_failures.count(m->id)) {  // an injected large job failure: a running large job fails
          ++large;
          EXPECT_FALSE(rescheduled) << m->id;
          EXPECT_EQ(m->state, "FAILED");
          EXPECT_GE(m->end - m->start, 1800) << m->id;
          restarts.push_back(m);
        } else {
          EXPECT_EQ(m->state, "NODE_FAIL");
          EXPECT_TRUE(node_failures.count(m->id)) << m->id;
        }
      }
    }
    EXPECT_GE(changed, 1);
    int extra = 0, waiting = 0;
    for (const TraceRow& r : faulted) {
      if (matched.count(&r)) continue;
      // A backlog's job: submitted in its first five minutes, started once it ends and GPUs are free.
      const bool in_backlog = std::any_of(backlogs.begin(), backlogs.end(), [&](const FaultRow& b) {
        return r.submit >= b.start && r.submit < b.start + 300 && r.start >= b.end;
      });
      if (in_backlog) {
        ++waiting;
        EXPECT_EQ(r.state, "COMPLETED");
        EXPECT_GE(r.gpus, 8);
        continue;
      }
      // A failed large job restarted 1-3 minutes after it failed, on as many GPUs, by the same user.
      const bool restart = std::any_of(restarts.begin(), restarts.end(), [&](const TraceRow* f) {
        return r.user == f->user && r.gpus == f->gpus && r.start - f->end >= 60 && r.start - f->end <= 180;
      });
      if (restart) continue;
      if (rescheduled && large_failures.count(r.id)) {  // a new large job that waited for room, then failed
        ++large;
        EXPECT_EQ(r.state, "FAILED");
        EXPECT_EQ(r.type, "Pretrain");
        EXPECT_GE(r.end - r.start, 1800) << r.id;
        EXPECT_LE(r.end - r.start, 4 * 3600) << r.id;
        EXPECT_GE(r.start, r.submit) << r.id;
        continue;
      }
      if (rescheduled && r.type == "Pretrain") continue;  // a campaign's next job, at another time
      ++extra;
      EXPECT_EQ(r.state, "FAILED");
      EXPECT_GT(r.gpus, 0);
      const bool in_burst = std::any_of(bursts.begin(), bursts.end(),
                                        [&](const FaultRow& b) { return r.end >= b.start && r.end < b.end; });
      EXPECT_TRUE(in_burst) << r.id << " ends at " << r.end;
    }
    EXPECT_EQ(extra > 0, !bursts.empty());
    EXPECT_EQ(waiting > 0, !backlogs.empty());
    EXPECT_GE(large, 2) << cluster;  // 2-4 a day
    // Node failures: start = end = the job's end.
    for (const FaultRow& f : *faults_) {
      if (f.cluster != cluster || f.kind != "node_failure") continue;
      EXPECT_EQ(f.start, f.end);
      auto it = std::find_if(faulted.begin(), faulted.end(), [&](const TraceRow& r) { return r.id == f.subject; });
      ASSERT_NE(it, faulted.end()) << f.subject;
      EXPECT_EQ(it->state, "NODE_FAIL");
      EXPECT_EQ(it->end, f.end);
    }
  }
}

TEST(SynthFaultsScaleTest, BurstsAreThreeToTenTimesTheFailureRate) {
  ScratchDir dir("synth_faults", "bursts");
  auto r = WriteSynthetic(Options(dir.str(), true, 1.0, {"none"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<FaultRow> faults = ReadFaults(dir.str() + "/faults.csv");
  for (const FaultRow& f : faults) {
    // Without telemetry only the job incidents can be seen, and only they are listed.
    EXPECT_TRUE(f.kind == "failure_burst" || f.kind == "node_failure" || f.kind == "queue_backlog" ||
                f.kind == "large_job_failure")
        << f.kind;
  }
  for (const char* cluster : {"seren", "kalos"}) {
    const std::vector<TraceRow> trace = ReadTrace(dir.str() + "/data/job_trace/trace_" + cluster + ".csv");
    auto failed_between = [&](int64_t from, int64_t to) {
      return std::count_if(trace.begin(), trace.end(), [&](const TraceRow& t) {
        return t.gpus > 0 && (t.state == "FAILED" || t.state == "NODE_FAIL" || t.state == "TIMEOUT") &&
               t.end >= from && t.end < to;
      });
    };
    double burst_time = 0, burst_failures = 0;
    int bursts = 0;
    for (const FaultRow& f : faults) {
      if (f.cluster != cluster || f.kind != "failure_burst") continue;
      ++bursts;
      EXPECT_GE(f.end - f.start, 600);
      EXPECT_LE(f.end - f.start, 1800);
      burst_time += static_cast<double>(f.end - f.start);
      burst_failures += static_cast<double>(failed_between(f.start, f.end));
    }
    ASSERT_GE(bursts, 2) << cluster;
    const double rate = static_cast<double>(failed_between(kStartS, kEndS)) - burst_failures;
    const double ratio = (burst_failures / burst_time) / (rate / (86400.0 - burst_time));
    EXPECT_GE(ratio, 3.0 * 0.7) << cluster;  // 3-10x, with the Poisson noise of the few failures
    EXPECT_LE(ratio, 10.0 * 1.3) << cluster;
  }
}

TEST(SynthFaultsScaleTest, MoreUsersStartFailingInABurstThanInAnyOtherSpanAroundIt) {
  // Issue #14: a cluster's incident fails many users' jobs at once. A burst's jobs follow the cluster's
  // user mix, so many were of its heaviest users, failing jobs all day anyway, and on Kalos (a few
  // users failing an hour) a burst could bring no more users starting to fail (no failed job in the
  // half hour before) than the hours around it did by chance. Now at least 5, and more than any
  // burst-free span of its length within three hours. (NODE_FAIL jobs are left out: node failures
  // are incidents of their own, placed after the bursts.)
  for (const uint64_t seed : {2, 4, 5}) {
    ScratchDir dir("synth_faults", "burst_users_" + std::to_string(seed));
    SynthOptions o = Options(dir.str(), true, 1.0, {"none"});
    o.clusters = {"kalos"};
    o.seed = seed;
    auto r = WriteSynthetic(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<TraceRow> failed = ReadTrace(dir.str() + "/data/job_trace/trace_kalos.csv");
    std::erase_if(failed, [](const TraceRow& t) { return t.gpus == 0 || (t.state != "FAILED" && t.state != "TIMEOUT"); });
    auto starting = [&](int64_t from, int64_t to) {
      std::set<std::string> failing, users;
      for (const TraceRow& t : failed) {
        if (t.end >= from - 1800 && t.end < from) failing.insert(t.user);
      }
      for (const TraceRow& t : failed) {
        if (t.state == "FAILED" && t.end >= from && t.end < to && !failing.count(t.user)) users.insert(t.user);
      }
      return users.size();
    };
    std::vector<FaultRow> bursts = ReadFaults(dir.str() + "/faults.csv");
    std::erase_if(bursts, [](const FaultRow& f) { return f.kind != "failure_burst"; });
    ASSERT_GE(bursts.size(), 2u) << "seed " << seed;
    for (const FaultRow& f : bursts) {
      const int64_t length = f.end - f.start;
      size_t most = 0;  // in a span of the burst's length without a burst, within three hours
      for (int64_t from = f.start - 3 * 3600; from < f.start + 3 * 3600; from += 300) {
        const bool clear = std::none_of(bursts.begin(), bursts.end(), [&](const FaultRow& b) {
          return from < b.end + 1800 && from + length > b.start - 1800;
        });
        if (clear) most = std::max(most, starting(from, from + length));
      }
      const size_t users = starting(f.start, f.end);
      EXPECT_GE(users, 5u) << "seed " << seed << ", burst at " << f.start;
      EXPECT_GT(users, most) << "seed " << seed << ", burst at " << f.start;
    }
  }
}

TEST(SynthFaultsScaleTest, OnASmallClusterTheFailedJobsOfAThirdOfItAreLargeJobFailures) {
  // Issue #14: at scale 0.2 synth narrows the large pretraining jobs (256 GPUs and more) to at most half
  // the cluster, so none reached 256 GPUs and no large job failure was ever listed. A 0.2 Kalos has 480
  // GPUs: its failed jobs of at least 160 are listed (none of the release's mid-sized 128).
  int listed = 0;
  for (const uint64_t seed : {1, 2, 3}) {
    ScratchDir dir("synth_faults", "large_" + std::to_string(seed));
    SynthOptions o = Options(dir.str(), true, 0.2, {"none"});
    o.clusters = {"kalos"};
    o.seed = seed;
    auto r = WriteSynthetic(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::set<std::string> large;
    for (const FaultRow& f : ReadFaults(dir.str() + "/faults.csv")) {
      if (f.kind == "large_job_failure") large.insert(f.subject);
    }
    std::set<std::string> failed_large;
    for (const TraceRow& t : ReadTrace(dir.str() + "/data/job_trace/trace_kalos.csv")) {
      const bool failed = t.state == "FAILED" || t.state == "NODE_FAIL" || t.state == "TIMEOUT";
      if (failed && t.gpus >= 160) failed_large.insert(t.id);
    }
    EXPECT_EQ(large, failed_large) << "seed " << seed;
    listed += static_cast<int>(large.size());
  }
  EXPECT_GE(listed, 3);
}

// The fewest users a count of mean `expected` reaches in at most 1 in 10,000 draws (at least 5): a
// negative binomial of shape 40, a rate known to within about 16% (the failure_burst detector's
// rate_shape).
size_t UsersChanceReachesOnceIn10000(double expected) {
  const double r = 40, p = expected / (expected + r);
  double term = std::pow(r / (expected + r), r), below = 0;
  size_t n = 0;
  for (; 1.0 - below > 1e-4; ++n) {
    below += term;
    term *= (static_cast<double>(n) + r) / static_cast<double>(n + 1) * p;
  }
  return std::max<size_t>(5, n);
}

TEST(SynthFaultsScaleTest, BurstsStandOutFromTheRateOfTheHoursJustBeforeThem) {
  // Issue #14: bursts were sized against the users starting to fail in the six hours *around* them. At
  // the evening peak, where the rate falls, that is below the rate of the hours just before, which is
  // all that a user (or the failure_burst detector: 6 h, or 2 h if higher) knows at the time: a burst
  // there could not be told from the evening's own failures. A burst now starts so many users failing
  // (no failed GPU job in the half hour before) that the cluster's own, at the higher of its rates
  // over the six and the two hours before the burst, reach as many in at most 1 in 10,000 spans of its
  // length. (Seed 5 of a 0.2 Kalos has a burst at 17:20 where the two rules differ: 6 users or 8.) A
  // user failing in the half hour before, NODE_FAIL included, is not starting to fail: node failures,
  // placed after the bursts, spare the jobs of a burst's users (seed 5's burst at 23:10 lost a user so).
  // Rates from the trace: failed GPU jobs without the NODE_FAIL jobs (incidents of their own, placed after
  // the bursts); an earlier burst's users are among those the cluster has shown (issue #14: on a 0.2
  // Kalos every burst missed on the development seeds came within six hours after another, whose users
  // the detector's baseline counted and synth's sizing did not). Chance: a negative binomial count.
  int bursts_seen = 0;
  for (const uint64_t seed : {3, 5, 8}) {
    ScratchDir dir("synth_faults", "burst_rate_" + std::to_string(seed));
    SynthOptions o = Options(dir.str(), true, 0.2, {"none"});
    o.clusters = {"kalos"};
    o.seed = seed;
    auto r = WriteSynthetic(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<FaultRow> bursts;
    for (const FaultRow& f : ReadFaults(dir.str() + "/faults.csv")) {
      if (f.kind == "failure_burst") bursts.push_back(f);
    }
    std::vector<TraceRow> failed = ReadTrace(dir.str() + "/data/job_trace/trace_kalos.csv");
    std::erase_if(failed, [](const TraceRow& t) {
      return t.gpus == 0 || (t.state != "FAILED" && t.state != "TIMEOUT" && t.state != "NODE_FAIL");
    });
    std::sort(failed.begin(), failed.end(), [](const TraceRow& a, const TraceRow& b) { return a.end < b.end; });
    std::vector<int64_t> onsets;
    std::map<std::string, int64_t> last;
    for (const TraceRow& t : failed) {
      if (t.state == "NODE_FAIL") continue;
      auto [it, fresh] = last.try_emplace(t.user, t.end);
      if (fresh || t.end - it->second >= 1800) onsets.push_back(t.end);
      it->second = t.end;
    }
    for (const FaultRow& f : bursts) {
      auto rate_over = [&](int64_t span_s) {
        const int64_t from = std::max(kStartS, f.start - span_s);
        const auto n = std::count_if(onsets.begin(), onsets.end(), [&](int64_t t) { return t >= from && t < f.start; });
        return static_cast<double>(n) / static_cast<double>(f.start - from);
      };
      const double expected = std::max(rate_over(6 * 3600), rate_over(2 * 3600)) * static_cast<double>(f.end - f.start);
      std::set<std::string> failing, users;  // failing in the half hour before; starting to fail in the burst
      for (const TraceRow& t : failed) {
        if (t.end >= f.start - 1800 && t.end < f.start) failing.insert(t.user);
      }
      for (const TraceRow& t : failed) {
        if (t.state == "FAILED" && t.end >= f.start && t.end < f.end && !failing.count(t.user)) users.insert(t.user);
      }
      EXPECT_GE(users.size(), UsersChanceReachesOnceIn10000(expected))
          << "seed " << seed << ", burst at " << f.start << ": " << expected << " users expected";
      ++bursts_seen;
    }
  }
  EXPECT_GE(bursts_seen, 6);
}

TEST(SynthFaultsScaleTest, InjectedLargeJobFailuresMakeASmallSerenMeasurable) {
  // Issue #14: a 0.2 Seren ran a failed job of a third of its 456 GPUs about once in four days (2 in the
  // 16 held-out days of the quality test), too few to measure large_job_failure. 2-4 a day are now
  // injected: running jobs of whole nodes, at least a third of the cluster (152 GPUs) and at most half
  // (as the scheduler narrows them), fail at least 30 minutes into their run, each listed. Where none
  // runs and the cluster leaves a new one no room within 4 hours (issue #22: waiting longer, they hid
  // the day's backlogs), a day has none: seed 3.
  int injected = 0;
  for (const uint64_t seed : {1, 2, 3}) {
    ScratchDir dir("synth_faults", "large_seren_" + std::to_string(seed));
    SynthOptions o = Options(dir.str(), true, 0.2, {"none"});
    o.clusters = {"seren"};
    o.seed = seed;
    auto r = WriteSynthetic(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::map<std::string, FaultRow> large;
    for (const FaultRow& f : ReadFaults(dir.str() + "/faults.csv")) {
      if (f.kind == "large_job_failure") large[f.subject] = f;
    }
    int listed_pretraining = 0;
    for (const TraceRow& t : ReadTrace(dir.str() + "/data/job_trace/trace_seren.csv")) {
      const bool failed = t.state == "FAILED" || t.state == "NODE_FAIL" || t.state == "TIMEOUT";
      EXPECT_EQ(large.count(t.id) == 1, failed && t.gpus >= 152) << "seed " << seed << " job " << t.id;
      if (!large.count(t.id)) continue;
      EXPECT_EQ(large[t.id].start, t.end);
      EXPECT_EQ(large[t.id].end, t.end);
      EXPECT_EQ(t.gpus % 8, 0) << t.id;
      EXPECT_LE(t.gpus, 228) << t.id;
      if (t.type == "Pretrain" && t.state == "FAILED" && t.end - t.start >= 1800 && t.end > kStartS + 3600 &&
          t.end <= kEndS - 1800) {
        ++listed_pretraining;
      }
    }
    EXPECT_GE(listed_pretraining, seed == 3 ? 0 : 2) << "seed " << seed;
    EXPECT_LE(static_cast<int>(large.size()), 8) << "seed " << seed;
    injected += listed_pretraining;
  }
  EXPECT_GE(injected, 4);
}

// Issue #14: synth placed stragglers on nodes whose job computed almost nothing during the fault (its
// other GPUs at SM_ACTIVE 0.01-0.2, as a job's activity swings low for minutes on all its GPUs at once),
// so the straggler at a fraction of that read as they did and no observer could tell it. A straggler is
// one a user sees: through at least the detector's open_for_s (240 s) of it in a row, the median of the
// other GPUs of its node, smoothed as the detector smooths (EWMA, 60 s), is at least its min_peer_sm
// (0.2). Kalos at scale 0.2 over three days: its jobs swing low more often than Seren's.
TEST(SynthFaultsScaleTest, StragglersSitOnJobsWhoseOtherGpusComputeThroughFiveMinutesOfThem) {
  ScratchDir dir("synth_faults", "busy_peers");
  SynthOptions o = Options(dir.str(), true, 0.2, {"SM_ACTIVE"});
  o.clusters = {"kalos"};
  o.days = 3;
  o.seed = 25;
  ASSERT_TRUE(WriteSynthetic(o).ok());
  const Wide sm = ReadWide(dir.str() + "/data/utilization/kalos/SM_ACTIVE.csv");
  const double alpha = 1.0 - std::exp(-15.0 / 60.0);
  int stragglers = 0;
  for (const FaultRow& f : ReadFaults(dir.str() + "/faults.csv")) {
    if (f.kind != "gpu_straggler") continue;
    ++stragglers;
    const int own = sm.Column(f.subject);
    ASSERT_GE(own, 0) << f.subject;
    const std::string node = f.subject.substr(0, f.subject.rfind('-'));
    double smooth = 0;
    int64_t run = 0, longest = 0;
    for (size_t r = 0; r < sm.times.size() && sm.times[r] < f.end; ++r) {
      std::vector<double> peers;
      for (int p : sm.NodeColumns(node)) {
        if (p != own && !std::isnan(sm.rows[r][p])) peers.push_back(sm.rows[r][p]);
      }
      if (peers.empty()) continue;  // a missed scrape: the average holds
      std::sort(peers.begin(), peers.end());
      const size_t n = peers.size();
      const double median = n % 2 ? peers[n / 2] : 0.5 * (peers[n / 2 - 1] + peers[n / 2]);
      smooth += alpha * (median - smooth);
      if (sm.times[r] < f.start) continue;
      run = smooth >= 0.2 ? run + 15 : 0;
      longest = std::max(longest, run);
    }
    EXPECT_GE(longest, 240) << f.subject << " " << f.start << "-" << f.end;
  }
  EXPECT_GE(stragglers, 6);
}

TEST(SynthFaultsScaleTest, SameSeedSameFaults) {
  ScratchDir a("synth_faults", "same_a"), b("synth_faults", "same_b");
  ASSERT_TRUE(WriteSynthetic(Options(a.str(), true, 0.05, {"XID_ERRORS", "GPU_TEMP"})).ok());
  ASSERT_TRUE(WriteSynthetic(Options(b.str(), true, 0.05, {"XID_ERRORS", "GPU_TEMP"})).ok());
  EXPECT_EQ(ReadFile(a.str() + "/faults.csv"), ReadFile(b.str() + "/faults.csv"));
  EXPECT_EQ(ReadFile(a.str() + "/data/utilization/seren/GPU_TEMP.csv"),
            ReadFile(b.str() + "/data/utilization/seren/GPU_TEMP.csv"));
  SynthOptions other = Options(b.str(), true, 0.05, {"XID_ERRORS", "GPU_TEMP"});
  other.seed = 8;
  ASSERT_TRUE(WriteSynthetic(other).ok());
  EXPECT_NE(ReadFile(a.str() + "/faults.csv"), ReadFile(b.str() + "/faults.csv"));
}

}  // namespace
}  // namespace acmetrace::producers
