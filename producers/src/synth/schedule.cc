// Job arrivals and placement. Ordinary jobs are drawn day by day from streams keyed by (seed, cluster,
// day), so the first day of a 7-day run equals a 1-day run; large pretraining jobs come from campaigns
// (one run resubmitted job after job on the same nodes, as LLM pretraining is operated); the scheduler
// is causal, so placements are prefix-stable too.
#include "synth/schedule.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <memory>
#include <queue>

#include "synth/random.h"

namespace acmetrace::producers::synth {
namespace {

constexpr int64_t kLocalOffsetS = 8 * 3600;  // both clusters' users work on UTC+8
constexpr int kStrata = 32;

// Stratified streams for the attributes of one GPU job type (per day, or per campaign).
struct TypeStreams {
  explicit TypeStreams(uint64_t key)
      : size(MixKey(key, 1), kStrata),
        outcome(MixKey(key, 2), kStrata),
        duration{StratifiedUniform(MixKey(key, 3), kStrata), StratifiedUniform(MixKey(key, 4), kStrata),
                 StratifiedUniform(MixKey(key, 5), kStrata)},
        queue(MixKey(key, 6), kStrata) {}
  StratifiedUniform size;
  StratifiedUniform outcome;
  StratifiedUniform duration[3];
  StratifiedUniform queue;
};

// Heavy users submit most jobs (Zipf over the user population); pretraining comes from a few teams.
class UserPicker {
 public:
  explicit UserPicker(int users) {
    double sum = 0;
    for (int r = 0; r < users; ++r) {
      sum += 1.0 / std::pow(r + 1.0, 1.05);
      cumulative_.push_back(sum);
    }
  }
  int Pick(Rng& rng, JobType type) const {
    if (type == JobType::kPretrain) return static_cast<int>(rng.Below(std::min<size_t>(8, cumulative_.size())));
    return static_cast<int>(PickWeighted(cumulative_, rng.Uniform()));
  }

 private:
  std::vector<double> cumulative_;
};

int Geometric(Rng& rng, double mean) {
  if (mean <= 0) return 0;
  const double p = 1.0 / (1.0 + mean);
  return static_cast<int>(std::floor(std::log(rng.OpenUniform()) / std::log(1.0 - p)));
}

double SampleQueue(const QueueModel& q, double u, Rng& rng) {
  if (u < q.p_short) return Geometric(rng, q.short_mean_s);  // dispatch and polling: seconds
  const double v = (u - q.p_short) / (1.0 - q.p_short);
  return std::min(q.median_s * std::exp(q.sigma * NormalQuantile(std::clamp(v, 1e-9, 1 - 1e-9))), 3.0 * 86400);
}

// Slurm kills a job at its time limit; limits are round numbers.
double SnapToTimeLimit(double run_s) {
  static constexpr double kLimits[] = {1800, 3600, 7200, 14400, 28800, 86400, 172800, 259200, 604800, 1209600};
  for (double limit : kLimits) {
    if (run_s <= limit) return limit;
  }
  return kLimits[std::size(kLimits) - 1];
}

uint16_t HardwareXid(Rng& rng) {
  // Infrastructure faults of A100 fleets: fell off the bus, NVLink, double-bit ECC, row remapping,
  // contained and uncontained ECC.
  static constexpr uint16_t kCodes[] = {79, 74, 48, 63, 94, 95, 79, 74};
  return kCodes[rng.Below(std::size(kCodes))];
}

uint16_t SoftwareXid(Rng& rng) {
  // Application faults: graphics engine exception, MMU fault, GPU stopped processing.
  static constexpr uint16_t kCodes[] = {13, 31, 43};
  return kCodes[rng.Below(std::size(kCodes))];
}

// Draws the attributes of GPU jobs from the model; shared by the daily arrivals and the campaigns.
class JobFactory {
 public:
  JobFactory(const ClusterModel& model, int nodes) : model_(model), nodes_(nodes) {}

  int MaxGpus() const { return nodes_ == 1 ? 8 : 8 * (nodes_ / 2); }

  /// A job size (GPUs, before any scale cap) from the type's distribution.
  static int DrawSize(const GpuTypeModel& t, TypeStreams& s) {
    std::vector<double> cumulative;
    double sum = 0;
    for (const auto& sw : t.sizes) cumulative.push_back(sum += sw.weight);
    return t.sizes[PickWeighted(cumulative, s.size.Next())].gpus;
  }

