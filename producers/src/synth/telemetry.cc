// Utilization telemetry driven by the schedule. Every GPU sample is either idle (no job) or running a
// job; its value is the published quantile function evaluated at an "activity quantile": idle samples
// take the bottom of the distribution (GPU_UTIL 0, ~60 W, 25-35 C), running samples the rest, placed by
// a job-level activity (pretraining hot, evaluation lighter) plus a noise process the job's GPUs share
// (so a multi-node job's nodes move together) and a little per-GPU noise. The running part is mapped
// through the realized mixture of job levels, so the pooled samples follow the published CDFs whatever
// jobs the window happened to hold. Temperatures lag load changes; FB use ramps up as a job starts and
// then stays put; XID codes appear when a job dies of a GPU fault.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <filesystem>
#include <memory>

#include "acmetrace/core/time.h"
#include "synth/faults.h"
#include "synth/output.h"
#include "synth/random.h"
#include "synth/writers.h"

namespace acmetrace::producers::synth {
namespace {

constexpr int64_t kStepS = 15;              // the release's sampling period
constexpr int64_t kIpmiStepS = 60;          // IPMI rows per server per minute
constexpr double kFbTotalMib = 81920.0;     // A100 80 GB
constexpr int kMemClockMhz = 1593;          // A100 80 GB HBM2e clock: DCGM reports it constantly
constexpr double kMissingCell = 0.0005;     // a node's exporter misses a scrape now and then
constexpr double kJobNoisePhi = 0.92;       // per 15 s: job phases last minutes
constexpr double kHeatRate = 0.35;          // GPU temperature follows load within about a minute
constexpr double kMemHeatRate = 0.2;        // HBM temperature a little slower

enum Dcgm : int {
  kXid, kGpuTemp, kMemTemp, kMemClock, kMemCopy, kFbFree, kFbUsed, kDram, kPower, kUtil, kTensor, kSm, kOccupancy,
  kDcgmCount
};
enum NodeMetric : int { kCpu, kMem, kIbSend, kIbRecv, kNodeCount };

// A function of a standard-normal latent value, tabulated on [-kZ, kZ].
class ZTable {
 public:
  static constexpr int kPoints = 2048;
  static constexpr float kZ = 6.0f;

  template <typename F>
  void Build(F&& f) {
    values_.resize(kPoints + 1);
    for (int i = 0; i <= kPoints; ++i) values_[i] = static_cast<float>(f(-kZ + 2 * kZ * i / kPoints));
  }
  float operator()(float z) const {
    float x = (z + kZ) * (kPoints / (2 * kZ));
    if (!(x > 0)) return values_.front();
    if (x >= kPoints) return values_.back();
    const int i = static_cast<int>(x);
    const float t = x - static_cast<float>(i);
    return values_[i] + t * (values_[i + 1] - values_[i]);
  }

 private:
  std::vector<float> values_;
};

// A published quantile function tabulated on [0, 1] for fast lookup.
class PTable {
 public:
  static constexpr int kPoints = 4096;
  void Build(const QuantileTable& q, double scale) {
    values_.resize(kPoints + 1);
    for (int i = 0; i <= kPoints; ++i) values_[i] = static_cast<float>(q.Quantile(static_cast<double>(i) / kPoints) * scale);
  }
  float operator()(float p) const {
    float x = p * kPoints;
    if (!(x > 0)) return values_.front();
    if (x >= kPoints) return values_.back();
    const int i = static_cast<int>(x);
    const float t = x - static_cast<float>(i);
    return values_[i] + t * (values_[i + 1] - values_[i]);
  }
  bool empty() const { return values_.empty(); }

 private:
  std::vector<float> values_;
};

// CDF of a weighted mixture of normals N(mean_j, sd^2): the pooled distribution of a latent value over
// all running samples. Means are binned (1/32 of a unit), which is far finer than the noise.
class MixtureCdf {
 public:
  static constexpr int kBins = 512;
  static constexpr double kLo = -8.0, kHi = 8.0;
  explicit MixtureCdf(double sd) : sd_(sd), weights_(kBins, 0.0) {}
  void Add(double mean, double weight) {
    const int bin = std::clamp(static_cast<int>((mean - kLo) / (kHi - kLo) * kBins), 0, kBins - 1);
    weights_[bin] += weight;
    total_ += weight;
  }
  double operator()(double x) const {
    if (total_ <= 0) return NormalCdf(x);
    double sum = 0;
    for (int b = 0; b < kBins; ++b) {
      if (weights_[b] == 0) continue;
      const double center = kLo + (b + 0.5) * (kHi - kLo) / kBins;
      sum += weights_[b] * NormalCdf((x - center) / sd_);
    }
    return sum / total_;
  }

