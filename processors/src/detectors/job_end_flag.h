// The shape shared by node_failure and large_job_failure: a job's end event is the incident, so the flag
// opens at the job's end and closes hold_s later (an alert a dashboard can show), never flapping.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "acmetrace/processors/detector.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {

/// A detector flagging job ends that satisfy a predicate; subject: the job id. Not thread-safe.
class JobEndFlagDetector : public DetectorWithState<JobEndFlagDetector> {
 public:
  /// value_of gives the flag's value; threshold is reported with it.
  JobEndFlagDetector(std::string_view kind, int64_t hold_ms, std::function<bool(const core::JobEvent&)> flags,
                     std::function<double(const core::JobEvent&)> value_of, double threshold)
      : kind_(kind), hold_ms_(hold_ms), flags_(std::move(flags)), value_of_(std::move(value_of)), threshold_(threshold) {}

  std::string_view kind() const override { return kind_; }

  void Observe(const core::Record& record) override {
    const auto* job = std::get_if<core::JobEvent>(&record);
    if (job == nullptr || job->event != core::JobEventKind::kEnd || !flags_(*job)) return;
    const double value = value_of_(*job);
    outbox_.Add(job->cluster, kind_, job->job_id, true, job->ts_ms, value, threshold_);
    outbox_.Add(job->cluster, kind_, job->job_id, false, job->ts_ms + hold_ms_, value, threshold_);
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    outbox_.FlushTo(watermark_ms, out);
  }

  // The flag's whole life is in the outbox: both transitions are made at the job's end.
  static constexpr uint32_t kStateVersion = 1;
  template <class Io, class Self>
  static void StateFields(Io& io, Self& d, std::string_view cluster) {
    io(d.outbox_.Slice(cluster, d.kind_));
  }

 private:
  std::string kind_;
  int64_t hold_ms_;
  std::function<bool(const core::JobEvent&)> flags_;
  std::function<double(const core::JobEvent&)> value_of_;
  double threshold_;
  AnomalyOutbox outbox_;
};

}  // namespace acmetrace::processors::detectors
