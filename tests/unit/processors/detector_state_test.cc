// Detector state across a snapshot: for every kind, a detector fed A then B gives exactly the
// transitions of one fed A, saved, loaded into a fresh detector and fed B, at every cut of inputs that
// open and close a flag; a cluster's state is saved apart from the others'; a truncated state is an
// error. Event time only: no clock, no sleeps.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/record.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/state_codec.h"
#include "detector_records.h"

namespace acmetrace::processors {
namespace {

using namespace test_records;  // kT0, Util, Job, End, Eight, EightWith, Values

std::unique_ptr<Detector> MakeKind(const std::string& kind) {
  core::Config config;
  DeclareDetectorConfig(config);
  for (auto& d : MakeDetectors(config)) {
    if (d->kind() == kind) return std::move(d);
  }
  ADD_FAILURE() << "no detector " << kind;
  return nullptr;
}

/// What the engine does to a detector, step by step: observe a record, or advance the watermark.
/// Before a record later than the last one, the watermark moves to just before it (as the engine
/// closes windows), so transitions wait in the outbox across cuts.
class Script {
 public:
  using Step = std::variant<core::Record, int64_t>;  // a record, or a watermark (ms)

  void Feed(core::Record record) {
    const int64_t ts = core::TimestampMsOf(record);
    if (last_ms_ != INT64_MIN && ts > last_ms_) steps_.emplace_back(ts - 1);
    last_ms_ = std::max(last_ms_, ts);
    steps_.emplace_back(std::move(record));
  }
  void AdvanceSeconds(int64_t t_s) { steps_.emplace_back(t_s * 1000); }

  const std::vector<Step>& steps() const { return steps_; }

  /// The same script with every record's cluster replaced.
  Script InCluster(const std::string& cluster) const {
    Script out = *this;
    for (Step& s : out.steps_) {
      if (auto* r = std::get_if<core::Record>(&s)) std::visit([&](auto& v) { v.cluster = cluster; }, *r);
    }
    return out;
  }

 private:
  std::vector<Step> steps_;
  int64_t last_ms_ = INT64_MIN;
};

void Drive(Detector& d, const std::vector<Script::Step>& steps, size_t from, size_t to,
         std::vector<core::AnomalyEvent>& out) {
  for (size_t i = from; i < to; ++i) {
    if (const auto* r = std::get_if<core::Record>(&steps[i])) {
      d.Observe(*r);
    } else {
      d.AdvanceTo(std::get<int64_t>(steps[i]), out);
    }
  }
}

std::string Text(const std::vector<core::AnomalyEvent>& events) {
  std::string out;
  for (const core::AnomalyEvent& e : events) core::AppendFramedLine(out, core::Record(e));
  return out;
}

// ---- One script per kind, opening and closing one flag ------------------------------------------

Script GpuOverheat() {
  Script s;
  int64_t t = kT0;
  auto feed = [&](double temp, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      s.Feed(Util("10.140.1.10", t, {{"GPU_TEMP", EightWith(60, 3, temp)}}));
      s.Feed(Util("10.140.1.11", t, {{"GPU_TEMP", EightWith(60, 5, temp - 1)}}));
    }
  };
  feed(60, 3);
  feed(88, 5);
  feed(82, 4);  // between the thresholds: stays open
  feed(70, 12);
  s.AdvanceSeconds(t);
  return s;
}

Script XidError() {
  Script s;
  int64_t t = kT0;
  auto feed = [&](double code, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) s.Feed(Util("10.140.1.10", t, {{"XID_ERRORS", EightWith(0, 6, code)}}));
  };
  feed(0, 4);
  feed(79, 3);
  feed(0, 2);
  feed(48, 1);
  feed(0, 6);
  s.AdvanceSeconds(t);
  return s;
}