 private:
  double sd_;
  std::vector<double> weights_;
  double total_ = 0;
};

// Rounds a non-negative value to the nearest integer (without a libm call, for the hot loop).
inline float RoundPositive(float v) { return static_cast<float>(static_cast<int64_t>(v + 0.5f)); }

// SplitMix64 as a cheap per-GPU noise source (fed to the normal table).
struct NoiseStream {
  uint64_t state;
  uint64_t Next() { return SplitMix64(state); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
};

struct Interval {
  int64_t start;
  int64_t end;
  int job;
};

struct XidEvent {
  int64_t start;
  int64_t end;
  uint16_t code;
};

// Latent noise of one job: an AR(1) process its GPUs share, advanced once per step.
struct JobNoise {
  int64_t step = -2;
  float e = 0;
  float fast = 0;      // the job's fast activity noise (see MainPass): its GPUs idle and work together
  uint64_t rng = 0;
  uint64_t fast_rng = 0;
};

struct GpuState {
  size_t cursor = 0;       // into intervals
  size_t xid_cursor = 0;   // into xids
  float heat = 0;
  float mem_heat = 0;
  float temp_const = 0;    // this GPU runs hotter or cooler than others
  float mem_temp_const = 0;
  float power_const = 0;
  NoiseStream noise{0};
};

// The per-metric ingredients of the mapping.
struct Band {
  double lo = 0;    // running samples start at this activity quantile
  double top = 0;   // idle samples stay below this one
};

class TelemetryWriter {
 public:
  TelemetryWriter(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                  const TelemetryRequest& request)
      : model_(model), schedule_(schedule), layout_(layout), request_(request), normals_() {
    nodes_ = schedule.nodes;
    gpus_ = nodes_ * 8;
    steps_ = (schedule.window_end_s - schedule.window_start_s) / kStepS;
    for (const std::string& m : request.metrics) {
      for (int i = 0; i < kDcgmCount; ++i) want_dcgm_[i] |= m == kDcgmMetrics[i];
      for (int i = 0; i < kNodeCount; ++i) {
        want_node_[i] |= m == kNodeMetrics[i] && (i < kIbSend || model.has_ib);
      }
    }
    want_ipmi_ = request.ipmi && model.has_ipmi;
    for (int i = 0; i < kDcgmCount; ++i) any_gpu_file_ |= want_dcgm_[i];
    want_activity_ = want_dcgm_[kUtil] || want_dcgm_[kSm] || want_dcgm_[kTensor] || want_dcgm_[kOccupancy] || want_dcgm_[kDram] ||
                     want_dcgm_[kMemCopy];
    want_fb_ = want_dcgm_[kFbUsed] || want_dcgm_[kFbFree];
    want_temp_ = want_dcgm_[kGpuTemp] || want_dcgm_[kMemTemp];

    node_dom_.assign(nodes_, -1);
    node_ib_.assign(nodes_, 0.f);
    node_ib_noise_.assign(nodes_, 0.f);
    cpu_server_const_.resize(layout_.cpu_servers);
    cpu_server_noise_.resize(layout_.cpu_servers);
    for (int s = 0; s < layout_.cpu_servers; ++s) {
      Rng rng(MixKey(MixKey(request_.seed, HashName(model_.name)), 0xC000 + s));
      cpu_server_const_[s] = static_cast<float>(rng.Normal());
      cpu_server_noise_[s].state = rng.Next();
    }
  }

  core::Status Run(std::vector<WrittenFile>& written) {
    Prepare();
    if (auto status = OpenFiles(); !status.ok()) return status;
    MainPass();
    return CloseFiles(written);
  }

  // The timelines, the census and the tables: everything the values depend on, nothing written.
  void Prepare() {
    BuildTimelines();
    Census();
    BuildTables();
  }

  // The SM activity of job j's GPUs before faults at steps [k_from, k_to) of the window (0 outside
  // its run): the value its shared part of the latent maps to, so their median up to the GPUs' own
  // noise. Replays the job's noise from its first step as MainPass advances it (Advance), on a copy.
  std::vector<float> JobSm(int j, int64_t k_from, int64_t k_to) const {
    const Job& job = schedule_.jobs[static_cast<size_t>(j)];
    std::vector<float> out(static_cast<size_t>(std::max<int64_t>(0, k_to - k_from)), 0.f);
    if (job.start_s < 0 || job.alloc.empty()) return out;
    const int64_t ws = schedule_.window_start_s;
    const int64_t k0 = job.start_s <= ws ? 0 : (job.start_s - ws + kStepS - 1) / kStepS;
    const int64_t k1 = std::min(steps_, (job.end_s - ws + kStepS - 1) / kStepS);
    JobNoise n = job_noise_[static_cast<size_t>(j)];
    for (int64_t k = k0; k < std::min(k1, k_to); ++k) {
      Advance(n, k);
      if (k < k_from) continue;
      const int64_t t = ws + k * kStepS;
      const bool startup = t - job.start_s < StartupS(job);
      const float z = job.activity + static_cast<float>(kJobSd) * n.e + static_cast<float>(kJobFastSd) * n.fast;
      out[static_cast<size_t>(k - k_from)] = startup ? 0.f : run_[kSm](z);
    }
    return out;
  }

  int64_t steps() const { return steps_; }

 private:
  // ---- Schedule to per-GPU timelines ---------------------------------------------------------------

