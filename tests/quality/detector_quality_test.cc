// Detector quality, measured on the held-out seeds of each configuration (issue #14). Synthetic days
// with injected faults (acmetrace synth --inject-faults) are replayed in event-time order through the
// detectors, and each kind's flags are matched against faults.csv: a flag matches a fault of the same
// cluster, kind and subject whose interval overlaps the flag's, widened by kToleranceS on both sides.
// Precision = matched flags / flags, recall = matched faults / faults, over the faults of all seeds of
// a configuration pooled. Every kind must reach 0.9 of both on each configuration, except the pairs
// listed in kBelowBar (with why), which are held to their measured held-out floor.
//
// Configurations: each cluster alone (seren, kalos) at scale 0.2 and 1, one day per seed, the telemetry
// the detectors read. Seeds 1-8 are the tuning set (every threshold was chosen on them); seeds 9-24
// are held out, and are what the test asserts on and docs/anomalies.md reports. Seeds 9-24 were looked
// at during issue #14's work, so seeds 25-40 were kept for one blind confirmation after it; Kalos's
// straggler misses there were then looked into and fixed, so 25-40 are development seeds now, and
// seeds 41-56 (ACMETRACE_QUALITY_SEEDS=41-56) were run once, blind, after that fix. Synth's straggler
// placement then changed (generation 3, from what 25-40 showed), and seeds 73-88 were run once, blind,
// after it; 89-104 were run once, blind, after util_drop's job rule; 57-72 measured failure_burst's
// endings rule (not adopted), then with 25-40 chose its third attempt (synth generation 4, rate_shape),
// which 105-120 measured blind; then failure_burst's rule of the endings was measured on 105-120 and
// 121-136 measured it blind, then gpu_straggler's misses on Seren 0.2 there were inspected (synth generation
// 5, the straggler's open count waiting through its job's pauses), which 137-152 measured blind; util_drop's
// rule for GPUs busy when first seen was chosen on 137-152's false flags and 153-168 measured it blind;
// 169-184 are fresh (docs/anomalies.md
// reports every set's table and what each was used for).
// Each configuration is
// a test of its own, so that ctest -j2 runs them side by side; they carry the CTest label `quality`.
//
// Environment: ACMETRACE_QUALITY_SEEDS=tuning measures the tuning seeds instead (FIRST-LAST, e.g.
// 9-24, any other range); ACMETRACE_QUALITY_VERBOSE=1 lists every false flag and missed fault;
// ACMETRACE_QUALITY_SET="detect.k.key=v;..." measures other settings; ACMETRACE_QUALITY_KEEP=DIR keeps
// each seed's data in DIR/<configuration>_<seed>, with schedule.csv (which GPUs ran which job).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/producers/event_stream.h"
#include "acmetrace/producers/synth.h"
#include "../unit/test_files.h"