Script TelemetryGap() {
  Script s;
  const std::vector<std::string> all = {"10.140.0.131", "10.140.0.132", "10.140.0.133"};
  const std::vector<std::string> two = {"10.140.0.131", "10.140.0.133"};
  int64_t t = kT0;
  auto tick = [&](const std::vector<std::string>& nodes, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      for (const std::string& n : nodes) s.Feed(Util(n, t, {{"GPU_UTIL", Values(8, 50)}}));
    }
  };
  tick(all, 4);
  tick(two, 8);
  tick(all, 1);
  tick(two, 1);
  tick(all, 5);
  s.AdvanceSeconds(t);
  return s;
}

Script GpuStraggler() {
  Script s;
  int64_t t = kT0;
  auto feed = [&](double straggler_sm, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      s.Feed(Util("10.140.1.10", t, {{"GPU_UTIL", Values(8, 99)}, {"SM_ACTIVE", EightWith(0.7, 4, straggler_sm)}}));
    }
  };
  feed(0.7, 130);  // working when first seen: level for level_for_unknown_s (30 min) before it may straggle
  feed(0.2, 20);
  feed(0.5, 10);
  feed(0.7, 30);
  s.AdvanceSeconds(t);
  return s;
}

Script UtilDrop() {
  Script s;
  int64_t t = kT0;
  auto feed = [&](double a, double b, int samples) {
    for (int k = 0; k < samples; ++k, t += 15) {
      s.Feed(Util("10.140.0.131", t, {{"FB_USED", Values(8, 40000)}, {"GPU_UTIL", Values(8, a)}}));
      s.Feed(Util("10.140.0.132", t, {{"FB_USED", Values(8, 40000)}, {"GPU_UTIL", Values(8, b)}}));
    }
  };
  feed(95, 90, 60);
  feed(40, 45, 30);
  feed(95, 90, 30);
  s.AdvanceSeconds(t);
  return s;
}

Script FailureBurst() {
  Script s;
  int64_t t = kT0;
  int id = 0;
  for (int k = 0; k < 12; ++k, t += 600) s.Feed(End(std::to_string(++id), t, 8, "FAILED", "u" + std::to_string(k)));
  for (int k = 0; k < 3; ++k) s.Feed(End(std::to_string(++id), t + 10 * k, 8, "COMPLETED", "ux"));
  for (int k = 0; k < 8; ++k) s.Feed(End(std::to_string(++id), t + 100 + 20 * k, 1, "FAILED", "v" + std::to_string(k)));
  // A failure pending in a step when a cut comes, and a user counted once within dedupe_s.
  s.Feed(End(std::to_string(++id), t + 400, 8, "FAILED", "v0"));
  for (int64_t w = t + 420; w <= t + 3600; w += 90) s.AdvanceSeconds(w);
  return s;
}

Script QueueBacklog() {
  Script s;
  int64_t t = kT0;
  int id = 0;
  for (int k = 0; k < 24; ++k, t += 300) {
    s.Feed(Job(core::JobEventKind::kSubmit, std::to_string(++id), t, 8));
    s.Feed(Job(core::JobEventKind::kStart, std::to_string(id), t + 40, 8));
    s.Feed(End(std::to_string(id), t + 200, 8, "COMPLETED"));  // the first end starts the history
  }
  const int64_t big = t;
  s.Feed(Job(core::JobEventKind::kSubmit, "big", big, 512));
  s.Feed(Job(core::JobEventKind::kSubmit, "waits", big + 30, 16));
  for (int64_t w = big + 60; w < big + 3000; w += 240) s.AdvanceSeconds(w);
  s.Feed(Job(core::JobEventKind::kStart, "big", big + 3000, 512));
  for (int64_t w = big + 3060; w <= big + 3900; w += 120) s.AdvanceSeconds(w);
  return s;
}

