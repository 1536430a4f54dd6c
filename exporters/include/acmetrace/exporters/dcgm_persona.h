// The dcgm-exporter persona: acme.util records as NVIDIA dcgm-exporter's DCGM_FI_* series (same
// names, types, units and labels), plus per-node host series, each GPU's latest sample; and what
// dcgm-exporter has that the release lacks, derived and documented as such (docs/metrics.md): the
// energy counter integrated from POWER_USAGE, and (opt-in) GR_ENGINE_ACTIVE from GPU_UTIL.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/exporters/export_config.h"
#include "acmetrace/exporters/series_store.h"

namespace acmetrace::exporters {

/// A stable dcgm-style UUID for a GPU: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx from a fixed hash
/// (FNV-1a 64, two seeds) of cluster, node and index — the same on every run and machine.
std::string GpuUuid(std::string_view cluster, std::string_view node, int index);

/// A synthetic PCI bus id as dcgm-exporter's pci_bus_id label writes it ("00000000:07:00.0"): GPUs
/// 0..7 get the bus numbers of a DGX A100's eight SXM4 slots, in index order; higher indices
/// continue deterministically. The release does not record bus ids: same index, same id on every node.
std::string PciBusId(int index);

/// Energy in mJ from power samples in W: trapezoids between consecutive samples of one GPU in
/// event time (W x ms = mJ); a gap longer than max_gap_ms (a GPU unobserved) adds nothing, and a
/// sample older than the last is ignored. Value type, not thread-safe.
class EnergyIntegrator {
 public:
  explicit EnergyIntegrator(int64_t max_gap_ms = 300'000) : max_gap_ms_(max_gap_ms) {}
  /// Takes a sample; returns the energy so far (0 at the first sample).
  double Add(int64_t ts_ms, double watts);
  double energy_mj() const { return energy_mj_; }

 private:
  int64_t max_gap_ms_;
  int64_t last_ms_ = 0;
  double last_watts_ = 0;
  bool started_ = false;
  double energy_mj_ = 0;
};

/// Turns acme.util records into persona series in a SeriesStore. Not thread-safe itself (one
/// consuming thread); the store is.
class DcgmPersona {
 public:
  DcgmPersona(const ExportOptions& options, SeriesStore& store);
  /// Sets every sampled GPU metric and host metric of the record; null samples keep the last value.
  void Apply(const core::UtilSample& sample);

  /// The DCGM family a release metric maps to (-1 if none), e.g. GPU_UTIL -> DCGM_FI_DEV_GPU_UTIL.
  FamilyId FamilyOf(std::string_view release_metric) const;

 private:
  struct GpuField {
    std::string_view release_name;
    FamilyId family = -1;
    double scale = 1;
  };
  struct HostField {
    std::string_view release_name;
    FamilyId family = -1;
    double scale = 1;
  };
  const ExportOptions& options_;
  SeriesStore& store_;
  std::vector<GpuField> gpu_fields_;
  std::vector<HostField> host_fields_;
  size_t gpu_util_field_ = SIZE_MAX;     // index in gpu_fields_ of GPU_UTIL, POWER_USAGE
  size_t power_field_ = SIZE_MAX;
  FamilyId energy_family_ = -1;          // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
  FamilyId gr_engine_family_ = -1;       // DCGM_FI_PROF_GR_ENGINE_ACTIVE (-1 unless opted in)
  size_t energy_row_ = 0;                // cache rows of the derived series: after the fields
  size_t gr_engine_row_ = 0;
  // Per node ("cluster\x1fnode"): each GPU's energy so far. Not in the node cache, which is
  // cleared when series expire: a GPU's counter must not restart because another node went.
  std::unordered_map<std::string, std::vector<EnergyIntegrator>> energy_;
  std::string key_;  // scratch
  std::vector<std::shared_ptr<const LabelSet>> labels_cache_;  // per GPU index, one record
  // Per node: the series of its GPUs (field x index) and host metrics, so a record updates ~100
  // series without ~100 hash lookups. Valid for one erase epoch of the store; cleared when it moves.
  struct NodeSeries {
    std::vector<SeriesStore::SeriesRef> gpu;   // row (field, then derived) * kMaxGpus + index
    std::vector<SeriesStore::SeriesRef> host;  // host field
  };
  static constexpr size_t kMaxCachedGpus = 16;
  static constexpr size_t kMaxCachedNodes = 16384;
  std::unordered_map<std::string, NodeSeries> node_cache_;
  uint64_t cache_epoch_ = 0;

  // Sets (creating if new) the series of family for GPU index of the record's node; row is its
  // row in the node's cache (a persona field, or a derived row). Needs the store's batch lock and
  // key_ holding the node's key (node_key_size bytes).
  void SetGpuSeries(const core::UtilSample& sample, NodeSeries& cached, size_t node_key_size, FamilyId family,
                    size_t row, size_t index, double value);
};

}  // namespace acmetrace::exporters
