// The dcgm-exporter persona: acme.util records as NVIDIA dcgm-exporter's DCGM_FI_* series (same
// names, types, units and labels), plus per-node host series, each GPU's latest sample.
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
  std::string key_;  // scratch
  std::vector<std::shared_ptr<const LabelSet>> labels_cache_;  // per GPU index, one record
  // Per node: the series of its GPUs (field x index) and host metrics, so a record updates ~100
  // series without ~100 hash lookups. Valid for one erase epoch of the store; cleared when it moves.
  struct NodeSeries {
    std::vector<SeriesStore::SeriesRef> gpu;   // field * kMaxGpus + index
    std::vector<SeriesStore::SeriesRef> host;  // host field
  };
  static constexpr size_t kMaxCachedGpus = 16;
  static constexpr size_t kMaxCachedNodes = 16384;
  std::unordered_map<std::string, NodeSeries> node_cache_;
  uint64_t cache_epoch_ = 0;
};

}  // namespace acmetrace::exporters
