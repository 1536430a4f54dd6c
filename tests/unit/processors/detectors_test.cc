// Each anomaly kind on hand-built records: when it opens, how hysteresis holds it, when it closes, and
// that a value hovering at a threshold does not make it flap. Detectors are made the way the binary
// makes them (DeclareDetectorConfig, MakeDetectors) and driven in event time only.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/record.h"
#include "acmetrace/processors/detector.h"
#include "detector_records.h"

namespace acmetrace::processors {
namespace {

using namespace test_records;  // kT0, Util, Job, End, Eight, EightWith, Values
const double kNone = core::kNoSample;

// One detector of a kind, made from the declared config (with overrides), fed like the engine feeds it.
class Harness {
 public:
  explicit Harness(const std::string& kind, const std::vector<std::pair<std::string, std::string>>& overrides = {}) {
    core::Config config;
    DeclareDetectorConfig(config);
    for (const auto& [k, v] : overrides) EXPECT_TRUE(config.Set(k, v).ok()) << k;
    for (auto& d : MakeDetectors(config)) {
      if (d->kind() == kind) detector_ = std::move(d);
    }
    EXPECT_NE(detector_, nullptr) << kind;
  }

  /// Observes record; first advances the watermark to just before it if it is later than the last.
  void Feed(const core::Record& record) {
    const int64_t ts = core::TimestampMsOf(record);
    if (ts > last_ms_ && last_ms_ != INT64_MIN) Advance(ts - 1);
    last_ms_ = std::max(last_ms_, ts);
    detector_->Observe(record);
  }
  void Advance(int64_t watermark_ms) {
    const size_t before = events_.size();
    detector_->AdvanceTo(watermark_ms, events_);
    for (size_t i = before; i < events_.size(); ++i) {
      EXPECT_LE(events_[i].ts_ms, watermark_ms) << "a transition beyond the watermark";
      if (i > 0) {
        EXPECT_GE(events_[i].ts_ms, events_[i - 1].ts_ms) << "transitions out of order";
      }
    }
  }
  void AdvanceSeconds(int64_t t_s) { Advance(t_s * 1000); }

  const std::vector<core::AnomalyEvent>& events() const { return events_; }
  int Opens() const {
    return static_cast<int>(std::count_if(events_.begin(), events_.end(), [](const auto& e) { return e.open; }));
  }
  int Closes() const { return static_cast<int>(events_.size()) - Opens(); }

 private:
  std::unique_ptr<Detector> detector_;
  std::vector<core::AnomalyEvent> events_;
  int64_t last_ms_ = INT64_MIN;
};

// ---- Registry -----------------------------------------------------------------------------------

TEST(DetectorRegistryTest, DeclaresEveryKindWithDefaultsAndHelp) {
  core::Config config;
  DeclareDetectorConfig(config);
  const std::vector<std::string> kinds = {"gpu_overheat",  "xid_error",     "telemetry_gap",
                                          "gpu_straggler", "util_drop",     "failure_burst",
                                          "queue_backlog", "large_job_failure", "node_failure"};
  for (const std::string& kind : kinds) EXPECT_TRUE(config.GetBool("detect." + kind + ".enabled")) << kind;
  for (const core::ConfigKey& key : config.keys()) {
    EXPECT_EQ(key.key.rfind("detect.", 0), 0u) << key.key;
    EXPECT_FALSE(key.help.empty()) << key.key;
  }
  EXPECT_DOUBLE_EQ(config.GetDouble("detect.gpu_overheat.open_c"), 85);
  std::vector<std::unique_ptr<Detector>> detectors = MakeDetectors(config);
  ASSERT_EQ(detectors.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(detectors[i]->kind(), kinds[i]);
}

TEST(DetectorRegistryTest, DisabledKindsAreNotMadeAndUnknownKeysAreErrors) {
  core::Config config;
  DeclareDetectorConfig(config);
  ASSERT_TRUE(config.LoadYamlText("detect:\n  xid_error.enabled: false\n  gpu_overheat.open_c: 90\n", "test").ok());
  for (const auto& d : MakeDetectors(config)) EXPECT_NE(d->kind(), "xid_error");
  EXPECT_DOUBLE_EQ(config.GetDouble("detect.gpu_overheat.open_c"), 90);
  EXPECT_FALSE(config.LoadYamlText("detect:\n  gpu_overheat.open_celsius: 90\n", "test").ok());
}

// ---- gpu_overheat -----------------------------------------------------------------------------------

TEST(GpuOverheatTest, OpensAfterSustainedHeatWithTheGpuAsSubject) {
  Harness h("gpu_overheat");
  for (int k = 0; k < 3; ++k) h.Feed(Util("10.140.1.10", kT0 + 15 * k, {{"GPU_TEMP", EightWith(60, 3, 88)}}));
  h.AdvanceSeconds(kT0 + 30);
  ASSERT_EQ(h.events().size(), 1u);  // 30 s at or above 85 C: open at the third sample
  const core::AnomalyEvent& e = h.events()[0];
  EXPECT_EQ(e.cluster, "seren");
  EXPECT_EQ(e.kind, "gpu_overheat");
  EXPECT_EQ(e.subject, "10.140.1.10-3");
  EXPECT_TRUE(e.open);
  EXPECT_EQ(e.ts_ms, (kT0 + 30) * 1000);
  EXPECT_DOUBLE_EQ(e.value, 88);
  EXPECT_DOUBLE_EQ(e.threshold, 85);
}

TEST(GpuOverheatTest, ASpikeDoesNotOpen) {
  Harness h("gpu_overheat");
  const double temps[] = {70, 90, 90, 70, 91, 70, 70};
  for (int k = 0; k < 7; ++k) h.Feed(Util("10.140.1.10", kT0 + 15 * k, {{"GPU_TEMP", EightWith(60, 0, temps[k])}}));
  h.AdvanceSeconds(kT0 + 200);
  EXPECT_TRUE(h.events().empty());
}

TEST(GpuOverheatTest, HysteresisHoldsBetweenThresholdsAndClosesAfterSustainedCooling) {
  Harness h("gpu_overheat");
  int64_t t = kT0;
  auto feed = [&](double temp, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) h.Feed(Util("lingjun-pod9-0016", t, {{"GPU_TEMP", EightWith(60, 5, temp)}}, "kalos"));
  };
  feed(90, 4);   // opens
  feed(83, 20);  // below open_c, above close_c: stays open
  feed(78, 4);   // below close_c for 45 s: not yet
  feed(86, 2);   // hot again: the close timer restarts
  feed(78, 8);   // below close_c for 105 s, then 120 s at the 9th sample
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.Closes(), 0);
  feed(78, 1);
  h.AdvanceSeconds(t);
  ASSERT_EQ(h.events().size(), 2u);
  EXPECT_EQ(h.events()[0].subject, "lingjun-pod9-0016-5");
  EXPECT_FALSE(h.events()[1].open);
  EXPECT_DOUBLE_EQ(h.events()[1].threshold, 80);
}

TEST(GpuOverheatTest, NoFlappingAroundTheThreshold) {
  Harness h("gpu_overheat");
  int64_t t = kT0;
  for (int k = 0; k < 200; ++k, t += 15) {
    h.Feed(Util("10.140.1.10", t, {{"GPU_TEMP", EightWith(60, 1, k % 2 ? 84 : 86)}}));
  }
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 0);  // never 30 s in a row at or above 85
  Harness g("gpu_overheat");
  t = kT0;
  for (int k = 0; k < 200; ++k, t += 15) {
    g.Feed(Util("10.140.1.10", t, {{"GPU_TEMP", EightWith(60, 1, k < 10 ? 90 : (k % 3 ? 84 : 79))}}));
  }
  g.AdvanceSeconds(t);
  EXPECT_EQ(g.Opens(), 1);  // once open, dips below close_c shorter than 120 s do not close it
  EXPECT_EQ(g.Closes(), 0);
}