  void BuildTimelines() {
    intervals_.assign(gpus_, {});
    xids_.assign(gpus_, {});
    const int64_t from = schedule_.window_start_s, to = schedule_.window_end_s;
    const auto& jobs = schedule_.jobs;
    job_noise_.assign(jobs.size(), {});
    fb_level_.assign(jobs.size(), 0.f);
    mem_level_.assign(jobs.size(), 0.f);
    for (size_t j = 0; j < jobs.size(); ++j) {
      const Job& job = jobs[j];
      if (job.start_s < 0 || job.alloc.empty() || job.end_s <= from - 3600 || job.start_s >= to) continue;
      for (const NodeAlloc& a : job.alloc) {
        for (int g = 0; g < 8; ++g) {
          if (a.gpu_mask & (1u << g)) intervals_[a.node * 8 + g].push_back({job.start_s, job.end_s, static_cast<int>(j)});
        }
      }
      Rng rng(MixKey(MixKey(request_.seed, 0x7E1E), job.key));
      job_noise_[j].rng = rng.Next();
      // Model size (FB) and host memory are properties of the job, loosely tied to its activity.
      fb_level_[j] = static_cast<float>(0.5 * job.activity + 0.75 * rng.Normal());
      mem_level_[j] = static_cast<float>(0.4 * job.activity + 0.8 * rng.Normal());
      job_noise_[j].fast_rng = rng.Next();
    }
    for (int g = 0; g < gpus_; ++g) {
      auto& list = intervals_[g];
      std::sort(list.begin(), list.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
    }
    // An XID stays on the GPU of the job that died until the next job starts there (at least two minutes)
    // or half an hour passes.
    for (size_t j = 0; j < jobs.size(); ++j) {
      const Job& job = jobs[j];
      if (job.xid == 0 || job.start_s < 0 || job.alloc.empty()) continue;
      if (job.end_s < from - 1800 || job.end_s >= to) continue;
      Rng rng(MixKey(MixKey(request_.seed, 0x71D), job.key));
      const NodeAlloc& a = job.alloc[rng.Below(job.alloc.size())];
      int pick = static_cast<int>(rng.Below(std::popcount(static_cast<unsigned>(a.gpu_mask))));
      int gpu = 0;
      for (int g = 0; g < 8; ++g) {
        if ((a.gpu_mask & (1u << g)) && pick-- == 0) gpu = g;
      }
      const int index = a.node * 8 + gpu;
      int64_t until = job.end_s + 1800;
      for (const Interval& in : intervals_[index]) {
        if (in.start >= job.end_s) {
          until = std::min(until, in.start);
          break;
        }
      }
      until = std::max(until, job.end_s + 120);  // a scrape or two sees it even if a job follows at once
      xids_[index].push_back({job.end_s, until, job.xid});
    }
    if (request_.faults) AddInjectedXids();
    for (auto& list : xids_) {
      std::sort(list.begin(), list.end(), [](const XidEvent& a, const XidEvent& b) { return a.start < b.start; });
      // The register holds the last code: a newer error replaces an older one.
      for (size_t i = 0; i + 1 < list.size(); ++i) list[i].end = std::min(list[i].end, list[i + 1].start);
    }
    gpu_state_.assign(gpus_, {});
    for (int g = 0; g < gpus_; ++g) {
      Rng rng(MixKey(MixKey(request_.seed, HashName(model_.name)), 0x6000 + g));
      GpuState& s = gpu_state_[g];
      s.temp_const = static_cast<float>(rng.Normal());
      s.mem_temp_const = static_cast<float>(rng.Normal());
      s.power_const = static_cast<float>(rng.Normal());
      s.noise.state = rng.Next();
    }
    node_const_.resize(nodes_);
    node_noise_.resize(nodes_);
    for (int n = 0; n < nodes_; ++n) {
      Rng rng(MixKey(MixKey(request_.seed, HashName(model_.name)), 0x9000 + n));
      node_const_[n] = static_cast<float>(rng.Normal());
      node_noise_[n].state = rng.Next();
    }
  }

  // Fault injection: the plan learns the XIDs above (ground truth) and adds its own.
  void AddInjectedXids() {
    std::vector<XidWindow> natural;
    for (int g = 0; g < gpus_; ++g) {
      for (const XidEvent& x : xids_[g]) natural.push_back({g, x.start, x.end, x.code});
    }
    for (const XidWindow& w : request_.faults->ResolveXids(natural)) {
      xids_[w.gpu_index].push_back({w.start_s, w.end_s, w.code});
    }
  }

  // Fault injection: what the plan's incidents do to one GPU sample.
  void ApplyFaults(int index, bool running, float* v) const {
    const GpuFaultEffect fx = request_.faults->GpuEffect(index, running);
    const float activity = fx.activity_scale, sm = fx.activity_scale * fx.sm_scale;
    if (activity != 1 || sm != 1) {
      v[kUtil] = RoundPositive(v[kUtil] * activity);
      v[kMemCopy] = RoundPositive(v[kMemCopy] * activity);
      v[kSm] *= sm;
      v[kTensor] *= sm;
      v[kOccupancy] *= sm;
      v[kDram] *= sm;
      v[kPower] *= fx.power_scale;
    }
    if (fx.temp_floor > 0) v[kGpuTemp] = std::max(v[kGpuTemp], RoundPositive(fx.temp_floor));
  }

  // The job running on GPU g at time t (-1 if idle); advances the GPU's cursor (times only grow).
  int JobAt(int g, int64_t t, int64_t* start) {
    const auto& list = intervals_[g];
    size_t& c = gpu_state_[g].cursor;
    while (c < list.size() && list[c].end <= t) ++c;
    if (c < list.size() && list[c].start <= t) {
      *start = list[c].start;
      return list[c].job;
    }
    return -1;
  }

  // Startup: the first minute or so (at most a third of the run) loads data and weights: util 0.
  static int64_t StartupS(const Job& job) { return std::min<int64_t>(90, job.run_s / 3); }

  // ---- Census: realized shares and weights, before any value is written ----------------------------

  void Census() {
    const auto& jobs = schedule_.jobs;
    gpu_weight_.assign(jobs.size(), 0.0);
    node_weight_.assign(jobs.size(), 0.0);
    ib_weight_.assign(jobs.size(), 0.0);
    double idle_gpu = 0, idle_node = 0, no_ib = 0;
    std::vector<int> node_jobs(8);
    for (int64_t k = 0; k < steps_; ++k) {
      const int64_t t = schedule_.window_start_s + k * kStepS;
      for (int n = 0; n < nodes_; ++n) {
        int dominant = Dominant(n, t, node_jobs);
        for (int g = 0; g < 8; ++g) {
          const int j = node_jobs[g];
          if (j < 0) {
            idle_gpu += 1;
          } else if (t - jobs[j].start_s >= StartupS(jobs[j])) {
            gpu_weight_[j] += 1;
          }
        }
        if (dominant < 0) {
          idle_node += 1;
          no_ib += 1;
        } else {
          node_weight_[dominant] += 1;
          if (jobs[dominant].nodes > 1) {
            ib_weight_[dominant] += 1;
          } else {
            no_ib += 1;
          }
        }
      }
    }
    for (auto& s : gpu_state_) s.cursor = 0;
    const double gpu_samples = static_cast<double>(steps_) * gpus_;
    const double node_samples = static_cast<double>(steps_) * nodes_;
    idle_gpu_share_ = gpu_samples > 0 ? idle_gpu / gpu_samples : 1.0;
    idle_node_share_ = node_samples > 0 ? idle_node / node_samples : 1.0;
    no_ib_share_ = node_samples > 0 ? no_ib / node_samples : 1.0;
  }

  // Jobs on node n's GPUs at t (into node_jobs) and the one holding most of them (-1: node idle).
  int Dominant(int n, int64_t t, std::vector<int>& node_jobs) {
    int best = -1, best_count = 0;
    for (int g = 0; g < 8; ++g) {
      int64_t start;
      node_jobs[g] = JobAt(n * 8 + g, t, &start);
    }
    for (int g = 0; g < 8; ++g) {
      if (node_jobs[g] < 0) continue;
      int count = 0;
      for (int h = 0; h < 8; ++h) count += node_jobs[h] == node_jobs[g];
      if (count > best_count) {
        best = node_jobs[g];
        best_count = count;
      }
    }
    return best;
  }

  // ---- Tables ----------------------------------------------------------------------------------------

  // Latent structure of running samples (see MainPass): z = activity + kJobSd * e + per-metric noise.
  static constexpr double kJobSd = 0.5;
  static constexpr double kFastSd = 0.3;
  static constexpr double kGpuFastSd = 0.1;  // of kFastSd, the GPU's own part; the rest is its job's
  static constexpr double kJobFastSd = 0.28284271247461906;  // sqrt(kFastSd^2 - kGpuFastSd^2)
  static constexpr float kGpuUtilSpread = 3;  // GPU_UTIL points a computing GPU reads off its job's (see MainPass)
  static constexpr double kFbRankSd = 0.35;  // spread of FB use across one job's GPUs

  void BuildTables() {
    const std::string& c = model_.name;
    const QuantileTable util = QuantileTable::ForMetric(c, "GPU_UTIL");
    const double util_zero = util.CdfAt(0.0);
    auto band = [&](double idle_share, double zero_share) { return Band{idle_share, std::min(idle_share, zero_share)}; };
    const auto& jobs = schedule_.jobs;

    // Running GPU tables: value = Q(lo + (1 - lo) * F(z)) with F the realized mixture for this latent.
    auto running = [&](ZTable& table, const QuantileTable& q, double scale, const Band& b, double sd,
                       auto&& mean_of) {
      MixtureCdf mix(sd);
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (gpu_weight_[j] > 0) mix.Add(mean_of(j), gpu_weight_[j]);
      }
      table.Build([&](double z) { return q.Quantile(b.lo + (1 - b.lo) * mix(z)) * scale; });
    };
    auto idle = [&](ZTable& table, const QuantileTable& q, double scale, const Band& b) {
      table.Build([&](double z) { return q.Quantile(b.top * NormalCdf(z)) * scale; });
    };
    auto activity = [&](size_t j) { return static_cast<double>(jobs[j].activity); };
    const double fast_sd = std::sqrt(kJobSd * kJobSd + kFastSd * kFastSd);

    const Band util_band = band(idle_gpu_share_, util_zero);
    running(run_[kUtil], util, 1.0, util_band, fast_sd, activity);
    const QuantileTable sm = QuantileTable::ForMetric(c, "SM_ACTIVE");
    running(run_[kSm], sm, 0.01, band(idle_gpu_share_, sm.CdfAt(0.0)), fast_sd, activity);
    const QuantileTable tensor = QuantileTable::ForMetric(c, "PIPE_TENSOR_ACTIVE");
    running(run_[kTensor], tensor, 0.01, band(idle_gpu_share_, tensor.CdfAt(0.0)), fast_sd, activity);
    const QuantileTable power = QuantileTable::ForMetric(c, "POWER_USAGE");
    const Band power_band = band(idle_gpu_share_, util_zero);
    running(run_[kPower], power, 1.0, power_band, std::sqrt(kJobSd * kJobSd + 0.25 * 0.25), activity);
    idle(idle_[kPower], power, 1.0, power_band);
    const QuantileTable fb = QuantileTable::ForMetric(c, "FB_USED_PCT");
    running(run_[kFbUsed], fb, kFbTotalMib / 100.0, band(idle_gpu_share_, fb.CdfAt(0.0)), kFbRankSd,
            [&](size_t j) { return static_cast<double>(fb_level_[j]); });
    // Temperatures: tables of activity quantiles (blended by heat), then the quantile function.
    const QuantileTable temp = QuantileTable::ForMetric(c, "GPU_TEMP");
    const QuantileTable mem_temp = QuantileTable::ForMetric(c, "MEMORY_TEMP");
    temp_q_.Build(temp, 1.0);
    mem_temp_q_.Build(mem_temp, 1.0);
    const Band temp_band = band(idle_gpu_share_, util_zero);
    temp_band_ = temp_band;
    {
      MixtureCdf mix(std::sqrt(0.3 * 0.3 + 0.5 * 0.5));
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (gpu_weight_[j] > 0) mix.Add(jobs[j].activity, gpu_weight_[j]);
      }
      temp_pos_.Build([&](double z) { return temp_band.lo + (1 - temp_band.lo) * mix(z); });
      idle_temp_pos_.Build([&](double z) { return temp_band.top * NormalCdf(z); });
    }
    // DRAM activity has no published CDF: a plausible rising function of the same activity.
    {
      MixtureCdf mix(std::sqrt(kJobSd * kJobSd + 0.4 * 0.4));
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (gpu_weight_[j] > 0) mix.Add(jobs[j].activity, gpu_weight_[j]);
      }
      run_[kDram].Build([&](double z) { return 0.02 + 0.58 * std::pow(mix(z), 1.3); });
    }

