// Fault injection: where the incidents go, how big they are, and what they do to the data. Magnitudes
// are drawn from ranges seen in production A100 fleets (not from what a detector needs); placement
// keeps incidents on one subject (GPU, node, cluster, job) apart and starts them an hour into the window,
// so that detectors with rolling baselines have one.
#include "synth/faults.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "synth/random.h"
#include "synth/writers.h"

namespace acmetrace::producers::synth {
namespace {

constexpr int64_t kLeadInS = 3600;     // no incident in the window's first hour...
constexpr int64_t kTailS = 1800;       // ...nor in its last half hour
constexpr int64_t kApartS = 600;       // incidents on one node or GPU stay 10 minutes apart
constexpr int64_t kClusterApartS = 1800;  // cluster-wide ones half an hour
constexpr int kMaxTries = 200;
constexpr int kMinBurstUsers = 5;      // a failure burst fails the jobs of at least this many users...
constexpr int64_t kFailingForS = 1800;  // a user with a failed GPU job in the last half hour is failing
constexpr double kBurstChance = 1e-4;  // ...and more than chance brings together once in this many spans
// ...where the cluster's rate is known to within about 1/sqrt(kBurstRateShape): chance is a negative
// binomial count of this shape, the failure_burst detector's rate_shape (issue #14).
constexpr double kBurstRateShape = 40;
constexpr int64_t kOnsetRateS = 6 * 3600;        // the cluster's rate of users starting to fail: over the
constexpr int64_t kRecentOnsetRateS = 2 * 3600;  // six hours before, or the two hours before if higher
constexpr double kUtilEwmaS = 600;     // a util drop is sized against the last ~10 minutes
constexpr double kIdlePowerShare = 0.3;  // a stalled GPU still draws about this share of its power
// A straggler is placed where its job's GPUs compute, as the gpu_straggler detector's defaults count them
// busy (their median SM_ACTIVE, smoothed over smooth_s 60, at least min_peer_sm 0.2), for the shortest
// straggler's length in a row: 5 minutes, the detector's open_for_s (240 s) and a minute for its average
// to fall.
constexpr double kStragglerPeerSm = 0.2;
constexpr double kStragglerSmoothS = 60;
constexpr int64_t kStragglerSeenS = 300;

// XIDs of incidents in A100 fleets: MMU fault (31), GPU stopped processing (43), double-bit ECC (48),
// fell off the bus (79), contained and uncontained ECC (94, 95).
constexpr uint16_t kInjectedXids[] = {31, 43, 48, 79, 94, 95};

// Injected overheats, drawn from ten equally likely cases: half warning ones, held at 86-88 C (over
// the 85 C warning, clocks slowing), half critical ones, held at 91 C (throttling hard, short of the
// shutdown temperature). The level is held within a degree, so a warning overheat reads 85-89 C and a
// critical one 90-92 C: its tier is never in doubt at the 90 C threshold.
constexpr int kOverheatCases = 10;
double OverheatLevelC(int64_t overheat_case) {
  return overheat_case < kOverheatCases / 2 ? static_cast<double>(86 + overheat_case * 3 / (kOverheatCases / 2))
                                            : kCriticalOverheatC + 1;
}

// Busy spans of one subject.
class Spans {
 public:
  bool Free(int64_t start, int64_t end, int64_t apart) const {
    for (const auto& [s, e] : spans_) {
      if (start < e + apart && s < end + apart) return false;
    }
    return true;
  }
  void Add(int64_t start, int64_t end) { spans_.emplace_back(start, end); }

 private:
  std::vector<std::pair<int64_t, int64_t>> spans_;
};

bool IsFailed(JobState s) { return s == JobState::kFailed || s == JobState::kNodeFail || s == JobState::kTimeout; }

// Incidents of one kind per simulated day: "a few".
int CountFor(Rng& rng, int days) {
  int n = 0;
  for (int d = 0; d < days; ++d) n += 2 + static_cast<int>(rng.Below(3));
  return n;
}

// The fewest users a failure burst fails the jobs of, when expected_users of the cluster's own fail in
// its time: at least kMinBurstUsers, and so many that the cluster's own would reach as many in at most
// kBurstChance of such spans: a negative binomial count of mean expected_users and shape kBurstRateShape
// (a rate known to within ~16%; issue #14: the cluster's counts outside incidents wander about the rate
// of the hours before by more than Poisson's chance, and the detector judges them so).
int MinBurstUsers(double expected_users) {
  const double r = kBurstRateShape, p = expected_users / (expected_users + r);
  double term = std::pow(r / (expected_users + r), r), below = 0;  // P(N = k), P(N < k)
  int n = 0;
  for (; n < 10000 && 1.0 - below > kBurstChance; ++n) {
    below += term;
    term *= (n + r) / (n + 1) * p;
  }
  return std::max(kMinBurstUsers, n);
}

// A cluster's rate of users starting to fail is not known to be below one an hour: the least rate a
// burst is sized against, as the failure_burst detector's min_rate_per_h floors its baseline (issue
// #22: where a quiet night showed one failure in 90 minutes, bursts of 5 users over 25-30 minutes
// scored 6.8 there, under its open_score of 7).
constexpr double kLeastOnsetRate = 1.0 / 3600;

// The cluster's rate of users starting to fail at t, per second, as anyone watching it at t knows it:
// the mean over the kOnsetRateS before t or, if higher, over the kRecentOnsetRateS before t (a
// cluster fails 2-3x more users in the afternoon than at night, which six hours lag); both start no
// earlier than the window. This is the failure_burst detector's baseline (baseline_s 21600, recent_s
// 7200): an incident is a rise over the rate just shown, which is all a user or a detector can know at
// the time. (Issue #14: the rate over the six hours *around* t, known only afterwards, is lower than the
// two hours before at the evening peak, where the rate falls: bursts sized against it were
// indistinguishable, at the time, from the evening's own failures.) `onsets` ascending.
double ClusterOnsetRate(const std::vector<int64_t>& onsets, int64_t window_start_s, int64_t t) {
  auto mean_over = [&](int64_t span_s) {
    const int64_t from = std::max(window_start_s, t - span_s);
    if (t <= from) return 0.0;
    const auto n =
        std::lower_bound(onsets.begin(), onsets.end(), t) - std::lower_bound(onsets.begin(), onsets.end(), from);
    return static_cast<double>(n) / static_cast<double>(t - from);
  };
  return std::max(mean_over(kOnsetRateS), mean_over(kRecentOnsetRateS));
}

int64_t Uniform(Rng& rng, int64_t lo, int64_t hi) {  // [lo, hi]
  return hi <= lo ? lo : lo + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
}

// CPUs and memory of a GPU job as the cluster's trace writes them.
void SetResources(const ClusterModel& model, Job& job) {
  if (model.kalos_format) {
    const int per_pod = std::min(job.gpus, 8);
    job.cpus = job.nodes * 15 * per_pod;
    job.mem_gb = 125 * per_pod;
    job.shared_mem_gb = 12.5f * static_cast<float>(per_pod);
  } else {
    job.cpus = job.gpus >= 8 ? job.nodes * 128 : job.gpus * 8;
  }
}

// Which GPUs the schedule's jobs hold when: the incidents' own jobs go where GPUs are free, so the
// cluster's capacity holds at every instant (a job of the trace never shares a GPU with another).
class CapacityMap {
 public:
  CapacityMap(const Schedule& schedule, int64_t from_s) : busy_(static_cast<size_t>(schedule.nodes) * 8) {
    for (const Job& job : schedule.jobs) {
      if (job.start_s >= 0 && job.end_s > from_s) Hold(job.alloc, job.start_s, job.end_s);
    }
    for (auto& list : busy_) std::sort(list.begin(), list.end());
  }