TEST(GpuOverheatTest, MissingSamplesNeitherOpenNorClose) {
  Harness h("gpu_overheat");
  h.Feed(Util("10.140.1.10", kT0, {{"GPU_TEMP", EightWith(60, 2, 90)}}));
  h.Feed(Util("10.140.1.10", kT0 + 15, {{"GPU_TEMP", EightWith(60, 2, kNone)}}));
  h.Feed(Util("10.140.1.10", kT0 + 30, {{"GPU_TEMP", EightWith(60, 2, 90)}}));
  h.AdvanceSeconds(kT0 + 30);
  EXPECT_EQ(h.Opens(), 1);
}

// ---- xid_error ------------------------------------------------------------------------------------

TEST(XidErrorTest, OpensOnTheFirstCodeAndClosesOnceTheRegisterStaysClear) {
  Harness h("xid_error");
  int64_t t = kT0;
  auto feed = [&](double code, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) h.Feed(Util("10.140.1.10", t, {{"XID_ERRORS", EightWith(0, 6, code)}}));
  };
  feed(0, 4);
  feed(79, 1);
  h.AdvanceSeconds(t);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "10.140.1.10-6");
  EXPECT_DOUBLE_EQ(h.events()[0].value, 79);
  feed(79, 10);
  feed(0, 2);
  feed(48, 1);  // a new code while open: still one flag
  feed(0, 4);   // 0 for 45 s: not yet
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.Closes(), 0);
  feed(0, 1);  // 60 s clear
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Closes(), 1);
}

TEST(XidErrorTest, IgnoresConfiguredCodes) {
  Harness h("xid_error", {{"detect.xid_error.ignore_codes", "13,43"}});
  for (int k = 0; k < 10; ++k) h.Feed(Util("10.140.1.10", kT0 + 15 * k, {{"XID_ERRORS", EightWith(0, 1, 43)}}));
  h.AdvanceSeconds(kT0 + 200);
  EXPECT_EQ(h.Opens(), 0);
}

// ---- telemetry_gap ------------------------------------------------------------------------------

// One sample time of a cluster: every node in `nodes` reports.
void Tick(Harness& h, int64_t t, const std::vector<std::string>& nodes) {
  for (const std::string& n : nodes) h.Feed(Util(n, t, {{"GPU_UTIL", Eight(50)}}));
}

TEST(TelemetryGapTest, OpensWhenANodeIsSilentWhileItsClusterReportsAndClosesWhenItIsBack) {
  Harness h("telemetry_gap");
  const std::vector<std::string> all = {"10.140.0.131", "10.140.0.132", "10.140.0.133"};
  const std::vector<std::string> two = {"10.140.0.131", "10.140.0.133"};
  int64_t t = kT0;
  for (int k = 0; k < 4; ++k, t += 15) Tick(h, t, all);
  const int64_t last_seen = t - 15;
  for (int k = 0; k < 3; ++k, t += 15) Tick(h, t, two);  // silent 45 s: not yet
  h.AdvanceSeconds(t - 1);
  EXPECT_EQ(h.Opens(), 0);
  for (int k = 0; k < 8; ++k, t += 15) Tick(h, t, two);
  h.AdvanceSeconds(t - 1);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "10.140.0.132");
  EXPECT_EQ(h.events()[0].ts_ms, (last_seen + 60) * 1000);
  EXPECT_DOUBLE_EQ(h.events()[0].value, 60);
  Tick(h, t, all);  // back, but one sample is not enough
  t += 15;
  Tick(h, t, two);
  t += 15;
  for (int k = 0; k < 2; ++k, t += 15) Tick(h, t, all);
  h.AdvanceSeconds(t - 1);
  EXPECT_EQ(h.Closes(), 0);
  Tick(h, t, all);  // reported at three sample times in a row: 30 s
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Closes(), 1);
  EXPECT_EQ(h.events().back().ts_ms, t * 1000);
}

TEST(TelemetryGapTest, ASingleMissedSampleOrASilentClusterIsNoGap) {
  Harness h("telemetry_gap");
  const std::vector<std::string> all = {"10.140.0.131", "10.140.0.132"};
  int64_t t = kT0;
  for (int k = 0; k < 40; ++k, t += 15) Tick(h, t, k % 3 == 1 ? std::vector<std::string>{"10.140.0.131"} : all);
  // The whole cluster silent for an hour (end of its files), while the watermark moves on.
  h.AdvanceSeconds(t + 3600);
  EXPECT_EQ(h.Opens(), 0);
}

// ---- gpu_straggler ------------------------------------------------------------------------------

TEST(GpuStragglerTest, OpensForAWorkingGpuFarBelowAgreeingPeersAndClosesWhenItRecovers) {
  Harness h("gpu_straggler");
  int64_t t = kT0;
  auto feed = [&](double straggler_sm, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      h.Feed(Util("10.140.1.10", t, {{"GPU_UTIL", Eight(99)}, {"SM_ACTIVE", EightWith(0.7, 4, straggler_sm)}}));
    }
  };
  feed(0.7, 130);  // working when first seen: level with its peers for level_for_unknown_s (30 min)
  feed(0.2, 30);   // 7.5 minutes at 30% of its peers
  h.AdvanceSeconds(t);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "10.140.1.10-4");
  EXPECT_LT(h.events()[0].value, 0.6);
  feed(0.5, 40);  // ~71% of peers: between the thresholds, stays open
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Closes(), 0);
  feed(0.7, 40);
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Closes(), 1);
  EXPECT_EQ(h.Opens(), 1);
}

TEST(GpuStragglerTest, IdleGpusAndNodesSharedByUnlikeJobsAreNotStragglers) {
  Harness h("gpu_straggler");
  for (int k = 0; k < 80; ++k) {
    const int64_t t = kT0 + 15 * k;
    // GPU 2 idle next to a busy 7-GPU job.
    h.Feed(Util("10.140.1.10", t, {{"GPU_UTIL", EightWith(99, 2, 0)}, {"SM_ACTIVE", EightWith(0.7, 2, 0)}}));
    // Eight one-GPU jobs of different intensity: the peers disagree.
    h.Feed(Util("10.140.1.11", t,
                {{"GPU_UTIL", Eight(99)}, {"SM_ACTIVE", Values{0.9, 0.2, 0.6, 0.35, 0.8, 0.45, 0.7, 0.3}}}));
  }
  h.AdvanceSeconds(kT0 + 15 * 80);
  EXPECT_EQ(h.Opens(), 0);
}

