// telemetry_gap: a node sends no sample while the rest of its cluster reports. Judged at each of the
// cluster's sample times once every record of it has been seen: the flag opens when the node has been
// silent for open_after_s and closes once it has reported again for close_for_s. Subject: the node.
#include <map>
#include <string>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

struct TelemetryGapSettings {
  int64_t open_after_ms, close_for_ms;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = TelemetryGapSettings;
constexpr KeySpec<S> kKeys[] = {
    {"open_after_s", "60", "open when a node has sent nothing for this many seconds while its cluster reports",
     &PositiveSeconds, Ms<S>{&S::open_after_ms}},
    {"close_for_s", "30", "close once the node has reported at every sample time for this many seconds", &Seconds,
     Ms<S>{&S::close_for_ms}},
};

// The state kept per cluster (Cluster and its parts), each saved in the order its Fields names (a
// struct without one: its members', state_codec.h).
struct Node {
  int64_t last_ms = kNoTimeMs;
  HysteresisState state;
};
struct Cluster {
  SampleTimeCursor times;
  std::map<std::string, Node> nodes;
  NodeCursor<std::map<std::string, Node>> cursor;  // not state: where the last lookup ended
  template <class Io, class Self>
  static void Fields(Io& io, Self& c) {
    io(c.times, c.nodes);
  }
};

class TelemetryGapDetector : public PerClusterDetector<TelemetryGapDetector, Cluster> {
 public:
  explicit TelemetryGapDetector(const TelemetryGapSettings& s)
      : open_after_ms_(s.open_after_ms), close_for_ms_(s.close_for_ms) {}

  std::string_view kind() const override { return "telemetry_gap"; }

  void Observe(const core::Record& record) override {
    const auto* sample = std::get_if<core::UtilSample>(&record);
    if (sample == nullptr) return;
    Cluster& c = JudgeCompletedSampleTime(clusters_, *sample, this, &TelemetryGapDetector::Judge);
    Node& node = c.cursor.Find(c.nodes, sample->node);
    node.last_ms = std::max(node.last_ms, sample->ts_ms);
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    JudgeCompletedSampleTimes(clusters_, watermark_ms, this, &TelemetryGapDetector::Judge);
    outbox_.FlushTo(watermark_ms, out);
  }

  static constexpr uint32_t kStateVersion = 1;  // of Cluster::Fields

 private:
  // Every record of sample time t has been seen: who was silent?
  void Judge(const std::string& cluster, Cluster& c, int64_t t) {
    for (auto& [name, node] : c.nodes) {
      const int64_t silent_ms = t - node.last_ms;
      switch (node.state.Update(t, silent_ms >= open_after_ms_, silent_ms == 0, 0, close_for_ms_)) {
        case HysteresisState::Change::kOpened:
          outbox_.Add(cluster, kind(), name, true, t, static_cast<double>(silent_ms) / 1000.0,
                      static_cast<double>(open_after_ms_) / 1000.0);
          break;
        case HysteresisState::Change::kClosed:
          outbox_.Add(cluster, kind(), name, false, t, 0, static_cast<double>(open_after_ms_) / 1000.0);
          break;
        case HysteresisState::Change::kNone: break;
      }
    }
  }

  const int64_t open_after_ms_, close_for_ms_;
};

KindFactory Configure(const KindConfig& c) {
  return FactoryOf<TelemetryGapDetector>(c.Fill(kKeys));
}

}  // namespace

extern const DetectorKind kTelemetryGapKind{"telemetry_gap", &DeclareKeys<kKeys>, &Configure,
    "a node sends no sample for open_after_s while its cluster reports (subject: the node)"};

}  // namespace acmetrace::processors::detectors