    // Node tables: weights are node samples by the job holding most of the node's GPUs.
    auto node_running = [&](ZTable& table, const QuantileTable& q, double scale, const Band& b, double sd,
                            const std::vector<double>& weight, auto&& mean_of) {
      MixtureCdf mix(sd);
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (weight[j] > 0) mix.Add(mean_of(j), weight[j]);
      }
      table.Build([&](double z) { return q.Quantile(b.lo + (1 - b.lo) * mix(z)) * scale; });
    };
    // Raw files hold fractions; the published CDFs are in percent.
    const QuantileTable cpu = QuantileTable::ForMetric(c, "NODE_CPU_UTILIZATION");
    const Band cpu_band = band(idle_node_share_, 0.25);
    node_running(node_run_[kCpu], cpu, 0.01, cpu_band, std::sqrt(0.4 * 0.4 + 0.5 * 0.5 + 0.3 * 0.3), node_weight_,
                 activity);
    idle(node_idle_[kCpu], cpu, 0.01, cpu_band);
    const QuantileTable mem = QuantileTable::ForMetric(c, "NODE_MEMORY_UTILIZATION");
    const Band mem_band = band(idle_node_share_, 0.25);
    node_running(node_run_[kMem], mem, 0.01, mem_band, std::sqrt(0.3 * 0.3 + 0.2 * 0.2), node_weight_,
                 [&](size_t j) { return static_cast<double>(mem_level_[j]); });
    idle(node_idle_[kMem], mem, 0.01, mem_band);
    if (model_.has_ib) {
      const QuantileTable ib = QuantileTable::ForMetric(c, "NODE_IB_SEND");
      const Band ib_band = band(no_ib_share_, ib.CdfAt(0.0));
      node_running(node_run_[kIbSend], ib, 1.0, ib_band, std::sqrt(kJobSd * kJobSd + 0.4 * 0.4), ib_weight_,
                   activity);
      idle(node_idle_[kIbSend], ib, 1.0, ib_band);
    }
    if (model_.has_ipmi) {
      const QuantileTable gpu_server = QuantileTable::ForMetric(c, "IPMI_SYS_TOTAL_POWER_GPU_SERVER");
      const Band ipmi_band = band(idle_node_share_, 0.30);
      node_running(ipmi_run_, gpu_server, 1.0, ipmi_band, std::sqrt(0.4 * 0.4 + 0.5 * 0.5), node_weight_, activity);
      idle(ipmi_idle_, gpu_server, 1.0, ipmi_band);
      cpu_server_q_.Build(QuantileTable::ForMetric(c, "IPMI_SYS_TOTAL_POWER_CPU_SERVER"), 1.0);
    }
  }