  /// gpus == 0 draws the size from the type's distribution; max_gpus == 0 means MaxGpus().
  Job MakeGpuJob(const GpuTypeModel& t, int gpus, TypeStreams& s, Rng& attr, int64_t submit, int user,
                 bool may_never_start, int max_gpus = 0) const {
    if (max_gpus <= 0) max_gpus = MaxGpus();
    Job job;
    job.type = t.type;
    job.submit_s = submit;
    job.user = user;
    job.gpus = gpus > 0 ? gpus : DrawSize(t, s);
    const double u_outcome = s.outcome.Next();
    const int outcome = u_outcome < t.outcome_share[0]                        ? kOutcomeCompleted
                        : u_outcome < t.outcome_share[0] + t.outcome_share[1] ? kOutcomeCancelled
                                                                              : kOutcomeFailed;
    const double z = NormalQuantile(s.duration[outcome].Next());
    double duration = std::clamp(DurationFor(t, outcome, job.gpus, z), 1.0, MaxRun(model_, t));
    const double queue = SampleQueue(t.queue, s.queue.Next(), attr);
    job.activity = static_cast<float>(t.activity_mean + 0.8 * attr.Normal());

    switch (outcome) {
      case kOutcomeCompleted: job.state = JobState::kCompleted; break;
      case kOutcomeCancelled: job.state = JobState::kCancelled; break;
      default: {
        const double u = attr.Uniform();
        job.state = u < model_.timeout_share                            ? JobState::kTimeout
                    : u < model_.timeout_share + model_.node_fail_share ? JobState::kNodeFail
                                                                        : JobState::kFailed;
        if (job.state == JobState::kTimeout) duration = std::min(SnapToTimeLimit(duration), MaxRun(model_, t));
        if (job.state == JobState::kNodeFail || attr.Bernoulli(model_.hardware_xid_share)) {
          job.xid = job.state == JobState::kNodeFail ? 79 : HardwareXid(attr);
        } else if (attr.Bernoulli(0.15)) {
          job.xid = SoftwareXid(attr);
        }
      }
    }
    // (Kalos writes duration = end - submit = queue + run; CalibrateScales accounts for the queue.)
    double run = duration;
    // At small scales a job may be larger than half the cluster: it keeps its GPU time on fewer GPUs.
    if (job.gpus > max_gpus) {
      run *= static_cast<double>(job.gpus) / max_gpus;
      job.gpus = max_gpus;
    }
    job.nodes = (job.gpus + 7) / 8;
    FillResources(job, attr);

    if (may_never_start && job.state == JobState::kCancelled && attr.Bernoulli(model_.never_start_share)) {
      // Cancelled while pending: users give up after minutes to hours.
      job.start_s = -1;
      job.eligible_s = submit;
      job.end_s = submit + static_cast<int64_t>(std::max(5.0, 600.0 * std::exp(1.5 * attr.Normal())));
      job.run_s = 0;
      job.xid = 0;
    } else {
      job.eligible_s = submit + static_cast<int64_t>(queue);
      job.run_s = std::max<int64_t>(1, std::llround(run));
    }
    return job;
  }

  /// Mean run time of a job of this type and nominal size, after the scale cap.
  double ExpectedRun(const GpuTypeModel& t, int gpus, int max_gpus = 0) const {
    if (max_gpus <= 0) max_gpus = MaxGpus();
    double run = 0;
    for (int o = 0; o < 3; ++o) run += t.outcome_share[o] * ExpectedDuration(t, o, gpus, MaxRun(model_, t));
    return gpus > max_gpus ? run * gpus / max_gpus : run;
  }

 private:
  void FillResources(Job& job, Rng& attr) const {
    if (model_.kalos_format) {
      // Pods of up to 8 GPUs; a full pod has 120 CPUs, 1000 GB and 100 GB of shared memory (release rows).
      const int per_pod = std::min(job.gpus, 8);
      job.cpus = job.nodes * 15 * per_pod;
      job.mem_gb = 125 * per_pod;
      job.shared_mem_gb = 12.5f * static_cast<float>(per_pod);
    } else if (job.gpus >= 8) {
      job.cpus = job.nodes * (attr.Bernoulli(0.9) ? 128 : 64);
    } else {
      static constexpr int kPerGpu[] = {4, 8, 8, 12, 16, 16, 16, 16};
      job.cpus = job.gpus * kPerGpu[attr.Below(std::size(kPerGpu))];
    }
  }

  const ClusterModel& model_;
  int nodes_;
};

// Share of a pretraining job size distribution at or above the campaign threshold.
double CampaignShare(const GpuTypeModel& t) {
  if (t.campaign_min_gpus <= 0) return 0;
  double big = 0, all = 0;
  for (const auto& sw : t.sizes) {
    all += sw.weight;
    if (sw.gpus >= t.campaign_min_gpus) big += sw.weight;
  }
  return all > 0 ? big / all : 0;
}

// Ordinary arrivals of one local day: non-homogeneous Poisson with the working-hours rhythm.
class DayGenerator {
 public:
  DayGenerator(const ClusterModel& model, const JobFactory& factory, uint64_t seed, double rate_scale)
      : model_(model), factory_(factory), seed_(seed), rate_scale_(rate_scale), users_(model.users) {
    double gpu_share = 0;
    for (const auto& t : model.gpu_types) gpu_share += t.count_share;
    double sum = 0;
    for (const auto& t : model.gpu_types) {
      // Campaign-sized pretraining jobs are not drawn here; their share goes to the campaigns.
      double w = t.count_share * (1.0 - CampaignShare(t));
      if (t.type == JobType::kEval) {
        eval_index_ = static_cast<int>(&t - model.gpu_types.data());
        eval_share_ = t.count_share / gpu_share;
        w = 0;
      }
      non_eval_cumulative_.push_back(sum += w);
    }
    non_eval_share_ = sum / gpu_share;
    sum = 0;
    for (double w : model.cpu.type_weight) cpu_type_cumulative_.push_back(sum += w);
    max_rhythm_ = MaxArrivalRhythm();
  }