namespace acmetrace::processors {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kToleranceS = 300;  // a flag may open up to 5 minutes after its fault ended, and so on
constexpr int64_t kDayStartMs = 1688140800000;  // 2023-07-01 00:00:00+08:00, synth's default start
constexpr int kFirstTuningSeed = 1, kLastTuningSeed = 8;
constexpr int kFirstHeldOutSeed = 9, kLastHeldOutSeed = 24;

// The seeds to measure: the held-out ones unless ACMETRACE_QUALITY_SEEDS says otherwise.
std::pair<int, int> SeedRange() {
  const char* v = std::getenv("ACMETRACE_QUALITY_SEEDS");
  if (v == nullptr || *v == '\0') return {kFirstHeldOutSeed, kLastHeldOutSeed};
  if (std::string(v) == "tuning") return {kFirstTuningSeed, kLastTuningSeed};
  int first = 0, last = 0;
  if (std::sscanf(v, "%d-%d", &first, &last) == 2 && first >= 1 && last >= first) return {first, last};
  ADD_FAILURE() << "ACMETRACE_QUALITY_SEEDS=" << v << ": want tuning or FIRST-LAST";
  return {kFirstHeldOutSeed, kLastHeldOutSeed};
}
bool Verbose() { return std::getenv("ACMETRACE_QUALITY_VERBOSE") != nullptr; }

struct Flag {
  std::string cluster, kind, subject;
  int64_t open_s = 0;
  int64_t close_s = 0;  // end of the data if never closed
  double value = 0, threshold = 0;  // at opening
  bool matched = false;
};

struct Fault {
  std::string cluster, kind, subject;
  int64_t start_s = 0, end_s = 0;
  bool found = false;
};

// Replays DIR in event-time order through one set of detectors, as the engine does: every record, then
// AdvanceTo(t - 1) as soon as a record of a later time t arrives (everything before t has been seen).
std::vector<Flag> Detect(const std::string& dir) {
  core::Config config;
  DeclareDetectorConfig(config);
  if (const char* set = std::getenv("ACMETRACE_QUALITY_SET")) {
    std::stringstream items(set);
    std::string item;
    while (std::getline(items, item, ';')) {
      const size_t eq = item.find('=');
      const core::Status s = config.Set(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
      EXPECT_TRUE(s.ok()) << s.message();
    }
  }
  std::vector<std::unique_ptr<Detector>> detectors = MakeDetectors(config);
  core::InputErrors errors(nullptr);
  producers::EventStreamOptions options;
  options.data_dir = dir;
  auto stream = producers::EventStream::Open(options, errors);
  EXPECT_TRUE(stream.ok()) << stream.status().message();
  if (!stream.ok()) return {};
  std::vector<core::AnomalyEvent> events;
  int64_t last_ms = INT64_MIN;
  while (const core::Record* record = stream.value()->Next()) {
    const int64_t ts = core::TimestampMsOf(*record);
    if (ts < last_ms) continue;  // late (the engine drops and counts these)
    if (ts > last_ms && last_ms != INT64_MIN) {
      for (auto& d : detectors) d->AdvanceTo(ts - 1, events);
    }
    last_ms = ts;
    for (auto& d : detectors) d->Observe(*record);
  }
  for (auto& d : detectors) d->AdvanceTo(last_ms, events);
  EXPECT_EQ(errors.total(), 0) << errors.first();

  // Each detector hands out its transitions in event-time order; pair each open with its subject's
  // next close.
  std::map<std::string, int64_t> previous_ms;
  for (const core::AnomalyEvent& e : events) {
    auto it = previous_ms.emplace(e.kind, e.ts_ms).first;
    EXPECT_GE(e.ts_ms, it->second) << e.kind << " transitions out of event-time order: " << e.subject;
    it->second = e.ts_ms;
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const core::AnomalyEvent& a, const core::AnomalyEvent& b) { return a.ts_ms < b.ts_ms; });
  std::vector<Flag> flags;
  std::map<std::string, size_t> open;
  for (const core::AnomalyEvent& e : events) {
    const std::string key = e.cluster + "/" + e.kind + "/" + e.subject;
    auto it = open.find(key);
    if (e.open) {
      EXPECT_TRUE(it == open.end()) << key << " opened twice";
      open[key] = flags.size();
      flags.push_back({e.cluster, e.kind, e.subject, e.ts_ms / 1000, last_ms / 1000, e.value, e.threshold});
    } else {
      EXPECT_TRUE(it != open.end()) << key << " closed while not open";
      if (it == open.end()) continue;
      flags[it->second].close_s = e.ts_ms / 1000;
      open.erase(it);
    }
  }
  return flags;
}

std::vector<Fault> ReadFaults(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "cluster,kind,subject,start,end,severity");
  std::vector<Fault> faults;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    Fault f;
    std::string start, end;
    std::getline(row, f.cluster, ',');
    std::getline(row, f.kind, ',');
    std::getline(row, f.subject, ',');
    std::getline(row, start, ',');
    std::getline(row, end, ',');
    f.start_s = std::stoll(start);
    f.end_s = std::stoll(end);
    faults.push_back(f);
  }
  return faults;
}

struct KindScore {
  int flags = 0, matched_flags = 0, faults = 0, found_faults = 0;
  std::vector<int64_t> open_delays_s;  // first matching flag's opening - fault start, per found fault
  double precision() const { return flags == 0 ? 1.0 : static_cast<double>(matched_flags) / flags; }
  double recall() const { return faults == 0 ? 1.0 : static_cast<double>(found_faults) / faults; }
};