  void Hold(const std::vector<NodeAlloc>& alloc, int64_t start, int64_t end) {
    if (end <= start) return;
    for (const NodeAlloc& a : alloc) {
      for (int g = 0; g < 8; ++g) {
        if (!(a.gpu_mask & (1u << g))) continue;
        auto& list = busy_[static_cast<size_t>(a.node) * 8 + g];
        list.insert(std::upper_bound(list.begin(), list.end(), std::make_pair(start, end)), {start, end});
      }
    }
  }

  /// GPUs of node free throughout [start, end), as a mask.
  uint8_t FreeMask(int node, int64_t start, int64_t end) const {
    uint8_t mask = 0;
    for (int g = 0; g < 8; ++g) {
      const auto& list = busy_[static_cast<size_t>(node) * 8 + g];
      // Intervals of one GPU never overlap, so sorted by start they are sorted by end too.
      auto it = std::partition_point(list.begin(), list.end(), [&](const auto& in) { return in.second <= start; });
      if (it == list.end() || it->first >= end) mask |= static_cast<uint8_t>(1u << g);
    }
    return mask;
  }

  /// GPUs for `gpus` over [start, end) as the scheduler places them (whole nodes from 8 GPUs up, else the
  /// fullest node that fits), held at once; empty if they are not free.
  std::vector<NodeAlloc> Take(int gpus, int64_t start, int64_t end) {
    std::vector<NodeAlloc> alloc;
    const int nodes = static_cast<int>(busy_.size() / 8);
    if (gpus >= 8) {
      const int want = (gpus + 7) / 8;
      for (int n = 0; n < nodes && static_cast<int>(alloc.size()) < want; ++n) {
        if (FreeMask(n, start, end) == 0xFF) alloc.push_back({n, 0xFF});
      }
      if (static_cast<int>(alloc.size()) < want) alloc.clear();
    } else {
      int best = -1, best_free = 9;
      uint8_t best_mask = 0;
      for (int n = 0; n < nodes && best_free > gpus; ++n) {
        const uint8_t mask = FreeMask(n, start, end);
        const int f = std::popcount(static_cast<unsigned>(mask));
        if (f >= gpus && f < best_free) best = n, best_free = f, best_mask = mask;
      }
      if (best >= 0) {
        uint8_t mask = 0;
        for (int g = 0, need = gpus; g < 8 && need > 0; ++g) {
          if (best_mask & (1u << g)) mask |= static_cast<uint8_t>(1u << g), --need;
        }
        alloc.push_back({best, mask});
      }
    }
    Hold(alloc, start, end);
    return alloc;
  }

