// util_drop: a cluster-wide fall in utilization, as when shared storage or the network stalls every
// running job. Each GPU that holds memory (a job runs there) is compared with its own rolling baseline,
// so jobs ending or starting do not look like a drop: the cluster is "down" at a sample time when at
// least open_share of those GPUs run below drop_ratio x their baseline. The flag opens after open_for_s
// of that and closes once the share has stayed at or below close_share for close_for_s; baselines stop
// learning while the cluster is down. A stall of shared storage or the network slows every running job,
// while one job's own slow phase (a checkpoint, a slow data phase) slows only that job, and a job of a
// thousand GPUs can hold two thirds of the busy GPUs (issue #14): so the flag opens only when the drop
// reaches beyond the job that explains most of it. DCGM does not say which job a GPU runs; a job's GPUs
// start holding memory together, so GPUs whose memory use started within same_start_s of each other are
// taken as one job. GPUs already busy when first seen have no start to go by (they would all fall into
// one group with the telemetry's start: on Kalos at scale 1 two jobs of 1,024 GPUs running since before
// the day, and one's slow phase opened the flag, issue #14): a job's GPUs also go down together, so of
// those, the GPUs whose last spell down started within same_start_s of each other are taken as one job
// (down now or back up: some of a job's GPUs recover for a minute inside a stall), and each one never
// seen down as a job of its own. The job with the most GPUs down is set aside and, when at least
// min_gpus counted GPUs remain, at least others_share of those must be down too (below open_share: a
// stall slows the others as much, but fewer GPUs make a noisier share; 0.45 kept the tuning seeds'
// drops, 0.6 lost one). When fewer remain, one job holds the cluster and its drop is judged as the
// cluster's. Subject: the cluster. Value: the share of GPUs down.
#include <algorithm>
#include <cmath>
#include <compare>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

const GpuMetricName kGpuUtil{"GPU_UTIL"};
const GpuMetricName kFbUsed{"FB_USED"};

struct UtilDropSettings {
  double drop_ratio, open_share, close_share, busy_fb_mib, min_baseline_util, others_share;
  int64_t open_for_ms, close_for_ms, short_ms, baseline_ms, min_baseline_ms, settle_ms, min_gpus, same_start_ms;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = UtilDropSettings;
constexpr KeySpec<S> kKeys[] = {
    {"drop_ratio", "0.8", "a GPU is down when its short-term GPU_UTIL is below this fraction of its own baseline",
     &Ratio, &S::drop_ratio},
    {"open_share", "0.6", "open when at least this share of the cluster's settled busy GPUs is down for open_for_s",
     &Share, &S::open_share},
    {"close_share", "0.3", "close when the share has stayed at or below this for close_for_s (hysteresis)", &Share,
     &S::close_share},
    {"open_for_s", "420", "seconds the share must stay at or above open_share before the flag opens", &Seconds,
     Ms<S>{&S::open_for_ms}},
    {"close_for_s", "180", "seconds the share must stay at or below close_share before the flag closes", &Seconds,
     Ms<S>{&S::close_for_ms}},
    {"short_s", "60", "time constant (s) of each GPU's short-term GPU_UTIL average", &PositiveSeconds,
     Ms<S>{&S::short_ms}},
    {"baseline_s", "1800", "time constant (s) of each GPU's baseline GPU_UTIL average", &PositiveSeconds,
     Ms<S>{&S::baseline_ms}},
    {"min_baseline_s", "600", "a GPU's baseline counts after this many seconds of samples", &Seconds,
     Ms<S>{&S::min_baseline_ms}},
    {"settle_s", "180", "a GPU counts this many seconds after it starts holding memory (job start-up is not a drop)",
     &Seconds, Ms<S>{&S::settle_ms}},
    {"busy_fb_mib", "500", "a GPU holds memory (a job runs there) when FB_USED (MiB) is above this", &NonNegative,
     &S::busy_fb_mib},
    {"min_baseline_util", "10", "GPUs whose baseline GPU_UTIL (%) is below this are not counted", &Percent,
     &S::min_baseline_util},
    {"min_gpus", "8", "fewest counted GPUs for a judgement", &Count, &S::min_gpus},
    {"same_start_s", "30",
     "GPUs whose memory use started within this many seconds of the first of them are taken as one job, and of "
     "the GPUs busy when first seen, those whose last spell down started within it (see others_share)",
     &Seconds, Ms<S>{&S::same_start_ms}},
    {"others_share", "0.45",
     "open only when also at least this share of the counted GPUs outside the job with the most GPUs down is down "
     "(one job's slow phase is no drop)",
     &Share, &S::others_share},
};

S ReadSettings(const KindConfig& c) {
  S s = c.Fill(kKeys);
  if (s.close_share > s.open_share) c.Fail("close_share", "must be at most open_share (" + c.Text("open_share") + ")");
  s.short_ms = std::max<int64_t>(1, s.short_ms);
  s.baseline_ms = std::max<int64_t>(1, s.baseline_ms);
  return s;
}

// The state kept per cluster (Cluster and its parts), each saved in the order its Fields names.
struct Gpu {
  int64_t busy_since_ms = kNoTimeMs;
  int64_t last_ms = kNoTimeMs;
  int64_t learned_ms = 0;  // time the baseline has learned over
  bool has_baseline = false;
  double short_avg = 0;
  double baseline = 0;
  // Layout 2 (issue #14): busy when first seen, so busy_since_ms is not its job's start (false for the
  // GPUs of a layout 1 snapshot, which are grouped by busy_since_ms as that build did); whether it was
  // down when last judged, and when its last spell down started (kNoTimeMs: never judged down).
  bool start_unknown = false;
  bool down = false;
  int64_t last_down_ms = kNoTimeMs;
  template <class Io, class Self>
  static void Fields(Io& io, Self& g) {
    io(g.busy_since_ms, g.last_ms, g.learned_ms, g.has_baseline, g.short_avg, g.baseline);
    if (io.version() >= 2) io(g.start_unknown, g.down, g.last_down_ms);
  }
};
struct Cluster {
  SampleTimeCursor times;
  std::map<std::string, std::vector<Gpu>> nodes;
  NodeCursor<std::map<std::string, std::vector<Gpu>>> cursor;  // not state: where the last lookup ended
  HysteresisState state;
  template <class Io, class Self>
  static void Fields(Io& io, Self& c) {
    io(c.times, c.state, c.nodes);
  }
};

// The weight 1 - exp(-dt / tau_ms) of an exponential average's step of dt ms, computed again only when
// dt changes (the same value exp gives each time).
struct StepDecay {
  double tau_ms;
  double dt = NAN;
  double decay = 0;
  double For(double step) {
    if (step != dt) {
      dt = step;
      decay = 1 - std::exp(-step / tau_ms);
    }
    return decay;
  }
};

class UtilDropDetector : public PerClusterDetector<UtilDropDetector, Cluster> {
 public:
  explicit UtilDropDetector(const UtilDropSettings& s) : s_(s) {}