  void Generate(int64_t day, std::vector<Job>& out) {
    const uint64_t day_key = MixKey(MixKey(seed_, HashName(model_.name)), static_cast<uint64_t>(day));
    const int64_t day_start = day * 86400 - kLocalOffsetS;
    const int weekday = static_cast<int>(((day % 7) + 7 + 3) % 7);  // 1970-01-01 was a Thursday; Monday = 0
    std::vector<std::unique_ptr<TypeStreams>> streams;
    for (size_t i = 0; i < model_.gpu_types.size(); ++i) {
      streams.push_back(std::make_unique<TypeStreams>(MixKey(day_key, 100 + i)));
    }
    StratifiedUniform type_pick(MixKey(day_key, 7), 128);
    StratifiedUniform cpu_duration(MixKey(day_key, 8), kStrata);
    StratifiedUniform cpu_outcome(MixKey(day_key, 9), kStrata);
    Rng attr(MixKey(day_key, 10));
    uint64_t serial = 0;
    auto emit = [&](Job&& job) {
      job.key = MixKey(day_key, 1000000 + serial++);
      out.push_back(std::move(job));
    };

    const double gpu_rate = model_.gpu_jobs_per_day * rate_scale_ / 86400.0;
    ForEachArrival(MixKey(day_key, 11), day_start, weekday, gpu_rate * non_eval_share_, [&](int64_t t) {
      const size_t i = PickWeighted(non_eval_cumulative_, type_pick.Next());
      const GpuTypeModel& type = model_.gpu_types[i];
      int gpus = factory_.DrawSize(type, *streams[i]);
      // Small pretraining jobs (ablations, tests) redraw below the campaign size: the large ones come
      // from the campaigns.
      for (int tries = 0; type.campaign_min_gpus > 0 && gpus >= type.campaign_min_gpus && tries < 64; ++tries) {
        gpus = factory_.DrawSize(type, *streams[i]);
      }
      if (type.campaign_min_gpus > 0 && gpus >= type.campaign_min_gpus) return;
      emit(factory_.MakeGpuJob(type, gpus, *streams[i], attr, t, users_.Pick(attr, type.type), true));
    });
    if (eval_index_ >= 0) {
      // Evaluation jobs arrive in bursts: a checkpoint evaluated on a suite of benchmarks.
      const GpuTypeModel& eval = model_.gpu_types[eval_index_];
      const double burst_rate = gpu_rate * eval_share_ / model_.eval_burst_mean;
      ForEachArrival(MixKey(day_key, 12), day_start, weekday, burst_rate, [&](int64_t t) {
        const int count = 1 + Geometric(attr, model_.eval_burst_mean - 1.0);
        const int user = users_.Pick(attr, JobType::kEval);
        int64_t when = t;
        for (int k = 0; k < count; ++k) {
          emit(factory_.MakeGpuJob(eval, 0, *streams[eval_index_], attr, when, user, true));
          when += 1 + static_cast<int64_t>(attr.Below(3));
        }
      });
    }
    // CPU jobs come in small bursts too (data processing split into pieces): 1.5 jobs per burst.
    const double cpu_rate = model_.cpu_jobs_per_day * rate_scale_ / 86400.0 / 1.5;
    ForEachArrival(MixKey(day_key, 13), day_start, weekday, cpu_rate, [&](int64_t t) {
      const int count = 1 + Geometric(attr, 0.5);
      const int user = users_.Pick(attr, JobType::kOther);
      int64_t when = t;
      for (int k = 0; k < count; ++k) {
        emit(MakeCpuJob(when, user, attr, cpu_duration.Next(), cpu_outcome.Next()));
        when += static_cast<int64_t>(attr.Below(2));
      }
    });
  }

 private:
  template <typename Fn>
  void ForEachArrival(uint64_t key, int64_t day_start, int weekday, double rate_per_s, Fn&& fn) {
    if (rate_per_s <= 0) return;
    Rng rng(key);
    const double bound = rate_per_s * max_rhythm_;
    double t = 0;
    while (true) {
      t += rng.Exponential(1.0 / bound);
      if (t >= 86400.0) return;
      if (rng.Uniform() * max_rhythm_ < ArrivalRhythm(t / 3600.0, weekday)) fn(day_start + static_cast<int64_t>(t));
    }
  }