  // ---- Files ---------------------------------------------------------------------------------------

  core::Status OpenFiles() {
    std::error_code ec;
    std::filesystem::create_directories(request_.utilization_dir, ec);
    if (ec) return core::Status::Error(request_.utilization_dir + ": cannot create: " + ec.message());
    std::string gpu_header = "Time", node_header = "Time", ib_header = "Time";
    for (int n : layout_.column_order) {
      const std::string& name = layout_.nodes[n].name;
      for (int g = 0; g < 8; ++g) {
        gpu_header += ',';
        gpu_header += name;
        gpu_header += '-';
        gpu_header += static_cast<char>('0' + g);
      }
      node_header += ',' + name;
      ib_header += ',' + name + "-mlx5_0";
    }
    gpu_header += '\n';
    node_header += '\n';
    ib_header += '\n';
    for (int i = 0; i < kDcgmCount; ++i) {
      if (!want_dcgm_[i]) continue;
      auto& f = dcgm_files_[i];
      f = std::make_unique<OutputFile>();
      if (auto s = f->Open(request_.utilization_dir + "/" + kDcgmMetrics[i] + ".csv", size_t{4} << 20); !s.ok()) return s;
      f->Append(gpu_header);
    }
    for (int i = 0; i < kNodeCount; ++i) {
      if (!want_node_[i]) continue;
      auto& f = node_files_[i];
      f = std::make_unique<OutputFile>();
      if (auto s = f->Open(request_.utilization_dir + "/" + kNodeMetrics[i] + ".csv"); !s.ok()) return s;
      f->Append(i >= kIbSend ? ib_header : node_header);
    }
    if (want_ipmi_) {
      std::filesystem::create_directories(request_.ipmi_dir, ec);
      if (ec) return core::Status::Error(request_.ipmi_dir + ": cannot create: " + ec.message());
      static constexpr const char* kIpmiFiles[] = {"GPU_AB_Power.csv", "GPU_C_Power.csv", "CPU_D_Power.csv"};
      for (int i = 0; i < 3; ++i) {
        ipmi_files_[i] = std::make_unique<OutputFile>();
        if (auto s = ipmi_files_[i]->Open(request_.ipmi_dir + "/" + kIpmiFiles[i]); !s.ok()) return s;
        ipmi_files_[i]->Append("Time,CPU_Power,MEM_Power,FAN_Power,Sys_Total_Power\n");
      }
    }
    return core::Status::Ok();
  }

  core::Status CloseFiles(std::vector<WrittenFile>& written) {
    core::Status first = core::Status::Ok();
    auto close = [&](std::unique_ptr<OutputFile>& f, int64_t rows) {
      if (!f) return;
      written.push_back({f->path(), f->bytes(), rows});
      auto s = f->Close();
      if (first.ok() && !s.ok()) first = s;
    };
    for (auto& f : dcgm_files_) close(f, steps_);
    for (auto& f : node_files_) close(f, steps_);
    for (int i = 0; i < 3; ++i) close(ipmi_files_[i], ipmi_rows_[i]);
    return first;
  }

  // ---- The pass over time ------------------------------------------------------------------------

  float AdvanceJob(int j, int64_t k) { return Advance(job_noise_[j], k); }

  // A job's noise at step k: the AR(1) step from k - 1, or a fresh draw when the job was not seen there.
  float Advance(JobNoise& n, int64_t k) const {
    if (n.step != k) {
      const float draw = normals_.At(SplitMix64(n.rng));
      const float fast_draw = normals_.At(SplitMix64(n.fast_rng));
      const bool next = n.step == k - 1;
      const float keep = static_cast<float>(kJobNoisePhi), renew = static_cast<float>(std::sqrt(1 - kJobNoisePhi * kJobNoisePhi));
      n.e = next ? keep * n.e + renew * draw : draw;
      n.fast = fast_draw;
      n.step = k;
    }
    return n.e;
  }