 private:
  std::vector<std::vector<std::pair<int64_t, int64_t>>> busy_;  // per GPU: [start, end), sorted
};

// A job that fails at once, as in a burst of failures (bad image, storage outage, broken driver): the
// size, type and user follow the cluster's GPU job mix; it runs between 10 s and 10 min.
Job MakeFailingJob(const ClusterModel& model, int nodes, int64_t end_s, Rng& rng) {
  std::vector<double> type_cumulative;
  double sum = 0;
  for (const auto& t : model.gpu_types) type_cumulative.push_back(sum += t.count_share);
  const GpuTypeModel& type = model.gpu_types[PickWeighted(type_cumulative, rng.Uniform())];
  std::vector<double> size_cumulative;
  sum = 0;
  for (const auto& sw : type.sizes) size_cumulative.push_back(sum += sw.weight);
  const int max_gpus = nodes == 1 ? 8 : 8 * (nodes / 2);
  Job job;
  job.type = type.type;
  job.activity = static_cast<float>(type.activity_mean);
  job.gpus = std::min(type.sizes[PickWeighted(size_cumulative, rng.Uniform())].gpus, max_gpus);
  job.nodes = (job.gpus + 7) / 8;
  job.state = JobState::kFailed;
  // Users as the scheduler picks them: Zipf over the population, pretraining from a few teams.
  std::vector<double> user_cumulative;
  sum = 0;
  for (int r = 0; r < model.users; ++r) user_cumulative.push_back(sum += 1.0 / std::pow(r + 1.0, 1.05));
  job.user = type.type == JobType::kPretrain ? static_cast<int>(rng.Below(std::min(8, model.users)))
                                             : static_cast<int>(PickWeighted(user_cumulative, rng.Uniform()));
  job.run_s = std::max<int64_t>(1, std::llround(std::exp(std::log(10.0) + rng.Uniform() * std::log(60.0))));
  job.end_s = end_s;
  job.start_s = end_s - job.run_s;
  job.eligible_s = job.start_s;
  job.submit_s = job.start_s - static_cast<int64_t>(rng.Below(30));
  SetResources(model, job);
  return job;
}

// Large job failures: a job of at least LargeJobGpus (the release's pretraining jobs of 256-1,024 GPUs;
// a third of a cluster too small for those) fails (a node, a link, the collective library): hours of
// hundreds of GPUs lost, the incident large_job_failure flags. The generator's own failed large jobs
// come from the campaigns, about once in four days on a 0.2 Seren (issue #14: too few to measure), so
// 2-4 a day are injected, at least half an hour apart. Where the cluster runs large jobs, running ones
// fail (PickRunningLargeJobs); where it runs too few for the day's count (a small cluster's campaigns
// are narrower than a third of it), every one is a new failing large job that waits for room in the
// scheduler's queue like any other job (PlanLargeJobs), since whole free nodes for a third of a
// cluster are rare unless the scheduler drains them. Both from generators of their own.
struct LargeFailure {
  size_t job;               // index into Schedule::jobs of the running job made to fail
  int64_t fail_s;
  int64_t restart_s;        // its campaign resubmits the run on the same GPUs 1-3 minutes later...
  int64_t restart_submit_s;  // ...if at least 5 minutes of it were left
};

// A large job running at a time drawn in the window, at least 30 minutes into its run and not ending
// within 10 minutes, ends FAILED there, and its campaign resubmits the run on the same nodes 1-3 minutes
// later (a restart after a failure is automatic), holding them until the failed job would have ended,
// with its outcome. The GPUs are the job's, so the cluster's capacity holds and the telemetry shows the
// failure as it is: the GPUs idle between the two jobs. `wanted`: how many the window should have; the
// result may hold fewer, and holds none of the `planned` ones' times (PlanLargeJobs's, in the schedule).
std::vector<LargeFailure> PickRunningLargeJobs(const Schedule& schedule, uint64_t noise_key, int& wanted,
                                               const std::vector<int64_t>& planned = {}) {
  std::vector<LargeFailure> picks;
  const int64_t ws = schedule.window_start_s, we = schedule.window_end_s;
  const int64_t lo = ws + kLeadInS, hi = we - kTailS;
  const int days = static_cast<int>((we - ws + 86399) / 86400);
  Rng large_rng(MixKey(noise_key, 0x1A76E));
  const int least = LargeJobGpus(8 * schedule.nodes);
  Spans failing;
  for (const int64_t t : planned) failing.Add(t, t);
  std::set<size_t> picked;
  wanted = CountFor(large_rng, days);
  for (int n = wanted - static_cast<int>(planned.size()); n > 0; --n) {
    for (int tries = 0; tries < kMaxTries; ++tries) {
      const int64_t fail_s = Uniform(large_rng, lo, hi);
      if (!failing.Free(fail_s, fail_s, kClusterApartS)) continue;
      std::vector<size_t> candidates;
      for (size_t j = 0; j < schedule.jobs.size(); ++j) {
        const Job& job = schedule.jobs[j];
        if (!job.in_trace || job.gpus < least || job.start_s < 0 || job.alloc.empty()) continue;
        if (IsFailed(job.state) || job.xid != 0 || picked.count(j)) continue;
        if (job.start_s > fail_s - 1800 || job.end_s < fail_s + 600) continue;
        candidates.push_back(j);
      }
      if (candidates.empty()) continue;
      const size_t j = candidates[large_rng.Below(candidates.size())];
      failing.Add(fail_s, fail_s);
      LargeFailure f{j, fail_s, fail_s + Uniform(large_rng, 60, 180), 0};
      if (schedule.jobs[j].end_s - f.restart_s >= 300) {
        f.restart_submit_s = f.restart_s - static_cast<int64_t>(large_rng.Below(20));
      }
      picked.insert(j);
      picks.push_back(f);
      break;
    }
  }
  return picks;
}

// Keys of the failing large jobs PlanLargeJobs may add to a window of `days` days.
std::vector<uint64_t> PlannedLargeKeys(uint64_t noise_key, int days) {
  std::vector<uint64_t> keys;
  for (int i = 0; i < 4 * days; ++i) keys.push_back(MixKey(noise_key, 0x1A7F000 + static_cast<uint64_t>(i)));
  return keys;
}

uint64_t FaultNoiseKey(const ClusterModel& model, uint64_t seed) { return MixKey(MixKey(seed, HashName(model.name)), 0xFA17); }

}  // namespace

std::vector<Job> FaultPlan::PlanLargeJobs(const ClusterModel& model, const Schedule& schedule, uint64_t seed) {
  const int64_t ws = schedule.window_start_s, we = schedule.window_end_s;
  if (we - kTailS - (ws + kLeadInS) < 3600) return {};
  const uint64_t noise_key = FaultNoiseKey(model, seed);
  int wanted = 0;
  if (static_cast<int>(PickRunningLargeJobs(schedule, noise_key, wanted).size()) >= wanted) return {};
  // A pretraining job (a pretraining team's user, whole nodes) of a third to 0.4 of the cluster (at most
  // 1,024 GPUs, as the release's largest), submitted from an hour into the window to 8 hours before its
  // end, at least an hour apart, so that after its wait for room it fails within the window, 30 minutes
  // to 4 hours into its run.
  const int nodes = schedule.nodes;
  const int least_nodes = std::min(nodes, (LargeJobGpus(8 * nodes) + 7) / 8);
  const int most_nodes = std::clamp(static_cast<int>(0.4 * nodes), least_nodes, std::max(least_nodes, 128));
  const GpuTypeModel* pretrain = nullptr;
  for (const auto& t : model.gpu_types) {
    if (t.type == JobType::kPretrain) pretrain = &t;
  }
  Rng rng(MixKey(noise_key, 0x1A7E5));
  const int64_t first = ws + kLeadInS, last = std::max(first, we - 8 * 3600);
  // Submitted where its nodes are free for its run in the schedule simulated without it, if there is
  // such a time (the simulation with it is the same up to there, so it starts at once), else at a time
  // drawn, and queued ahead of the workload (a pretraining team's priority): it starts when running
  // jobs have left it room, or is dropped if that is more than 4 hours away or too late for it to fail
  // in the window, and running large jobs fail instead. In FIFO order behind a full small cluster's
  // other large jobs it waited days (a 0.2 Kalos queued 1,000 GPUs of them for the whole day, against
  // which every backlog was measured, and their failures fell after the window).
  CapacityMap capacity(schedule, ws - 86400);
  Spans submits;
  std::vector<Job> jobs;
  const std::vector<uint64_t> keys = PlannedLargeKeys(noise_key, static_cast<int>((we - ws + 86399) / 86400));
  for (int i = 0; i < wanted && i < static_cast<int>(keys.size()); ++i) {
    Job job;
    job.type = JobType::kPretrain;
    job.activity = pretrain != nullptr ? static_cast<float>(pretrain->activity_mean) : 0.0f;
    job.nodes = least_nodes + static_cast<int>(rng.Below(static_cast<uint64_t>(most_nodes - least_nodes + 1)));
    job.gpus = 8 * job.nodes;
    job.state = JobState::kFailed;
    job.user = static_cast<int>(rng.Below(static_cast<uint64_t>(std::max(1, std::min(8, model.users)))));
    job.run_s = std::llround(std::exp(std::log(1800.0) + rng.Uniform() * std::log(8.0)));
    const int64_t queued_s = static_cast<int64_t>(rng.Below(120));
    for (int tries = 0; tries < 4 * kMaxTries && job.alloc.empty(); ++tries) {
      const int64_t submit = Uniform(rng, first, last);
      if (!submits.Free(submit, submit, 3600)) continue;
      job.alloc = capacity.Take(job.gpus, submit + queued_s, submit + queued_s + job.run_s);
      job.submit_s = submit;
    }
    if (!submits.Free(job.submit_s, job.submit_s, 3600)) continue;
    submits.Add(job.submit_s, job.submit_s);
    job.alloc.clear();  // the scheduler places it
    job.eligible_s = job.submit_s + queued_s;
    job.key = keys[static_cast<size_t>(i)];
    job.ahead = true;
    SetResources(model, job);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::string_view FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kGpuOverheat: return "gpu_overheat";
    case FaultKind::kXidError: return "xid_error";
    case FaultKind::kTelemetryGap: return "telemetry_gap";
    case FaultKind::kGpuStraggler: return "gpu_straggler";
    case FaultKind::kUtilDrop: return "util_drop";
    case FaultKind::kFailureBurst: return "failure_burst";
    case FaultKind::kNodeFailure: return "node_failure";
    case FaultKind::kQueueBacklog: return "queue_backlog";
    case FaultKind::kLargeJobFailure: return "large_job_failure";
  }
  return "unknown";
}

FaultPlan FaultPlan::Inject(const ClusterModel& model, Schedule& schedule, uint64_t seed) {
  FaultPlan plan;
  plan.nodes_ = schedule.nodes;
  plan.window_start_s_ = schedule.window_start_s;
  plan.noise_key_ = FaultNoiseKey(model, seed);
  Rng rng(plan.noise_key_);
  const int64_t ws = schedule.window_start_s, we = schedule.window_end_s;
  const int64_t lo = ws + kLeadInS, hi = we - kTailS;
  const int days = static_cast<int>((we - ws + 86399) / 86400);
  if (hi - lo < 3600) return plan;  // too short a window to place anything
  const int nodes = schedule.nodes;
  Spans cluster;
  Spans drops;
  std::vector<Spans> node_spans(nodes);

  std::vector<Job> extra;  // jobs the incidents add to the trace
  // (user, burst start, end) of the failed jobs of a burst's new users
  std::vector<std::tuple<int, int64_t, int64_t>> burst_onsets;
  // Large job failures (PickRunningLargeJobs, PlanLargeJobs): running large jobs made to fail, or the
  // failing large jobs planned before the simulation, which the scheduler placed like any other job.
  std::set<uint64_t> injected_large;  // keys of the jobs made to fail
  std::vector<int64_t> planned_ends;    // of the planned ones, which the running ones make up to the count
  for (const uint64_t key : PlannedLargeKeys(plan.noise_key_, days)) {
    for (const Job& j : schedule.jobs) {
      if (j.key != key) continue;
      injected_large.insert(key);
      planned_ends.push_back(j.end_s);
    }
  }
  {
    int wanted = 0;
    std::vector<Job> restarts;
    for (const LargeFailure& f : PickRunningLargeJobs(schedule, plan.noise_key_, wanted, planned_ends)) {
      Job& job = schedule.jobs[f.job];
      if (job.end_s - f.restart_s >= 300) {
        Job again = job;
        again.submit_s = f.restart_submit_s;
        again.eligible_s = again.submit_s;
        again.start_s = f.restart_s;
        again.run_s = job.end_s - f.restart_s;
        again.key = MixKey(plan.noise_key_, 0x1A70000 + restarts.size());
        again.in_trace = IsInTrace(again, ws, we);
        restarts.push_back(std::move(again));
      }
      job.state = JobState::kFailed;
      job.end_s = f.fail_s;
      job.run_s = f.fail_s - job.start_s;
      job.xid = 0;
      injected_large.insert(job.key);
    }
    for (Job& job : restarts) schedule.jobs.push_back(std::move(job));
  }
  // The incidents' own jobs take GPUs nobody holds (a backlog's jobs wait until there are some).
  CapacityMap capacity(schedule, ws - 86400);
  // Puts a failing job of a burst on free GPUs, ending in [from, to): at its drawn end if it fits, else at
  // other ends in the span, else smaller (a cluster's job mix has smaller jobs failing too). False if the
  // cluster has no GPU free there at all.
  Rng place_rng(MixKey(plan.noise_key_, 0x91ACE));
  auto place_failing = [&](Job& job, int64_t from, int64_t to) {
    for (int gpus = job.gpus; gpus >= 1; gpus = gpus > 8 ? std::max(8, gpus / 16 * 8) : gpus / 2) {
      for (int attempt = 0; attempt < 16; ++attempt) {
        const int64_t end = attempt == 0 ? job.end_s : Uniform(place_rng, from, to - 1);
        // Then a job that dies within a minute of its start, which fits where GPUs free up briefly.
        const int64_t run = attempt < 8 ? job.run_s : std::min(job.run_s, Uniform(place_rng, 10, 60));
        std::vector<NodeAlloc> alloc = capacity.Take(gpus, end - run, end);
        if (alloc.empty()) continue;
        const int64_t shift = end - job.end_s;
        job.submit_s += shift, job.eligible_s += shift, job.start_s += shift, job.end_s = end;
        job.start_s = end - run;
        job.run_s = run;
        job.gpus = gpus;
        job.nodes = (gpus + 7) / 8;
        job.alloc = std::move(alloc);
        SetResources(model, job);
        return true;
      }
    }
    return false;
  };
  // Failure bursts: 3-10x the cluster's own rate of failed GPU jobs for 10-30 minutes, as extra FAILED
  // jobs, of many users: a cluster's incident (storage, network, a bad driver roll-out) fails many
  // users' jobs at once, while a user's sweep failing on one bug is that user's problem. The jobs' users
  // follow the cluster's mix, so many are its heaviest users, who fail jobs all day anyway: what sets an
  // incident apart from chance is how many users start failing at once (a user who has had no failed
  // GPU job in the half hour before). On a cluster that fails few jobs (Kalos, small scales) 3-10x its
  // rate is one to three jobs, often of users failing anyway, which no one could tell from chance
  // (issue #14: Kalos at scale 0.2 found 29% of its bursts; 74% with at least 5 users). So a burst's
  // own jobs start at least MinBurstUsers users failing (users not failing in the half hour before nor
  // in the burst's time on their own), on top of the cluster's usual: so many that the cluster's own,
  // at the rate it showed just before (ClusterOnsetRate), bring as many in under 1 in 10,000 spans of
  // its length (Poisson), about once in 100 days of such spans. Users missing are topped up with users
  // not failing then, from a generator of their own so that the other incidents stay put.
  double failed = 0;
  std::vector<std::pair<int64_t, int>> failures;  // (end, user) of the failed GPU jobs
  for (const Job& job : schedule.jobs) {
    if (!job.in_trace || job.gpus <= 0 || !IsFailed(job.state) || job.end_s < ws || job.end_s >= we) continue;
    // The injected large job failures are failures the cluster shows before a burst too, not part of the
    // rate the bursts multiply, which is the workload's own.
    if (!injected_large.count(job.key)) ++failed;
    failures.emplace_back(job.end_s, job.user);
  }
  const double failure_rate_s = failed / static_cast<double>(we - ws);
  // A burst's users, like any failing users, are part of the rate the cluster has shown to a burst after
  // it: the bursts are sized in time order, each against the onsets of the workload, the injected large
  // job failures and the bursts before it (issue #14: each of the 6 bursts a 0.2 Kalos missed on the
  // development seeds followed an earlier burst within six hours, whose users were 5-14 of the 11-25
  // users starting to fail there: the detector counted them in its baseline, synth did not).
  struct PlannedBurst {
    int64_t start, duration;
    std::set<int> failing, starting;
    size_t first_job, end_job;  // the burst's jobs in `extra`, before its top-up
  };
  std::vector<PlannedBurst> planned;
  for (int n = CountFor(rng, days); n > 0; --n) {
    for (int tries = 0; tries < kMaxTries; ++tries) {
      const int64_t duration = Uniform(rng, 600, 1800);
      const int64_t start = Uniform(rng, lo, hi - duration);
      if (!cluster.Free(start, start + duration, kClusterApartS)) continue;
      const double factor = 3 + 7 * rng.Uniform();
      const int64_t jobs = std::llround((factor - 1) * failure_rate_s * static_cast<double>(duration));
      if (jobs < 1 && model.users < kMinBurstUsers) break;
      cluster.Add(start, start + duration);
      plan.faults_.push_back({FaultKind::kFailureBurst, start, start + duration, -1, -1, -1, factor});
      PlannedBurst b{start, duration, {}, {}, extra.size(), 0};  // failing: users failing in the half hour before
      for (const auto& [end, user] : failures) {
        if (end >= start - kFailingForS && end < start + duration) b.failing.insert(user);
      }
      for (int64_t k = 0; k < jobs; ++k) {
        Job job = MakeFailingJob(model, nodes, Uniform(rng, start, start + duration - 1), rng);
        if (!place_failing(job, start, start + duration)) continue;
        job.key = MixKey(plan.noise_key_, 0xB000000 + extra.size());
        job.in_trace = job.submit_s >= ws && job.submit_s < we;
        if (!b.failing.count(job.user)) b.starting.insert(job.user), burst_onsets.emplace_back(job.user, start, job.end_s);
        extra.push_back(std::move(job));
      }
      b.end_job = extra.size();
      planned.push_back(std::move(b));
      break;
    }
  }
  std::sort(planned.begin(), planned.end(),
            [](const PlannedBurst& a, const PlannedBurst& b) { return a.start < b.start; });
  std::vector<std::pair<int64_t, int>> shown = failures;  // failures before the burst being sized, by end
  for (PlannedBurst& b : planned) {
    std::vector<int64_t> onsets;  // when users started to fail, the earlier bursts' included
    {
      std::sort(shown.begin(), shown.end());
      std::map<int, int64_t> last;
      for (const auto& [end, user] : shown) {
        auto [it, fresh] = last.try_emplace(user, end);
        if (fresh || end - it->second >= kFailingForS) onsets.push_back(end);
        it->second = end;
      }
    }
    const double expected_users =
        std::max(ClusterOnsetRate(onsets, ws, b.start), kLeastOnsetRate) * static_cast<double>(b.duration);
    const size_t want = model.users < kMinBurstUsers
                            ? 0
                            : static_cast<size_t>(std::min<int64_t>(
                                  static_cast<int64_t>(model.users - b.failing.size()), MinBurstUsers(expected_users)));
    for (size_t j = b.first_job; j < b.end_job; ++j) shown.emplace_back(extra[j].end_s, extra[j].user);
    Rng more_rng(MixKey(plan.noise_key_, 0xB0B0000 + static_cast<uint64_t>(b.start)));
    for (size_t tries = 0; b.starting.size() < want && tries < 20 * want; ++tries) {
      Job job = MakeFailingJob(model, nodes, Uniform(more_rng, b.start, b.start + b.duration - 1), more_rng);
      while (b.starting.count(job.user) || b.failing.count(job.user)) {
        job.user = static_cast<int>(more_rng.Below(static_cast<uint64_t>(model.users)));
      }
      if (!place_failing(job, b.start, b.start + b.duration)) continue;
      job.key = MixKey(plan.noise_key_, 0xB000000 + extra.size());
      job.in_trace = job.submit_s >= ws && job.submit_s < we;
      b.starting.insert(job.user);
      burst_onsets.emplace_back(job.user, b.start, job.end_s);
      shown.emplace_back(job.end_s, job.user);
      extra.push_back(std::move(job));
    }
  }
  // Queue backlogs: a team submits a sweep of 8-64-GPU jobs, 320-1,024 GPUs in all, within five
  // minutes, and it waits 45-90 minutes (a maintenance reservation, a large job draining the
  // partition) before it may start: the GPUs waiting far exceed the cluster's usual (a few dozen, at
  // most ~150 on a synthetic day). Then each job starts as soon as GPUs are free for it and runs
  // briefly, so a sweep larger than the free GPUs drains over a while, as a queue does. On a small
  // cluster a sweep asks for at most twice its GPUs, in jobs of at most a quarter of it. Drawn from a
  // generator of their own, so that the incidents of the other kinds of a seed stay as they were.
  {
    Rng backlog_rng(MixKey(plan.noise_key_, 0xBAC));
    Spans backlogs;
    for (int n = CountFor(backlog_rng, days); n > 0; --n) {
      for (int tries = 0; tries < kMaxTries; ++tries) {
        const int64_t duration = Uniform(backlog_rng, 2700, 5400);
        const int64_t start = Uniform(backlog_rng, lo, hi - duration);
        if (!backlogs.Free(start, start + duration, kClusterApartS)) continue;
        backlogs.Add(start, start + duration);
        const int64_t want = std::min<int64_t>(Uniform(backlog_rng, 320, 1024), 2 * 8 * nodes);
        const int widest = 8 * std::max(1, nodes / 4);
        int64_t gpus = 0;
        int user = -1;
        while (gpus < want) {
          Job job = MakeFailingJob(model, nodes, start + duration, backlog_rng);
          job.gpus = std::min(8 << backlog_rng.Below(4), widest);
          job.nodes = job.gpus / 8;
          SetResources(model, job);
          job.state = JobState::kCompleted;
          if (user < 0) user = job.user;
          job.user = user;
          job.submit_s = start + static_cast<int64_t>(backlog_rng.Below(300));
          job.eligible_s = job.submit_s;
          job.run_s = Uniform(backlog_rng, 60, 600);
          // The first minute from the release at which its GPUs are free for its run (a month on: the
          // schedule holds nothing that far, so it always ends).
          for (job.start_s = start + duration; job.alloc.empty() && job.start_s < we + 30 * 86400; job.start_s += 60) {
            job.alloc = capacity.Take(job.gpus, job.start_s, job.start_s + job.run_s);
            if (!job.alloc.empty()) break;
          }
          job.end_s = job.start_s + job.run_s;
          job.key = MixKey(plan.noise_key_, 0xBAC0000 + extra.size());
          job.in_trace = job.submit_s >= ws && job.submit_s < we;
          gpus += job.gpus;
          extra.push_back(std::move(job));
        }
        plan.faults_.push_back({FaultKind::kQueueBacklog, start, start + duration, -1, -1, -1, static_cast<double>(gpus)});
        break;
      }
    }
  }
  for (Job& job : extra) schedule.jobs.push_back(std::move(job));
  std::stable_sort(schedule.jobs.begin(), schedule.jobs.end(),
                   [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });

  // Node failures: a node dies under a running GPU job, which ends NODE_FAIL there and then. Jobs on
  // more nodes are more exposed.
  auto& jobs = schedule.jobs;
  std::vector<char> taken(jobs.size(), 0);
  for (int n = CountFor(rng, days); n > 0; --n) {
    for (int tries = 0; tries < kMaxTries; ++tries) {
      const int64_t t = Uniform(rng, lo, hi);
      std::vector<int> candidates;
      std::vector<double> cumulative;
      double weight = 0;
      for (size_t j = 0; j < jobs.size(); ++j) {
        const Job& job = jobs[j];
        if (!job.in_trace || job.gpus == 0 || job.start_s < 0 || job.alloc.empty() || taken[j]) continue;
        if (IsFailed(job.state) || job.xid != 0 || job.start_s > t - 120 || job.end_s < t + 60) continue;
        // Not the job of a user a burst starts failing, from half an hour before the burst (or the user's
        // job in it) until that job ends: that user would be failing already, and the burst one user
        // short (issue #14, a 0.2 Kalos at 23:10; a failure 25 minutes before the burst but 30 before
        // the user's job in it counts too).
        const bool burst_user = std::any_of(burst_onsets.begin(), burst_onsets.end(), [&](const auto& b) {
          const auto& [user, burst_start, end] = b;
          return user == job.user && t < end && t >= std::min(burst_start, end) - kFailingForS;
        });
        if (burst_user) continue;
        candidates.push_back(static_cast<int>(j));
        cumulative.push_back(weight += job.nodes);
      }
      if (candidates.empty()) continue;
      const int j = candidates[PickWeighted(cumulative, rng.Uniform())];
      Job& job = jobs[j];
      job.state = JobState::kNodeFail;
      job.end_s = t;
      job.run_s = t - job.start_s;
      taken[j] = 1;
      plan.faults_.push_back({FaultKind::kNodeFailure, t, t, -1, -1, j, 0});
      break;
    }
  }
  // NODE_FAIL jobs of the model itself are incidents too.
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    // Every one of the trace: its end is in the feed even when it falls after the window.
    if (taken[j] || !job.in_trace || job.gpus == 0 || job.state != JobState::kNodeFail) continue;
    Fault f{FaultKind::kNodeFailure, job.end_s, job.end_s, -1, -1, static_cast<int32_t>(j), 0};
    f.injected = false;
    plan.faults_.push_back(f);
  }
  // Large failed jobs, of the model or of a burst: every one ends hours of hundreds of GPUs.
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    if (!job.in_trace || job.gpus < LargeJobGpus(8 * nodes) || !IsFailed(job.state)) continue;
    Fault f{FaultKind::kLargeJobFailure, job.end_s, job.end_s, -1, -1, static_cast<int32_t>(j),
            static_cast<double>(job.gpus)};
    f.injected = taken[j] != 0 || injected_large.count(job.key) != 0;
    plan.faults_.push_back(f);
  }

  // Utilization drops: every running job stalls (storage or network outage) for 10-60 minutes; the
  // cluster's GPU_UTIL falls by 20-60 points. A drop of D points needs a cluster running well above D:
  // it is placed where at least D + 10% of the GPUs are allocated throughout (and the 10 minutes before).
  const int64_t minutes = (we - ws + 59) / 60;
  std::vector<int64_t> allocated(static_cast<size_t>(minutes) + 1, 0);  // GPUs per minute, difference array first
  for (const Job& job : jobs) {
    if (job.start_s < 0 || job.alloc.empty() || job.end_s <= ws || job.start_s >= we) continue;
    allocated[static_cast<size_t>((std::max(job.start_s, ws) - ws) / 60)] += job.gpus;
    allocated[static_cast<size_t>((std::min(job.end_s, we) - ws + 59) / 60)] -= job.gpus;
  }
  for (size_t m = 1; m < allocated.size(); ++m) allocated[m] += allocated[m - 1];
  auto min_allocated_share = [&](int64_t from, int64_t to) {
    int64_t least = INT64_MAX;
    for (int64_t m = (from - ws) / 60; m < (to - ws + 59) / 60 && m < minutes; ++m) least = std::min(least, allocated[m]);
    return static_cast<double>(least) / (8.0 * nodes);
  };
  for (int n = CountFor(rng, days); n > 0; --n) {
    for (int tries = 0; tries < kMaxTries; ++tries) {
      const int64_t duration = Uniform(rng, 600, 3600);
      const int64_t start = Uniform(rng, lo, hi - duration);
      const double points = 20 + 40 * rng.Uniform();
      if (!cluster.Free(start, start + duration, kClusterApartS)) continue;
      if (100 * min_allocated_share(start - 600, start + duration) < points + 10) continue;
      cluster.Add(start, start + duration);
      drops.Add(start, start + duration);
      plan.faults_.push_back({FaultKind::kUtilDrop, start, start + duration, -1, -1, -1, points});
      break;
    }
  }

  // Stragglers: one GPU of a node that a single busy job holds whole (all 8 GPUs, past its start-up)
  // runs at 20-50% of its SM activity for 5-30 minutes (thermal or power throttling, a degraded link).
  // Not during a utilization drop, where its peers are not busy either. Nor where the job's GPUs compute
  // too little to show it (issue #14): GPUs with a kernel running at SM activity under 0.2 are common in
  // the release (Kalos: 26% of samples read GPU_UTIL 0 but 47% SM_ACTIVE under 0.2; Seren 31% and 36%,
  // data/acmetrace/utilization_cdf.csv), and a job's activity swings for minutes on all its GPUs at once
  // (telemetry.cc), so a straggler at a fraction of peers that run at SM 0.01-0.2 reads as they do and no
  // observer could tell it. The peers must compute, as the gpu_straggler detector counts them busy (its
  // min_peer_sm, smoothed over its smooth_s), for kStragglerSeenS of it in a row.
  struct Host {
    int node;
    int32_t job;
    int64_t from, to;
  };
  std::vector<Host> hosts;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    if (job.start_s < 0 || job.activity < 0) continue;
    const int64_t from = std::max(job.start_s + 600, lo), to = std::min(job.end_s - 120, hi);
    if (to - from < 300) continue;
    for (const NodeAlloc& a : job.alloc) {
      if (a.gpu_mask == 0xFF) hosts.push_back({a.node, static_cast<int32_t>(j), from, to});
    }
  }
  std::unique_ptr<JobActivityProbe> probe;
  if (!hosts.empty()) probe = MakeJobActivityProbe(model, schedule, MakeLayout(model, nodes), seed);
  auto place_gpu_fault = [&](FaultKind kind, int64_t min_s, int64_t max_s, double level) {
    for (int tries = 0; tries < kMaxTries; ++tries) {
      const int64_t duration = Uniform(rng, min_s, max_s);
      int node;
      int64_t start;
      if (kind == FaultKind::kGpuStraggler) {
        if (hosts.empty()) return;
        const Host& h = hosts[rng.Below(hosts.size())];
        if (h.to - h.from < duration) continue;
        node = h.node;
        start = Uniform(rng, h.from, h.to - duration);
        if (!drops.Free(start, start + duration, 300)) continue;
        if (!node_spans[h.node].Free(start, start + duration, kApartS)) continue;  // before the costlier probe
        if (probe->LongestBusyS(h.job, start, start + duration, kStragglerPeerSm, kStragglerSmoothS) < kStragglerSeenS) {
          continue;
        }
      } else {
        node = static_cast<int>(rng.Below(static_cast<uint64_t>(nodes)));
        start = Uniform(rng, lo, hi - duration);
      }
      if (!node_spans[node].Free(start, start + duration, kApartS)) continue;
      node_spans[node].Add(start, start + duration);
      const int gpu = kind == FaultKind::kTelemetryGap ? -1 : static_cast<int>(rng.Below(8));
      plan.faults_.push_back({kind, start, start + duration, node, gpu, -1, level});
      return;
    }
  };
  for (int n = CountFor(rng, days); n > 0; --n) place_gpu_fault(FaultKind::kGpuStraggler, 300, 1800, 0.2 + 0.3 * rng.Uniform());
  // Telemetry gaps: a node's exporter (or its network) is down for 1-10 minutes: every cell empty.
  if (nodes > 1) {
    for (int n = CountFor(rng, days); n > 0; --n) place_gpu_fault(FaultKind::kTelemetryGap, 60, 600, 0);
  }
  // Overheating: a GPU's cooling fails and it runs hot for 2-20 minutes (OverheatLevelC).
  for (int n = CountFor(rng, days); n > 0; --n) {
    place_gpu_fault(FaultKind::kGpuOverheat, 120, 1200, OverheatLevelC(Uniform(rng, 0, kOverheatCases - 1)));
  }
  // XID errors: the register holds the code for 2-30 minutes, as the generator's own XIDs do.
  for (int n = CountFor(rng, days); n > 0; --n) {
    place_gpu_fault(FaultKind::kXidError, 120, 1800, kInjectedXids[rng.Below(std::size(kInjectedXids))]);
  }
  plan.Index();
  return plan;
}