// Issue #14: `synth --clusters seren --days 2 --scale 0.2 --seed 5` made 27 straggler flags of which 23
// false, on nodes shared by one-GPU jobs (the release's median GPU job). Every one opened 135-150 s
// after its GPU had started working: a job's start-up (loading, the smoothed SM catching up from
// idle) is not straggling.
TEST(GpuStragglerTest, AGpuWhoseJobHasJustStartedIsNotAStraggler) {
  Harness h("gpu_straggler");
  int64_t t = kT0;
  auto feed = [&](double util, double sm, double sm3, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      h.Feed(Util("10.140.1.10", t, {{"GPU_UTIL", Eight(util)}, {"SM_ACTIVE", EightWith(sm, 3, sm3)}}));
    }
  };
  feed(0, 0, 0, 40);         // the node idle for 10 minutes
  feed(98, 0.7, 0.3, 24);    // a job starts on all eight; GPU 3 loads its shard for 6 minutes at 40% of the others
  feed(99, 0.7, 0.7, 40);    // then runs like them
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 0) << "opened " << (h.events().empty() ? 0 : h.events()[0].ts_ms / 1000 - kT0 - 600)
                          << " s after the job started";
  // Once it has kept up with its peers, the same GPU falling behind is a straggler.
  feed(99, 0.7, 0.2, 30);
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 1);
}

// Issue #14 (scales 0.2 and 1, both clusters): a GPU was compared with the GPUs of another job on its
// node. Here a six-GPU job runs on GPUs 0-5; GPU 6 is idle, then runs a one-GPU job of its own that is
// as busy as the big one for a while, then in a lighter phase. Its job started apart from theirs: they
// are not its peers, and its lighter phase is not straggling.
TEST(GpuStragglerTest, AGpuIsNotComparedWithTheGpusOfAnotherJob) {
  Harness h("gpu_straggler");
  int64_t t = kT0;
  auto feed = [&](double util6, double sm6, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      h.Feed(Util("10.140.1.10", t,
                  {{"GPU_UTIL", Values{99, 99, 99, 99, 99, 99, util6, 0}},
                   {"SM_ACTIVE", Values{0.7, 0.7, 0.7, 0.7, 0.7, 0.7, sm6, 0}}}));
    }
  };
  feed(0, 0, 40);       // GPU 6 idle for 10 minutes
  feed(99, 0.7, 60);    // its own job: 15 minutes level with the big job
  feed(99, 0.25, 40);   // a lighter phase of 10 minutes
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 0);
}

// One node of a job on all eight GPUs, fed sample by sample: GPU_UTIL, SM_ACTIVE (GPU `odd` at its
// own value) and FB_USED, as DCGM reports them every 15 s.
struct StragglerNode {
  Harness h{"gpu_straggler"};
  int64_t t = kT0;
  void Feed(double util, double sm, double fb, int samples, size_t odd = 3, double odd_sm = -1,
            double odd_util = -1) {
    for (int k = 0; k < samples; ++k, t += 15) {
      h.Feed(Util("10.140.1.10", t,
                  {{"FB_USED", Eight(fb)},
                   {"GPU_UTIL", EightWith(util, odd, odd_util < 0 ? util : odd_util)},
                   {"SM_ACTIVE", EightWith(sm, odd, odd_sm < 0 ? sm : odd_sm)}}));
    }
  }
  // Idle without a job for 10 minutes, then a job loads (GPU_UTIL 0, memory filling) for 90 s.
  void StartJob(double fb) {
    Feed(0, 0, 0, 40);
    Feed(0, 0, fb, 6);
  }
};

// Issue #14: the stragglers missed on the held-out seeds were mostly placed within 10 minutes after
// their job paused for 30 s or more (checkpointing, loading: its GPUs idle together). The pause made
// a new run of work that had to warm up and then be level with its peers before it could be judged,
// which a GPU already straggling never is. A paused job holds its memory: its run goes on.
TEST(GpuStragglerTest, AStragglerRightAfterItsJobPausedIsFlagged) {
  StragglerNode n;
  n.StartJob(30000);
  n.Feed(99, 0.7, 30000, 60);  // 15 minutes, every GPU level
  n.Feed(0, 0, 30000, 8);      // the whole job pauses for 2 minutes, memory held
  const int64_t resumed = n.t;
  n.Feed(99, 0.7, 30000, 40, 3, 0.2);  // back, GPU 3 at 30% of its peers for 10 minutes
  n.h.AdvanceSeconds(n.t);
  ASSERT_EQ(n.h.Opens(), 1);
  EXPECT_EQ(n.h.events()[0].subject, "10.140.1.10-3");
  EXPECT_LE(n.h.events()[0].ts_ms, (resumed + 360) * 1000) << "open_for_s 240 after the smoothed value fell";
}

// The other side: after its job ended (memory freed) a GPU runs a new job, which may be lighter than
// the GPUs that started with it; it must be level with them first, as any new run.
TEST(GpuStragglerTest, AGpuLevelAfterAPauseOrInANewJobIsNotFlagged) {
  StragglerNode n;
  n.StartJob(30000);
  n.Feed(99, 0.7, 30000, 60);
  n.Feed(0, 0, 30000, 8);      // a pause
  n.Feed(99, 0.7, 30000, 40);  // level again
  n.Feed(0, 0, 0, 8);          // the job ends: memory freed
  n.Feed(0, 0, 20000, 6);      // a new one loads
  n.Feed(99, 0.7, 20000, 60, 3, 0.3);  // GPU 3 lighter from its start
  n.h.AdvanceSeconds(n.t);
  EXPECT_EQ(n.h.Opens(), 0);
}

// Issue #14 (tuning seed 6, Seren scale 1): a one-GPU job that started with a bigger job is grouped
// with it and may be level with it for a while. When it idles on its own while the others work on, it
// is not their job: its memory held through the pause does not keep it in their group.
TEST(GpuStragglerTest, AGpuThatPausesWhileItsPeersWorkOnIsNotTheirs) {
  StragglerNode n;
  n.StartJob(30000);
  n.Feed(99, 0.7, 30000, 60);
  n.Feed(99, 0.7, 30000, 8, 7, 0, 0);     // GPU 7 alone idles for 2 minutes, memory held
  n.Feed(99, 0.7, 30000, 60, 7, 0.3);     // then runs a lighter phase
  n.h.AdvanceSeconds(n.t);
  EXPECT_EQ(n.h.Opens(), 0);
}

// Two GPUs lagging the others together, by the same share, are a lighter job started with the
// others, not two stragglers (issue #14).
TEST(GpuStragglerTest, GpusLaggingTogetherAreNotStragglers) {
  StragglerNode n;
  n.StartJob(30000);
  n.Feed(99, 0.7, 30000, 60);
  for (int k = 0; k < 60; ++k, n.t += 15) {
    n.h.Feed(Util("10.140.1.10", n.t,
                  {{"FB_USED", Eight(30000)},
                   {"GPU_UTIL", Eight(99)},
                   {"SM_ACTIVE", Values{0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.25, 0.25}}}));
  }
  n.h.AdvanceSeconds(n.t);
  EXPECT_EQ(n.h.Opens(), 0);
}

// Issue #14: a job's GPUs are level from the moment they compute; counting that only after warmup_s
// meant a GPU falling behind in its job's first 10 minutes was never judged.
TEST(GpuStragglerTest, AStragglerSixMinutesIntoItsJobIsFlagged) {
  StragglerNode n;
  n.StartJob(30000);
  n.Feed(99, 0.7, 30000, 24);           // 6 minutes level
  n.Feed(99, 0.7, 30000, 40, 3, 0.2);   // then GPU 3 at 30% for 10 minutes
  n.h.AdvanceSeconds(n.t);
  ASSERT_EQ(n.h.Opens(), 1);
  EXPECT_EQ(n.h.events()[0].subject, "10.140.1.10-3");
}

