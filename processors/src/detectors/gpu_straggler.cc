// gpu_straggler: a working GPU whose SM activity stays far below that of the other GPUs of its job on
// its node while those agree with each other (a straggler slows the whole job down). DCGM does not say
// which job a GPU runs: its job's GPUs are those whose run of work started within same_start_s of its
// own (a job's GPUs start together), so that on a node shared by jobs a GPU of a light job is not
// compared with a heavy job's GPUs. A run ends after an idle spell longer than idle_break_s, unless the
// job only paused: the GPU held its memory (FB_USED within pause_fb_share) through the spell and no
// more of its peers worked on than idled with it (a job's GPUs pause together; one that idles alone is
// not their job). SM activity is smoothed per GPU (EWMA over smooth_s); the peers agree when the
// interquartile range of theirs is within max_peer_iqr of their median. A GPU is judged once its run
// has lasted warmup_s: a job's first minutes (loading data and weights, the smoothed value catching up
// from idle) are not straggling. Starting together is not proof of one job (a scheduling pass starts
// several jobs at once; GPUs already working when first seen started at a time unknown and are one
// group): a GPU may straggle only once it has been level with its peers (at or above close_ratio) for
// level_for_s of its run (level_for_unknown_s for the unknown group), counting only time it was
// compared (its job's GPUs swinging low together pauses the count, only lagging ends it), and not
// while another peer lags with it (GPUs lagging together are a lighter job). These rules come from
// issue #14, where nodes shared by one-GPU jobs (the release's median GPU job) made most flags false
// and pauses hid stragglers. The flag opens when the GPU has run below open_ratio x the peers' median
// for open_for_s (time it is not compared, as in its job's pause, neither counts nor starts it again)
// and closes once it is back above close_ratio (or the peers stop working or agreeing, or it stops
// working) for close_for_s. Subject: the GPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "detector_kind.h"
#include "detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

const GpuMetricName kSmActive{"SM_ACTIVE"};
const GpuMetricName kGpuUtil{"GPU_UTIL"};
const GpuMetricName kFbUsed{"FB_USED"};

struct GpuStragglerSettings {
  double open_ratio, close_ratio, min_peer_sm, max_peer_iqr, min_gpu_util, pause_fb_share;
  int64_t open_for_ms, close_for_ms, smooth_ms, min_peers, warmup_ms, same_start_ms, idle_break_ms, level_for_ms,
      level_for_unknown_ms;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = GpuStragglerSettings;
constexpr KeySpec<S> kKeys[] = {
    {"open_ratio", "0.6", "open when a GPU's smoothed SM_ACTIVE is below this fraction of its peers' median", &Ratio,
     &S::open_ratio},
    {"close_ratio", "0.8", "close when it is back at or above this fraction (hysteresis)", &Ratio, &S::close_ratio},
    {"open_for_s", "240", "seconds the GPU must stay below open_ratio before the flag opens", &Seconds,
     Ms<S>{&S::open_for_ms}},
    {"close_for_s", "120", "seconds the close condition must hold before the flag closes", &Seconds,
     Ms<S>{&S::close_for_ms}},
    {"smooth_s", "60", "time constant (s) of the per-GPU moving average of SM_ACTIVE", &PositiveSeconds,
     Ms<S>{&S::smooth_ms}},
    {"min_peer_sm", "0.2", "peers count as busy when their median smoothed SM_ACTIVE (0..1) is at least this", &Share,
     &S::min_peer_sm},
    {"max_peer_iqr", "0.2", "peers agree when the interquartile range of their smoothed SM_ACTIVE is at most this share of their median",
     &NonNegative, &S::max_peer_iqr},
    {"min_peers", "3", "fewest other GPUs of the node reporting SM_ACTIVE for a comparison", &Count, &S::min_peers},
    {"min_gpu_util", "10", "a GPU is working (can straggle) when its GPU_UTIL (%) is at least this; idle GPUs never do",
     &Percent, &S::min_gpu_util},
    {"warmup_s", "300", "seconds a GPU must have been working before it is judged (its job's start-up is not straggling)",
     &Seconds, Ms<S>{&S::warmup_ms}},
    {"same_start_s", "30", "a GPU's peers are the node's GPUs whose work started within this many seconds of its own (its job's)",
     &Seconds, Ms<S>{&S::same_start_ms}},
    {"idle_break_s", "30", "a GPU idle (GPU_UTIL below min_gpu_util) for longer than this has ended its job: its next work is a new one, unless its job paused (see pause_fb_share)",
     &Seconds, Ms<S>{&S::idle_break_ms}},
    {"pause_fb_share", "0.1", "an idle spell longer than idle_break_s is a pause of the GPU's job, not its end, when its FB_USED stayed within this share of its value when it last worked and no more of its peers worked on than idled with it",
     &NonNegative, &S::pause_fb_share},
    {"level_for_s", "300", "a GPU may straggle once it has been level with its agreeing peers (at or above close_ratio) for this long in its run",
     &Seconds, Ms<S>{&S::level_for_ms}},
    {"level_for_unknown_s", "1800", "the same for a GPU already working when first seen, whose job is not known by its start",
     &Seconds, Ms<S>{&S::level_for_unknown_ms}},
};

S ReadSettings(const KindConfig& c) {
  S s = c.Fill(kKeys);
  if (s.close_ratio < s.open_ratio) c.Fail("close_ratio", "must be at least open_ratio (" + c.Text("open_ratio") + ")");
  s.smooth_ms = std::max<int64_t>(1, s.smooth_ms);
  return s;
}

// Its opening (settings, kind, Observe taking the util samples) is every telemetry detector's, by the
// Detector interface: alike in shape with util_drop's.
class GpuStragglerDetector : public PerNodeDetector<GpuStragglerDetector> {
 public:
  explicit GpuStragglerDetector(const GpuStragglerSettings& s) : s_(s) {}