bool IsHardwareXid(uint16_t code) {
  static constexpr uint16_t kHardware[] = {48, 63, 64, 74, 79, 92, 94, 95};
  return std::find(std::begin(kHardware), std::end(kHardware), code) != std::end(kHardware);
}

std::string_view FaultSeverity(const Fault& fault) {
  switch (fault.kind) {
    case FaultKind::kGpuOverheat: return fault.level >= kCriticalOverheatC ? "critical" : "warning";
    case FaultKind::kXidError: return IsHardwareXid(static_cast<uint16_t>(fault.level)) ? "critical" : "warning";
    default: return "";
  }
}

void FaultPlan::Index() {
  gpu_faults_.assign(static_cast<size_t>(nodes_) * 8, {});
  cluster_faults_.clear();
  node_gaps_.clear();
  drop_scale_.assign(faults_.size(), -1);
  for (size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    switch (f.kind) {
      case FaultKind::kGpuOverheat:
      case FaultKind::kGpuStraggler:
        gpu_faults_[f.node * 8 + f.gpu].push_back(static_cast<int32_t>(i));
        break;
      case FaultKind::kUtilDrop: cluster_faults_.push_back(static_cast<int32_t>(i)); break;
      case FaultKind::kTelemetryGap: node_gaps_.push_back(static_cast<int32_t>(i)); break;
      default: break;
    }
  }
}

