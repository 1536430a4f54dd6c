// The shared mechanism of the per-GPU flags on one GPU metric (gpu_overheat, xid_error): each
// sample's value decides whether the flag's open and close conditions hold, and a hysteresis per
// GPU, kept per node, turns them into transitions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "detector_support.h"

namespace acmetrace::processors::detectors {

class GpuMetricFlagDetector : public PerNodeDetector<GpuMetricFlagDetector> {
 public:
  void Observe(const core::Record& record) final {
    const auto* sample = std::get_if<core::UtilSample>(&record);
    if (sample == nullptr) return;
    const std::vector<double>* values = FindGpuMetric(*sample, metric_);
    if (values == nullptr) return;
    std::vector<HysteresisState>& gpus = NodeEntry(nodes_, key_, sample->cluster, sample->node);
    if (gpus.size() < values->size()) gpus.resize(values->size());
    for (size_t i = 0; i < values->size(); ++i) {
      if (!core::IsSample((*values)[i])) continue;
      const Judgement j = Judge((*values)[i]);
      switch (gpus[i].Update(sample->ts_ms, j.open, j.close, open_for_ms_, close_for_ms_)) {
        case HysteresisState::Change::kOpened:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), true, sample->ts_ms, j.value, j.open_threshold);
          break;
        case HysteresisState::Change::kClosed:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), false, sample->ts_ms, j.value,
                      j.close_threshold);
          break;
        case HysteresisState::Change::kNone: break;
      }
    }
  }

  // Per node, each GPU's hysteresis; then the transitions not yet handed out.
  static constexpr uint32_t kStateVersion = 1;

 protected:
  // What one GPU's sample (never a missing one) says, and what a transition reports.
  struct Judgement {
    bool open;    // the open condition holds
    bool close;   // the close condition holds
    double value;  // reported with the transition
    double open_threshold;
    double close_threshold;
  };

  GpuMetricFlagDetector(std::string_view metric, int64_t open_for_ms, int64_t close_for_ms)
      : metric_(metric), open_for_ms_(open_for_ms), close_for_ms_(close_for_ms) {}
  virtual Judgement Judge(double value) const = 0;

 private:
  friend PerNodeDetector;
  const GpuMetricName metric_;
  const int64_t open_for_ms_, close_for_ms_;
  std::map<std::string, std::vector<HysteresisState>> nodes_;  // "cluster/node" -> per GPU
  NodeKey<std::vector<HysteresisState>> key_;  // scratch and lookup cursor
};

}  // namespace acmetrace::processors::detectors