Script JobEnds(int64_t gpus, const std::string& state) {
  Script s;
  s.Feed(End("5778432", kT0, gpus, state));
  s.Feed(End("5778433", kT0 + 10, gpus, "COMPLETED"));
  s.Feed(End("5778434", kT0 + 300, gpus, state));
  for (int64_t w = kT0 + 330; w <= kT0 + 1000; w += 100) s.AdvanceSeconds(w);
  return s;
}

struct KindScript {
  std::string kind;
  Script script;
};

std::vector<KindScript> EveryKind() {
  return {
      {"gpu_overheat", GpuOverheat()},
      {"xid_error", XidError()},
      {"telemetry_gap", TelemetryGap()},
      {"gpu_straggler", GpuStraggler()},
      {"util_drop", UtilDrop()},
      {"failure_burst", FailureBurst()},
      {"queue_backlog", QueueBacklog()},
      {"large_job_failure", JobEnds(512, "FAILED")},
      {"node_failure", JobEnds(64, "NODE_FAIL")},
  };
}

TEST(DetectorStateTest, EveryKindIsCovered) {
  core::Config config;
  DeclareDetectorConfig(config);
  std::vector<std::string> kinds;
  for (const auto& d : MakeDetectors(config)) kinds.emplace_back(d->kind());
  std::vector<std::string> scripted;
  for (const KindScript& k : EveryKind()) scripted.push_back(k.kind);
  EXPECT_EQ(scripted, kinds);
}

TEST(DetectorStateTest, ACutSavedAndLoadedGivesTheSameTransitionsAsAnUninterruptedRun) {
  for (const KindScript& k : EveryKind()) {
    SCOPED_TRACE(k.kind);
    const std::vector<Script::Step>& steps = k.script.steps();
    std::vector<core::AnomalyEvent> whole;
    {
      std::unique_ptr<Detector> d = MakeKind(k.kind);
      Drive(*d, steps, 0, steps.size(), whole);
    }
    // The script opens and closes a flag: some cut falls while it is open.
    int opens = 0, closes = 0;
    for (const core::AnomalyEvent& e : whole) (e.open ? opens : closes)++;
    ASSERT_GE(opens, 1);
    ASSERT_EQ(opens, closes);
    const std::string expected = Text(whole);
    int cuts_while_open = 0;
    int cuts_that_need_state = 0;
    for (size_t cut = 0; cut <= steps.size(); ++cut) {
      std::vector<core::AnomalyEvent> events;
      StateWriter saved;
      {
        std::unique_ptr<Detector> first = MakeKind(k.kind);
        Drive(*first, steps, 0, cut, events);
        first->SaveState("seren", saved);
      }
      int open_at_cut = 0;
      for (const core::AnomalyEvent& e : events) open_at_cut += e.open ? 1 : -1;
      cuts_while_open += open_at_cut > 0;
      std::unique_ptr<Detector> second = MakeKind(k.kind);
      StateReader in(saved.bytes(), second->state_version());
      second->LoadState("seren", in);
      ASSERT_TRUE(in.ok()) << "cut " << cut;
      ASSERT_TRUE(in.at_end()) << "cut " << cut;
      Drive(*second, steps, cut, steps.size(), events);
      ASSERT_EQ(Text(events), expected) << "cut " << cut << " of " << steps.size();
      // The control: without the loaded state, the same cut gives other transitions (so the equality
      // above is the state's doing).
      std::vector<core::AnomalyEvent> afresh;
      {
        std::unique_ptr<Detector> first = MakeKind(k.kind);
        Drive(*first, steps, 0, cut, afresh);
        std::unique_ptr<Detector> forgetful = MakeKind(k.kind);
        Drive(*forgetful, steps, cut, steps.size(), afresh);
      }
      cuts_that_need_state += Text(afresh) != expected;
      // Saving what was loaded gives the same bytes: nothing is lost or invented on the way.
      if (cut == steps.size() / 2) {
        std::unique_ptr<Detector> reloaded = MakeKind(k.kind);
        StateReader again(saved.bytes(), reloaded->state_version());
        reloaded->LoadState("seren", again);
        StateWriter resaved;
        reloaded->SaveState("seren", resaved);
        EXPECT_EQ(resaved.bytes(), saved.bytes());
      }
    }
    EXPECT_GT(cuts_while_open, 0);
    EXPECT_GT(cuts_that_need_state, static_cast<int>(steps.size()) / 4);
  }
}

