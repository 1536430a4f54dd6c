// queue_backlog: GPUs asked for by jobs that have been waiting for at least min_wait_s (submitted,
// neither started nor ended) far above the cluster's usual. Every step_s that demand is compared with
// its median over the last baseline_s: opens when it has been at least open_ratio x the median and
// open_min_gpus above it for open_for_s, closes when it has been below close_ratio x the median (or
// within open_min_gpus / 2 of it) for close_for_s. The median keeps learning while the flag is open,
// so a backlog that lasts for hours becomes the new normal. Subject: the cluster. Value: waiting GPUs.
// The cluster's history starts with its first telemetry sample or first job end: a trace cut from a
// longer one holds, before that, only the jobs still pending or running when it begins (those that
// ended earlier are not in it), so the demand it shows there is no usual to learn from. Jobs submitted
// earlier are waiting from their submit time all the same; no judgement before min_history_s of it.
#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

struct QueueBacklogSettings {
  int64_t step_ms, min_wait_ms, baseline_ms, min_history_ms, open_for_ms, close_for_ms;
  double open_ratio, open_min_gpus, close_ratio;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = QueueBacklogSettings;
constexpr KeySpec<S> kKeys[] = {
    {"step_s", "60", "seconds of event time between two judgements", &StepSeconds, Ms<S>{&S::step_ms}},
    {"min_wait_s", "600", "a pending job counts once it has waited this many seconds", &Seconds,
     Ms<S>{&S::min_wait_ms}},
    {"baseline_s", "21600", "the baseline is the median of the waiting GPU demand over this many seconds",
     &PositiveSeconds, Ms<S>{&S::baseline_ms}},
    {"min_history_s", "3600", "no judgement before this many seconds of history", &Seconds, Ms<S>{&S::min_history_ms}},
    {"open_ratio", "3", "open when waiting GPUs are at least this multiple of the baseline...", &Ratio,
     &S::open_ratio},
    {"open_min_gpus", "256", "...and at least this many GPUs above it (32 nodes: sized for a 2,000-GPU cluster)",
     &NonNegative, &S::open_min_gpus},
    {"open_for_s", "1800", "seconds the open condition must hold before the flag opens", &Seconds,
     Ms<S>{&S::open_for_ms}},
    {"close_ratio", "1.5", "close when waiting GPUs are below this multiple of the baseline...", &Ratio,
     &S::close_ratio},
    {"close_for_s", "600", "...for this many seconds", &Seconds, Ms<S>{&S::close_for_ms}},
};

S ReadSettings(const KindConfig& c) {
  S s = c.Fill(kKeys);
  if (s.close_ratio > s.open_ratio) c.Fail("close_ratio", "must be at most open_ratio (" + c.Text("open_ratio") + ")");
  s.step_ms = std::max<int64_t>(1000, s.step_ms);
  return s;
}

// The state kept per cluster (Cluster and its parts), each saved in the order its Fields names (a
// struct without one: its members', state_codec.h).
struct Change {
  int64_t ts_ms;
  std::string job_id;
  int64_t gpus;  // > 0: submitted (pending); 0: started or ended
};
struct Point {
  int64_t t_ms;
  double waiting;
};
struct Pending {
  int64_t submit_ms;
  int64_t gpus;
};
struct Cluster {
  StepClock steps;
  std::deque<Change> changes;
  std::unordered_map<std::string, Pending> pending;  // by job id
  std::deque<Point> history;
  HysteresisState state;
  template <class Io, class Self>
  static void Fields(Io& io, Self& c) {
    io(c.steps, c.changes, c.pending, c.history, c.state);
  }
};

class QueueBacklogDetector : public PerClusterDetector<QueueBacklogDetector, Cluster> {
 public:
  explicit QueueBacklogDetector(const QueueBacklogSettings& s) : s_(s) {}

  std::string_view kind() const override { return "queue_backlog"; }

