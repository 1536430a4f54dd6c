// EvidenceGate: a flag ends where its evidence ended, whatever the windows, and opens again when the
// evidence comes back while its detector still holds it.
#include "acmetrace/processors/evidence_gate.h"

#include <gtest/gtest.h>

#include "acmetrace/processors/state_codec.h"

#include <string>
#include <vector>

namespace acmetrace::processors {
namespace {

constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01 00:00 UTC
constexpr int64_t kTimeout = 300'000;

core::Record Sample(const std::string& node, int64_t ts_ms) {
  core::UtilSample u;
  u.cluster = "seren";
  u.node = node;
  u.ts_ms = ts_ms;
  return u;
}

core::Record JobEnd(int64_t ts_ms) {
  core::JobEvent j;
  j.cluster = "seren";
  j.event = core::JobEventKind::kEnd;
  j.ts_ms = ts_ms;
  j.job_id = "j1";
  return j;
}

core::AnomalyEvent Flag(const std::string& kind, const std::string& subject, bool open, int64_t ts_ms) {
  core::AnomalyEvent a;
  a.cluster = "seren";
  a.kind = kind;
  a.subject = subject;
  a.open = open;
  a.ts_ms = ts_ms;
  a.value = 90;
  a.threshold = 85;
  return a;
}

std::string Text(const std::vector<core::AnomalyEvent>& events) {
  std::string out;
  for (const core::AnomalyEvent& a : events) {
    out += a.kind + " " + a.subject + (a.open ? " open " : " close ") + std::to_string((a.ts_ms - kT0) / 1000) + "\n";
  }
  return out;
}

// Feeds n1's samples every minute in [from, to], each window of window_ms: observe, then filter with
// the detector events given for that window.
struct Feed {
  EvidenceGate gate{kTimeout};
  std::string written;
  void Window(const std::vector<core::Record>& records, int64_t end_ms, std::vector<core::AnomalyEvent> detector) {
    for (const core::Record& r : records) gate.Observe(r);
    gate.Filter(end_ms - 1, detector);
    written += Text(detector);
  }
};

TEST(EvidenceGateTest, AnOverheatFlagEndsFiveMinutesAfterItsNodesLastSample) {
  Feed f;
  f.Window({Sample("n1", kT0), Sample("n2", kT0)}, kT0 + 60'000, {Flag("gpu_overheat", "n1-3", true, kT0)});
  // n1 stops; n2 goes on. Four minutes later nothing has changed.
  f.Window({Sample("n2", kT0 + 240'000)}, kT0 + 300'000, {});
  EXPECT_EQ(f.written, "gpu_overheat n1-3 open 0\n");
  // Past five minutes of silence, the flag ends at the last sample plus five minutes.
  f.Window({Sample("n2", kT0 + 360'000)}, kT0 + 420'000, {});
  EXPECT_EQ(f.written, "gpu_overheat n1-3 open 0\ngpu_overheat n1-3 close 300\n");
  // The detector's own close later is not written twice.
  f.Window({Sample("n2", kT0 + 480'000)}, kT0 + 540'000, {Flag("gpu_overheat", "n1-3", false, kT0 + 500'000)});
  EXPECT_EQ(f.written, "gpu_overheat n1-3 open 0\ngpu_overheat n1-3 close 300\n");
}

TEST(EvidenceGateTest, AFlagItsDetectorStillHoldsOpensAgainWhenTheEvidenceComesBack) {
  Feed f;
  f.Window({Sample("n1", kT0)}, kT0 + 60'000, {Flag("gpu_overheat", "n1-3", true, kT0)});
  f.Window({Sample("n2", kT0 + 400'000)}, kT0 + 420'000, {});
  f.Window({Sample("n1", kT0 + 900'000)}, kT0 + 960'000, {});
  f.Window({Sample("n1", kT0 + 960'000)}, kT0 + 1'020'000, {Flag("gpu_overheat", "n1-3", false, kT0 + 960'000)});
  EXPECT_EQ(f.written,
            "gpu_overheat n1-3 open 0\ngpu_overheat n1-3 close 300\ngpu_overheat n1-3 open 900\n"
            "gpu_overheat n1-3 close 960\n");
}

TEST(EvidenceGateTest, TheSameTransitionsHoweverTheWindowsAreCut) {
  // The gap found by the watermark passing it (a tick per minute) or by the next sample (one window
  // over the whole gap) gives the same transitions.
  Feed fine;
  fine.Window({Sample("n1", kT0)}, kT0 + 60'000, {Flag("gpu_overheat", "n1-3", true, kT0)});
  for (int64_t end = kT0 + 120'000; end <= kT0 + 900'000; end += 60'000) fine.Window({}, end, {});
  fine.Window({Sample("n1", kT0 + 900'000)}, kT0 + 960'000, {});
  Feed coarse;
  coarse.Window({Sample("n1", kT0)}, kT0 + 60'000, {Flag("gpu_overheat", "n1-3", true, kT0)});
  coarse.Window({Sample("n1", kT0 + 900'000)}, kT0 + 960'000, {});
  EXPECT_EQ(fine.written, coarse.written);
  EXPECT_EQ(coarse.written, "gpu_overheat n1-3 open 0\ngpu_overheat n1-3 close 300\ngpu_overheat n1-3 open 900\n");
}

TEST(EvidenceGateTest, ClusterWideFlagsEndWithTheClustersTelemetryAndJobFlagsWithTheInput) {
  Feed f;
  f.Window({Sample("n1", kT0), JobEnd(kT0)},
           kT0 + 60'000,
           {Flag("telemetry_gap", "n2", true, kT0), Flag("util_drop", "seren", true, kT0),
            Flag("queue_backlog", "seren", true, kT0)});
  // Job events go on for an hour without telemetry: the telemetry flags end, the backlog does not.
  f.Window({JobEnd(kT0 + 3'600'000)}, kT0 + 3'660'000, {});
  EXPECT_EQ(f.written,
            "telemetry_gap n2 open 0\nutil_drop seren open 0\nqueue_backlog seren open 0\n"
            "telemetry_gap n2 close 300\nutil_drop seren close 300\n");
  // The input ends: the backlog ends with the last job event.
  std::vector<core::AnomalyEvent> last;
  f.gate.Finish(last);
  EXPECT_EQ(Text(last), "queue_backlog seren close 3600\n");
}

TEST(EvidenceGateTest, ItsStateRoundTripsThroughASnapshot) {
  Feed f;
  f.Window({Sample("n1", kT0)}, kT0 + 60'000, {Flag("gpu_overheat", "n1-3", true, kT0)});
  StateWriter out;
  out(f.gate);
  const std::string bytes = out.bytes();
  EvidenceGate restored(kTimeout);
  StateReader in(bytes, kCurrentStateVersion);
  in(restored);
  ASSERT_TRUE(in.ok());
  std::vector<core::AnomalyEvent> none;
  restored.Filter(kT0 + 400'000, none);
  EXPECT_EQ(Text(none), "gpu_overheat n1-3 close 300\n");
}

}  // namespace
}  // namespace acmetrace::processors
