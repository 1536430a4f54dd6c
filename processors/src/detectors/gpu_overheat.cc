// gpu_overheat: a GPU's temperature stays at or above open_c; the flag closes once it has stayed below
// close_c for a while. Subject: the GPU ("10.140.1.10-3").
#include <map>
#include <string>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

const GpuMetricName kGpuTemp{"GPU_TEMP"};

constexpr KeySpec kKeys[] = {
    {"open_c", "85", "open when GPU_TEMP (C) has been at or above this for open_for_s (A100 slowdown starts near 87 C)"},
    {"open_for_s", "30", "seconds GPU_TEMP must stay at or above open_c before the flag opens"},
    {"close_c", "80", "close when GPU_TEMP has been below this for close_for_s (hysteresis: below open_c)"},
    {"close_for_s", "120", "seconds GPU_TEMP must stay below close_c before the flag closes"},
};

class GpuOverheatDetector : public Detector {
 public:
  explicit GpuOverheatDetector(const KindConfig& c)
      : open_c_(c.Double("open_c")),
        close_c_(c.Double("close_c")),
        open_for_ms_(c.Millis("open_for_s")),
        close_for_ms_(c.Millis("close_for_s")) {}

  std::string_view kind() const override { return "gpu_overheat"; }

  void Observe(const core::Record& record) override {
    const auto* sample = std::get_if<core::UtilSample>(&record);
    if (sample == nullptr) return;
    const std::vector<double>* temps = FindGpuMetric(*sample, kGpuTemp);
    if (temps == nullptr) return;
    std::vector<HysteresisState>& gpus = NodeEntry(nodes_, key_, sample->cluster, sample->node);
    if (gpus.size() < temps->size()) gpus.resize(temps->size());
    for (size_t i = 0; i < temps->size(); ++i) {
      const double t = (*temps)[i];
      if (!core::IsSample(t)) continue;
      switch (gpus[i].Update(sample->ts_ms, t >= open_c_, t < close_c_, open_for_ms_, close_for_ms_)) {
        case HysteresisState::Change::kOpened:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), true, sample->ts_ms, t, open_c_);
          break;
        case HysteresisState::Change::kClosed:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), false, sample->ts_ms, t, close_c_);
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
  const double open_c_, close_c_;
  const int64_t open_for_ms_, close_for_ms_;
  std::map<std::string, std::vector<HysteresisState>> nodes_;  // "cluster/node" -> per GPU
  std::string key_;  // scratch
  AnomalyOutbox outbox_;
};

std::unique_ptr<Detector> Make(const KindConfig& c) { return std::make_unique<GpuOverheatDetector>(c); }

}  // namespace

extern const DetectorKind kGpuOverheatKind{
    "gpu_overheat", "a GPU's GPU_TEMP stays at or above open_c (subject: the GPU, IP-index)", kKeys, &Make};

}  // namespace acmetrace::processors::detectors
