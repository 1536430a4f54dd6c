// DcgmPersona: the release's 13 per-GPU DCGM metrics under dcgm-exporter's names and labels, and the
// energy counter (and opt-in GR_ENGINE_ACTIVE) derived from them.
#include "acmetrace/exporters/dcgm_persona.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>

namespace acmetrace::exporters {
namespace {

uint64_t Fnv1a64(std::string_view s, uint64_t h) {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// A table's row type, alike in shape with remote_write's queue metric families: other rows, other uses.
// release metric, DCGM field, help (dcgm-exporter's units), ratio (scaled when input is percent)
struct PersonaField {
  const char* release;
  const char* dcgm;
  const char* help;
  bool ratio;
};

constexpr PersonaField kGpuFields[] = {
    {"GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", false},
    {"MEM_COPY_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", false},
    {"GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", false},
    {"MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", false},
    {"POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", false},
    {"MEM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", false},
    {"FB_USED", "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", false},
    {"FB_FREE", "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", false},
    {"XID_ERRORS", "DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", false},
    {"SM_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "Ratio of cycles an SM has at least one warp assigned (0..1).", true},
    {"SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY", "Ratio of warps resident on an SM to its maximum (0..1).", true},
    {"PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active (0..1).",
     true},
    {"DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
     "Ratio of cycles the device memory interface is active sending or receiving data (0..1).", true},
};

// dcgm-exporter's help texts (etc/default-counters.csv) for the fields derived here.
constexpr const char* kEnergyName = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
constexpr const char* kEnergyHelp = "Total energy consumption since boot (in mJ).";
constexpr const char* kGrEngineName = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
constexpr const char* kGrEngineHelp = "Ratio of time the graphics engine is active.";

}  // namespace

std::string PciBusId(int index) {
  // A DGX A100's GPUs 0..7 sit on these buses (nvidia-smi -q on one lists them in index order).
  static constexpr int kDgxA100Buses[] = {0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD};
  const int bus = index >= 0 && index < 8 ? kDgxA100Buses[index] : (0xC0 + index) & 0xFF;
  char buf[24];
  std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", static_cast<unsigned>(bus));
  return buf;
}

double EnergyIntegrator::Add(int64_t ts_ms, double watts) {
  if (!started_) {
    started_ = true;
  } else if (ts_ms < last_ms_) {
    return energy_mj_;  // out of order: the interval it belongs to is already counted
  } else if (ts_ms - last_ms_ <= max_gap_ms_) {
    energy_mj_ += 0.5 * (last_watts_ + watts) * static_cast<double>(ts_ms - last_ms_);  // W x ms = mJ
  }
  last_ms_ = ts_ms;
  last_watts_ = watts;
  return energy_mj_;
}

std::string GpuUuid(std::string_view cluster, std::string_view node, int index) {
  std::string id(cluster);
  id += '/';
  id += node;
  id += '/';
  id += std::to_string(index);
  const uint64_t a = Fnv1a64(id, 14695981039346656037ull);
  const uint64_t b = Fnv1a64(id, a ^ 0x9e3779b97f4a7c15ull);
  char buf[48];
  std::snprintf(buf, sizeof buf, "GPU-%08" PRIx32 "-%04" PRIx32 "-%04" PRIx32 "-%04" PRIx32 "-%012" PRIx64,
                static_cast<uint32_t>(a >> 32), static_cast<uint32_t>((a >> 16) & 0xffff),
                static_cast<uint32_t>(a & 0xffff), static_cast<uint32_t>(b >> 48), static_cast<uint64_t>(b & 0xffffffffffffull));
  return buf;
}

DcgmPersona::DcgmPersona(const ExportOptions& options, SeriesStore& store) : options_(options), store_(store) {
  // dcgm-exporter's label order, then ours.
  const std::vector<std::string> gpu_labels = {"gpu",       "UUID", "pci_bus_id", "device", "modelName",
                                               options.hostname_label, "DCGM_FI_DRIVER_VERSION", "cluster"};
  for (const PersonaField& f : kGpuFields) {
    const FamilyId id = store_.AddFamily(FamilySpec{f.dcgm, f.help, SeriesType::kGauge, gpu_labels, Expiry::kSubject,
                                                    /*per_target=*/true});
    if (std::string_view(f.release) == "GPU_UTIL") gpu_util_field_ = gpu_fields_.size();
    if (std::string_view(f.release) == "POWER_USAGE") power_field_ = gpu_fields_.size();
    gpu_fields_.push_back(GpuField{core::InternName(f.release), id, f.ratio && options.input_percent ? 0.01 : 1.0});
  }
  // A counter as dcgm-exporter types it (without the _total suffix: its name is DCGM's).
  energy_family_ = store_.AddFamily(FamilySpec{kEnergyName, kEnergyHelp, SeriesType::kCounter, gpu_labels,
                                               Expiry::kSubject, /*per_target=*/true});
  energy_row_ = gpu_fields_.size();
  gr_engine_row_ = energy_row_ + 1;
  if (options.gr_engine_active) {
    gr_engine_family_ = store_.AddFamily(FamilySpec{kGrEngineName, kGrEngineHelp, SeriesType::kGauge, gpu_labels,
                                                    Expiry::kSubject, /*per_target=*/true});
  }
  const std::vector<std::string> host_labels = {options.hostname_label, "cluster"};
  auto host = [&](const char* release, const char* name, const char* help, double scale) {
    const FamilyId id =
        store_.AddFamily(FamilySpec{name, help, SeriesType::kGauge, host_labels, Expiry::kSubject, /*per_target=*/true});
    host_fields_.push_back(HostField{core::InternName(release), id, scale});
  };
  const double ratio = options.input_percent ? 0.01 : 1.0;
  host("NODE_CPU_UTILIZATION", "acmetrace_node_cpu_util_ratio", "node CPU utilization (0..1), NODE_CPU_UTILIZATION",
       ratio);
  host("NODE_MEMORY_UTILIZATION", "acmetrace_node_memory_util_ratio",
       "node memory utilization (0..1), NODE_MEMORY_UTILIZATION", ratio);
  host("NODE_IB_SEND", "acmetrace_node_ib_send_bytes_per_second", "InfiniBand bytes sent per second, NODE_IB_SEND",
       options.ib_bytes_per_raw_unit);
  host("NODE_IB_RECEIVE", "acmetrace_node_ib_receive_bytes_per_second",
       "InfiniBand bytes received per second, NODE_IB_RECEIVE", options.ib_bytes_per_raw_unit);
}

FamilyId DcgmPersona::FamilyOf(std::string_view release_metric) const {
  for (const GpuField& f : gpu_fields_) {
    if (f.release_name == release_metric) return f.family;
  }
  return -1;
}

void DcgmPersona::Apply(const core::UtilSample& sample) {
  // The labels of a GPU's new series are built once per record and shared by its families.
  labels_cache_.clear();
  // Keys: "cluster\x1fnode\x1fINDEX" (GPU) and "cluster\x1fnode" (host), built from one prefix.
  key_.assign(sample.cluster);
  key_ += '\x1f';
  key_ += sample.node;
  const size_t node_key_size = key_.size();
  std::unique_lock<std::mutex> lock = store_.LockForBatch();
  // Bounded: nodes whose series the cap dropped still get an entry, so a stream of ever new node
  // names must not grow the cache without end.
  if (store_.target_erase_epoch_locked() != cache_epoch_ || node_cache_.size() >= kMaxCachedNodes) {
    node_cache_.clear();  // some series went: cached pointers may dangle (and gone nodes drop out)
    cache_epoch_ = store_.target_erase_epoch_locked();
  }
  NodeSeries& cached = node_cache_[key_];
  if (cached.gpu.empty()) {
    cached.gpu.assign((gr_engine_row_ + 1) * kMaxCachedGpus, nullptr);
    cached.host.assign(host_fields_.size(), nullptr);
  }
  std::vector<EnergyIntegrator>* energy = nullptr;
  for (const core::GpuMetric& metric : sample.gpu) {
    size_t field_index = gpu_fields_.size();
    for (size_t f = 0; f < gpu_fields_.size(); ++f) {
      // Names are interned: equal names have equal pointers; compare text only if none matched.
      if (gpu_fields_[f].release_name.data() == metric.name.data()) {
        field_index = f;
        break;
      }
    }
    if (field_index == gpu_fields_.size()) {
      for (size_t f = 0; f < gpu_fields_.size(); ++f) {
        if (gpu_fields_[f].release_name == metric.name) field_index = f;
      }
    }
    if (field_index == gpu_fields_.size()) continue;
    const GpuField& field = gpu_fields_[field_index];
    for (size_t i = 0; i < metric.values.size(); ++i) {
      const double v = metric.values[i];
      if (!core::IsSample(v)) continue;
      SetGpuSeries(sample, cached, node_key_size, field.family, field_index, i, v * field.scale);
      if (field_index == power_field_) {
        if (energy == nullptr) {
          key_.resize(node_key_size);
          energy = &energy_[key_];
        }
        if (energy->size() <= i) energy->resize(i + 1);
        SetGpuSeries(sample, cached, node_key_size, energy_family_, energy_row_, i, (*energy)[i].Add(sample.ts_ms, v));
      } else if (field_index == gpu_util_field_ && gr_engine_family_ >= 0) {
        // GPU_UTIL is percent in the release (and in acme.util at any process.units): a ratio here.
        SetGpuSeries(sample, cached, node_key_size, gr_engine_family_, gr_engine_row_, i, v / 100.0);
      }
    }
  }
  key_.resize(node_key_size);
  for (const core::HostMetric& metric : sample.host) {
    if (!core::IsSample(metric.value)) continue;
    for (size_t h = 0; h < host_fields_.size(); ++h) {
      const HostField& f = host_fields_[h];
      if (f.release_name != metric.name) continue;
      if (cached.host[h] == nullptr) {
        auto make = [&] {
          return MakeLabelSet(LabelVec{{options_.hostname_label, sample.node}, {"cluster", sample.cluster}});
        };
        cached.host[h] = store_.FindOrCreateLocked(f.family, key_, make, sample.cluster, sample.node);
      }
      if (cached.host[h] != nullptr) store_.SetLocked(cached.host[h], metric.value * f.scale, sample.ts_ms);
      break;
    }
  }
}

void DcgmPersona::SetGpuSeries(const core::UtilSample& sample, NodeSeries& cached, size_t node_key_size,
                               FamilyId family, size_t row, size_t index, double value) {
  SeriesStore::SeriesRef* slot = index < kMaxCachedGpus ? &cached.gpu[row * kMaxCachedGpus + index] : nullptr;
  if (slot != nullptr && *slot != nullptr) {
    store_.SetLocked(*slot, value, sample.ts_ms);
    return;
  }
  key_.resize(node_key_size);
  key_ += '\x1f';
  char digits[16];
  key_.append(digits, std::to_chars(digits, digits + sizeof digits, index).ptr);
  const int gpu = static_cast<int>(index);
  auto make = [&]() -> std::shared_ptr<const LabelSet> {
    if (labels_cache_.size() <= index) labels_cache_.resize(index + 1);
    if (labels_cache_[index]) return labels_cache_[index];
    labels_cache_[index] = MakeLabelSet(LabelVec{
        {"gpu", std::to_string(gpu)},
        {"UUID", GpuUuid(sample.cluster, sample.node, gpu)},
        {"pci_bus_id", PciBusId(gpu)},
        {"device", "nvidia" + std::to_string(gpu)},
        {"modelName", options_.model_name},
        {options_.hostname_label, sample.node},
        {"DCGM_FI_DRIVER_VERSION", options_.driver_version},
        {"cluster", sample.cluster},
    });
    return labels_cache_[index];
  };
  SeriesStore::SeriesRef ref = store_.FindOrCreateLocked(family, key_, make, sample.cluster, sample.node);
  if (ref == nullptr) return;  // the cap: counted as a drop
  store_.SetLocked(ref, value, sample.ts_ms);
  if (slot != nullptr) *slot = ref;
}

}  // namespace acmetrace::exporters