  void MainPass() {
    const auto& jobs = schedule_.jobs;
    const size_t gpu_row_bytes = static_cast<size_t>(gpus_) * 14 + 32;
    const size_t node_row_bytes = static_cast<size_t>(nodes_) * 14 + 32;
    NoiseStream missing{MixKey(request_.seed, HashName(model_.name) ^ 0x3155)};
    std::vector<char> dcgm_missing(nodes_), node_missing(nodes_);
    std::vector<float> node_cpu(nodes_), node_mem(nodes_);
    std::vector<int> node_jobs(8);
    std::string iso;
    const double ipmi_rhythm_sd = 0.3;
    for (int64_t k = 0; k < steps_; ++k) {
      const int64_t t = schedule_.window_start_s + k * kStepS;
      FaultPlan* const faults = request_.faults;
      if (faults) faults->BeginRow(t);
      double row_util = 0;
      char* p[kDcgmCount] = {};
      char* q[kNodeCount] = {};
      for (int i = 0; i < kDcgmCount; ++i) {
        if (dcgm_files_[i]) {
          p[i] = dcgm_files_[i]->Reserve(gpu_row_bytes);
          p[i] = WriteInt(p[i], t);
        }
      }
      for (int i = 0; i < kNodeCount; ++i) {
        if (node_files_[i]) {
          q[i] = node_files_[i]->Reserve(node_row_bytes);
          q[i] = WriteInt(q[i], t);
        }
      }
      for (int n = 0; n < nodes_; ++n) {
        dcgm_missing[n] = missing.Uniform() < kMissingCell;
        node_missing[n] = missing.Uniform() < kMissingCell;
        if (faults && faults->NodeSilent(n)) dcgm_missing[n] = node_missing[n] = 1;
      }
      for (int n : layout_.column_order) {
        const bool skip = dcgm_missing[n];
        for (int g = 0; g < 8; ++g) {
          const int index = n * 8 + g;
          GpuState& s = gpu_state_[index];
          int64_t start = 0;
          const int j = JobAt(index, t, &start);
          // Every latent process advances whatever files are written, so a metric's values do not
          // depend on which other metrics were asked for.
          float noise[8];
          normals_.Four(s.noise.Next(), noise);
          normals_.Four(s.noise.Next(), noise + 4);
          const bool running = j >= 0;
          s.heat += static_cast<float>(kHeatRate) * ((running ? 1.f : 0.f) - s.heat);
          s.mem_heat += static_cast<float>(kMemHeatRate) * ((running ? 1.f : 0.f) - s.mem_heat);
          const float e = running ? AdvanceJob(j, k) : 0.f;
          if (!any_gpu_file_) continue;
          float v[kDcgmCount] = {};
          const Job* job = running ? &jobs[j] : nullptr;
          const int64_t elapsed = running ? t - start : 0;
          const bool startup = running && elapsed < StartupS(*job);
          const float base = running ? job->activity + static_cast<float>(kJobSd) * e : 0.f;
          if (want_activity_) {
            if (running) {
              // Start-up loads data and weights: no kernel runs (GPU_UTIL and SM activity 0), whatever
              // the running band starts at (when the window's GPUs idle more than the release's 31%/26%
              // of zero samples, the band starts above the zeros, and start-ups used to read 70-98%
              // util: a new job on a GPU looked like the old one going on, issue #14).
              // The fast part of the latent value is mostly the job's (its GPUs work in lockstep: a
              // data-parallel step waits for all of them), with a little of the GPU's own on top, and
              // whether the job computes at all is the job's: when its part maps to GPU_UTIL 0 (no kernel:
              // checkpointing, loading, waiting on I/O) every GPU of it reads 0, and otherwise none does.
              // Drawing the fast part per GPU made single GPUs of a busy job dip to 0 for a scrape or two
              // while the others worked, which the release does not show: its GPU_UTIL is polarized (31% /
              // 26% of samples at 0, 22% / 24% at 100), GPUs off or on, not in between (issue #14: such
              // dips broke a GPU's run of work apart from its job's). The two parts add up to kFastSd, the
              // spread the tables were built for, so the pooled distributions stay the published ones.
              // A computing GPU's GPU_UTIL stays within kGpuUtilSpread points of its job's: its peers wait
              // for it in NCCL kernels, which count as kernels running, so a job's GPUs run kernels for
              // the same share of a scrape. Its own part, drawn in the latent value, would otherwise be
              // stretched across the release's steep step from 0 to ~50% (31.5% to 32.5% of Seren's
              // samples): a GPU read 1 (the floor of a computing one) while its peers read 40-98 and its
              // own SM_ACTIVE 0.39, and the straggler detector took it for one that idled alone, not its
              // job's (issue #14, blind seeds 121-136). The release holds 0.25% of samples in 1-9%;
              // generation 4 wrote 1.8%.
              const float job_z = base + static_cast<float>(kJobFastSd) * job_noise_[j].fast;
              const float job_util = run_[kUtil](job_z);
              const bool computing = !startup && RoundPositive(job_util) > 0;
              const float gpu_sd = static_cast<float>(kGpuFastSd);
              const float own_util = std::clamp(run_[kUtil](job_z + gpu_sd * noise[0]), job_util - kGpuUtilSpread,
                                                job_util + kGpuUtilSpread);
              v[kUtil] = computing ? std::max(1.f, RoundPositive(own_util)) : 0.f;
              v[kSm] = startup ? 0.f : run_[kSm](job_z + gpu_sd * noise[1]);
              v[kTensor] = startup ? 0.f : run_[kTensor](job_z + gpu_sd * noise[2]);
              v[kOccupancy] = v[kTensor];  // identical series in the release
              v[kDram] = startup ? 0.01f : run_[kDram](base + 0.4f * noise[3]);
              v[kMemCopy] = RoundPositive(std::clamp(v[kDram] * 85.f + 1.5f * noise[4], 0.f, 100.f));
            }
          }
          if (want_dcgm_[kPower]) {
            v[kPower] = running ? run_[kPower](startup ? -2.f : base + 0.25f * noise[7])
                                : idle_[kPower](0.8f * s.power_const + 0.6f * noise[7]);
          }
          if (want_fb_ && running) {
            // Ranks of one job hold different amounts of memory (pipeline stages, data shards), but
            // each holds it for the whole run.
            const float rank = normals_.At(MixKey(job->key, static_cast<uint64_t>(index)) >> 20);
            float fb = run_[kFbUsed](fb_level_[j] + static_cast<float>(kFbRankSd) * rank);
            if (startup) fb *= static_cast<float>(elapsed + kStepS) / static_cast<float>(StartupS(*job) + kStepS);
            v[kFbUsed] = RoundPositive(fb);
          }
          v[kFbFree] = static_cast<float>(kFbTotalMib) - v[kFbUsed];
          if (want_temp_) {
            const float idle_temp_pos = idle_temp_pos_(0.95f * s.temp_const + 0.31f * noise[5]);
            const float idle_mem_pos = idle_temp_pos_(0.95f * s.mem_temp_const + 0.31f * noise[6]);
            float run_temp_pos = 0, run_mem_pos = 0;
            if (running) {
              run_temp_pos = temp_pos_(job->activity + 0.3f * e + 0.5f * s.temp_const);
              run_mem_pos = temp_pos_(job->activity + 0.3f * e + 0.5f * s.mem_temp_const);
            }
            v[kGpuTemp] = RoundPositive(temp_q_(s.heat * run_temp_pos + (1 - s.heat) * idle_temp_pos));
            v[kMemTemp] = RoundPositive(mem_temp_q_(s.mem_heat * run_mem_pos + (1 - s.mem_heat) * idle_mem_pos));
          }
          v[kMemClock] = static_cast<float>(kMemClockMhz);
          if (faults) {
            row_util += v[kUtil];
            ApplyFaults(index, running, v);
          }
          // XID: the last error code, held for a while after the fault.
          {
            const auto& list = xids_[index];
            size_t& c = s.xid_cursor;
            while (c < list.size() && list[c].end <= t) ++c;
            v[kXid] = c < list.size() && list[c].start <= t ? list[c].code : 0.f;
          }
          for (int i = 0; i < kDcgmCount; ++i) {
            if (!p[i]) continue;
            *p[i]++ = ',';
            if (skip) continue;
            switch (i) {
              case kDram: case kTensor: case kSm: case kOccupancy: case kPower:
                p[i] = WriteDecimal3(p[i], v[i]);
                break;
              default:
                p[i] = WriteInt(p[i], static_cast<int64_t>(v[i]));
            }
          }
        }
      }
      for (int i = 0; i < kDcgmCount; ++i) {
        if (p[i]) {
          *p[i]++ = '\n';
          dcgm_files_[i]->Commit(p[i]);
        }
      }
      if (faults) faults->EndRow(want_activity_ && gpus_ > 0 ? row_util / gpus_ : -1.0);
      // Node metrics (after the GPUs, whose cursors have advanced to t).
      const bool need_nodes = q[kCpu] || q[kMem] || q[kIbSend] || q[kIbRecv] || (want_ipmi_ && t % kIpmiStepS == 0);
      if (need_nodes) {
        for (int n = 0; n < nodes_; ++n) {
          const int dom = Dominant(n, t, node_jobs);
          NoiseStream& ns = node_noise_[n];
          float noise[4];
          normals_.Four(ns.Next(), noise);
          const float c = node_const_[n];
          float cpu, mem, ib = 0;
          if (dom >= 0) {
            const Job& job = jobs[dom];
            const float e = AdvanceJob(dom, k);
            cpu = node_run_[kCpu](job.activity + 0.4f * e + 0.5f * c + 0.3f * noise[0]);
            mem = node_run_[kMem](mem_level_[dom] + 0.3f * c + 0.2f * noise[1]);
            if (model_.has_ib && job.nodes > 1) ib = node_run_[kIbSend](job.activity + 0.5f * e + 0.4f * noise[2]);
          } else {
            cpu = node_idle_[kCpu](0.7f * c + 0.7f * noise[0]);
            mem = node_idle_[kMem](0.8f * c + 0.6f * noise[1]);
            if (model_.has_ib) ib = node_idle_[kIbSend](noise[2]);
          }
          node_cpu[n] = cpu;
          node_mem[n] = mem;
          node_dom_[n] = dom;
          node_ib_[n] = ib;
          node_ib_noise_[n] = noise[3];
        }
        for (int n : layout_.column_order) {
          const bool skip = node_missing[n];
          for (int i = 0; i < kNodeCount; ++i) {
            if (!q[i]) continue;
            *q[i]++ = ',';
            if (skip) continue;
            double value = i == kCpu ? node_cpu[n] : i == kMem ? node_mem[n] : node_ib_[n];
            // Receive mirrors send: collective communication is symmetric, up to noise.
            if (i == kIbRecv && value > 0) value *= 1.0 + 0.002 * node_ib_noise_[n];
            q[i] = WriteDecimal3(q[i], value);
          }
        }
        if (want_ipmi_ && t % kIpmiStepS == 0) WriteIpmiRows(t, node_cpu, node_mem, iso, ipmi_rhythm_sd);
      }
      for (int i = 0; i < kNodeCount; ++i) {
        if (q[i]) {
          *q[i]++ = '\n';
          node_files_[i]->Commit(q[i]);
        }
      }
    }
  }

