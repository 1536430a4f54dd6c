// failure_burst: failed GPU jobs far above the cluster's rolling baseline, found with a Poisson scan
// statistic (the likelihood ratio test of Kulldorff's scan), which judges a sharp burst of a few jobs on a
// quiet cluster and a long rise on a busy one on the same scale.
//
// A failed GPU job counts once per user within dedupe_s (a user's sweep of jobs failing on the same bug
// is that user's problem; many users failing at once is the cluster's). The baseline rate is the mean
// count over the baseline_s before now, excluding time the flag was open (at least min_rate_per_h).
// Every step_s, for each trailing window w of windows_s with n counted failures where the baseline
// expects e, and n at least min_ratio x e:
//     score_w = n ln(n / e) - (n - e)        (log-likelihood ratio of "a higher rate" against the baseline)
// The score is the highest score_w. The flag opens when it reaches open_score and closes once it has
// stayed below close_score for close_for_s. Subject: the cluster. Value: the failures counted in the
// window that opened it; threshold: what the baseline expected there.
#include <algorithm>
#include <cmath>
#include <cstdlib>
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
    {"windows_s", "300,600,900,1200,1800", "trailing windows scanned (seconds), comma-separated"},
    {"baseline_s", "21600", "the baseline rate is the mean over this many seconds before now"},
    {"min_history_s", "3600", "no judgement before this many seconds of history"},
    {"dedupe_s", "1800", "a user's failures count once within this many seconds (0 = every failure counts)"},
    {"min_rate_per_h", "1", "floor of the baseline rate, in counted failures per hour (quiet clusters)"},
    {"min_ratio", "2", "a window counts only when its failures are at least this multiple of the baseline's"},
    {"open_score", "6", "open when the score (log-likelihood ratio) reaches this..."},
    {"close_score", "2", "...close when it has stayed below this..."},
    {"close_for_s", "300", "...for this many seconds"},
    {"states", "FAILED,NODE_FAIL,TIMEOUT", "final states of a failed GPU job, comma-separated"},
};

