// large_job_failure: a job of at least min_gpus GPUs ends failed (by default FAILED, NODE_FAIL or
// TIMEOUT, which the release counts as failed): hours of hundreds of GPUs may be lost. On a cluster too
// small to hold such jobs as the release's clusters do (a scaled-down replay, a small cluster), a job of
// at least cluster_share of the cluster's GPUs is large too: the cluster's GPUs are the most GPUs its
// telemetry sampled at one time (none seen: min_gpus alone). Subject: the job id; the flag opens at the
// job's end and closes hold_s later.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

struct LargeJobFailureSettings {
  int64_t min_gpus;
  double cluster_share;
  std::vector<std::string> states;
  int64_t hold_ms;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = LargeJobFailureSettings;
constexpr KeySpec<S> kKeys[] = {
    {"min_gpus", "256", "a job is large from this many GPUs (the paper's large pretraining jobs)", &Count,
     &S::min_gpus},
    {"cluster_share", "0.333",
     "...or from this share of the cluster's GPUs (most sampled at one time in its telemetry), if fewer "
     "(0 = off)",
     [] { return core::ConfigType::Double(0, 1); }, &S::cluster_share},
    // read in Configure, into states
    {"states", "FAILED,NODE_FAIL,TIMEOUT", "final states that count as a failure, comma-separated", &States},
    {"hold_s", "600", "seconds the flag stays open after the job's end", &Seconds, Ms<S>{&S::hold_ms}},
};

// The GPUs of a cluster as its telemetry shows them: the GPUs sampled at the current time so far, and
// the most at any one time.
struct Capacity {
  int64_t ts_ms = kNoTimeMs;
  int64_t gpus_now = 0;
  int64_t gpus = 0;
  template <class Io, class Self>
  static void Fields(Io& io, Self& c) {
    io(c.ts_ms, c.gpus_now, c.gpus);
  }
};

/// Flags failed jobs of many GPUs; subject: the job id. Not thread-safe.
class LargeJobFailureDetector : public DetectorWithState<LargeJobFailureDetector> {
 public:
  explicit LargeJobFailureDetector(const LargeJobFailureSettings& s) : s_(s) {}

  std::string_view kind() const override { return "large_job_failure"; }

  void Observe(const core::Record& record) override {
    if (const auto* sample = std::get_if<core::UtilSample>(&record)) {
      if (s_.cluster_share <= 0) return;
      Capacity& c = clusters_[sample->cluster];
      if (sample->ts_ms != c.ts_ms) c.ts_ms = sample->ts_ms, c.gpus_now = 0;
      size_t gpus = 0;
      for (const core::GpuMetric& m : sample->gpu) gpus = std::max(gpus, m.values.size());
      c.gpus_now += static_cast<int64_t>(gpus);
      c.gpus = std::max(c.gpus, c.gpus_now);
      return;
    }
    const auto* job = std::get_if<core::JobEvent>(&record);
    if (job == nullptr || job->event != core::JobEventKind::kEnd || !StateListed(s_.states, job->state)) return;
    const double threshold = Threshold(job->cluster);
    if (static_cast<double>(job->gpu_num) < threshold) return;
    const double value = static_cast<double>(job->gpu_num);
    outbox_.Add(job->cluster, kind(), job->job_id, true, job->ts_ms, value, threshold);
    outbox_.Add(job->cluster, kind(), job->job_id, false, job->ts_ms + s_.hold_ms, value, threshold);
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    outbox_.FlushTo(watermark_ms, out);
  }

  // Layout 1 (before issue #14): the outbox alone; 2: then the capacity seen.
  static constexpr uint32_t kStateVersion = 2;
  template <class Io, class Self>
  static void StateFields(Io& io, Self& d, std::string_view cluster) {
    io(d.outbox_.Slice(cluster, d.kind()));
    if (io.version() >= 2) io(ClusterEntryOf(d.clusters_, cluster));
  }

 private:
  // The GPUs from which a job of the cluster is large.
  double Threshold(std::string_view cluster) const {
    const double min_gpus = static_cast<double>(s_.min_gpus);
    const auto it = clusters_.find(cluster);
    if (s_.cluster_share <= 0 || it == clusters_.end() || it->second.gpus == 0) return min_gpus;
    return std::min(min_gpus, std::ceil(s_.cluster_share * static_cast<double>(it->second.gpus)));
  }

  const LargeJobFailureSettings s_;
  std::map<std::string, Capacity, std::less<>> clusters_;
  AnomalyOutbox outbox_;
};

KindFactory Configure(const KindConfig& c) {
  S s = c.Fill(kKeys);
  s.states = c.List("states");
  return FactoryOf<LargeJobFailureDetector>(std::move(s));
}

}  // namespace

extern const DetectorKind kLargeJobFailureKind{"large_job_failure", &DeclareKeys<kKeys>, &Configure,
    "a job of at least min_gpus GPUs, or of cluster_share of a smaller cluster's GPUs, ends failed (subject: the "
    "job id); value: its GPUs"};

}  // namespace acmetrace::processors::detectors