  void WriteIpmiRows(int64_t t, const std::vector<float>& node_cpu, const std::vector<float>& node_mem,
                     std::string& iso, double rhythm_sd) {
    iso.clear();
    core::AppendIsoTime(iso, t * 1000, model_.offset_minutes);
    for (int n = 0; n < nodes_; ++n) {
      NoiseStream& ns = node_noise_[n];
      float noise[4];
      normals_.Four(ns.Next(), noise);
      const int dom = node_dom_[n];
      float sys;
      if (dom >= 0) {
        const Job& job = schedule_.jobs[dom];
        sys = ipmi_run_(job.activity + 0.4f * job_noise_[dom].e + 0.5f * node_const_[n]);
      } else {
        sys = ipmi_idle_(0.8f * node_const_[n] + 0.6f * noise[0]);
      }
      const char model = layout_.nodes[n].ipmi_model;
      OutputFile& f = *ipmi_files_[model == 'C' ? 1 : 0];
      const double cpu_power = 2 * (70 + 200 * std::min(1.0f, node_cpu[n])) + 6 * noise[1];
      const double mem_power = 40 + 100 * std::min(1.0f, node_mem[n]) + 3 * noise[2];
      const double fan_power = 120 + 0.06 * sys + 8 * noise[3];
      char* p = f.Reserve(128);
      iso.copy(p, iso.size());
      p += iso.size();
      *p++ = ',';
      p = WriteInt(p, std::llround(cpu_power));
      *p++ = ',';
      if (model != 'B') p = WriteInt(p, std::llround(mem_power));
      *p++ = ',';
      p = WriteInt(p, std::llround(fan_power));
      *p++ = ',';
      p = WriteInt(p, std::llround(sys));
      *p++ = '\n';
      f.Commit(p);
      ++ipmi_rows_[model == 'C' ? 1 : 0];
    }
    // CPU servers run the CPU jobs: their load follows the submission rhythm.
    const double local_hour = static_cast<double>(((t + 8 * 3600) % 86400 + 86400) % 86400) / 3600.0;
    const int64_t local_day = (t + 8 * 3600) / 86400;
    const double load = (ArrivalRhythm(local_hour, static_cast<int>(((local_day % 7) + 7 + 3) % 7)) - 1.0) / rhythm_sd;
    for (int s = 0; s < layout_.cpu_servers; ++s) {
      NoiseStream& ns = cpu_server_noise_[s];
      float noise[4];
      normals_.Four(ns.Next(), noise);
      const double z = 0.35 * cpu_server_const_[s] + 0.35 * std::clamp(load, -2.5, 2.5) + 0.87 * noise[0];
      const double sys = cpu_server_q_(static_cast<float>(NormalCdf(z)));
      OutputFile& f = *ipmi_files_[2];
      char* p = f.Reserve(128);
      iso.copy(p, iso.size());
      p += iso.size();
      *p++ = ',';
      p = WriteInt(p, std::llround(0.45 * sys + 4 * noise[1]));
      *p++ = ',';
      p = WriteInt(p, std::llround(0.16 * sys + 2 * noise[2]));
      *p++ = ',';
      p = WriteInt(p, std::llround(0.08 * sys + 2 * noise[3]));
      *p++ = ',';
      p = WriteInt(p, std::llround(sys));
      *p++ = '\n';
      f.Commit(p);
      ++ipmi_rows_[2];
    }
  }