// Issue #14 (seeds 25-40, Kalos): a job's GPUs swing low together every 10-20 minutes (its activity
// is a process its GPUs share), so its peers are not busy enough to compare with for a few minutes.
// That says nothing about whether a GPU keeps up: such a dip ended its level spell, and a GPU already
// working when first seen, which must be level for level_for_unknown_s (30 min), never was, so its
// straggler went unflagged. Only a comparison that finds it lagging ends a level spell now.
TEST(GpuStragglerTest, AJobSwingingLowTogetherDoesNotHideItsStraggler) {
  StragglerNode n;
  for (int cycle = 0; cycle < 4; ++cycle) {
    n.Feed(99, 0.7, 30000, 48);   // 12 minutes computing, every GPU level (working when first seen)
    n.Feed(99, 0.05, 30000, 12);  // 3 minutes of a low phase on every GPU: no comparison
  }
  n.Feed(99, 0.7, 30000, 8);
  n.Feed(99, 0.7, 30000, 40, 4, 0.2);  // GPU 4 at 30% of its peers for 10 minutes
  n.h.AdvanceSeconds(n.t);
  ASSERT_EQ(n.h.Opens(), 1);
  EXPECT_EQ(n.h.events()[0].subject, "10.140.1.10-4");
}

// The other side: time without a comparison does not count as level either. Level for 10 minutes,
// then 25 minutes in which its peers are never busy, then 5 more level: 15 minutes compared, short of
// level_for_unknown_s, so its lagging after is not yet a straggler's (it may be a lighter job's).
TEST(GpuStragglerTest, TimeWithoutAComparisonDoesNotCountAsLevel) {
  StragglerNode n;
  n.Feed(99, 0.7, 30000, 40);
  n.Feed(99, 0.05, 30000, 100);
  n.Feed(99, 0.7, 30000, 20);
  n.Feed(99, 0.7, 30000, 40, 4, 0.2);
  n.h.AdvanceSeconds(n.t);
  EXPECT_EQ(n.h.Opens(), 0);
  // Lagging when compared ended its spell; level for 30 minutes from there, it is judged.
  n.Feed(99, 0.7, 30000, 130);
  n.Feed(99, 0.7, 30000, 40, 4, 0.2);
  n.h.AdvanceSeconds(n.t);
  EXPECT_EQ(n.h.Opens(), 1);
}

// Issue #14 (Seren 0.2, blind seed 128): a straggler of 7 minutes whose job paused twice (every GPU idle,
// memory held) lagged 225, 60 and 45 s between the pauses: each pause restarted open_for_s (240 s), so it
// was never flagged. Time without a comparison now neither counts toward open_for_s nor restarts it;
// only a comparison that finds the GPU keeping up does.
TEST(GpuStragglerTest, AStragglerLaggingBetweenItsJobsPausesIsFlagged) {
  StragglerNode n;
  n.StartJob(30000);
  n.Feed(99, 0.7, 30000, 40);  // 10 minutes, every GPU level
  // Lagging 150 s, then level for a minute, twice: each lagging spell is short of open_for_s.
  for (int k = 0; k < 2; ++k) {
    n.Feed(99, 0.7, 30000, 10, 3, 0.2);
    n.Feed(99, 0.7, 30000, 8);
  }
  n.h.AdvanceSeconds(n.t);
  EXPECT_EQ(n.h.Opens(), 0) << "a comparison that finds it level still starts the count again";
  // Lagging 150 s, then its job pauses for 30 s (GPU_UTIL 0 everywhere, memory held), three times.
  for (int k = 0; k < 3; ++k) {
    n.Feed(99, 0.7, 30000, 10, 3, 0.2);
    n.Feed(0, 0, 30000, 2);
  }
  n.Feed(99, 0.7, 30000, 4, 3, 0.2);
  n.h.AdvanceSeconds(n.t);
  ASSERT_EQ(n.h.Opens(), 1);
  EXPECT_EQ(n.h.events()[0].subject, "10.140.1.10-3");
}

// ---- util_drop ----------------------------------------------------------------------------------

// Two nodes of 8 GPUs; util and FB_USED per GPU.
void UtilRow(Harness& h, int64_t t, double util, double fb, double util_b, double fb_b) {
  h.Feed(Util("10.140.0.131", t, {{"FB_USED", Eight(fb)}, {"GPU_UTIL", Eight(util)}}));
  h.Feed(Util("10.140.0.132", t, {{"FB_USED", Eight(fb_b)}, {"GPU_UTIL", Eight(util_b)}}));
}

TEST(UtilDropTest, OpensWhenMostBusyGpusFallBelowTheirBaselineAndClosesOnRecovery) {
  Harness h("util_drop");
  int64_t t = kT0;
  for (int k = 0; k < 80; ++k, t += 15) UtilRow(h, t, 95, 40000, 90, 40000);  // 20 min of baseline
  const int64_t drop = t;
  for (int k = 0; k < 40; ++k, t += 15) UtilRow(h, t, 40, 40000, 45, 40000);  // storage stall: 10 min
  h.AdvanceSeconds(t - 1);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "seren");
  // open_for_s 420 (issue #14: a big job's pauses of a few minutes are no drop) after the short-term
  // averages have fallen.
  EXPECT_GE(h.events()[0].ts_ms, (drop + 420) * 1000);
  EXPECT_LE(h.events()[0].ts_ms, (drop + 540) * 1000);
  EXPECT_DOUBLE_EQ(h.events()[0].value, 1.0);  // every busy GPU is down
  for (int k = 0; k < 40; ++k, t += 15) UtilRow(h, t, 95, 40000, 90, 40000);
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Closes(), 1);
  EXPECT_EQ(h.Opens(), 1);
}

// Issue #14 (synth generation 5, Kalos 1, seed 67): a drop pending (the share above open_share, not yet
// for open_for_s) when the cluster's counted GPUs fell under min_gpus (its big jobs ended) stayed pending
// for good: nothing was judged any more, the baselines wait for no pending change to learn, so no GPU of
// a later job was ever counted, and the day's four drops went unflagged. Too few GPUs to judge now ends
// the pending drop.
TEST(UtilDropTest, ADropPendingWhenTheJobsEndDoesNotBlindTheDetector) {
  Harness h("util_drop");
  int64_t t = kT0;
  for (int k = 0; k < 80; ++k, t += 15) UtilRow(h, t, 95, 40000, 90, 40000);  // 20 min of baseline
  for (int k = 0; k < 8; ++k, t += 15) UtilRow(h, t, 30, 40000, 30, 40000);   // 2 minutes down: pending
  for (int k = 0; k < 40; ++k, t += 15) UtilRow(h, t, 0, 0, 0, 0);            // both jobs end: nobody busy
  for (int k = 0; k < 120; ++k, t += 15) UtilRow(h, t, 95, 30000, 90, 30000);  // new jobs, 30 minutes
  h.AdvanceSeconds(t - 1);
  EXPECT_EQ(h.Opens(), 0);
  for (int k = 0; k < 40; ++k, t += 15) UtilRow(h, t, 40, 30000, 45, 30000);  // storage stall: 10 min
  h.AdvanceSeconds(t - 1);
  EXPECT_EQ(h.Opens(), 1);
}

