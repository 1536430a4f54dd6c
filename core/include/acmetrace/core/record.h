// The records that flow between stages (design.md "Records"): typed in process, JSON on the wire.
#pragma once

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace acmetrace::core {

inline constexpr std::string_view kTopicJobs = "acme.jobs";
inline constexpr std::string_view kTopicUtil = "acme.util";
inline constexpr std::string_view kTopicPower = "acme.power";
inline constexpr std::string_view kTopicMetrics = "acme.metrics";
inline constexpr std::string_view kTopicAnomalies = "acme.anomalies";

/// A missing sample ("no sample" in the files, null in JSON).
inline constexpr double kNoSample = std::numeric_limits<double>::quiet_NaN();
inline bool IsSample(double value) { return !std::isnan(value); }

enum class JobEventKind { kSubmit, kStart, kEnd };
std::string_view JobEventKindName(JobEventKind kind);

/// One lifecycle event of a job, repeating the job's static fields. Value type.
struct JobEvent {
  std::string cluster;
  JobEventKind event = JobEventKind::kSubmit;
  int64_t ts_ms = 0;
  std::string job_id;
  std::string user;
  std::string type;
  int64_t node_num = 0;
  int64_t gpu_num = 0;
  int64_t cpu_num = 0;
  // Published columns, never recomputed; NaN where the file has none.
  double queue_s = kNoSample;     // on start and end
  std::string state;              // on end
  double duration_s = kNoSample;  // on end
  double gpu_time = kNoSample;    // on end
};

/// GPUs per node any stage accepts: a utilization column's GPU index and a record's GPU arrays
/// stay below it. The release's nodes have 8 GPUs and the largest single hosts sold today 16; 64
/// leaves room for those, while a hostile array cannot make every consumer's per-GPU state grow.
inline constexpr size_t kMaxGpusPerNode = 64;
/// Named values one record object may hold (GPU or host metrics of a util record, fields of a power
/// record, metrics of a window): a window has about 60, a util record at most the 30 files' metrics.
inline constexpr size_t kMaxValuesPerObject = 1024;

/// The version of the records this build writes and reads ("v" in every record; a record without
/// it is taken as this version). A record of another version is an input error, not read as this one.
inline constexpr int64_t kRecordVersion = 1;
/// Bytes a name in a record or an input file may hold: a cluster, node, GPU model, job id, user, job
/// type or state, anomaly kind or subject, metric or column name. The release's longest are under 40
/// (Kalos pod names such as "lingjun-pod9-0016-3", job ids of 16 characters); a bound keeps one hostile
/// name from being copied into every series, label and window that mentions it.
inline constexpr size_t kMaxNameBytes = 256;

/// One metric of every GPU of a node at one time; values[i] is GPU i (kNoSample = none).
struct GpuMetric {
  std::string_view name;  // interned: lives as long as the process (see InternName)
  std::vector<double> values;
};

/// One host metric of a node at one time.
struct HostMetric {
  std::string_view name;  // interned
  double value = kNoSample;
};

/// All metrics of one node at one sample time, merged across the metric files. Value type.
struct UtilSample {
  std::string cluster;
  std::string node;
  int64_t ts_ms = 0;
  std::vector<GpuMetric> gpu;
  std::vector<HostMetric> host;
};

/// One row of an IPMI power file. Value type.
struct PowerSample {
  std::string cluster;
  std::string model;  // GPU_A, GPU_B, GPU_C, CPU_D
  int64_t ts_ms = 0;
  std::vector<std::pair<std::string_view, double>> fields;  // interned names
};

/// One closed window of a cluster's metrics (acme.metrics). Value type.
struct MetricsWindow {
  std::string cluster;
  int64_t window_s = 60;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int64_t ts_ms = 0;  // = end_ms: the event time the window closed at
  // Metric name -> value, in a stable (sorted) order so equal input gives equal bytes.
  std::vector<std::pair<std::string, double>> metrics;
};

/// An anomaly flag opening or closing (acme.anomalies). Value type.
struct AnomalyEvent {
  std::string cluster;
  std::string kind;     // gpu_overheat, xid_error, telemetry_gap, gpu_straggler, util_drop, ...
  std::string subject;  // IP-gpu for GPU kinds, the node for node kinds, the cluster for cluster kinds
  bool open = true;     // "open" or "close"
  int64_t ts_ms = 0;
  double value = kNoSample;
  double threshold = kNoSample;
};

/// Any record of the feed: the replayed ones and the processors' outputs.
using Record = std::variant<JobEvent, UtilSample, PowerSample, MetricsWindow, AnomalyEvent>;

/// The topic of each kind of record, by its index in Record.
inline constexpr std::string_view kTopicOfKind[] = {kTopicJobs, kTopicUtil, kTopicPower, kTopicMetrics,
                                                    kTopicAnomalies};
static_assert(std::size(kTopicOfKind) == std::variant_size_v<Record>);

inline std::string_view TopicOf(const Record& record) { return kTopicOfKind[record.index()]; }
int64_t TimestampMsOf(const Record& record);
/// The Kafka/stdio key: {cluster}/{job_id}, {cluster}/{node}, {cluster}/{model}, {cluster},
/// {cluster}/{kind}/{subject}.
void AppendKey(std::string& out, const Record& record);

/// Returns a view of a copy of name that lives as long as the process. Thread-safe. For the
/// small, fixed vocabulary of metric and column names, so records carry names without allocating.
std::string_view InternName(std::string_view name);

}  // namespace acmetrace::core