 private:
  const ClusterModel& model_;
  const Schedule& schedule_;
  const ClusterLayout& layout_;
  const TelemetryRequest& request_;
  NormalTable normals_;
  int nodes_ = 0;
  int gpus_ = 0;
  int64_t steps_ = 0;
  bool want_dcgm_[kDcgmCount] = {};
  bool want_node_[kNodeCount] = {};
  bool want_ipmi_ = false;
  bool any_gpu_file_ = false;
  bool want_activity_ = false;
  bool want_fb_ = false;
  bool want_temp_ = false;

  std::vector<std::vector<Interval>> intervals_;
  std::vector<std::vector<XidEvent>> xids_;
  std::vector<GpuState> gpu_state_;
  std::vector<JobNoise> job_noise_;
  std::vector<float> fb_level_;
  std::vector<float> mem_level_;
  std::vector<float> node_const_;
  std::vector<NoiseStream> node_noise_;
  std::vector<double> gpu_weight_, node_weight_, ib_weight_;
  double idle_gpu_share_ = 1, idle_node_share_ = 1, no_ib_share_ = 1;

  ZTable run_[kDcgmCount];
  ZTable idle_[kDcgmCount];
  ZTable node_run_[kNodeCount];
  ZTable node_idle_[kNodeCount];
  ZTable temp_pos_, idle_temp_pos_;
  Band temp_band_;
  PTable temp_q_, mem_temp_q_, cpu_server_q_;
  ZTable ipmi_run_, ipmi_idle_;

  std::vector<int> node_dom_;
  std::vector<float> node_ib_, node_ib_noise_;
  std::vector<float> cpu_server_const_;
  std::vector<NoiseStream> cpu_server_noise_;

  std::unique_ptr<OutputFile> dcgm_files_[kDcgmCount];
  std::unique_ptr<OutputFile> node_files_[kNodeCount];
  std::unique_ptr<OutputFile> ipmi_files_[3];
  int64_t ipmi_rows_[3] = {};
};

class TelemetryActivityProbe final : public JobActivityProbe {
 public:
  TelemetryActivityProbe(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                         uint64_t seed)
      : request_(RequestFor(seed)), writer_(std::make_unique<TelemetryWriter>(model, schedule, layout, request_)),
        window_start_s_(schedule.window_start_s) {
    writer_->Prepare();
  }

  int64_t LongestBusyS(int32_t job, int64_t from_s, int64_t to_s, double min_sm, double smooth_s) const override {
    const int64_t k_from = std::max<int64_t>(0, (from_s - window_start_s_ + kStepS - 1) / kStepS);
    const int64_t k_to = std::min(writer_->steps(), (to_s - window_start_s_ + kStepS - 1) / kStepS);
    if (k_to <= k_from) return 0;
    // From the window's start, so the average has caught up by from_s as a detector's would have.
    const std::vector<float> sm = writer_->JobSm(job, 0, k_to);
    const double alpha = 1.0 - std::exp(-static_cast<double>(kStepS) / smooth_s);
    double smooth = 0;
    int64_t run = 0, longest = 0;
    for (int64_t k = 0; k < k_to; ++k) {
      smooth += alpha * (sm[static_cast<size_t>(k)] - smooth);
      if (k < k_from) continue;
      run = smooth >= min_sm ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    return longest * kStepS;
  }

 private:
  static TelemetryRequest RequestFor(uint64_t seed) {
    TelemetryRequest r;
    r.seed = seed;
    return r;
  }

  TelemetryRequest request_;  // the writer keeps a reference
  std::unique_ptr<TelemetryWriter> writer_;
  int64_t window_start_s_;
};

}  // namespace

std::unique_ptr<JobActivityProbe> MakeJobActivityProbe(const ClusterModel& model, const Schedule& schedule,
                                                       const ClusterLayout& layout, uint64_t seed) {
  return std::make_unique<TelemetryActivityProbe>(model, schedule, layout, seed);
}

core::Status WriteTelemetry(const ClusterModel& model, const Schedule& schedule, const ClusterLayout& layout,
                            const TelemetryRequest& request, std::vector<WrittenFile>& written) {
  auto writer = std::make_unique<TelemetryWriter>(model, schedule, layout, request);
  return writer->Run(written);
}

}  // namespace acmetrace::producers::synth