TEST(UtilDropTest, JobsEndingOrStartingAreNoDrop) {
  Harness h("util_drop");
  int64_t t = kT0;
  for (int k = 0; k < 80; ++k, t += 15) UtilRow(h, t, 95, 40000, 90, 40000);
  for (int k = 0; k < 40; ++k, t += 15) UtilRow(h, t, 95, 40000, 0, 0);  // the second node's job ended
  for (int k = 0; k < 40; ++k, t += 15) UtilRow(h, t, 95, 40000, k < 6 ? 0 : 90, 30000);  // a new job loads
  h.AdvanceSeconds(t);
  EXPECT_EQ(h.Opens(), 0);
}

// A cluster of 9 nodes: one job of 48 GPUs on nodes 0-5, busy when the telemetry starts, and three
// jobs of 8 GPUs on nodes 6-8 that start 2, 4 and 6 minutes later (or, small_jobs_later false, one job
// of 24 GPUs there, busy when the telemetry starts too). util(node, t) gives each node's GPU_UTIL; every
// node holds memory once its job has started.
template <class UtilOf>
void NineNodes(Harness& h, int64_t from, int64_t to, UtilOf util, bool small_jobs_later = true) {
  for (int64_t t = from; t < to; t += 15) {
    for (int n = 0; n < 9; ++n) {
      const bool started = n < 6 || !small_jobs_later || t >= kT0 + 120 * (n - 5);
      h.Feed(Util("10.140.0." + std::to_string(10 + n), t,
                  {{"FB_USED", Eight(started ? 40000 : 0)}, {"GPU_UTIL", Eight(started ? util(n, t) : 0)}}));
    }
  }
}

TEST(UtilDropTest, ASingleBigJobsSlowPhaseIsNoDrop) {
  // Issue #14 (Seren at scale 1, seed 38): a job of about 1,000 GPUs, two thirds of those holding memory,
  // idled through a slow phase of 11-18 minutes. A stall of shared storage or the network slows every
  // job; here only the big job (48 of 72 GPUs, 0.67 down) does, and the other three work on.
  Harness h("util_drop");
  const int64_t slow = kT0 + 3600;
  NineNodes(h, kT0, slow + 1200, [&](int n, int64_t t) { return n < 6 && t >= slow ? 0.0 : 90.0; });
  h.AdvanceSeconds(slow + 1200);
  EXPECT_EQ(h.Opens(), 0);
}

TEST(UtilDropTest, ADropAcrossSeveralJobsIsADrop) {
  // The same cluster, but the drop reaches the big job and two of the three others (the third keeps
  // working, as a job reading from local disk would): 64 of 72 GPUs down, 16 of the 24 outside the big job.
  Harness h("util_drop");
  const int64_t stall = kT0 + 3600;
  NineNodes(h, kT0, stall + 1200, [&](int n, int64_t t) { return n < 8 && t >= stall ? 30.0 : 90.0; });
  h.AdvanceSeconds(stall + 1200);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "seren");
  EXPECT_GE(h.events()[0].ts_ms, (stall + 420) * 1000);
  EXPECT_NEAR(h.events()[0].value, 64.0 / 72.0, 1e-9);  // the share of the cluster's GPUs down
}

TEST(UtilDropTest, ABigJobsSlowPhaseIsNoDropWhenEveryJobRanBeforeTheTelemetry) {
  // Issue #14 (Kalos at scale 1, fresh seeds 137-152): two jobs of 1,024 GPUs ran from before the day,
  // so their GPUs' memory use "started" together with the telemetry and counted as one job, and one's
  // slow phase opened the flag. Here two jobs of 48 and 24 GPUs, both running when the telemetry starts:
  // the big one's GPUs go down together (two thirds of the counted GPUs), the other job's do not.
  Harness h("util_drop");
  const int64_t slow = kT0 + 3600;
  NineNodes(h, kT0, slow + 1200, [&](int n, int64_t t) { return n < 6 && t >= slow ? 0.0 : 90.0; }, false);
  h.AdvanceSeconds(slow + 1200);
  EXPECT_EQ(h.Opens(), 0);
}

TEST(UtilDropTest, AStallOfTheJobsThatRanBeforeTheTelemetryIsADrop) {
  // The same cluster: a stall that every job notices at once, or the small one two minutes later (its
  // next read of shared storage), opens the flag; so does one inside which some GPUs recover a while.
  for (const int64_t later_s : {0, 120}) {
    Harness h("util_drop");
    const int64_t stall = kT0 + 3600;
    NineNodes(h, kT0, stall + 1200, [&](int n, int64_t t) { return t >= stall + (n < 6 ? 0 : later_s) ? 20.0 : 90.0; },
              false);
    h.AdvanceSeconds(stall + 1200);
    ASSERT_EQ(h.Opens(), 1) << "noticed " << later_s << " s later";
    EXPECT_GE(h.events()[0].ts_ms, (stall + later_s + 420) * 1000);
  }
  // The small job's GPUs back up for two minutes inside the stall: they went down with the big job's,
  // so they stay its GPUs (their last spell down started with its own) and the count goes on.
  Harness h("util_drop");
  const int64_t stall = kT0 + 3600;
  NineNodes(
      h, kT0, stall + 1200,
      [&](int n, int64_t t) {
        const bool back_up = n >= 6 && t >= stall + 180 && t < stall + 300;
        return t >= stall && !back_up ? 20.0 : 90.0;
      },
      false);
  h.AdvanceSeconds(stall + 1200);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_LE(h.events()[0].ts_ms, (stall + 540) * 1000) << "the small job's recovery restarted open_for_s";
}

// ---- failure_burst ------------------------------------------------------------------------------

TEST(FailureBurstTest, OpensWhenManyUsersJobsFailAtOnceAndCloses) {
  Harness h("failure_burst");
  int64_t t = kT0;
  int id = 0;
  for (int k = 0; k < 12; ++k, t += 600) {  // two hours at one failure per 10 minutes
    h.Feed(End(std::to_string(++id), t, 8, "FAILED", "u" + std::to_string(k)));
  }
  for (int k = 0; k < 3; ++k) h.Feed(End(std::to_string(++id), t + 10 * k, 8, "COMPLETED", "ux"));
  h.AdvanceSeconds(t + 60);
  EXPECT_EQ(h.Opens(), 0);
  for (int k = 0; k < 8; ++k) h.Feed(End(std::to_string(++id), t + 100 + 20 * k, 1, "FAILED", "v" + std::to_string(k)));
  h.AdvanceSeconds(t + 300);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "seren");
  EXPECT_GE(h.events()[0].value, h.events()[0].threshold);
  h.AdvanceSeconds(t + 3600);  // the window empties
  EXPECT_EQ(h.Closes(), 1);
  EXPECT_EQ(h.Opens(), 1);
}

TEST(FailureBurstTest, OneUsersSweepAndCpuJobsAreNoBurst) {
  Harness h("failure_burst");
  int64_t t = kT0;
  int id = 0;
  for (int k = 0; k < 12; ++k, t += 600) h.Feed(End(std::to_string(++id), t, 8, "FAILED", "u" + std::to_string(k)));
  for (int k = 0; k < 20; ++k) h.Feed(End(std::to_string(++id), t + 10 * k, 1, "FAILED", "u0042"));
  for (int k = 0; k < 20; ++k) h.Feed(End(std::to_string(++id), t + 300 + k, 0, "FAILED", "c" + std::to_string(k)));
  h.AdvanceSeconds(t + 3600);
  EXPECT_EQ(h.Opens(), 0);
}