std::vector<XidWindow> FaultPlan::ResolveXids(const std::vector<XidWindow>& natural) {
  std::vector<XidWindow> injected;
  std::vector<Fault> kept;
  for (const Fault& f : faults_) {
    if (f.kind != FaultKind::kXidError || !f.injected) {
      kept.push_back(f);
      continue;
    }
    const int index = f.node * 8 + f.gpu;
    bool clash = false;
    for (const XidWindow& w : natural) {
      clash |= w.gpu_index == index && f.start_s < w.end_s + kApartS && w.start_s < f.end_s + kApartS;
    }
    if (clash) continue;
    kept.push_back(f);
    injected.push_back({index, f.start_s, f.end_s, static_cast<uint16_t>(f.level)});
  }
  for (const XidWindow& w : natural) {
    if (w.end_s <= window_start_s_) continue;
    Fault f{FaultKind::kXidError, std::max(w.start_s, window_start_s_), w.end_s, w.gpu_index / 8, w.gpu_index % 8,
            -1, static_cast<double>(w.code)};
    f.injected = false;
    kept.push_back(f);
  }
  faults_ = std::move(kept);
  Index();
  return injected;
}

void FaultPlan::BeginRow(int64_t t) {
  row_t_ = t;
  if (!node_gaps_.empty()) {
    silent_.assign(static_cast<size_t>(nodes_), 0);
    for (int32_t i : node_gaps_) {
      const Fault& f = faults_[i];
      if (t >= f.start_s && t < f.end_s) silent_[f.node] = 1;
    }
  }
  row_activity_scale_ = 1;
  for (int32_t i : cluster_faults_) {
    const Fault& f = faults_[i];
    if (t < f.start_s || t >= f.end_s) continue;
    if (drop_scale_[i] < 0) {
      // Sized once, as it starts: D points off what the cluster ran at just before.
      drop_scale_[i] = util_ewma_ > 1 ? std::clamp(1.0 - f.level / util_ewma_, 0.05, 1.0) : 0.5;
    }
    row_activity_scale_ = static_cast<float>(drop_scale_[i]);
  }
}