void Score(std::vector<Flag>& flags, std::vector<Fault>& faults, const std::set<std::string>& kinds,
           std::map<std::string, KindScore>& scores, const std::string& label) {
  std::vector<int64_t> first_open(faults.size(), INT64_MAX);
  for (Flag& fl : flags) {
    for (size_t i = 0; i < faults.size(); ++i) {
      Fault& f = faults[i];
      if (fl.kind != f.kind || fl.cluster != f.cluster || fl.subject != f.subject) continue;
      if (fl.open_s <= f.end_s + kToleranceS && fl.close_s >= f.start_s - kToleranceS) {
        fl.matched = f.found = true;
        first_open[i] = std::min(first_open[i], fl.open_s);
      }
    }
  }
  for (size_t i = 0; i < faults.size(); ++i) {
    if (faults[i].found && kinds.count(faults[i].kind)) {
      scores[faults[i].kind].open_delays_s.push_back(first_open[i] - faults[i].start_s);
    }
  }
  for (const Flag& fl : flags) {
    if (!kinds.count(fl.kind)) continue;
    KindScore& s = scores[fl.kind];
    ++s.flags;
    s.matched_flags += fl.matched;
    if (!fl.matched && Verbose()) {
      std::printf("  %s false flag %s %s %s [%lld, %lld] value %g threshold %g\n", label.c_str(), fl.cluster.c_str(),
                  fl.kind.c_str(), fl.subject.c_str(), static_cast<long long>(fl.open_s),
                  static_cast<long long>(fl.close_s), fl.value, fl.threshold);
    }
  }
  for (const Fault& f : faults) {
    if (!kinds.count(f.kind)) continue;
    KindScore& s = scores[f.kind];
    ++s.faults;
    s.found_faults += f.found;
    if (!f.found && Verbose()) {
      std::printf("  %s missed %s %s %s [%lld, %lld]\n", label.c_str(), f.cluster.c_str(), f.kind.c_str(),
                  f.subject.c_str(), static_cast<long long>(f.start_s), static_cast<long long>(f.end_s));
    }
  }
}

// What every telemetry kind reads: GPU_TEMP (overheat), XID_ERRORS, GPU_UTIL and SM_ACTIVE
// (straggler), GPU_UTIL and FB_USED (util_drop), and NODE_CPU_UTILIZATION so that a gap means every
// file, not one. The job kinds read the job trace, always written.
const std::vector<std::string> kMetrics = {"GPU_TEMP", "XID_ERRORS", "GPU_UTIL", "SM_ACTIVE", "FB_USED",
                                           "NODE_CPU_UTILIZATION"};
const std::vector<std::string> kAllKinds = {"gpu_overheat",  "xid_error",     "telemetry_gap",
                                            "gpu_straggler", "util_drop",     "failure_burst",
                                            "queue_backlog", "large_job_failure", "node_failure"};

// The (kind, configuration) pairs that do not reach issue #14's 0.9 on the held-out seeds yet: each is
// held to a floor, its measured held-out value rounded down to 0.05 (a regression guard, not a goal),
// and printed as "BELOW BAR kind configuration precision recall". Every pair not listed here must reach
// 0.9 of both on at least 5 faults. A pair that reaches the bar fails the test until it is taken out.
struct BelowBar {
  const char* kind;
  const char* configuration;
  int min_faults;
  double min_precision, min_recall;
};
const std::vector<BelowBar> kBelowBar = {
    // None since issue #14's last two (failure_burst on kalos_scale0_2, large_job_failure on
    // seren_scale0_2): see docs/anomalies.md, "What falls short".
};

struct Configuration {
  std::string cluster;
  double scale;
  std::string Name() const { return cluster + (scale == 1.0 ? "_scale1" : "_scale0_2"); }
};

class DetectorQualityTest : public testing::TestWithParam<Configuration> {};