TEST(FailureBurstTest, AQuietClustersHistoryStartsWithItsTelemetryNotItsFirstJob) {
  // Issue #14: a Kalos at scale 0.2 ran its first job 43 minutes into the day, and a burst an hour after
  // that was not judged: min_history_s counted from the first job, though the telemetry had shown the
  // cluster failing nothing since the day began.
  Harness h("failure_burst");
  const int64_t t = kT0 + 2 * 3600;
  for (int64_t s = kT0; s < t; s += 900) h.Feed(Util("10.140.1.10", s, {{"GPU_UTIL", Eight(50)}}));
  h.Feed(End("1", t, 8, "COMPLETED", "u0"));  // the first job, then a burst 15 minutes later
  for (int k = 0; k < 8; ++k) h.Feed(End(std::to_string(10 + k), t + 900 + 30 * k, 1, "FAILED", "v" + std::to_string(k)));
  h.AdvanceSeconds(t + 1800);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_GE(h.events()[0].ts_ms, (t + 900) * 1000);
}

TEST(FailureBurstTest, AnIncidentsUsersFailingOnAfterwardsAreNoNewBurstEveryHalfHour) {
  // Issue #14: a user counted once per dedupe_s was counted again every half hour while their jobs kept
  // failing; the users of one incident, resubmitting into the same fault, then made another burst each
  // half hour. A user counts when starting to fail (none of theirs in the dedupe_s before).
  Harness h("failure_burst");
  std::vector<std::pair<int64_t, std::string>> failures;  // (time, user)
  for (int k = 0; k < 24; ++k) failures.emplace_back(kT0 + k * 600, "u" + std::to_string(k));  // 4 h, 6 an hour
  const int64_t t = kT0 + 3 * 3600;
  for (int u = 0; u < 8; ++u) {  // 8 users fail at once, then every 5 minutes for two hours
    for (int64_t s = t; s < t + 7200; s += 300) failures.emplace_back(s + u, "v" + std::to_string(u));
  }
  std::sort(failures.begin(), failures.end());
  int id = 0;
  for (const auto& [at, user] : failures) h.Feed(End(std::to_string(++id), at, 8, "FAILED", user));
  h.AdvanceSeconds(t + 7200 + 1800);
  ASSERT_GE(h.Opens(), 1);
  EXPECT_LE(h.events()[0].ts_ms, (t + 120) * 1000);
  EXPECT_EQ(h.Opens(), 1);
}

TEST(FailureBurstTest, ABurstDoesNotRaiseTheRateItIsJudgedAgainst) {
  // Issue #14 (a 0.2 Kalos, 04:10): after four quiet hours (3 users starting to fail), 5 users started
  // failing within 21 minutes. The six-hour baseline counted the burst's own failures, so a 30-minute
  // window expected 0.87 of them (1.7 an hour where the hours before had 0.7): best score 4.6, under
  // open_score 6. A window is now judged against the hours before it. Here 5 users in 24 minutes: in
  // 25 minutes, 5 against the floor of 1 an hour (score 7.8), not against 1.5 an hour (5.9).
  Harness h("failure_burst");
  const int64_t quiet[] = {kT0 + 2160, kT0 + 5580, kT0 + 10980};
  int id = 0;
  for (int64_t s = kT0; s < kT0 + 4 * 3600; s += 900) {  // the telemetry starts the cluster's history
    for (int k = 0; k < 3; ++k) {
      if (quiet[k] >= s - 900 && quiet[k] < s) {
        h.Feed(End(std::to_string(++id), quiet[k], 1, "FAILED", "u" + std::to_string(k)));
      }
    }
    h.Feed(Util("10.140.1.10", s, {{"GPU_UTIL", Eight(50)}}));
  }
  const int64_t t = kT0 + 4 * 3600 + 600;
  for (int k = 0; k < 5; ++k) h.Feed(End(std::to_string(++id), t + 360 * k, 1, "FAILED", "v" + std::to_string(k)));
  h.AdvanceSeconds(t + 1800);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_GE(h.events()[0].ts_ms, (t + 1440) * 1000);
  EXPECT_LE(h.events()[0].threshold, 0.5 + 1e-9);  // the floor, 1 an hour, over at most 30 minutes
}

TEST(FailureBurstTest, JobsSubmittedBeforeATraceCutFromALongerOneBeginsAreNoQuietHistory) {
  // Issue #22: a day cut from the release (synth's twin too) holds the jobs submitted before it that
  // are still pending or running when it begins, and none that ended before. Read from the first
  // submit, those six hours fail nothing, and the day's ordinary failures (three users' jobs within a
  // minute every half hour, as ever) were bursts against them.
  Harness h("failure_burst");
  for (int k = 0; k < 36; ++k) h.Feed(Job(core::JobEventKind::kSubmit, "early" + std::to_string(k), kT0 - 6 * 3600 + 600 * k, 8));
  int id = 0;
  for (int64_t t = kT0; t < kT0 + 4 * 3600; t += 1800) {
    for (int k = 0; k < 3; ++k, ++id) h.Feed(End(std::to_string(id), t + 20 * k, 8, "FAILED", "u" + std::to_string(id % 12)));
    for (int k = 0; k < 3; ++k) h.Feed(End("c" + std::to_string(id + k), t + 900 + 20 * k, 8, "COMPLETED", "w" + std::to_string(k)));
  }
  h.AdvanceSeconds(kT0 + 4 * 3600);
  for (const core::AnomalyEvent& e : h.events()) {
    ADD_FAILURE() << (e.open ? "open" : "close") << " at " << (e.ts_ms / 1000 - kT0) << " s: " << e.value
                  << " failures where " << e.threshold << " were expected";
  }
}

TEST(FailureBurstTest, FailuresAsManyAsTheAfternoonsRateAreNoBurstThoughTheMorningWasQuieter) {
  // Issue #14: a cluster fails more users' jobs in the afternoon than at night (synth's working-hours
  // rhythm, 2-3x); the six-hour baseline still holds the morning, so a clump that is ordinary for the
  // afternoon was flagged (Seren at scale 1, 14:00-15:00). A window expects at least the rate of the
  // two hours before it (recent_s).
  auto afternoon = [](Harness& h, int extra_users) {
    const int per_hour[] = {6, 9, 12, 16, 20, 24, 28, 28};  // users failing per hour, rising
    std::vector<std::pair<int64_t, std::string>> failures;  // (time, user)
    for (int hour = 0; hour < 8; ++hour) {
      for (int k = 0; k < per_hour[hour]; ++k) {
        failures.emplace_back(kT0 + hour * 3600 + k * 3600 / per_hour[hour], "u" + std::to_string(failures.size()));
      }
    }
    for (int k = 0; k < extra_users; ++k) {  // on top, in the last hour's first 15 minutes
      failures.emplace_back(kT0 + 7 * 3600 + 1 + k * 900 / extra_users, "x" + std::to_string(k));
    }
    std::sort(failures.begin(), failures.end());
    for (const auto& [t, user] : failures) h.Feed(End(user, t, 8, "FAILED", user));
    h.AdvanceSeconds(kT0 + 8 * 3600);
  };
  Harness usual("failure_burst");
  afternoon(usual, 8);  // 15 in 15 minutes where the last two hours had 6.5 (the last six 4.5)
  for (const core::AnomalyEvent& e : usual.events()) {
    ADD_FAILURE() << (e.open ? "open" : "close") << " at " << (e.ts_ms / 1000 - kT0) << " s: " << e.value
                  << " failures where " << e.threshold << " were expected";
  }
  Harness burst("failure_burst");
  afternoon(burst, 30);
  EXPECT_EQ(burst.Opens(), 1);
}