GpuFaultEffect FaultPlan::GpuEffect(int gpu_index, bool running) const {
  GpuFaultEffect fx;
  if (running) fx.activity_scale = row_activity_scale_;
  if (!gpu_faults_.empty()) {
    for (int32_t i : gpu_faults_[gpu_index]) {
      const Fault& f = faults_[i];
      if (row_t_ < f.start_s || row_t_ >= f.end_s) continue;
      if (f.kind == FaultKind::kGpuOverheat) {
        // Heats up over a minute and a half, then holds the level within a degree.
        const double ramp = std::min(1.0, static_cast<double>(row_t_ - f.start_s + 15) / 90.0);
        uint64_t bits = MixKey(noise_key_, static_cast<uint64_t>(gpu_index) * 0x100000000ull + static_cast<uint64_t>(row_t_));
        const double jitter = static_cast<double>(SplitMix64(bits) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        fx.temp_floor = static_cast<float>(40 + (f.level - 40) * ramp + jitter);
      } else if (f.kind == FaultKind::kGpuStraggler && running) {
        fx.sm_scale = static_cast<float>(f.level);
      }
    }
  }
  const float slowest = std::min(fx.activity_scale, fx.sm_scale);
  if (slowest < 1) fx.power_scale = static_cast<float>(kIdlePowerShare + (1 - kIdlePowerShare) * slowest);
  return fx;
}

void FaultPlan::EndRow(double mean_util) {
  if (mean_util < 0) return;
  if (util_ewma_ < 0) {
    util_ewma_ = mean_util;
    return;
  }
  util_ewma_ += (mean_util - util_ewma_) * (15.0 / kUtilEwmaS);
}

void FaultPlan::AppendRows(const ClusterModel& model, const ClusterLayout& layout,
                           const std::vector<std::string>& job_ids, const std::vector<std::string>& metrics,
                           std::string& out) const {
  auto written = [&](std::string_view m) { return std::find(metrics.begin(), metrics.end(), m) != metrics.end(); };
  std::vector<std::tuple<int64_t, std::string_view, std::string, int64_t, std::string_view>> rows;
  for (const Fault& f : faults_) {
    bool visible = true;
    std::string subject;
    switch (f.kind) {
      case FaultKind::kGpuOverheat: visible = written("GPU_TEMP"); break;
      case FaultKind::kXidError: visible = written("XID_ERRORS"); break;
      case FaultKind::kGpuStraggler: visible = written("SM_ACTIVE"); break;
      case FaultKind::kUtilDrop: visible = written("GPU_UTIL"); break;
      case FaultKind::kTelemetryGap: visible = !metrics.empty(); break;
      default: break;
    }
    if (!visible) continue;
    switch (f.kind) {
      case FaultKind::kUtilDrop:
      case FaultKind::kFailureBurst:
      case FaultKind::kQueueBacklog: subject = model.name; break;
      case FaultKind::kNodeFailure:
      case FaultKind::kLargeJobFailure: subject = job_ids[f.job]; break;
      case FaultKind::kTelemetryGap: subject = layout.nodes[f.node].name; break;
      default: subject = layout.nodes[f.node].name + "-" + std::to_string(f.gpu);
    }
    rows.emplace_back(f.start_s, FaultKindName(f.kind), std::move(subject), f.end_s, FaultSeverity(f));
  }
  std::sort(rows.begin(), rows.end());
  for (const auto& [start, kind, subject, end, severity] : rows) {
    out += model.name;
    out += ',';
    out += kind;
    out += ',';
    out += subject;
    out += ',';
    out += std::to_string(start);
    out += ',';
    out += std::to_string(end);
    out += ',';
    out += severity;
    out += '\n';
  }
}

}  // namespace acmetrace::producers::synth