  Job MakeCpuJob(int64_t submit, int user, Rng& attr, double u_duration, double u_outcome) const {
    const CpuJobModel& c = model_.cpu;
    Job job;
    job.submit_s = submit;
    job.user = user;
    job.gpus = 0;
    job.nodes = 1;
    job.type = static_cast<JobType>(PickWeighted(cpu_type_cumulative_, attr.Uniform()));
    const int outcome = u_outcome < c.outcome_share[0]                        ? kOutcomeCompleted
                        : u_outcome < c.outcome_share[0] + c.outcome_share[1] ? kOutcomeCancelled
                                                                              : kOutcomeFailed;
    job.state = outcome == kOutcomeCompleted   ? JobState::kCompleted
                : outcome == kOutcomeCancelled ? JobState::kCancelled
                                               : JobState::kFailed;
    const double duration = std::clamp(
        c.median_s * c.outcome_duration_factor[outcome] * std::exp(c.sigma * NormalQuantile(u_duration)), 1.0,
        30.0 * 86400);
    const double queue = SampleQueue(c.queue, attr.Uniform(), attr);
    const double run = duration;
    static constexpr int kCpuChoices[] = {1, 2, 4, 4, 8, 8, 16, 16, 32, 64};
    job.cpus = kCpuChoices[attr.Below(std::size(kCpuChoices))];
    job.mem_gb = std::max(4, 4 * job.cpus);
    job.shared_mem_gb = static_cast<float>(job.cpus) * 0.5f;
    job.start_s = submit + static_cast<int64_t>(queue);
    job.eligible_s = job.start_s;
    job.run_s = std::max<int64_t>(1, std::llround(run));
    job.end_s = job.start_s + job.run_s;
    return job;
  }

  const ClusterModel& model_;
  const JobFactory& factory_;
  uint64_t seed_;
  double rate_scale_;
  UserPicker users_;
  std::vector<double> non_eval_cumulative_;
  std::vector<double> cpu_type_cumulative_;
  int eval_index_ = -1;
  double eval_share_ = 0;
  double non_eval_share_ = 0;
  double max_rhythm_ = 1;
};

// Large pretraining jobs as campaigns: a campaign holds a size of GPUs for a day or two and resubmits
// job after job (failed, cancelled or finished) after a short gap. A controller keeps the GPUs claimed
// by campaigns at the level the model's pretraining job rate implies, and picks each new campaign's
// size by deficit so the mix of sizes over time matches the size distribution. Without this, a few
// Poisson arrivals of 1024-GPU jobs swing a cluster between idle and saturated.
class CampaignController {
 public:
  CampaignController(const ClusterModel& model, const JobFactory& factory, uint64_t seed, double rate_scale,
                     int total_gpus)
      : model_(model),
        factory_(factory),
        rng_(MixKey(MixKey(seed, HashName(model.name)), 0xCA3B)),
        streams_(MixKey(MixKey(seed, HashName(model.name)), 0xCA3C)),
        total_gpus_(total_gpus) {
    for (size_t i = 0; i < model.gpu_types.size(); ++i) {
      if (CampaignShare(model.gpu_types[i]) > 0) type_ = static_cast<int>(i);
    }
    if (type_ < 0) return;
    const GpuTypeModel& t = model.gpu_types[type_];
    double gpu_share = 0;
    for (const auto& x : model.gpu_types) gpu_share += x.count_share;
    const double jobs_per_s = model.gpu_jobs_per_day * rate_scale / 86400.0 * t.count_share / gpu_share;
    double all = 0;
    for (const auto& sw : t.sizes) all += sw.weight;
    const double gap = ExpectedGap(t);
    // Campaigns of each size running at once, and the GPUs they claim, for a given size cap.
    auto plan = [&](int cap) {
      sizes_.clear();
      target_claim_ = 0;
      for (const auto& sw : t.sizes) {
        if (sw.gpus < t.campaign_min_gpus) continue;
        Size size;
        size.nominal = sw.gpus;
        size.gpus = std::min(sw.gpus, cap);
        const double cycle = factory.ExpectedRun(t, sw.gpus, cap) + gap + ExpectedQueue(t.queue);
        size.concurrency = jobs_per_s * sw.weight / all * cycle;
        target_claim_ += size.concurrency * size.gpus;
        sizes_.push_back(size);
      }
      target_claim_ = std::min(target_claim_, 0.85 * total_gpus);
    };
    cap_ = factory.MaxGpus();
    plan(cap_);
    // On a small cluster the largest campaigns are capped at half of it; two of them must then fit in
    // the claim, or the claim could never be met: cap them at half the claim.
    bool capped = false;
    for (const auto& sw : t.sizes) capped |= sw.gpus > cap_;
    if (capped) {
      cap_ = std::max(8, std::min(cap_, static_cast<int>(target_claim_ / 2 / 8) * 8));
      plan(cap_);
    }
    double concurrency = 0;
    for (const auto& s : sizes_) concurrency += s.concurrency;
    for (auto& s : sizes_) s.time_share = s.concurrency / concurrency;
  }