  std::string_view kind() const override { return "util_drop"; }

  void Observe(const core::Record& record) override {
    const auto* sample = std::get_if<core::UtilSample>(&record);
    if (sample == nullptr) return;
    Cluster& c = JudgeCompletedSampleTime(clusters_, *sample, this, &UtilDropDetector::Judge);
    const std::vector<double>* util = FindGpuMetric(*sample, kGpuUtil);
    if (util == nullptr) return;
    const std::vector<double>* fb = FindGpuMetric(*sample, kFbUsed);
    std::vector<Gpu>& gpus = c.cursor.Find(c.nodes, sample->node);
    if (gpus.size() < util->size()) gpus.resize(util->size());
    const int64_t t = sample->ts_ms;
    const bool learn = !c.state.open() && !c.state.pending();
    // A node's GPUs are sampled together, so their time steps are mostly equal: each decay factor is
    // computed once per distinct step (the same value exp gives each time).
    StepDecay short_decay{static_cast<double>(s_.short_ms)}, baseline_decay{static_cast<double>(s_.baseline_ms)};
    for (size_t i = 0; i < util->size(); ++i) {
      const double u = (*util)[i];
      if (!core::IsSample(u)) continue;
      Gpu& g = gpus[i];
      // Without FB_USED in the feed every GPU counts as busy; with it, a missing cell says nothing.
      const double f = fb != nullptr && i < fb->size() ? (*fb)[i] : NAN;
      if (fb != nullptr && !core::IsSample(f)) continue;
      if (fb != nullptr && !(f > s_.busy_fb_mib)) {
        g = Gpu{};
        g.last_ms = t;
        continue;
      }
      const bool first_seen = g.last_ms == kNoTimeMs;
      const double dt = first_seen ? 0 : static_cast<double>(t - g.last_ms);
      g.last_ms = t;
      if (g.busy_since_ms == kNoTimeMs) {
        g.busy_since_ms = t;
        g.start_unknown = first_seen;
        g.short_avg = u;
      } else {
        g.short_avg += short_decay.For(dt) * (u - g.short_avg);
      }
      if (t - g.busy_since_ms < s_.settle_ms || !learn) continue;  // start-up, or the cluster is down
      if (!g.has_baseline) {
        g.baseline = u;
        g.has_baseline = true;
      } else {
        g.baseline += baseline_decay.For(dt) * (u - g.baseline);
        g.learned_ms += static_cast<int64_t>(dt);
      }
    }
  }

  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    JudgeCompletedSampleTimes(clusters_, watermark_ms, this, &UtilDropDetector::Judge);
    outbox_.FlushTo(watermark_ms, out);
  }