TEST(DetectorStateTest, ACutHoldsOnlyItsClustersStateAndLoadingKeepsTheOthers) {
  for (const KindScript& k : EveryKind()) {
    SCOPED_TRACE(k.kind);
    const std::vector<Script::Step>& seren = k.script.steps();
    const std::vector<Script::Step> kalos = k.script.InCluster("kalos").steps();
    // Both clusters in one detector, step by step side by side.
    std::vector<Script::Step> both;
    for (size_t i = 0; i < seren.size(); ++i) {
      both.push_back(seren[i]);
      if (std::holds_alternative<core::Record>(kalos[i])) both.push_back(kalos[i]);
    }
    std::unique_ptr<Detector> mixed = MakeKind(k.kind);
    std::unique_ptr<Detector> alone = MakeKind(k.kind);
    std::vector<core::AnomalyEvent> ignored;
    const size_t half = both.size() / 2;
    Drive(*mixed, both, 0, half, ignored);
    size_t seren_steps = 0;
    for (size_t i = 0; i < half; ++i) {
      const auto* r = std::get_if<core::Record>(&both[i]);
      seren_steps += r == nullptr || std::visit([](const auto& v) { return v.cluster == "seren"; }, *r);
    }
    Drive(*alone, seren, 0, seren_steps, ignored);
    StateWriter from_mixed, from_alone;
    mixed->SaveState("seren", from_mixed);
    alone->SaveState("seren", from_alone);
    EXPECT_EQ(from_mixed.bytes(), from_alone.bytes());

    // Loading seren's part into the mixed detector leaves kalos as it was.
    StateWriter kalos_before, kalos_after;
    mixed->SaveState("kalos", kalos_before);
    StateReader in(from_alone.bytes(), mixed->state_version());
    mixed->LoadState("seren", in);
    ASSERT_TRUE(in.ok() && in.at_end());
    mixed->SaveState("kalos", kalos_after);
    EXPECT_EQ(kalos_before.bytes(), kalos_after.bytes());
  }
}

TEST(DetectorStateTest, ATruncatedStateIsAnErrorNotACrash) {
  for (const KindScript& k : EveryKind()) {
    SCOPED_TRACE(k.kind);
    const std::vector<Script::Step>& steps = k.script.steps();
    std::unique_ptr<Detector> d = MakeKind(k.kind);
    std::vector<core::AnomalyEvent> ignored;
    Drive(*d, steps, 0, steps.size() / 2, ignored);
    StateWriter saved;
    d->SaveState("seren", saved);
    const std::string& bytes = saved.bytes();
    for (size_t n = 0; n < bytes.size(); ++n) {
      std::unique_ptr<Detector> fresh = MakeKind(k.kind);
      StateReader in(std::string_view(bytes).substr(0, n), fresh->state_version());
      fresh->LoadState("seren", in);
      EXPECT_FALSE(in.ok()) << "truncated to " << n << " of " << bytes.size();
    }
    // Garbage: a huge count or a flag out of range is refused, never allocated or trusted.
    for (size_t at = 0; at + 8 <= bytes.size(); at += 8) {
      std::string bad = bytes;
      for (size_t i = 0; i < 8; ++i) bad[at + i] = static_cast<char>(0xff);
      std::unique_ptr<Detector> fresh = MakeKind(k.kind);
      StateReader in(bad, fresh->state_version());
      fresh->LoadState("seren", in);  // may or may not be ok (a time of -1 is a time), must not crash
    }
  }
}

}  // namespace
}  // namespace acmetrace::processors