  bool enabled() const { return type_ >= 0 && target_claim_ > 0; }

  /// Starts campaigns while the claimed GPUs are below target; their first jobs go to `out`.
  void Fill(int64_t now, std::vector<Job>& out) {
    if (!enabled()) return;
    // Room for a little more than the target: the largest campaigns are a big share of it, and two of
    // them must be able to run at once when the model says 1.2 run on average.
    const double limit = std::max(1.1 * target_claim_, std::min(0.9 * total_gpus_, 1.3 * target_claim_));
    while (true) {
      // The size furthest behind its share of campaign time goes next, even if it must wait for room
      // (otherwise the largest size would starve); while it waits, smaller campaigns that end before
      // the room appears fill in (backfilling, one level up). A campaign starts only if that brings
      // the claim nearer the target.
      const size_t pick = MostBehind([](const Size&) { return true; });
      const double length = model_.campaign_days * 86400.0 * (0.4 + 1.2 * rng_.Uniform());
      if (claimed_ + 0.25 * sizes_[pick].gpus <= target_claim_ &&
          (claimed_ == 0 || claimed_ + sizes_[pick].gpus <= limit)) {
        Start(pick, now, length, out);
        continue;
      }
      if (claimed_ + 0.25 * sizes_[pick].gpus > target_claim_) return;
      const int64_t room_at = RoomAt(sizes_[pick].gpus, limit);
      const size_t filler = MostBehind(
          [&](const Size& s) { return claimed_ + s.gpus <= limit && claimed_ + 0.25 * s.gpus <= target_claim_; });
      if (filler == kNone || room_at - now < 2 * 3600) return;
      Start(filler, now, std::min(length, static_cast<double>(room_at - now)), out);
    }
  }

  /// A campaign job ended at `now`: the campaign resubmits, or ends and frees its claim.
  void OnEnd(const Job& job, int64_t now, std::vector<Job>& out) {
    Campaign& c = campaigns_[job.campaign];
    if (now >= c.until) {
      c.active = false;
      claimed_ -= c.gpus;
      Fill(now, out);
      return;
    }
    // Restarts after a failure are automatic; after a cancel or a finished stage a person decides.
    const double median = job.state == JobState::kCompleted ? 600.0 : job.state == JobState::kCancelled ? 900.0 : 180.0;
    const double gap = std::clamp(median * std::exp(rng_.Normal()), 20.0, 4.0 * 3600);
    out.push_back(Next(job.campaign, now + static_cast<int64_t>(gap)));
  }

 private:
  // Plain member lists (Size, Campaign, SimulationParams in schedule.h): alike in shape only.
  struct Size {
    int nominal = 0;
    int gpus = 0;
    double concurrency = 0;
    double time_share = 0;
    double time = 0;
  };
  struct Campaign {
    int gpus = 0;
    int nominal = 0;
    int64_t until = 0;
    int user = 0;
    float activity = 0;
    bool active = false;
  };

  static constexpr size_t kNone = static_cast<size_t>(-1);

  template <typename Pred>
  size_t MostBehind(Pred&& eligible) const {
    size_t pick = kNone;
    double best = -1e300;
    for (size_t i = 0; i < sizes_.size(); ++i) {
      const double deficit = sizes_[i].time_share * (total_time_ + 1.0) - sizes_[i].time;
      if (eligible(sizes_[i]) && deficit > best) {
        best = deficit;
        pick = i;
      }
    }
    return pick;
  }

  // When enough claimed GPUs will have been released (by planned campaign ends) for `gpus` more.
  int64_t RoomAt(int gpus, double limit) const {
    std::vector<std::pair<int64_t, int>> ends;
    for (const Campaign& c : campaigns_) {
      if (c.active) ends.emplace_back(c.until, c.gpus);
    }
    std::sort(ends.begin(), ends.end());
    double claimed = claimed_;
    for (const auto& [until, held] : ends) {
      claimed -= held;
      if (claimed + gpus <= limit) return until;
    }
    return ends.empty() ? 0 : ends.back().first;
  }

  void Start(size_t size_index, int64_t now, double length, std::vector<Job>& out) {
    Size& size = sizes_[size_index];
    Campaign c;
    c.gpus = size.gpus;
    c.nominal = size.nominal;
    c.until = now + static_cast<int64_t>(length);
    c.user = static_cast<int>(rng_.Below(8));
    c.activity = static_cast<float>(model_.gpu_types[type_].activity_mean + 0.8 * rng_.Normal());
    c.active = true;
    size.time += length;
    total_time_ += length;
    claimed_ += c.gpus;
    campaigns_.push_back(std::move(c));
    out.push_back(Next(static_cast<int>(campaigns_.size()) - 1, now + static_cast<int64_t>(rng_.Below(120))));
  }