  static constexpr uint32_t kStateVersion = 2;  // of Cluster::Fields

 private:
  // What tells a counted GPU's job: its start of memory use, or for a GPU busy when first seen, when its
  // last spell down started (never down: nothing, a job of its own).
  struct JobKey {
    enum Basis { kStart, kLastDown, kAlone } basis;
    int64_t ms;  // kAlone: an index, unique
    bool down;
    auto operator<=>(const JobKey&) const = default;
  };
  static JobKey JobKeyOf(const Gpu& g, size_t index) {
    if (!g.start_unknown) return {JobKey::kStart, g.busy_since_ms, g.down};
    if (g.last_down_ms != kNoTimeMs) return {JobKey::kLastDown, g.last_down_ms, g.down};
    return {JobKey::kAlone, static_cast<int64_t>(index), g.down};
  }

  // Whether at least others_share of the counted GPUs outside the job with the most GPUs down are down
  // too (true when fewer than min_gpus remain: one job holds the cluster, and its drop is the cluster's).
  // job_keys_ holds each counted GPU's JobKey.
  bool ReachesBeyondOneJob(int64_t counted, int64_t down) {
    std::sort(job_keys_.begin(), job_keys_.end());
    int64_t job_counted = 0, job_down = 0;
    for (size_t i = 0; i < job_keys_.size();) {
      // One job: the GPUs whose start (or drop) came within same_start_s of the first of them (anchored,
      // so that a busy stream of starts does not chain many jobs into one).
      int64_t n = 0, d = 0;
      const JobKey& first = job_keys_[i];
      for (; i < job_keys_.size() && job_keys_[i].basis == first.basis &&
             (first.basis != JobKey::kAlone || n == 0) && job_keys_[i].ms - first.ms <= s_.same_start_ms;
           ++i) {
        ++n;
        d += job_keys_[i].down;
      }
      if (d > job_down) {
        job_down = d;
        job_counted = n;
      }
    }
    const int64_t rest = counted - job_counted;
    if (rest < s_.min_gpus) return true;
    return static_cast<double>(down - job_down) >= s_.others_share * static_cast<double>(rest);
  }

  void Judge(const std::string& cluster, Cluster& c, int64_t t) {
    int64_t counted = 0, down = 0;
    job_keys_.clear();
    for (auto& [_, gpus] : c.nodes) {
      for (Gpu& g : gpus) {
        if (g.last_ms != t || g.busy_since_ms == kNoTimeMs || !g.has_baseline || g.learned_ms < s_.min_baseline_ms) {
          continue;
        }
        if (g.baseline < s_.min_baseline_util) continue;
        ++counted;
        const bool is_down = g.short_avg < s_.drop_ratio * g.baseline;
        down += is_down;
        if (is_down && !g.down) g.last_down_ms = t;
        g.down = is_down;
        job_keys_.push_back(JobKeyOf(g, job_keys_.size()));
      }
    }
    if (counted < s_.min_gpus) {
      // Too few GPUs to judge: a drop pending is not going on. Left pending, it stopped the baselines
      // learning for good (they wait for no pending change), so no later job's GPU was ever counted
      // and the detector was blind for the rest of the day (issue #14, Kalos 1, seed 67).
      if (!c.state.open()) c.state.Update(t, false, false, s_.open_for_ms, s_.close_for_ms);
      return;
    }
    const double share = static_cast<double>(down) / static_cast<double>(counted);
    // The job grouping is needed only while the flag is shut and the share alone would open it (an open
    // flag waits for the close condition only).
    const bool wide = !c.state.open() && share >= s_.open_share && ReachesBeyondOneJob(counted, down);
    switch (c.state.Update(t, wide, share <= s_.close_share, s_.open_for_ms, s_.close_for_ms)) {
      case HysteresisState::Change::kOpened:
        outbox_.Add(cluster, kind(), cluster, true, t, share, s_.open_share);
        break;
      case HysteresisState::Change::kClosed:
        outbox_.Add(cluster, kind(), cluster, false, t, share, s_.close_share);
        break;
      case HysteresisState::Change::kNone: break;
    }
  }

  const UtilDropSettings s_;
  std::vector<JobKey> job_keys_;  // not state: Judge's scratch, kept to reuse its memory
};

KindFactory Configure(const KindConfig& c) { return FactoryOf<UtilDropDetector>(ReadSettings(c)); }

}  // namespace

extern const DetectorKind kUtilDropKind{"util_drop", &DeclareKeys<kKeys>, &Configure,
    "at least open_share of the cluster's busy GPUs run below drop_ratio x their own rolling GPU_UTIL baseline, "
    "and others_share of those outside the job with the most GPUs down (subject: the cluster)"};

}  // namespace acmetrace::processors::detectors