  std::string_view kind() const override { return "gpu_straggler"; }

  void Observe(const core::Record& record) override {
    const auto* sample = std::get_if<core::UtilSample>(&record);
    if (sample == nullptr) return;
    const std::vector<double>* sm = FindGpuMetric(*sample, kSmActive);
    if (sm == nullptr) return;
    const std::vector<double>* util = FindGpuMetric(*sample, kGpuUtil);
    const std::vector<double>* fb = FindGpuMetric(*sample, kFbUsed);
    std::vector<Gpu>& gpus = NodeEntry(nodes_, key_, sample->cluster, sample->node);
    if (gpus.size() < sm->size()) gpus.resize(sm->size());
    const int64_t t = sample->ts_ms;
    // A node's GPUs are sampled together: one decay factor serves them all.
    int64_t decay_last_ms = kNoTimeMs;
    double decay = 0;
    for (size_t i = 0; i < sm->size(); ++i) {
      Gpu& g = gpus[i];
      const double v = (*sm)[i];
      g.fresh = core::IsSample(v);
      g.resumed = false;
      if (!g.fresh) continue;
      const bool first = g.last_ms == kNoTimeMs;
      g.step_ms = first ? 0 : t - g.last_ms;
      if (first) {
        g.smooth = v;
      } else {
        if (g.last_ms != decay_last_ms) {
          decay_last_ms = g.last_ms;
          decay = 1.0 - std::exp(-static_cast<double>(t - g.last_ms) / static_cast<double>(s_.smooth_ms));
        }
        g.smooth += decay * (v - g.smooth);
      }
      g.last_ms = t;
      const double u = util != nullptr && i < util->size() ? (*util)[i] : NAN;
      const bool working = core::IsSample(u) ? u >= s_.min_gpu_util : v > 0;
      // A job that pauses (checkpointing, evaluating, waiting on I/O) holds its memory; a new job on the
      // GPU frees it and loads its own. Memory off the value it had when the GPU last worked says its
      // job changed (held_fb_mib NaN: changed, or not known).
      const double f = fb != nullptr && i < fb->size() ? (*fb)[i] : NAN;
      if (core::IsSample(f) && !(std::abs(f - g.held_fb_mib) <= s_.pause_fb_share * g.held_fb_mib)) {
        g.held_fb_mib = NAN;
      }
      // Idle but holding memory when first seen: its job started before, and pauses.
      if (first && !working && f > 0) g.held_fb_mib = f;
      if (working) {
        // A GPU already working when first seen (or when a version 1 snapshot was loaded) started at a
        // time unknown (kNoTimeMs). A new run of work (a new job) starts after an idle spell longer
        // than idle_break_s, unless its job only paused (decided below, once every GPU of the record
        // has been seen).
        const bool never_worked = g.last_working_ms == kNoTimeMs;
        if (first) {
          g.working_since_ms = kNoTimeMs;
          g.level_since_ms = kNoTimeMs;
          g.kept_up = false;
        }
        g.resumed = never_worked ? !first && !g.working : t - g.last_working_ms > s_.idle_break_ms;
        g.paused = !std::isnan(g.held_fb_mib);  // it held its memory through the spell
        if (!g.resumed) g.last_working_ms = t;
        if (core::IsSample(f)) g.held_fb_mib = f;
      } else {
        g.last_idle_ms = t;
      }
      g.working = working;
    }
    // A GPU back from an idle spell: its job paused if it held its memory through the spell and its
    // peers (the GPUs whose run started with its own) idled with it rather than worked on, a job's GPUs
    // pausing together (a data-parallel step waits for all of them). Then its run goes on, neither
    // warming up nor having to be level with its peers again: a straggler stays slow across a pause,
    // and as a new run it would be judged only once level with its peers, which a GPU already
    // straggling never is. Otherwise (a new job, or a GPU that idled while its peers worked on: not
    // their job) a new run starts. Decided for every GPU first, then applied, so that the order of the
    // GPUs does not matter.
    for (size_t i = 0; i < sm->size(); ++i) {
      Gpu& g = gpus[i];
      if (!g.fresh || !g.resumed || !g.paused || g.last_working_ms == kNoTimeMs) continue;
      int worked_on = 0, idled_too = 0;
      for (size_t j = 0; j < gpus.size(); ++j) {
        const Gpu& p = gpus[j];
        // Its peers that were working when it went idle (one idle for long, done with its job, says
        // nothing).
        if (j == i || !p.fresh || !SameStart(g, p) || p.last_working_ms == kNoTimeMs ||
            p.last_working_ms < g.last_working_ms - s_.idle_break_ms) {
          continue;
        }
        if (p.last_idle_ms != kNoTimeMs && p.last_idle_ms > g.last_working_ms) {
          ++idled_too;
        } else if (p.working) {
          ++worked_on;
        }
      }
      g.paused = worked_on <= idled_too;
    }
    for (size_t i = 0; i < sm->size(); ++i) {
      Gpu& g = gpus[i];
      if (!g.fresh || !g.resumed) continue;
      if (!g.paused) {
        g.working_since_ms = t;
        g.level_since_ms = kNoTimeMs;
        g.kept_up = false;
      }
      g.last_working_ms = t;
    }
    // When every fresh working GPU's run started with every other's (one job on the node, the common
    // case), each one's peers are all the others: their values are sorted once, and a GPU's peers are
    // that order without one value equal to its own (the same values, so the same median).
    all_working_.clear();
    bool any_unknown_start = false, any_known_start = false;
    int64_t first_start = std::numeric_limits<int64_t>::max(), last_start = std::numeric_limits<int64_t>::min();
    for (const Gpu& g : gpus) {
      if (!g.fresh || !g.working) continue;
      all_working_.push_back(g.smooth);
      if (g.working_since_ms == kNoTimeMs) {
        any_unknown_start = true;
      } else {
        any_known_start = true;
        first_start = std::min(first_start, g.working_since_ms);
        last_start = std::max(last_start, g.working_since_ms);
      }
    }
    // SameStart holds for every pair: all starts unknown, or all known within s_.same_start_ms.
    const bool one_start = !(any_unknown_start && any_known_start) &&
                           (!any_known_start || last_start - first_start <= s_.same_start_ms);
    if (one_start) std::sort(all_working_.begin(), all_working_.end());
    for (size_t i = 0; i < gpus.size(); ++i) {
      Gpu& g = gpus[i];
      if (!g.fresh) continue;
      double ratio = NAN;
      bool busy_peers = false;
      bool lags_alone = false;  // no peer lags with it (GPUs lagging together are a lighter job of their own)
      if (g.working) {
        // Its peers: the node's other fresh working GPUs whose work started with its own, the GPUs of
        // its job (a job's GPUs start together; DCGM says nothing of jobs). Sorted: peer(k) is the k-th.
        const double* sorted = nullptr;
        size_t n = 0, own = 0;  // own: where its own value is left out of sorted
        if (one_start) {
          sorted = all_working_.data();
          n = all_working_.size() - 1;
          own = static_cast<size_t>(std::lower_bound(all_working_.begin(), all_working_.end(), g.smooth) -
                                    all_working_.begin());
        } else {
          peers_.clear();
          for (size_t j = 0; j < gpus.size(); ++j) {
            const Gpu& p = gpus[j];
            if (j != i && p.fresh && p.working && SameStart(g, p)) peers_.push_back(p.smooth);
          }
          std::sort(peers_.begin(), peers_.end());
          sorted = peers_.data();
          n = peers_.size();
          own = n;
        }
        auto peer = [&](size_t k) { return sorted[k < own ? k : k + 1]; };
        if (static_cast<int64_t>(n) >= s_.min_peers) {
          const double median = n % 2 ? peer(n / 2) : 0.5 * (peer(n / 2 - 1) + peer(n / 2));
          const double iqr = peer((3 * n) / 4) - peer(n / 4);
          busy_peers = median >= s_.min_peer_sm && iqr <= s_.max_peer_iqr * median;
          lags_alone = !(peer(0) < s_.open_ratio * median);
          if (median > 0) ratio = g.smooth / median;
        }
      }
      // A GPU whose run started at an unknown time is not warming up. Starting together is not proof
      // of one job (a scheduling pass starts several jobs at once, and GPUs already working when
      // first seen started at an unknown time): a GPU may straggle only once it has been level with
      // its peers (at or above close_ratio) for level_for_s in this run. A straggler falls behind; a
      // GPU of a lighter job never was level with the others. Levelness counts from the run's first
      // comparisons, warm-up or not: a job's GPUs ramp up together, and waiting for warmup_s first
      // left a GPU falling behind in its job's first 10 minutes never judged (issue #14).
      const bool judged = g.working && (g.working_since_ms == kNoTimeMs || t - g.working_since_ms >= s_.warmup_ms);
      // Only a comparison that finds it lagging ends a level spell. While it is not compared (its
      // peers not busy or not agreeing, as when its job's activity swings low on every GPU at once, or
      // it idles in its job's pause) the spell waits: its start moves on by the time not compared, so
      // only compared time counts. Before, such a dip ended the spell, and on Kalos, whose jobs dip
      // every 10-20 minutes, a GPU already working when first seen was never level for
      // level_for_unknown_s, so its stragglers were never judged (issue #14, seeds 25-40).
      const bool compared = g.working && busy_peers;
      if (compared && !(ratio < s_.close_ratio)) {
        if (g.level_since_ms == kNoTimeMs) g.level_since_ms = t;
        const int64_t level_for_ms = g.working_since_ms == kNoTimeMs ? s_.level_for_unknown_ms : s_.level_for_ms;
        if (t - g.level_since_ms >= level_for_ms) g.kept_up = true;
      } else if (compared) {
        g.level_since_ms = kNoTimeMs;
      } else if (g.level_since_ms != kNoTimeMs) {
        g.level_since_ms += g.step_ms;
      }
      const bool straggling = busy_peers && lags_alone && judged && g.kept_up && ratio < s_.open_ratio;
      const bool recovered = !busy_peers || !judged || !(ratio < s_.close_ratio);
      const double value = std::isnan(ratio) ? 1.0 : ratio;
      // The same for the time it lags: while the flag is closed, a sample without a comparison (it idles
      // in its job's pause, or its peers are not busy or do not agree) neither counts toward open_for_s
      // nor starts it again; only a comparison that finds it not straggling does. Before, a straggler of
      // 7 minutes whose job paused twice (GPU_UTIL 0 on every GPU for 15-45 s) lagged 225, 60 and 45 s
      // between the pauses and was never flagged (issue #14, Seren 0.2, blind seed 128).
      if (!compared && !g.state.open()) {
        g.state.Wait(g.step_ms);
        continue;
      }
      switch (g.state.Update(t, straggling, recovered, s_.open_for_ms, s_.close_for_ms)) {
        case HysteresisState::Change::kOpened:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), true, t, value, s_.open_ratio);
          break;
        case HysteresisState::Change::kClosed:
          outbox_.Add(sample->cluster, kind(), GpuSubject(sample->node, i), false, t, value, s_.close_ratio);
          break;
        case HysteresisState::Change::kNone: break;
      }
    }
  }

  // Whether two GPUs' runs of work started together (kNoTimeMs: before a version 1 snapshot, unknown).
  template <class G>
  bool SameStart(const G& a, const G& b) const {
    if (a.working_since_ms == kNoTimeMs || b.working_since_ms == kNoTimeMs) {
      return a.working_since_ms == b.working_since_ms;
    }
    return std::abs(a.working_since_ms - b.working_since_ms) <= s_.same_start_ms;
  }

  // 2: each GPU's run of work (since, last, kept up); 3: the memory it held when it last worked and its
  // last idle sample (a pause of its job goes on with its run).
  static constexpr uint32_t kStateVersion = 3;

 private:
  friend PerNodeDetector;
  struct Gpu {
    double smooth = 0;
    int64_t last_ms = kNoTimeMs;
    bool fresh = false;    // sampled in the current record
    bool working = false;
    int64_t working_since_ms = kNoTimeMs;  // start of the current run of work (kNoTimeMs: unknown)
    int64_t last_working_ms = kNoTimeMs;   // last working sample
    int64_t level_since_ms = kNoTimeMs;    // level with its peers since (kNoTimeMs: not now)
    bool kept_up = false;                  // level with its peers for level_for_s in this run
    double held_fb_mib = NAN;              // FB_USED when it last worked, if held since (NaN: changed or unknown)
    int64_t last_idle_ms = kNoTimeMs;      // last idle sample
    bool resumed = false;                  // scratch: working again after an idle spell, in this record
    bool paused = false;                   // scratch: that spell was a pause of its job
    int64_t step_ms = 0;                   // scratch: time since its previous sample (0: first)
    HysteresisState state;
    template <class Io, class Self>
    static void Fields(Io& io, Self& g) {
      // GPUs beyond a short record's columns keep their fresh flag: it is state too.
      io(g.smooth, g.last_ms, StateBits(g.fresh, g.working), g.state);
      if (io.version() >= 2) io(g.working_since_ms, g.last_working_ms, g.level_since_ms, StateBits(g.kept_up));
      if (io.version() >= 3) io(g.held_fb_mib, g.last_idle_ms);
    }
  };

  const GpuStragglerSettings s_;
  std::map<std::string, std::vector<Gpu>> nodes_;  // "cluster/node" -> per GPU
  NodeKey<std::vector<Gpu>> key_;  // scratch: the key of the record at hand, and where the last lookup ended
  std::vector<double> peers_;        // scratch: one GPU's peers' smoothed values, sorted
  std::vector<double> all_working_;  // scratch: every fresh working GPU's smoothed value of a record
};

KindFactory Configure(const KindConfig& c) { return FactoryOf<GpuStragglerDetector>(ReadSettings(c)); }

}  // namespace

extern const DetectorKind kGpuStragglerKind{"gpu_straggler", &DeclareKeys<kKeys>, &Configure,
    "a working GPU's SM_ACTIVE stays below open_ratio x its node peers' median while the peers agree (subject: the GPU)"};

}  // namespace acmetrace::processors::detectors