  // Mean pause between a campaign's jobs (log-normal with sigma 1 around the medians in OnEnd).
  static double ExpectedGap(const GpuTypeModel& t) {
    return (t.outcome_share[0] * 600.0 + t.outcome_share[1] * 900.0 + t.outcome_share[2] * 180.0) * std::exp(0.5);
  }

  Job Next(int campaign, int64_t submit) {
    Campaign& c = campaigns_[campaign];
    Job job = factory_.MakeGpuJob(model_.gpu_types[type_], c.nominal, streams_, rng_, submit, c.user, false, cap_);
    job.campaign = campaign;
    job.activity = c.activity + static_cast<float>(0.15 * rng_.Normal());
    job.key = MixKey(rng_.Next(), static_cast<uint64_t>(campaign));
    return job;
  }

  const ClusterModel& model_;
  const JobFactory& factory_;
  Rng rng_;
  TypeStreams streams_;  // shared by all campaigns, so outcomes and durations are stratified across them
  int total_gpus_;
  int cap_ = 0;  // largest campaign, in GPUs
  int type_ = -1;
  std::vector<Size> sizes_;
  std::vector<Campaign> campaigns_;
  double target_claim_ = 0;
  double claimed_ = 0;
  double total_time_ = 0;
};

// FIFO over eligible jobs with EASY backfilling: the first job that does not fit gets a reservation on
// the nodes that free up soonest; later jobs may start now if they avoid those nodes or end before the
// reservation starts. Sub-node jobs go to the fullest node that fits them (packing keeps whole nodes
// free for multi-node jobs); a campaign's job goes back to its previous nodes when they are free.
class Scheduler {
 public:
  using OnEnd = std::function<void(int job, int64_t now, std::vector<Job>& spawned)>;

  Scheduler(int nodes, std::vector<Job>& jobs, int64_t window_end)
      : jobs_(jobs),
        window_end_(window_end),
        free_(nodes, 0xFF),
        running_on_(nodes),
        total_free_(nodes * 8) {
    free_count_[8] = nodes;
  }

  void Run(const std::vector<int>& order, std::vector<Job>& initial_spawn, const OnEnd& on_end) {
    for (int j : order) trace_jobs_waiting_ += MustStart(jobs_[j]) ? 1 : 0;
    AddSpawned(initial_spawn);
    size_t next = 0;
    std::vector<Job> spawned;
    while (true) {
      const int64_t next_static = next < order.size() ? jobs_[order[next]].eligible_s : kNever;
      const int64_t next_dynamic = dynamic_.empty() ? kNever : dynamic_.top().first;
      const int64_t next_end = ends_.empty() ? kNever : ends_.top().first;
      const int64_t now = std::min({next_static, next_dynamic, next_end});
      if (now == kNever) break;
      // Past the window, once every job submitted before its end has started, later events cannot
      // change the trace.
      if (now > window_end_ && trace_jobs_waiting_ == 0) break;
      while (!ends_.empty() && ends_.top().first <= now) {
        const int j = ends_.top().second;
        ends_.pop();
        Release(j);
        if (jobs_[j].campaign >= 0) {
          on_end(j, now, spawned);
          AddSpawned(spawned);
        }
      }
      while (next < order.size() && jobs_[order[next]].eligible_s <= now) Enqueue(order[next++], now);
      while (!dynamic_.empty() && dynamic_.top().first <= now) {
        Enqueue(dynamic_.top().second, now);
        dynamic_.pop();
      }
      SchedulePass(now);
    }
  }

 private:
  static constexpr int64_t kNever = INT64_MAX;
  static constexpr int64_t kMostAheadWaitS = 4 * 3600;

  struct Reservation {
    bool active = false;
    int64_t shadow = 0;
    std::vector<char> nodes;  // reserved node flags
  };

  // Jobs submitted before the window's end are in the trace if they hold GPUs in the window (or were
  // submitted in it), which is known once they have started: the simulation runs until they all have.
  bool MustStart(const Job& job) const { return job.submit_s < window_end_; }

  void AddSpawned(std::vector<Job>& spawned) {
    for (Job& job : spawned) {
      trace_jobs_waiting_ += MustStart(job) ? 1 : 0;
      jobs_.push_back(std::move(job));
      dynamic_.emplace(jobs_.back().eligible_s, static_cast<int>(jobs_.size()) - 1);
    }
    spawned.clear();
  }