// One configuration's held-out seeds (or those ACMETRACE_QUALITY_SEEDS names): faults found, flags
// right. Prints one line per kind, "quality-row | kind | configuration | seeds | faults | flags |
// precision | recall |", which docs/anomalies.md's table is made of (scripts/quality-table).
TEST_P(DetectorQualityTest, EveryKindFindsItsFaultsOnHeldOutSeeds) {
  const Configuration& c = GetParam();
  const auto [first, last] = SeedRange();
  std::map<std::string, KindScore> scores;
  for (const std::string& k : kAllKinds) scores[k];
  int seeds = 0;
  for (int seed = first; seed <= last; ++seed) {
    ++seeds;
    ScratchDir dir("quality", c.Name() + "_" + std::to_string(seed));
    producers::SynthOptions o;
    o.out_dir = dir.str();
    if (const char* keep = std::getenv("ACMETRACE_QUALITY_KEEP")) {
      o.out_dir = std::string(keep) + "/" + c.Name() + "_" + std::to_string(seed);
      o.write_schedule = true;  // which GPUs ran which job: to tell a false flag's cause
    }
    o.clusters = {c.cluster};
    o.seed = static_cast<uint64_t>(seed);
    o.scale = c.scale;
    o.days = 1;
    o.start_ms = kDayStartMs;
    o.inject_faults = true;
    o.metrics = kMetrics;
    auto report = producers::WriteSynthetic(o);
    ASSERT_TRUE(report.ok()) << report.status().message();
    std::vector<Flag> flags = Detect(o.out_dir);
    std::vector<Fault> faults = ReadFaults(o.out_dir + "/faults.csv");
    Score(flags, faults, std::set<std::string>(kAllKinds.begin(), kAllKinds.end()), scores,
          c.Name() + " seed " + std::to_string(seed));
  }
  const std::string range = std::to_string(first) + "-" + std::to_string(last);
  for (const std::string& kind : kAllKinds) {
    const KindScore& s = scores[kind];
    std::vector<int64_t> d = s.open_delays_s;
    std::sort(d.begin(), d.end());
    std::printf("quality-row | %s | %s | %s | %d | %d | %d | %.3f | %.3f | %lld |\n", kind.c_str(), c.Name().c_str(),
                range.c_str(), seeds, s.faults, s.flags, s.precision(), s.recall(),
                d.empty() ? 0LL : static_cast<long long>(d[d.size() / 2]));
  }
  const bool held_out = first == kFirstHeldOutSeed && last == kLastHeldOutSeed;
  for (const std::string& kind : kAllKinds) {
    const KindScore& s = scores[kind];
    const BelowBar* below = nullptr;
    for (const BelowBar& b : kBelowBar) {
      if (kind == b.kind && c.Name() == b.configuration) below = &b;
    }
    if (below == nullptr) {
      EXPECT_GE(s.faults, 5) << kind << ": too few faults to measure";
      EXPECT_GE(s.precision(), 0.9) << kind << ": " << s.matched_flags << " of " << s.flags << " flags match a fault";
      EXPECT_GE(s.recall(), 0.9) << kind << ": " << s.found_faults << " of " << s.faults << " faults found";
      continue;
    }
    std::printf("BELOW BAR %s %s %.3f %.3f (%d faults)\n", kind.c_str(), c.Name().c_str(), s.precision(), s.recall(),
                s.faults);
    EXPECT_GE(s.faults, below->min_faults) << kind << ": fewer faults than the floor in kBelowBar";
    EXPECT_GE(s.precision(), below->min_precision)
        << kind << ": below its floor in kBelowBar: " << s.matched_flags << " of " << s.flags << " flags match a fault";
    EXPECT_GE(s.recall(), below->min_recall)
        << kind << ": below its floor in kBelowBar: " << s.found_faults << " of " << s.faults << " faults found";
    if (held_out) {
      EXPECT_FALSE(s.faults >= 5 && s.precision() >= 0.9 && s.recall() >= 0.9)
          << kind << " on " << c.Name() << " now reaches issue #14's bar: take it out of kBelowBar";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Configurations, DetectorQualityTest,
                         testing::Values(Configuration{"seren", 0.2}, Configuration{"kalos", 0.2},
                                         Configuration{"seren", 1.0}, Configuration{"kalos", 1.0}),
                         [](const testing::TestParamInfo<Configuration>& info) { return info.param.Name(); });

}  // namespace
}  // namespace acmetrace::processors
