// queue_backlog: GPUs asked for by jobs that have been waiting for at least min_wait_s (submitted,
// neither started nor ended) far above the cluster's usual. Every step_s that demand is compared with
// its median over the last baseline_s: opens when it has been at least open_ratio x the median and
// open_min_gpus above it for open_for_s, closes when it has been below close_ratio x the median (or
// within open_min_gpus / 2 of it) for close_for_s. The median keeps learning while the flag is open,
// so a backlog that lasts for hours becomes the new normal. Subject: the cluster. Value: waiting GPUs.
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

constexpr KeySpec kKeys[] = {
    {"step_s", "60", "seconds of event time between two judgements"},
    {"min_wait_s", "600", "a pending job counts once it has waited this many seconds"},
    {"baseline_s", "21600", "the baseline is the median of the waiting GPU demand over this many seconds"},
    {"min_history_s", "3600", "no judgement before this many seconds of history"},
    {"open_ratio", "3", "open when waiting GPUs are at least this multiple of the baseline..."},
    {"open_min_gpus", "256", "...and at least this many GPUs above it (32 nodes: sized for a 2,000-GPU cluster)"},
    {"open_for_s", "1800", "seconds the open condition must hold before the flag opens"},
    {"close_ratio", "1.5", "close when waiting GPUs are below this multiple of the baseline..."},
    {"close_for_s", "600", "...for this many seconds"},
};

class QueueBacklogDetector : public Detector {
 public:
  explicit QueueBacklogDetector(const KindConfig& c)
      : step_ms_(std::max<int64_t>(1000, c.Millis("step_s"))),
        min_wait_ms_(c.Millis("min_wait_s")),
        baseline_ms_(c.Millis("baseline_s")),
        min_history_ms_(c.Millis("min_history_s")),
        open_ratio_(c.Double("open_ratio")),
        open_min_gpus_(c.Double("open_min_gpus")),
        open_for_ms_(c.Millis("open_for_s")),
        close_ratio_(c.Double("close_ratio")),
        close_for_ms_(c.Millis("close_for_s")) {}

  std::string_view kind() const override { return "queue_backlog"; }

  void Observe(const core::Record& record) override {
    const auto* job = std::get_if<core::JobEvent>(&record);
    if (job == nullptr) return;
    Cluster& c = clusters_[job->cluster];
    if (c.next_ms == kNoTimeMs) c.next_ms = c.first_ms = (job->ts_ms / step_ms_ + 1) * step_ms_;
    if (job->gpu_num <= 0) return;
    // Changes take effect at the next judgement after them (all of them are <= its time).
    c.changes.push_back({job->ts_ms, job->job_id, job->event == core::JobEventKind::kSubmit ? job->gpu_num : 0});
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    for (auto& [name, c] : clusters_) {
      while (c.next_ms != kNoTimeMs && c.next_ms <= watermark_ms) {
        const int64_t until = c.changes.empty() ? watermark_ms + 1 : std::min(watermark_ms + 1, c.changes.front().ts_ms);
        if (until > c.next_ms && Steady(c, c.next_ms)) {
          // The judgements before the next change repeat the last one: jump over them, moving the
          // history (all one value) along. One event decades ahead (a corrupt time) would otherwise
          // take millions of judgements.
          const int64_t shift = (until - c.next_ms + step_ms_ - 1) / step_ms_ * step_ms_;
          for (Point& p : c.history) p.t_ms += shift;
          c.next_ms += shift;
          continue;
        }
        Judge(name, c, c.next_ms);
        c.next_ms += step_ms_;
      }
    }
    outbox_.FlushTo(watermark_ms, out);
  }

  void SaveState(std::string_view cluster, StateWriter& out) const override {
    SaveClusterEntry(clusters_, cluster, out, [](const Cluster& c, StateWriter& w) {
      w.I64(c.next_ms);
      w.I64(c.first_ms);
      w.U64(c.changes.size());
      for (const Change& ch : c.changes) {
        w.I64(ch.ts_ms);
        w.Str(ch.job_id);
        w.I64(ch.gpus);
      }
      // In job id order, so equal states give equal bytes.
      std::vector<std::pair<std::string_view, Pending>> pending(c.pending.begin(), c.pending.end());
      std::sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      w.U64(pending.size());
      for (const auto& [job_id, p] : pending) {
        w.Str(job_id);
        w.I64(p.submit_ms);
        w.I64(p.gpus);
      }
      w.U64(c.history.size());
      for (const Point& p : c.history) {
        w.I64(p.t_ms);
        w.F64(p.waiting);
      }
      c.state.Save(w);
    });
    outbox_.Save(cluster, out);
  }