  void Observe(const core::Record& record) override {
    const core::JobEvent* job = JobOrStartClock(clusters_, record, s_.step_ms);
    if (job == nullptr) return;
    Cluster& c = clusters_[job->cluster];
    if (job->event == core::JobEventKind::kEnd) c.steps.OnRecord(job->ts_ms, s_.step_ms);
    if (job->gpu_num <= 0) return;
    // Changes take effect at the next judgement after them (all of them are <= its time).
    c.changes.push_back({job->ts_ms, job->job_id, job->event == core::JobEventKind::kSubmit ? job->gpu_num : 0});
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    for (auto& [name, c] : clusters_) {
      // The judgements before the next change repeat the last one while the cluster is steady: jump
      // over them, moving the history (all one value) along. One event decades ahead (a corrupt time)
      // would otherwise take millions of judgements.
      auto skip = [&, &c = c](int64_t t) -> int64_t {
        const int64_t until =
            c.changes.empty() ? watermark_ms + 1 : std::min(watermark_ms + 1, c.changes.front().ts_ms);
        if (until <= t || !Steady(c, t)) return 0;
        const int64_t shift = (until - t + s_.step_ms - 1) / s_.step_ms * s_.step_ms;
        for (Point& p : c.history) p.t_ms += shift;
        return shift;
      };
      c.steps.RunTo(watermark_ms, s_.step_ms, skip, [&, &name = name, &c = c](int64_t t) { Judge(name, c, t); });
    }
    outbox_.FlushTo(watermark_ms, out);
  }

  static constexpr uint32_t kStateVersion = 1;  // of Cluster::Fields

 private:
  // Whether Judge at t, with no change due, would leave everything as it is but the history's times:
  // the flag closed and not about to change, every pending job past min_wait (so the waiting GPUs
  // stay the same), the history that one value over a full baseline (a judgement drops one point
  // and adds one), and that value not high enough against itself to open the flag.
  bool Steady(const Cluster& c, int64_t t) const {
    if (c.state.open() || c.state.pending() || c.history.size() < 2) return false;
    double waiting = 0;
    for (const auto& [_, p] : c.pending) {
      if (t - p.submit_ms < s_.min_wait_ms) return false;
      waiting += static_cast<double>(p.gpus);
    }
    if (!(c.history.front().t_ms < t - s_.baseline_ms && c.history[1].t_ms >= t - s_.baseline_ms)) return false;
    if (c.history.back().t_ms != t - s_.step_ms) return false;
    for (const Point& p : c.history) {
      if (p.waiting != waiting) return false;
    }
    return waiting < std::max(s_.open_ratio * waiting, waiting + s_.open_min_gpus);
  }

  void Judge(const std::string& cluster, Cluster& c, int64_t t) {
    while (!c.changes.empty() && c.changes.front().ts_ms <= t) {
      const Change& ch = c.changes.front();
      if (ch.gpus > 0) {
        c.pending.emplace(ch.job_id, Pending{ch.ts_ms, ch.gpus});
      } else {
        c.pending.erase(ch.job_id);
      }
      c.changes.pop_front();
    }
    double waiting = 0;
    for (const auto& [_, p] : c.pending) {
      if (t - p.submit_ms >= s_.min_wait_ms) waiting += static_cast<double>(p.gpus);
    }
    while (!c.history.empty() && c.history.front().t_ms < t - s_.baseline_ms) c.history.pop_front();
    c.history.push_back({t, waiting});
    if (t - c.steps.first_ms() < s_.min_history_ms) return;
    std::vector<double> values;
    for (const Point& p : c.history) values.push_back(p.waiting);
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double baseline = values[mid];
    const double open_at = std::max(s_.open_ratio * baseline, baseline + s_.open_min_gpus);
    const bool normal = waiting < s_.close_ratio * baseline || waiting < baseline + s_.open_min_gpus / 2;
    switch (c.state.Update(t, waiting >= open_at, normal, s_.open_for_ms, s_.close_for_ms)) {
      case HysteresisState::Change::kOpened: outbox_.Add(cluster, kind(), cluster, true, t, waiting, open_at); break;
      case HysteresisState::Change::kClosed:
        outbox_.Add(cluster, kind(), cluster, false, t, waiting, s_.close_ratio * baseline);
        break;
      case HysteresisState::Change::kNone: break;
    }
  }

  const QueueBacklogSettings s_;
};

KindFactory Configure(const KindConfig& c) { return FactoryOf<QueueBacklogDetector>(ReadSettings(c)); }

}  // namespace

extern const DetectorKind kQueueBacklogKind{"queue_backlog", &DeclareKeys<kKeys>, &Configure,
    "GPUs requested by jobs waiting min_wait_s or more stay far above their rolling median (subject: the cluster)"};

}  // namespace acmetrace::processors::detectors
