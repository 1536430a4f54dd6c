// failure_burst: failed GPU jobs far above the cluster's rolling baseline. Every step_s the failures
// that ended in the last window_s are counted, at most per_user_max per user (a user's sweep of jobs
// failing on the same bug is that user's problem; many users failing at once is the cluster's); the
// baseline is the mean of those counts over the baseline_s before the window, excluding time the flag
// was open. The count opens the flag when it is at least open_ratio x the baseline and open_sigmas
// Poisson standard deviations above it (counts are small: a ratio alone would fire on noise), and
// closes it once it has stayed within close_sigmas of the baseline for close_for_s. Subject: the cluster.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

constexpr KeySpec kKeys[] = {
    {"window_s", "600", "failures are counted over the last window_s seconds"},
    {"step_s", "60", "seconds of event time between two counts"},
    {"baseline_s", "3600", "the baseline is the mean count over this many seconds before the window"},
    {"min_history_s", "3600", "no judgement before this many seconds of counts"},
    {"per_user_max", "1", "failures of one user counted per window at most (0 = no limit)"},
    {"min_baseline", "1", "floor of the baseline count (quiet clusters)"},
    {"open_ratio", "2", "open when the count is at least this multiple of the baseline..."},
    {"open_sigmas", "4.5", "...and at least this many standard deviations (sqrt of the baseline) above it"},
    {"close_sigmas", "2", "close when the count has stayed below baseline + this many standard deviations..."},
    {"close_for_s", "120", "...for this many seconds"},
    {"states", "FAILED,NODE_FAIL,TIMEOUT", "final states of a failed GPU job, comma-separated"},
};

class FailureBurstDetector : public Detector {
 public:
  explicit FailureBurstDetector(const KindConfig& c)
      : window_ms_(c.Millis("window_s")),
        step_ms_(std::max<int64_t>(1000, c.Millis("step_s"))),
        baseline_ms_(c.Millis("baseline_s")),
        min_history_ms_(c.Millis("min_history_s")),
        per_user_max_(c.Int("per_user_max")),
        min_baseline_(c.Double("min_baseline")),
        open_ratio_(c.Double("open_ratio")),
        open_sigmas_(c.Double("open_sigmas")),
        close_sigmas_(c.Double("close_sigmas")),
        close_for_ms_(c.Millis("close_for_s")),
        states_(c.List("states")) {}

  std::string_view kind() const override { return "failure_burst"; }

  void Observe(const core::Record& record) override {
    const auto* job = std::get_if<core::JobEvent>(&record);
    if (job == nullptr) return;
    Cluster& c = clusters_[job->cluster];
    if (c.next_ms == kNoTimeMs) c.next_ms = c.first_ms = (job->ts_ms / step_ms_ + 1) * step_ms_;
    if (job->event != core::JobEventKind::kEnd || job->gpu_num <= 0 || !StateListed(states_, job->state)) return;
    c.failures.push_back({job->ts_ms, job->user});
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    for (auto& [name, c] : clusters_) {
      while (c.next_ms != kNoTimeMs && c.next_ms <= watermark_ms) {
        Count(name, c, c.next_ms);
        c.next_ms += step_ms_;
      }
    }
    outbox_.FlushTo(watermark_ms, out);
  }

 private:
  struct Failure {
    int64_t ts_ms;
    std::string user;
  };
  struct Point {
    int64_t t_ms;
    double count;
    bool open;
  };
  struct Cluster {
    int64_t next_ms = kNoTimeMs;
    int64_t first_ms = kNoTimeMs;
    std::deque<Failure> failures;  // by end time
    std::deque<Point> history;
    HysteresisState state;
  };

  void Count(const std::string& cluster, Cluster& c, int64_t t) {
    while (!c.failures.empty() && c.failures.front().ts_ms <= t - window_ms_) c.failures.pop_front();
    std::map<std::string_view, int64_t> per_user;
    double count = 0;
    for (const Failure& f : c.failures) {
      if (f.ts_ms > t) break;
      int64_t& n = per_user[f.user];
      if (per_user_max_ <= 0 || n < per_user_max_) count += 1;
      ++n;
    }
    // Baseline: counts of windows that ended before this one began.
    while (!c.history.empty() && c.history.front().t_ms < t - window_ms_ - baseline_ms_) c.history.pop_front();
    double sum = 0;
    int64_t n = 0;
    for (const Point& p : c.history) {
      if (p.t_ms > t - window_ms_) break;
      if (p.open) continue;
      sum += p.count;
      ++n;
    }
    c.history.push_back({t, count, c.state.open()});
    if (t - c.first_ms < min_history_ms_ || n == 0) return;
    const double baseline = std::max(min_baseline_, sum / static_cast<double>(n));
    const double sigma = std::sqrt(baseline);
    const double open_at = std::max(open_ratio_ * baseline, baseline + open_sigmas_ * sigma);
    const bool high = count >= open_at;
    const bool normal = count < baseline + close_sigmas_ * sigma;
    switch (c.state.Update(t, high, normal, 0, close_for_ms_)) {
      case HysteresisState::Change::kOpened: outbox_.Add(cluster, kind(), cluster, true, t, count, open_at); break;
      case HysteresisState::Change::kClosed: outbox_.Add(cluster, kind(), cluster, false, t, count, open_at); break;
      case HysteresisState::Change::kNone: break;
    }
    if (c.state.open()) c.history.back().open = true;
  }

  const int64_t window_ms_, step_ms_, baseline_ms_, min_history_ms_, per_user_max_;
  const double min_baseline_, open_ratio_, open_sigmas_, close_sigmas_;
  const int64_t close_for_ms_;
  const std::vector<std::string> states_;
  std::map<std::string, Cluster> clusters_;
  AnomalyOutbox outbox_;
};

std::unique_ptr<Detector> Make(const KindConfig& c) { return std::make_unique<FailureBurstDetector>(c); }

}  // namespace

extern const DetectorKind kFailureBurstKind{
    "failure_burst",
    "failed GPU jobs in the last window_s (at most per_user_max per user) far above their rolling baseline "
    "(subject: the cluster)",
    kKeys, &Make};

}  // namespace acmetrace::processors::detectors