  void LoadState(std::string_view cluster, StateReader& in) override {
    LoadClusterEntry(clusters_, cluster, in, [](StateReader& r, Cluster& c) {
      c.next_ms = r.I64();
      c.first_ms = r.I64();
      const uint64_t changes = r.Count(24);
      for (uint64_t i = 0; i < changes && r.ok(); ++i) {
        Change ch;
        ch.ts_ms = r.I64();
        ch.job_id = r.Str();
        ch.gpus = r.I64();
        c.changes.push_back(std::move(ch));
      }
      const uint64_t pending = r.Count(24);
      for (uint64_t i = 0; i < pending && r.ok(); ++i) {
        std::string job_id = r.Str();
        Pending p;
        p.submit_ms = r.I64();
        p.gpus = r.I64();
        c.pending.insert_or_assign(std::move(job_id), p);
      }
      const uint64_t history = r.Count(16);
      for (uint64_t i = 0; i < history && r.ok(); ++i) {
        Point p;
        p.t_ms = r.I64();
        p.waiting = r.F64();
        c.history.push_back(p);
      }
      c.state.Load(r);
    });
    outbox_.Load(cluster, kind(), in);
  }

 private:
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
    int64_t next_ms = kNoTimeMs;
    int64_t first_ms = kNoTimeMs;
    std::deque<Change> changes;
    std::unordered_map<std::string, Pending> pending;  // by job id
    std::deque<Point> history;
    HysteresisState state;
  };

  // Whether Judge at t, with no change due, would leave everything as it is but the history's times:
  // the flag closed and not about to change, every pending job past min_wait (so the waiting GPUs
  // stay the same), the history that one value over a full baseline (a judgement drops one point
  // and adds one), and that value not high enough against itself to open the flag.
  bool Steady(const Cluster& c, int64_t t) const {
    if (c.state.open() || c.state.pending() || c.history.size() < 2) return false;
    double waiting = 0;
    for (const auto& [_, p] : c.pending) {
      if (t - p.submit_ms < min_wait_ms_) return false;
      waiting += static_cast<double>(p.gpus);
    }
    if (!(c.history.front().t_ms < t - baseline_ms_ && c.history[1].t_ms >= t - baseline_ms_)) return false;
    if (c.history.back().t_ms != t - step_ms_) return false;
    for (const Point& p : c.history) {
      if (p.waiting != waiting) return false;
    }
    return waiting < std::max(open_ratio_ * waiting, waiting + open_min_gpus_);
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
      if (t - p.submit_ms >= min_wait_ms_) waiting += static_cast<double>(p.gpus);
    }
    while (!c.history.empty() && c.history.front().t_ms < t - baseline_ms_) c.history.pop_front();
    c.history.push_back({t, waiting});
    if (t - c.first_ms < min_history_ms_) return;
    std::vector<double> values;
    for (const Point& p : c.history) values.push_back(p.waiting);
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double baseline = values[mid];
    const double open_at = std::max(open_ratio_ * baseline, baseline + open_min_gpus_);
    const bool normal = waiting < close_ratio_ * baseline || waiting < baseline + open_min_gpus_ / 2;
    switch (c.state.Update(t, waiting >= open_at, normal, open_for_ms_, close_for_ms_)) {
      case HysteresisState::Change::kOpened: outbox_.Add(cluster, kind(), cluster, true, t, waiting, open_at); break;
      case HysteresisState::Change::kClosed:
        outbox_.Add(cluster, kind(), cluster, false, t, waiting, close_ratio_ * baseline);
        break;
      case HysteresisState::Change::kNone: break;
    }
  }

  const int64_t step_ms_, min_wait_ms_, baseline_ms_, min_history_ms_;
  const double open_ratio_, open_min_gpus_;
  const int64_t open_for_ms_;
  const double close_ratio_;
  const int64_t close_for_ms_;
  std::map<std::string, Cluster, std::less<>> clusters_;
  AnomalyOutbox outbox_;
};

std::unique_ptr<Detector> Make(const KindConfig& c) { return std::make_unique<QueueBacklogDetector>(c); }

}  // namespace

extern const DetectorKind kQueueBacklogKind{
    "queue_backlog",
    "GPUs requested by jobs waiting min_wait_s or more stay far above their rolling median (subject: the cluster)",
    kKeys, &Make};

}  // namespace acmetrace::processors::detectors
