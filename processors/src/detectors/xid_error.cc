// xid_error: a GPU's XID_ERRORS register (the last XID code, 0 = none) shows a code. The flag opens on
// the first sample with a code and closes once the register has read 0 for close_for_s. Subject: the GPU.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

const GpuMetricName kXidErrors{"XID_ERRORS"};

constexpr KeySpec kKeys[] = {
    {"close_for_s", "60", "close once XID_ERRORS has read 0 for this many seconds"},
    {"ignore_codes", "", "XID codes never flagged, comma-separated (e.g. 13,31,43 to skip application faults)"},
};

class XidErrorDetector : public Detector {
 public:
  explicit XidErrorDetector(const KindConfig& c) : close_for_ms_(c.Millis("close_for_s")) {
    for (const std::string& code : c.List("ignore_codes")) ignored_.push_back(std::atof(code.c_str()));
  }

  std::string_view kind() const override { return "xid_error"; }

  void Observe(const core::Record& record) override {
    const auto* sample = std::get_if<core::UtilSample>(&record);
    if (sample == nullptr) return;
    const std::vector<double>* codes = FindGpuMetric(*sample, kXidErrors);
    if (codes == nullptr) return;
    std::vector<HysteresisState>& gpus = NodeEntry(nodes_, key_, sample->cluster, sample->node);
    if (gpus.size() < codes->size()) gpus.resize(codes->size());
    for (size_t i = 0; i < codes->size(); ++i) {
      double code = (*codes)[i];
      if (!core::IsSample(code)) continue;
      if (std::find(ignored_.begin(), ignored_.end(), code) != ignored_.end()) code = 0;
      // An XID is an event: open at once; closing waits for the register to clear and stay clear.
      switch (gpus[i].Update(sample->ts_ms, code != 0, code == 0, 0, close_for_ms_)) {
        case HysteresisState::Change::kOpened:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), true, sample->ts_ms, code, 0);
          break;
        case HysteresisState::Change::kClosed:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), false, sample->ts_ms, code, 0);
          break;
        case HysteresisState::Change::kNone: break;
      }
    }
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    outbox_.FlushTo(watermark_ms, out);
  }

  void SaveState(std::string_view cluster, StateWriter& out) const override {
    SaveNodeEntries(nodes_, cluster, out, SaveGpuStates);
    outbox_.Save(cluster, out);
  }

  void LoadState(std::string_view cluster, StateReader& in) override {
    LoadNodeEntries(nodes_, cluster, in, LoadGpuStates);
    outbox_.Load(cluster, kind(), in);
  }

 private:
  const int64_t close_for_ms_;
  std::vector<double> ignored_;
  std::map<std::string, std::vector<HysteresisState>> nodes_;  // "cluster/node" -> per GPU
  std::string key_;  // scratch
  AnomalyOutbox outbox_;
};

std::unique_ptr<Detector> Make(const KindConfig& c) { return std::make_unique<XidErrorDetector>(c); }

}  // namespace

extern const DetectorKind kXidErrorKind{
    "xid_error", "a GPU's XID_ERRORS register shows a code (subject: the GPU); closes when it has cleared", kKeys,
    &Make};

}  // namespace acmetrace::processors::detectors