TEST(FailureBurstTest, ABusyClustersChanceClumpIsNoBurstWhereAQuietClustersFewUsersAre) {
  // Issue #14: a busy cluster's rate wanders about its baseline of hours by more than Poisson's chance
  // (Seren at scale 1: 14 users starting to fail in 5 minutes where 3.9 were expected, no incident), so a
  // window is scored as a negative binomial count (rate_shape 40). Here 120 users an hour for six hours
  // (10 per 5 minutes, one every 30 s), then 15 more at once: 25 in 5 minutes scores 7.9 as Poisson,
  // 5.9 with rate_shape 40. The same rule still sees a quiet cluster's 5 users at once (score 15).
  auto busy = [](Harness& h) {
    const int64_t t = kT0 + 6 * 3600;
    for (int64_t s = kT0; s < t + 600; s += 30) {
      h.Feed(End("u" + std::to_string(s), s, 8, "FAILED", "u" + std::to_string(s)));
      if (s == t + 90) {  // at once, mid-way between two regular ones
        for (int k = 0; k < 15; ++k) h.Feed(End("x" + std::to_string(k), s + 15, 8, "FAILED", "x" + std::to_string(k)));
      }
    }
    h.AdvanceSeconds(t + 600);
  };
  Harness shaped("failure_burst");
  busy(shaped);
  for (const core::AnomalyEvent& e : shaped.events()) {
    ADD_FAILURE() << (e.open ? "open" : "close") << " at " << (e.ts_ms / 1000 - kT0) << " s: " << e.value
                  << " failures where " << e.threshold << " were expected";
  }
  Harness poisson("failure_burst", {{"detect.failure_burst.rate_shape", "0"}});
  busy(poisson);
  ASSERT_EQ(poisson.Opens(), 1);
  EXPECT_DOUBLE_EQ(poisson.events()[0].value, 25);
  EXPECT_NEAR(poisson.events()[0].threshold, 10, 1e-9);

  Harness quiet("failure_burst");
  const int64_t t = kT0 + 2 * 3600;
  for (int64_t s = kT0; s < t; s += 900) quiet.Feed(Util("10.140.1.10", s, {{"GPU_UTIL", Eight(50)}}));
  for (int k = 0; k < 5; ++k) quiet.Feed(End(std::to_string(k), t, 1, "FAILED", "v" + std::to_string(k)));
  quiet.AdvanceSeconds(t + 120);
  EXPECT_EQ(quiet.Opens(), 1);
}

// Issue #14 (development seeds 25-40): when a cluster's queue drains (a large job ends and many waiting
// jobs start at once), more jobs end in the minutes after, and more fail, at the cluster's usual share:
// 14 users starting to fail in 5 minutes where 3.9 were expected (Seren at scale 1), with 1.3x the jobs
// ending and 41-50% of them failed as all afternoon. A window expects at least the failures per user
// starting to end jobs not failed of the hours before, times such users in it.
// Six hours of 2 users failing and 3 completing per 10 minutes, then 8 users failing within 5 minutes
// while extra_completed jobs complete (of as many users, or of one user's sweep).
void FailuresAfterSixUsualHours(Harness& h, int extra_completed, bool one_user) {
  std::vector<std::tuple<int64_t, std::string, std::string>> ends;  // (time, state, user)
  int users = 0;
  for (int64_t s = kT0; s < kT0 + 6 * 3600; s += 600) {
    for (int k = 0; k < 2; ++k) ends.emplace_back(s + 100 * k, "FAILED", "u" + std::to_string(++users));
    for (int k = 0; k < 3; ++k) ends.emplace_back(s + 50 + 150 * k, "COMPLETED", "u" + std::to_string(++users));
  }
  const int64_t t = kT0 + 6 * 3600;
  for (int k = 0; k < 8; ++k) ends.emplace_back(t + 35 * k, "FAILED", "v" + std::to_string(k));
  for (int k = 0; k < extra_completed; ++k) {
    ends.emplace_back(t + 25 * k, "COMPLETED", one_user ? "sweep" : "w" + std::to_string(k));
  }
  std::sort(ends.begin(), ends.end());
  int id = 0;
  for (const auto& [at, state, user] : ends) h.Feed(End(std::to_string(++id), at, 8, state, user));
  h.AdvanceSeconds(t + 1800);
}

TEST(FailureBurstTest, AQueueDrainingWithTheUsualFailedShareIsNoBurst) {
  // 8 users failing and 12.5 users ending jobs not failed in 5 minutes, where 1.5 end as a rule: 39%
  // failed, as all day. The rate of time (1 in 5 minutes) would score 8 ln 8 - 7 = 9.6 and open; the
  // endings raise it 3x ((12.5 + 4) / (1.5 + 4)): 8 ln(8 / 3) - 5 = 2.8.
  Harness drain("failure_burst");
  FailuresAfterSixUsualHours(drain, 11, false);
  for (const core::AnomalyEvent& e : drain.events()) {
    ADD_FAILURE() << (e.open ? "open" : "close") << " at " << (e.ts_ms / 1000 - kT0) << " s: " << e.value
                  << " failures where " << e.threshold << " were expected";
  }
}

TEST(FailureBurstTest, ManyUsersFailingWhileJobsEndAtTheUsualRateAreABurst) {
  // The same 8 users failing in 5 minutes, with the usual 1.5 users ending jobs not failed: a burst.
  Harness burst("failure_burst");
  FailuresAfterSixUsualHours(burst, 0, false);
  EXPECT_EQ(burst.Opens(), 1);
  // One user's sweep of 11 jobs completing is one user ending jobs, not a queue draining: still a burst
  // (1.2 expected).
  Harness sweep("failure_burst");
  FailuresAfterSixUsualHours(sweep, 11, true);
  EXPECT_EQ(sweep.Opens(), 1);
}

// ---- queue_backlog ------------------------------------------------------------------------------

TEST(QueueBacklogTest, OpensWhenWaitingDemandStaysHighAndClosesWhenTheJobsStart) {
  Harness h("queue_backlog");
  int64_t t = kT0;
  int id = 0;
  h.Feed(Util("10.140.0.1", t, {{"GPU_UTIL", Eight(90)}}));  // the cluster's history starts here
  for (int k = 0; k < 24; ++k, t += 300) {  // two hours of jobs that start within a minute
    h.Feed(Job(core::JobEventKind::kSubmit, std::to_string(++id), t, 8));
    h.Feed(Job(core::JobEventKind::kStart, std::to_string(id), t + 40, 8));
  }
  const int64_t big = t;
  h.Feed(Job(core::JobEventKind::kSubmit, "big", big, 512));
  h.AdvanceSeconds(big + 600 + 1700);  // waiting 10 min, then high for 28 min: not yet
  EXPECT_EQ(h.Opens(), 0);
  h.AdvanceSeconds(big + 600 + 1860);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_DOUBLE_EQ(h.events()[0].value, 512);
  h.Feed(Job(core::JobEventKind::kStart, "big", big + 3000, 512));
  h.AdvanceSeconds(big + 3000 + 540);
  EXPECT_EQ(h.Closes(), 0);
  h.AdvanceSeconds(big + 3000 + 700);
  EXPECT_EQ(h.Closes(), 1);
}