  // Into the queue in eligible order, a job queued ahead after the others queued ahead (the first
  // blocked one gets the pass's reservation). A job queued ahead that the running jobs leave no room
  // for within kMostAheadWaitS, or to end in the window (half an hour before its end), is dropped: an
  // incident planned where the cluster cannot hold it (a small cluster's nodes held for days by its
  // other large jobs) does not happen, and one planned job waiting for hours after another held a
  // queue of hundreds of GPUs that hid the injected backlogs (a 0.2 Seren: 6 of 46 missed).
  void Enqueue(int j, int64_t now) {
    Job& job = jobs_[j];
    if (!job.ahead) {
      pending_.push_back(j);
      return;
    }
    Reservation room;
    MakeReservation(job, now, room);
    if (room.shadow - now > kMostAheadWaitS || room.shadow + job.run_s > window_end_ - 1800) {
      job.dropped = true;
      trace_jobs_waiting_ -= MustStart(job) ? 1 : 0;
      return;
    }
    auto it = pending_.begin();
    while (it != pending_.end() && jobs_[*it].ahead) ++it;
    pending_.insert(it, j);
  }

  void SchedulePass(int64_t now) {
    Reservation reservation;
    size_t examined = 0;
    for (auto it = pending_.begin(); it != pending_.end() && examined < 512; ++examined) {
      if (total_free_ == 0) break;
      if (TryStart(*it, now, reservation)) {
        it = pending_.erase(it);
        continue;
      }
      if (!reservation.active) MakeReservation(jobs_[*it], now, reservation);
      ++it;
    }
  }

  bool Usable(int node, const Job& job, int64_t now, const Reservation& r) const {
    return !r.active || !r.nodes[node] || now + job.run_s <= r.shadow;
  }

  bool TryStart(int j, int64_t now, const Reservation& r) {
    Job& job = jobs_[j];
    const int n = static_cast<int>(free_.size());
    if (job.gpus >= 8) {
      if (free_count_[8] < job.nodes) return false;
      std::vector<int> chosen;
      auto consider = [&](int node) {
        if (static_cast<int>(chosen.size()) < job.nodes && free_[node] == 0xFF && Usable(node, job, now, r) &&
            std::find(chosen.begin(), chosen.end(), node) == chosen.end()) {
          chosen.push_back(node);
        }
      };
      if (job.campaign >= 0 && job.campaign < static_cast<int>(campaign_nodes_.size())) {
        for (int node : campaign_nodes_[job.campaign]) consider(node);
      }
      for (int node = 0; node < n; ++node) consider(node);
      if (static_cast<int>(chosen.size()) < job.nodes) return false;
      for (int node : chosen) Allocate(j, node, 0xFF);
      if (job.campaign >= 0) {
        if (job.campaign >= static_cast<int>(campaign_nodes_.size())) campaign_nodes_.resize(job.campaign + 1);
        campaign_nodes_[job.campaign] = chosen;
      }
    } else {
      bool any = false;
      for (int f = job.gpus; f <= 8; ++f) any |= free_count_[f] > 0;
      if (!any) return false;
      int best = -1, best_free = 9;
      for (int node = 0; node < n; ++node) {
        const int f = std::popcount(static_cast<unsigned>(free_[node]));
        if (f >= job.gpus && f < best_free && Usable(node, job, now, r)) {
          best = node;
          best_free = f;
          if (f == job.gpus) break;
        }
      }
      if (best < 0) return false;
      uint8_t mask = 0;
      int need = job.gpus;
      for (int g = 0; g < 8 && need > 0; ++g) {
        if (free_[best] & (1u << g)) {
          mask |= static_cast<uint8_t>(1u << g);
          --need;
        }
      }
      Allocate(j, best, mask);
    }
    job.start_s = now;
    job.end_s = now + job.run_s;
    trace_jobs_waiting_ -= MustStart(job) ? 1 : 0;
    ends_.emplace(job.end_s, j);
    return true;
  }

  void Allocate(int j, int node, uint8_t mask) {
    SetFree(node, static_cast<uint8_t>(free_[node] & ~mask));
    jobs_[j].alloc.push_back({node, mask});
    running_on_[node].push_back(j);
  }

  void Release(int j) {
    for (const NodeAlloc& a : jobs_[j].alloc) {
      SetFree(a.node, static_cast<uint8_t>(free_[a.node] | a.gpu_mask));
      auto& list = running_on_[a.node];
      list.erase(std::find(list.begin(), list.end(), j));
    }
  }

  void SetFree(int node, uint8_t mask) {
    const int before = std::popcount(static_cast<unsigned>(free_[node]));
    const int after = std::popcount(static_cast<unsigned>(mask));
    --free_count_[before];
    ++free_count_[after];
    total_free_ += after - before;
    free_[node] = mask;
  }