class FailureBurstDetector : public Detector {
 public:
  explicit FailureBurstDetector(const KindConfig& c)
      : step_ms_(std::max<int64_t>(1000, c.Millis("step_s"))),
        baseline_steps_(std::max<int64_t>(1, c.Millis("baseline_s") / step_ms_)),
        min_history_ms_(c.Millis("min_history_s")),
        dedupe_ms_(c.Millis("dedupe_s")),
        min_rate_(c.Double("min_rate_per_h") * static_cast<double>(step_ms_) / 3'600'000.0),
        min_ratio_(c.Double("min_ratio")),
        open_score_(c.Double("open_score")),
        close_score_(c.Double("close_score")),
        close_for_ms_(c.Millis("close_for_s")),
        states_(c.List("states")) {
    for (const std::string& w : c.List("windows_s")) {
      windows_steps_.push_back(std::max<int64_t>(1, static_cast<int64_t>(std::atof(w.c_str()) * 1000) / step_ms_));
    }
    if (windows_steps_.empty()) windows_steps_.push_back(std::max<int64_t>(1, 600'000 / step_ms_));
    std::sort(windows_steps_.begin(), windows_steps_.end());
  }

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
        if (Quiet(c)) {
          // Steps before the next failure change nothing now: jump over them. One event decades
          // ahead (a corrupt time) would otherwise take millions of steps.
          const int64_t until = c.failures.empty() ? watermark_ms + 1 : std::min(watermark_ms + 1, c.failures.front().ts_ms);
          if (until > c.next_ms) {
            c.next_ms += (until - c.next_ms + step_ms_ - 1) / step_ms_ * step_ms_;
            continue;
          }
        }
        Step(name, c, c.next_ms);
        c.next_ms += step_ms_;
      }
    }
    outbox_.FlushTo(watermark_ms, out);
  }

  void SaveState(std::string_view cluster, StateWriter& out) const override {
    SaveClusterEntry(clusters_, cluster, out, [](const Cluster& c, StateWriter& w) {
      w.I64(c.next_ms);
      w.I64(c.first_ms);
      w.U64(c.failures.size());
      for (const Failure& f : c.failures) {
        w.I64(f.ts_ms);
        w.Str(f.user);
      }
      // In user order, so equal states give equal bytes.
      std::vector<std::pair<std::string_view, int64_t>> users(c.last_counted.begin(), c.last_counted.end());
      std::sort(users.begin(), users.end());
      w.U64(users.size());
      for (const auto& [user, ts_ms] : users) {
        w.Str(user);
        w.I64(ts_ms);
      }
      w.U64(c.history.size());
      for (const Point& p : c.history) {
        w.I64(p.count);
        w.U64(p.open ? 1 : 0);
      }
      w.I64(c.baseline_sum);
      w.I64(c.baseline_steps);
      c.state.Save(w);
    });
    outbox_.Save(cluster, out);
  }

  void LoadState(std::string_view cluster, StateReader& in) override {
    LoadClusterEntry(clusters_, cluster, in, [](StateReader& r, Cluster& c) {
      c.next_ms = r.I64();
      c.first_ms = r.I64();
      const uint64_t failures = r.Count(16);
      for (uint64_t i = 0; i < failures && r.ok(); ++i) {
        const int64_t ts_ms = r.I64();
        c.failures.push_back({ts_ms, r.Str()});
      }
      const uint64_t users = r.Count(16);
      for (uint64_t i = 0; i < users && r.ok(); ++i) {
        std::string user = r.Str();
        c.last_counted.insert_or_assign(std::move(user), r.I64());
      }
      const uint64_t history = r.Count(16);
      for (uint64_t i = 0; i < history && r.ok(); ++i) {
        const int64_t count = r.I64();
        const uint64_t open = r.U64();
        if (open > 1) r.Fail();
        c.history.push_back({count, open == 1});
      }
      c.baseline_sum = r.I64();
      c.baseline_steps = r.I64();
      c.state.Load(r);
    });
    outbox_.Load(cluster, kind(), in);
  }

 private:
  struct Failure {
    int64_t ts_ms;
    std::string user;
  };
  struct Point {
    int64_t count;
    bool open;
  };
  struct Cluster {
    int64_t next_ms = kNoTimeMs;
    int64_t first_ms = kNoTimeMs;
    std::deque<Failure> failures;                           // not yet stepped, by end time
    std::unordered_map<std::string, int64_t> last_counted;  // user -> end of their last counted failure
    std::deque<Point> history;                              // counts of the last baseline_steps_ steps
    int64_t baseline_sum = 0, baseline_steps = 0;           // over the history's steps while closed
    HysteresisState state;
  };
  struct Judgement {
    double score = 0;
    int64_t count = 0;
    double expected = 0;
  };

  // A fixed point of Step while no failure comes: the flag closed and not about to change, and the
  // whole history closed steps without failures. Then a step without failures scores 0, keeps the
  // flag closed, and replaces a (0, closed) point by another.
  bool Quiet(const Cluster& c) const {
    return !c.state.open() && !c.state.pending() && c.baseline_sum == 0 &&
           c.baseline_steps == static_cast<int64_t>(c.history.size()) &&
           static_cast<int64_t>(c.history.size()) == baseline_steps_;
  }

  // Failures ending in (t - step, t], once per user within dedupe_ms_.
  int64_t CountStep(Cluster& c, int64_t t) const {
    int64_t n = 0;
    while (!c.failures.empty() && c.failures.front().ts_ms <= t) {
      Failure& f = c.failures.front();
      auto [it, fresh] = c.last_counted.try_emplace(std::move(f.user), f.ts_ms);
      if (fresh || dedupe_ms_ <= 0 || f.ts_ms - it->second >= dedupe_ms_) {
        it->second = f.ts_ms;
        ++n;
      }
      c.failures.pop_front();
    }
    if (c.last_counted.size() > 1024) {  // forget users quiet for longer than the dedupe time
      std::erase_if(c.last_counted, [&](const auto& e) { return t - e.second >= dedupe_ms_; });
    }
    return n;
  }

  // The highest window score; the history's last step is the current one.
  Judgement Scan(const Cluster& c, double rate) const {
    Judgement best;
    int64_t n = 0;
    size_t w = 0;
    const int64_t steps = static_cast<int64_t>(c.history.size());
    for (int64_t k = 1; k <= steps && w < windows_steps_.size(); ++k) {
      n += c.history[steps - k].count;
      if (k < windows_steps_[w]) continue;
      ++w;
      const double e = rate * static_cast<double>(k);
      if (n == 0 || static_cast<double>(n) < min_ratio_ * e) continue;
      const double score = static_cast<double>(n) * std::log(static_cast<double>(n) / e) - (static_cast<double>(n) - e);
      if (score > best.score) best = {score, n, e};
    }
    return best;
  }

  void Step(const std::string& cluster, Cluster& c, int64_t t) {
    const int64_t n = CountStep(c, t);
    // The baseline is what came before this step; it learns from steps while the flag is closed only.
    const bool judged = t - c.first_ms >= min_history_ms_ && c.baseline_steps > 0;
    const double rate =
        c.baseline_steps > 0 ? std::max(min_rate_, static_cast<double>(c.baseline_sum) / c.baseline_steps) : 0;
    c.history.push_back({n, c.state.open()});
    if (judged) {
      const Judgement j = Scan(c, rate);
      switch (c.state.Update(t, j.score >= open_score_, j.score < close_score_, 0, close_for_ms_)) {
        case HysteresisState::Change::kOpened:
          outbox_.Add(cluster, kind(), cluster, true, t, static_cast<double>(j.count), j.expected);
          break;
        case HysteresisState::Change::kClosed:
          outbox_.Add(cluster, kind(), cluster, false, t, static_cast<double>(j.count), j.expected);
          break;
        case HysteresisState::Change::kNone: break;
      }
    }
    Point& now = c.history.back();
    now.open = now.open || c.state.open();
    if (!now.open) c.baseline_sum += now.count, ++c.baseline_steps;
    if (static_cast<int64_t>(c.history.size()) > baseline_steps_) {
      const Point old = c.history.front();
      c.history.pop_front();
      if (!old.open) c.baseline_sum -= old.count, --c.baseline_steps;
    }
  }

  const int64_t step_ms_, baseline_steps_, min_history_ms_, dedupe_ms_;
  const double min_rate_, min_ratio_, open_score_, close_score_;
  const int64_t close_for_ms_;
  const std::vector<std::string> states_;
  std::vector<int64_t> windows_steps_;  // ascending, in steps
  std::map<std::string, Cluster, std::less<>> clusters_;
  AnomalyOutbox outbox_;
};

std::unique_ptr<Detector> Make(const KindConfig& c) { return std::make_unique<FailureBurstDetector>(c); }

}  // namespace

extern const DetectorKind kFailureBurstKind{
    "failure_burst",
    "failed GPU jobs (once per user within dedupe_s) far above their rolling baseline rate in a trailing window, "
    "by a Poisson scan statistic (subject: the cluster)",
    kKeys, &Make};

}  // namespace acmetrace::processors::detectors