TEST(QueueBacklogTest, JobsWaitingWhenATraceCutFromALongerOneBeginsAreNoBacklog) {
  // A day cut from the release (synth's twin too) holds the jobs submitted before it that are still
  // pending when it begins, and none of those that started and ended before: a few from hours ago,
  // many from its last hour. Read from the first submit, that queue of survivors is quiet for hours
  // and then steep: 768 GPUs against a median of 128 opened the flag at the day's start. Its history
  // starts with the day's telemetry (or first job end), where the queue is what it is.
  Harness h("queue_backlog");
  h.Feed(Job(core::JobEventKind::kSubmit, "early0", kT0 - 6 * 3600, 64));
  h.Feed(Job(core::JobEventKind::kSubmit, "early1", kT0 - 5 * 3600, 64));
  for (int k = 0; k < 10; ++k) h.Feed(Job(core::JobEventKind::kSubmit, "late" + std::to_string(k), kT0 - 3000 + 240 * k, 64));
  int64_t t = kT0;
  h.Feed(Util("10.140.0.1", t, {{"GPU_UTIL", Eight(90)}}));
  t += 1800;
  for (int k = 0; k < 10; ++k, t += 600) h.Feed(Job(core::JobEventKind::kStart, "late" + std::to_string(k), t, 64));
  h.AdvanceSeconds(t + 3600);
  EXPECT_EQ(h.Opens(), 0);
}

// ---- large_job_failure and node_failure ------------------------------------------------------------

TEST(LargeJobFailureTest, FlagsLargeFailedJobsForHoldSeconds) {
  Harness h("large_job_failure");
  h.Feed(End("5778432", kT0, 512, "FAILED"));
  h.Feed(End("5778433", kT0 + 10, 512, "COMPLETED"));
  h.Feed(End("5778434", kT0 + 20, 64, "FAILED"));
  h.Feed(End("5778435", kT0 + 30, 256, "TIMEOUT"));
  h.AdvanceSeconds(kT0 + 599);
  ASSERT_EQ(h.Opens(), 2);
  EXPECT_EQ(h.events()[0].subject, "5778432");
  EXPECT_DOUBLE_EQ(h.events()[0].value, 512);
  EXPECT_EQ(h.events()[1].subject, "5778435");
  EXPECT_EQ(h.Closes(), 0);
  h.AdvanceSeconds(kT0 + 700);
  EXPECT_EQ(h.Closes(), 2);
  EXPECT_EQ(h.events()[2].ts_ms, (kT0 + 600) * 1000);
}

TEST(LargeJobFailureTest, OnAClusterTooSmallForTheReleasesLargeJobsAThirdOfItIsLarge) {
  // Issue #14: synth at scale 0.2 narrows the large pretraining jobs to at most half the cluster (224 of
  // a 0.2 Seren's 456 GPUs); none reached 256 GPUs, so none was ever flagged.
  Harness h("large_job_failure");
  for (int n = 0; n < 57; ++n) h.Feed(Util("10.140.0." + std::to_string(n), kT0, {{"GPU_UTIL", Eight(90)}}));
  for (int n = 0; n < 50; ++n) h.Feed(Util("10.140.0." + std::to_string(n), kT0 + 15, {{"GPU_UTIL", Eight(90)}}));
  h.Feed(End("5778432", kT0 + 20, 224, "FAILED"));
  h.Feed(End("5778433", kT0 + 30, 128, "FAILED"));  // a mid-sized job of the release is not large here either
  h.Feed(End("5778434", kT0 + 40, 224, "COMPLETED"));
  h.AdvanceSeconds(kT0 + 599);
  ASSERT_EQ(h.Opens(), 1);
  EXPECT_EQ(h.events()[0].subject, "5778432");
  EXPECT_DOUBLE_EQ(h.events()[0].value, 224);
  EXPECT_DOUBLE_EQ(h.events()[0].threshold, 152);  // a third of the most GPUs sampled at one time, 456

  // A cluster of the release's size, or one whose telemetry is not read, keeps min_gpus.
  Harness big("large_job_failure");
  for (int n = 0; n < 286; ++n) big.Feed(Util("10.140.1." + std::to_string(n), kT0, {{"GPU_UTIL", Eight(90)}}));
  big.Feed(End("1", kT0 + 20, 224, "FAILED"));
  big.Feed(End("2", kT0 + 30, 256, "FAILED"));
  Harness jobs_only("large_job_failure");
  jobs_only.Feed(End("1", kT0 + 20, 224, "FAILED"));
  Harness off("large_job_failure", {{"detect.large_job_failure.cluster_share", "0"}});
  for (int n = 0; n < 57; ++n) off.Feed(Util("10.140.0." + std::to_string(n), kT0, {{"GPU_UTIL", Eight(90)}}));
  off.Feed(End("1", kT0 + 20, 224, "FAILED"));
  for (Harness* x : {&big, &jobs_only, &off}) x->AdvanceSeconds(kT0 + 599);
  ASSERT_EQ(big.Opens(), 1);
  EXPECT_EQ(big.events()[0].subject, "2");
  EXPECT_DOUBLE_EQ(big.events()[0].threshold, 256);
  EXPECT_EQ(jobs_only.Opens(), 0);
  EXPECT_EQ(off.Opens(), 0);
}

TEST(NodeFailureTest, FlagsNodeFailJobsByJobId) {
  Harness h("node_failure");
  h.Feed(End("dlctk696s0jbvitv", kT0, 64, "NODE_FAIL"));
  h.Feed(End("dlctk696s0jbvitw", kT0 + 5, 64, "FAILED"));
  h.AdvanceSeconds(kT0 + 700);
  ASSERT_EQ(h.events().size(), 2u);
  EXPECT_TRUE(h.events()[0].open);
  EXPECT_EQ(h.events()[0].kind, "node_failure");
  EXPECT_EQ(h.events()[0].subject, "dlctk696s0jbvitv");
  EXPECT_DOUBLE_EQ(h.events()[0].value, 8);  // nodes it held
  EXPECT_FALSE(h.events()[1].open);
  EXPECT_EQ(h.events()[1].ts_ms, (kT0 + 600) * 1000);
}

// ---- Ordering -------------------------------------------------------------------------------------

TEST(DetectorOrderTest, TransitionsComeInTimeThenSubjectOrderUpToTheWatermark) {
  Harness h("xid_error");
  h.Feed(Util("10.140.0.132", kT0, {{"XID_ERRORS", EightWith(0, 7, 31)}}));
  h.Feed(Util("10.140.0.131", kT0, {{"XID_ERRORS", Values{0, 0, 94, 0, 0, 0, 0, 0}}}));
  h.Feed(Util("10.140.0.131", kT0 + 15, {{"XID_ERRORS", Values{95, 0, 94, 0, 0, 0, 0, 0}}}));
  h.AdvanceSeconds(kT0);
  ASSERT_EQ(h.events().size(), 2u);  // the one at kT0 + 15 waits for the watermark
  EXPECT_EQ(h.events()[0].subject, "10.140.0.131-2");
  EXPECT_EQ(h.events()[1].subject, "10.140.0.132-7");
  h.AdvanceSeconds(kT0 + 15);
  ASSERT_EQ(h.events().size(), 3u);
  EXPECT_EQ(h.events()[2].subject, "10.140.0.131-0");
}

}  // namespace
}  // namespace acmetrace::processors