  void MakeReservation(const Job& job, int64_t now, Reservation& r) {
    const int n = static_cast<int>(free_.size());
    r.active = true;
    r.nodes.assign(n, 0);
    if (job.gpus >= 8) {
      std::vector<std::pair<int64_t, int>> free_at;
      for (int node = 0; node < n; ++node) {
        int64_t t = now;
        for (int j : running_on_[node]) t = std::max(t, jobs_[j].end_s);
        free_at.emplace_back(t, node);
      }
      std::sort(free_at.begin(), free_at.end());
      const int k = std::min(job.nodes, n);
      r.shadow = free_at[k - 1].first;
      for (int i = 0; i < k; ++i) r.nodes[free_at[i].second] = 1;
    } else {
      int64_t best_t = kNever;
      int best_node = 0;
      for (int node = 0; node < n; ++node) {
        int have = std::popcount(static_cast<unsigned>(free_[node]));
        int64_t t = now;
        if (have < job.gpus) {
          std::vector<std::pair<int64_t, int>> ends;
          for (int j : running_on_[node]) {
            for (const NodeAlloc& a : jobs_[j].alloc) {
              if (a.node == node) ends.emplace_back(jobs_[j].end_s, std::popcount(static_cast<unsigned>(a.gpu_mask)));
            }
          }
          std::sort(ends.begin(), ends.end());
          for (const auto& [end, count] : ends) {
            have += count;
            t = end;
            if (have >= job.gpus) break;
          }
        }
        if (t < best_t) {
          best_t = t;
          best_node = node;
        }
      }
      r.shadow = best_t;
      r.nodes[best_node] = 1;
    }
  }

  std::vector<Job>& jobs_;
  int64_t window_end_;
  std::vector<uint8_t> free_;
  std::vector<std::vector<int>> running_on_;
  int total_free_;
  int free_count_[9] = {};
  int trace_jobs_waiting_ = 0;
  std::vector<int> pending_;
  std::vector<std::vector<int>> campaign_nodes_;
  using Event = std::pair<int64_t, int>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> ends_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> dynamic_;
};

}  // namespace

bool IsInTrace(const Job& job, int64_t window_start_s, int64_t window_end_s) {
  if (job.submit_s >= window_end_s) return false;
  // Submitted before the window: in it while pending or running when it opens (a job cancelled while
  // pending ends when it is cancelled).
  return job.submit_s >= window_start_s || job.end_s > window_start_s;
}

int NodeCount(const ClusterModel& model, double scale) {
  return std::max(1, static_cast<int>(std::lround(model.full_nodes * scale)));
}

Schedule SimulateCluster(const ClusterModel& model, const SimulationParams& params) {
  Schedule schedule;
  schedule.nodes = NodeCount(model, params.scale);
  schedule.window_start_s = params.window_start_s;
  schedule.window_end_s = params.window_start_s + int64_t{params.days} * 86400;
  const double rate_scale = static_cast<double>(schedule.nodes) / model.full_nodes;
  const JobFactory factory(model, schedule.nodes);

  // Local days covering warm-up, window and a tail for jobs still pending when the window closes.
  auto local_day = [](int64_t t) {
    const int64_t local = t + kLocalOffsetS;
    return (local >= 0 ? local : local - 86399) / 86400;
  };
  const int64_t sim_start = schedule.window_start_s - int64_t{params.warmup_days} * 86400;
  const int64_t first_day = local_day(sim_start);
  const int64_t last_day = local_day(schedule.window_end_s - 1) + 2;
  DayGenerator generator(model, factory, params.seed, rate_scale);
  std::vector<Job>& jobs = schedule.jobs;
  for (int64_t day = first_day; day <= last_day; ++day) generator.Generate(day, jobs);
  jobs.insert(jobs.end(), params.extra_jobs.begin(), params.extra_jobs.end());
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });

  std::vector<int> order;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].gpus > 0 && jobs[i].run_s > 0) order.push_back(static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return jobs[a].eligible_s < jobs[b].eligible_s; });

  CampaignController campaigns(model, factory, params.seed, rate_scale, schedule.nodes * 8);
  std::vector<Job> initial;
  campaigns.Fill(sim_start, initial);
  Scheduler scheduler(schedule.nodes, jobs, schedule.window_end_s);
  scheduler.Run(order, initial, [&](int j, int64_t now, std::vector<Job>& spawned) {
    const Job ended = jobs[j];  // copy: spawning may reallocate `jobs`
    campaigns.OnEnd(ended, now, spawned);
  });

  // Drop what the simulation never reached past the window; a job submitted before the window's end
  // and still waiting when it stopped (not expected) is written as cancelled while pending.
  const int64_t ws = schedule.window_start_s, we = schedule.window_end_s;
  std::vector<Job> kept;
  kept.reserve(jobs.size());
  for (Job& job : jobs) {
    if (job.dropped) continue;
    const bool unstarted = job.gpus > 0 && job.run_s > 0 && job.start_s < 0;
    if (unstarted && job.submit_s >= we) continue;
    if (unstarted) {
      job.state = JobState::kCancelled;
      job.run_s = 0;
      job.xid = 0;
      job.end_s = std::max(job.submit_s + 1, we);
    }
    job.in_trace = IsInTrace(job, ws, we);
    kept.push_back(std::move(job));
  }
  jobs = std::move(kept);
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });
  return schedule;
}

}  // namespace acmetrace::producers::synth
