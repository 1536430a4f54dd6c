// StreamProcessor: watermark, lateness, per-cluster reorder buffers, window closing, snapshots.
#include "acmetrace/processors/stream_processor.h"

#include "acmetrace/processors/evidence_gate.h"

#include <pthread.h>
#include <signal.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/time.h"
#include "acmetrace/processors/state_codec.h"

namespace acmetrace::processors {
namespace {

constexpr std::string_view kSnapshotMagic = "acmetrace.process.state";
// 7: the state in named sections, each with its layout version and length (ClusterSections), then a
//    CRC-32 of every byte before it: a new piece of state is a new section, which older snapshots lack
//    (it starts at its default), not a gate on the snapshot's version.
// Versions 1-6, still read (LegacyClusterSnapshotFields), were one run of fields grown at its end:
// 2: detector state after the metrics. 1 (no detector state) still loads, with a warning.
// 3: the capacity seen in telemetry after the detectors. 4: then the partitions whose writer ended.
// 5: then the consumer group it was saved for, and a CRC-32 of every byte before it at the end.
// 6: the evidence gate's state (open flags, last samples) after the group.
constexpr uint64_t kSnapshotVersion = 7;
constexpr uint64_t kSnapshotVersionWithoutSections = 6;
constexpr uint64_t kSnapshotVersionWithoutEvidence = 5;
constexpr uint64_t kSnapshotVersionWithoutIdentity = 4;
constexpr uint64_t kSnapshotVersionWithoutWriterEnds = 3;
constexpr size_t kSnapshotChecksumBytes = 4;

uint32_t SnapshotChecksum(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (!bytes.empty()) {  // crc32 takes a uInt length
    const size_t n = std::min<size_t>(bytes.size(), 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}
constexpr uint64_t kSnapshotVersionWithoutCapacity = 2;
constexpr uint64_t kSnapshotVersionWithoutDetectors = 1;

int TopicRank(const core::Record& r) {
  // The replay's tie order: job events, then utilization, then power.
  if (std::holds_alternative<core::JobEvent>(r)) return 0;
  if (std::holds_alternative<core::UtilSample>(r)) return 1;
  if (std::holds_alternative<core::PowerSample>(r)) return 2;
  return 3;
}

const std::string& ClusterOf(const core::Record& r) {
  return std::visit([](const auto& v) -> const std::string& { return v.cluster; }, r);
}

int64_t FloorTo(int64_t t, int64_t step) {
  int64_t q = t / step;
  if (t % step != 0 && t < 0) --q;
  return q * step;
}

// Whether an end marker's comma-separated cluster list names cluster.
bool NamesCluster(std::string_view list, std::string_view cluster) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (list.substr(0, comma) == cluster) return true;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

// The part of a record's key after "cluster/": within one cluster's buffer, ordering by it is
// ordering by the key, without building the key.
std::string_view KeySuffix(const core::Record& r) {
  if (const auto* j = std::get_if<core::JobEvent>(&r)) return j->job_id;
  if (const auto* u = std::get_if<core::UtilSample>(&r)) return u->node;
  if (const auto* p = std::get_if<core::PowerSample>(&r)) return p->model;
  return {};
}

// ---- The snapshot's fields (state_codec.h): each described once, for Snapshot and Restore ----------

// A member's type as reached through the object (const when the object is): Member<decltype((c.m))>.
template <class T>
using Member = std::remove_reference_t<T>;

// The partitions a cluster has read from: name, next offset, highest event time. The names are the
// processor's; loading declares them. P: a processor, const on saving.
template <class P, class Cluster>
struct PartitionsRef {
  P& processor;
  const std::vector<std::string>& names;
  Cluster& c;
  void Write(StateWriter& out) const {
    out.U64(names.size());
    for (size_t p = 0; p < names.size(); ++p) out(names[p], c.next_offset[p], c.max_ts[p]);
  }
  void Read(StateReader& in) {
    const uint64_t n = in.Count(24);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      std::string name;
      int64_t next_offset = 0, max_ts = 0;
      in(name, next_offset, max_ts);
      const int p = in.ok() ? Declare(in, name) : -1;
      if (p < 0) return;
      c.next_offset[p] = next_offset;
      c.max_ts[p] = max_ts;
    }
  }
  // The index of partition name read from a snapshot, declared; -1 (in failed) if it is not this
  // input's: once the input has declared its partitions, a snapshot of another input (stdin's under
  // Kafka) would add one that never brings anything and hold the watermark back for good.
  int Declare(StateReader& in, const std::string& name) const {
    if (processor.partition_count() > 0 && processor.PartitionIndex(name) < 0) {
      in.Fail("partition " + name + " is not one of this input's (a snapshot of another input)");
      return -1;
    }
    return processor.DeclarePartition(name);
  }
};

// The partitions where the cluster's writer has ended (an end marker read since the cluster's last
// record there), by name: a later owner that resumes after those markers still knows the input ended.
// Another section of the snapshot over the same partitions (PartitionsRef's references).
template <class P, class Cluster>
struct WriterEndsRef {
  PartitionsRef<P, Cluster> partitions;
  void Write(StateWriter& out) const {
    uint64_t n = 0;
    for (const uint8_t ended : partitions.c.writer_ended) n += ended;
    out.U64(n);
    for (size_t p = 0; p < partitions.names.size(); ++p) {
      if (partitions.c.writer_ended[p] != 0) out.Str(partitions.names[p]);
    }
  }
  void Read(StateReader& in) {
    const uint64_t n = in.Count(8);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      const std::string name = in.Str();
      const int p = in.ok() ? partitions.Declare(in, name) : -1;
      if (p < 0) return;
      partitions.c.writer_ended[static_cast<size_t>(p)] = 1;
    }
  }
};

// A buffered record: its topic, then its JSON (the topic's schema, so the snapshot reads back
// whatever the in-memory form becomes).
template <class R>
struct RecordJsonRef {
  R& record;
  core::RecordParser* parser;  // loading only
  void Write(StateWriter& out) const {
    std::string json;
    core::AppendRecordJson(json, record);
    out.Str(core::TopicOf(record));
    out.Str(json);
  }
  void Read(StateReader& in) {
    const std::string topic = in.Str();
    const std::string json = in.Str();
    if (!in.ok()) return;
    if (core::Status s = parser->ParseValue(topic, json, record); !s.ok()) in.Fail("buffered record: " + s.message());
  }
};

// The records a cluster buffers for windows not yet closed, in window order, as one list. Buffer:
// the cluster's map from window start to records, const on saving.
template <class Buffer>
struct BufferRef {
  Buffer& buffer;
  int64_t base_window_ms;
  void Write(StateWriter& out) const {
    uint64_t n = 0;
    for (const auto& [_, v] : buffer) n += v.size();
    out.U64(n);
    for (const auto& [_, v] : buffer) {
      for (const auto& p : v) p.Fields(out, p, nullptr);
    }
  }
  void Read(StateReader& in) {
    using Pending = typename Buffer::mapped_type::value_type;
    core::RecordParser parser;
    const uint64_t n = in.Count(40);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      Pending p{};
      Pending::Fields(in, p, &parser);
      if (!in.ok()) return;
      buffer[FloorTo(p.eff_ts_ms, base_window_ms)].push_back(std::move(p));
    }
  }
};

// The cluster's metrics (ClusterMetrics::Save and Load).
template <class Metrics>
struct MetricsRef {
  Metrics& metrics;
  void Write(StateWriter& out) const { metrics.Save(out); }
  void Read(StateReader& in) {
    if (!metrics.Load(in)) in.Fail();
  }
};

// A detector's part is tagged with its kind, and with its state version when that is above 1
// ("util_drop@2"): version 1 is the tag the first layout was written with, so its bytes stay as they were.
std::string DetectorTag(std::string_view kind, uint32_t version) {
  std::string tag(kind);
  if (version != 1) tag += "@" + std::to_string(version);
  return tag;
}

// Each detector's part apart, by kind, as a length-prefixed string: a restart with a kind disabled,
// or newly enabled, still loads the others.
template <class Detectors>
struct DetectorPartsRef {
  Detectors& detectors;
  std::string_view cluster;
  void Write(StateWriter& out) const {
    out.U64(detectors.size());
    for (const auto& d : detectors) {
      StateWriter part;
      d->SaveState(cluster, part);
      out(DetectorTag(d->kind(), d->state_version()), part.bytes());
    }
  }
  void Read(StateReader& in) {
    const uint64_t n = in.Count(16);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      std::string tag, bytes;
      in(tag, bytes);
      if (!in.ok()) return;
      const size_t at = tag.find('@');
      const std::string_view kind = std::string_view(tag).substr(0, at);
      uint32_t version = 1;
      if (at != std::string::npos) {
        const std::string_view digits = std::string_view(tag).substr(at + 1);
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), version);
        if (ec != std::errc() || end != digits.data() + digits.size() || version == 0) {
          return in.Fail("detector state tag " + tag + " is malformed");
        }
      }
      // A kind disabled since the snapshot: its state is dropped. A kind enabled since: starts afresh.
      for (auto& d : detectors) {
        if (d->kind() != kind) continue;
        if (version > d->state_version()) {
          return in.Fail("detector " + std::string(kind) + ": state version " + std::to_string(version) +
                         " is newer than this build's " + std::to_string(d->state_version()));
        }
        StateReader part(bytes, version);
        d->LoadState(cluster, part);
        if (!part.ok() || !part.at_end()) {
          return in.Fail("detector " + std::string(kind) + ": truncated or malformed state");
        }
      }
    }
  }
};

// A cluster's state as the sections of a snapshot (version 7): visit(name, layout version, fields)
// for each, fields being a generic callable on a StateWriter or StateReader. Emitted: the end of the
// windows already written (on saving, what the owner will have written when it stops). A new piece of
// state is a new section here, with its default for snapshots without it (Restore); a section's
// layout changes by its version, read by its fields.
template <class Processor, class Cluster, class Emitted, class Group, class Visit>
void ClusterSections(Processor& processor, const std::vector<std::string>& partitions, Cluster& c,
                     Emitted& emitted_through, int64_t base_window_ms, Group& group, Visit visit) {
  visit("windows", 1, [&](auto& io) {
    io(PartitionsRef<Processor, Cluster>{processor, partitions, c}, c.watermark, c.closed_through, emitted_through,
       c.seq, BufferRef<Member<decltype((c.buffer))>>{c.buffer, base_window_ms},
       MetricsRef<Member<decltype((c.metrics))>>{c.metrics});
  });
  visit("detectors", 1, [&](auto& io) { io(DetectorPartsRef<Member<decltype((c.detectors))>>{c.detectors, c.name}); });
  visit("capacity", 1, [&](auto& io) { ClusterMetrics::CapacityFields(io, c.metrics); });
  visit("writer_ends", 1, [&](auto& io) { io(WriterEndsRef<Processor, Cluster>{{processor, partitions, c}}); });
  visit("group", 1, [&](auto& io) { io(group); });
  visit("evidence", 1, [&](auto& io) { io(c.evidence); });
}

// Versions 1-6 (read only): the same state as one run of fields after the header, grown at its end.
template <class Io, class Processor, class Cluster, class Emitted, class Group>
void LegacyClusterSnapshotFields(Io& io, Processor& processor, const std::vector<std::string>& partitions, Cluster& c,
                                 Emitted& emitted_through, int64_t base_window_ms, Group& group) {
  io(PartitionsRef<Processor, Cluster>{processor, partitions, c}, c.watermark, c.closed_through, emitted_through,
     c.seq, BufferRef<Member<decltype((c.buffer))>>{c.buffer, base_window_ms}, MetricsRef<Member<decltype((c.metrics))>>{c.metrics});
  // Version 1 ended there: no detector state.
  if (io.version() >= kSnapshotVersionWithoutCapacity) {
    io(DetectorPartsRef<Member<decltype((c.detectors))>>{c.detectors, c.name});
  }
  // Version 2 ended there: the GPUs seen in telemetry (the capacity) were learned again.
  if (io.version() >= kSnapshotVersionWithoutWriterEnds) ClusterMetrics::CapacityFields(io, c.metrics);
  // Version 3 ended there: a later owner learned of the input's end only from idleness.
  if (io.version() >= kSnapshotVersionWithoutIdentity) io(WriterEndsRef<Processor, Cluster>{{processor, partitions, c}});
  // Version 4 ended there: nothing said whose snapshot it was.
  if (io.version() >= kSnapshotVersionWithoutEvidence) io(group);
  // Version 5 ended there: flags whose evidence stopped before the snapshot were closed again.
  if (io.version() >= kSnapshotVersionWithoutSections) io(c.evidence);
}

}  // namespace

struct StreamProcessor::Pending {
  int64_t eff_ts_ms;
  int topic_rank;
  uint64_t seq;
  bool late;
  core::Record record;
  // As a snapshot holds it; the rank follows from the record. parser: for loading.
  template <class Io, class Self>
  static void Fields(Io& io, Self& p, core::RecordParser* parser) {
    io(p.eff_ts_ms, p.seq, p.late, RecordJsonRef<std::remove_reference_t<decltype((p.record))>>{p.record, parser});
    if constexpr (Io::kReading) p.topic_rank = TopicRank(p.record);
  }
  bool operator<(const Pending& o) const {
    if (eff_ts_ms != o.eff_ts_ms) return eff_ts_ms < o.eff_ts_ms;
    if (topic_rank != o.topic_rank) return topic_rank < o.topic_rank;
    const int c = KeySuffix(record).compare(KeySuffix(o.record));
    if (c != 0) return c < 0;
    return seq < o.seq;
  }
};

// A window record's place in processing order, its sort key taken out once (Pending::operator<'s,
// without a visit of the record per comparison).
struct StreamProcessor::OrderKey {
  int64_t eff_ts_ms;
  int topic_rank;
  uint32_t index;  // into the window's records
  std::string_view suffix;
  uint64_t seq;
  bool operator<(const OrderKey& o) const {
    if (eff_ts_ms != o.eff_ts_ms) return eff_ts_ms < o.eff_ts_ms;
    if (topic_rank != o.topic_rank) return topic_rank < o.topic_rank;
    if (const int c = suffix.compare(o.suffix); c != 0) return c < 0;
    return seq < o.seq;
  }
};

struct StreamProcessor::ClusterState {
  ClusterState(const std::string& name, const ProcessOptions& options) : name(name), metrics(name, options) {}
  std::string name;
  std::vector<int64_t> next_offset;  // per partition; -1 = nothing read yet
  std::vector<int64_t> max_ts;       // per partition: highest event time read (any cluster's record)
  std::vector<uint8_t> writer_ended;  // per partition: an end marker for this cluster since its last record there
  int64_t watermark = kNoTime;
  int64_t closed_through = kNoTime;   // every base window ending at or before this is closed
  int64_t emitted_through = kNoTime;  // windows ending at or before this were written by an earlier owner
  uint64_t seq = 0;
  std::map<int64_t, std::vector<Pending>> buffer;  // by base window start
  ClusterMetrics metrics;
  std::vector<std::unique_ptr<Detector>> detectors;
  EvidenceGate evidence;  // between the detectors and the output: flags end where their evidence did
};

// The worker thread: closed windows in a queue, applied in order. The caller thread keeps the
// buffers, watermarks and offsets; the worker alone touches metrics, detectors and the sink until
// Drain returns.
struct StreamProcessor::Worker {
  struct Job {
    ClusterState* cluster;
    int64_t start_ms;
    std::vector<Pending> records;
    TimeStep step = TimeStep::kWindow;
  };
  // Closed windows queued at most, and records in them (unless the queue is empty: one window may
  // be bigger): the caller waits beyond, so memory stays bounded. By windows alone, a week of Seren
  // at scale 1 (~1,500 records of ~1.7 kB a window) queued up to 160 MB whenever parsing ran ahead;
  // 8,192 records are ~14 MB and still several windows of work for the worker.
  static constexpr size_t kMaxJobs = 64;
  static constexpr size_t kMaxQueuedRecords = 8192;
  size_t queued_records = 0;

  std::mutex mu;
  std::condition_variable changed;
  std::deque<Job> jobs;
  // Applied records' storage by kind, and applied windows' emptied vectors: handed back to the
  // caller's thread (ReuseRecord, new windows) whole, so that thread does not move them one by one.
  SpareRecords recycled;
  std::vector<std::vector<Pending>> empty_windows;
  bool busy = false;
  bool stop = false;
  core::Status error = core::Status::Ok();
  std::thread thread;

  void Run(StreamProcessor& p) {
    std::unique_lock lock(mu);
    for (;;) {
      changed.wait(lock, [&] { return stop || !jobs.empty(); });
      if (jobs.empty()) return;  // stopping, and everything done
      Job job = std::move(jobs.front());
      jobs.pop_front();
      queued_records -= job.records.size();
      busy = true;
      const bool failed = !error.ok();
      lock.unlock();
      core::Status s = failed ? core::Status::Ok() : p.ApplyJob(*job.cluster, job.start_ms, job.records, job.step);
      lock.lock();
      if (!s.ok() && error.ok()) error = std::move(s);
      Recycle(job.records, recycled, empty_windows);
      busy = false;
      changed.notify_all();
    }
  }
};

StreamProcessor::StreamProcessor(ProcessOptions options, core::RecordSink& sink, DetectorFactory detectors)
    : options_(std::move(options)), sink_(sink), make_detectors_(std::move(detectors)) {
  if (options_.worker_thread) {
    worker_ = std::make_unique<Worker>();
    // The worker takes no signals (a thread inherits its creator's mask): SIGTERM and SIGINT go to
    // the thread the binary set up for them, even when the processor is made before it.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    worker_->thread = std::thread([this] { worker_->Run(*this); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
}

StreamProcessor::~StreamProcessor() {
  if (!worker_) return;
  {
    std::lock_guard lock(worker_->mu);
    worker_->stop = true;
  }
  worker_->changed.notify_all();
  worker_->thread.join();
}

int StreamProcessor::DeclarePartition(const std::string& name) {
  for (size_t i = 0; i < partition_names_.size(); ++i) {
    if (partition_names_[i] == name) return static_cast<int>(i);
  }
  partition_names_.push_back(name);
  partition_idle_.push_back(false);
  trust_.emplace_back();
  for (auto& [_, c] : clusters_) {
    c->next_offset.push_back(-1);
    c->max_ts.push_back(kNoTime);
    c->writer_ended.push_back(0);
  }
  return static_cast<int>(partition_names_.size() - 1);
}

void StreamProcessor::SetPartitionIdle(int partition, bool idle) {
  if (partition_idle_[partition] == idle) return;
  partition_idle_[partition] = idle;
  for (auto& [_, c] : clusters_) c->watermark = std::max(c->watermark, ComputeWatermark(*c));
  (void)CloseReadyWindows(false);
}

bool StreamProcessor::Owns(std::string_view cluster) const {
  return own_all_ || clusters_.find(cluster) != clusters_.end();
}

StreamProcessor::ClusterState& StreamProcessor::CreateCluster(const std::string& cluster) {
  auto state = std::make_unique<ClusterState>(cluster, options_);
  state->next_offset.assign(partition_names_.size(), -1);
  state->max_ts.assign(partition_names_.size(), kNoTime);
  state->writer_ended.assign(partition_names_.size(), 0);
  ++ownership_changes_;
  if (make_detectors_) state->detectors = make_detectors_();
  state->evidence.set_timeout_ms(options_.evidence_timeout_ms);
  ClusterState& ref = *state;
  clusters_.insert_or_assign(cluster, std::move(state));
  return ref;
}

void StreamProcessor::Own(const std::string& cluster) {
  if (clusters_.find(cluster) == clusters_.end()) CreateCluster(cluster);
}

core::Status StreamProcessor::Release(const std::string& cluster) {
  core::Status drained = Drain();  // the worker may still apply its windows
  if (auto it = clusters_.find(cluster); it != clusters_.end()) {
    for (PartitionTrust& t : trust_) {
      if (t.claim_cluster == it->second.get()) t.claim_cluster = nullptr;
    }
    clusters_.erase(it);
    ++ownership_changes_;
  }
  return drained;
}

std::vector<std::string> StreamProcessor::owned() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : clusters_) out.push_back(name);
  return out;
}

int64_t StreamProcessor::ResumeOffset(int partition) const {
  int64_t lowest = -2;
  for (const auto& [_, c] : clusters_) {
    const int64_t o = c->next_offset[partition];
    if (o < 0) return -1;
    lowest = lowest == -2 ? o : std::min(lowest, o);
  }
  return lowest == -2 ? -1 : lowest;
}

int64_t StreamProcessor::watermark_ms(const std::string& cluster) const {
  auto it = clusters_.find(cluster);
  return it == clusters_.end() ? kNoTime : it->second->watermark;
}

int64_t StreamProcessor::ComputeWatermark(const ClusterState& c) const {
  const int64_t lateness = options_.allowed_lateness_ms;
  int64_t lowest = std::numeric_limits<int64_t>::max();
  int64_t highest = kNoTime;
  bool any_active = false;
  for (size_t p = 0; p < c.max_ts.size(); ++p) {
    const int64_t wm = c.max_ts[p] == kNoTime ? kNoTime : c.max_ts[p] - lateness;
    highest = std::max(highest, wm);
    if (partition_idle_[p]) continue;
    any_active = true;
    lowest = std::min(lowest, wm);
  }
  // Every partition caught up: all that exists has been read, up to the highest time minus lateness.
  return any_active ? lowest : highest;
}

bool StreamProcessor::Observe(ClusterState& c, int partition, int64_t offset, int64_t ts_ms) {
  if (offset >= 0) c.next_offset[partition] = offset + 1;
  if (ts_ms == kNoTime || ts_ms <= c.max_ts[partition]) return false;
  c.max_ts[partition] = ts_ms;
  return true;
}

core::Status StreamProcessor::Skip(int partition, int64_t offset, int64_t ts_ms) {
  ++stats_.skipped;
  return Progress(partition, offset, ts_ms);
}

bool StreamProcessor::Trust(int partition, int64_t offset, int64_t ts_ms) {
  const int64_t lead = options_.max_partition_lead_ms;
  // A lone partition (stdin) has one writer and no markers: nobody else's progress to be ahead of.
  if (lead <= 0 || ts_ms == kNoTime || trust_.size() < 2) return true;
  PartitionTrust& t = trust_[static_cast<size_t>(partition)];
  if (t.claim_ts != kNoTime) {
    const PartitionTrust claim = t;
    t.claim_ts = kNoTime;
    t.claim_cluster = nullptr;
    if (ts_ms >= claim.claim_ts - options_.allowed_lateness_ms) {
      // Confirmed: the partition went on from there, as an honest writer after a quiet spell.
      t.trusted_ts = std::max(t.trusted_ts, claim.claim_ts);
      for (auto& [_, c] : clusters_) {
        if (Observe(*c, partition, -1, claim.claim_ts)) c->watermark = std::max(c->watermark, ComputeWatermark(*c));
      }
    } else {
      // Shown false: what came next there is earlier. Trusted, it would have made that late.
      ++stats_.untrusted;
      if (claim.claim_cluster != nullptr) {
        auto window = claim.claim_cluster->buffer.find(claim.claim_window);
        if (window != claim.claim_cluster->buffer.end()) {
          std::vector<Pending>& records = window->second;
          for (size_t i = 0; i < records.size(); ++i) {
            if (records[i].seq != claim.claim_seq) continue;
            records.erase(records.begin() + static_cast<std::ptrdiff_t>(i));
            --stats_.records;
            break;
          }
          if (records.empty()) claim.claim_cluster->buffer.erase(window);  // no window of its own
        }
      }
      if (report_untrusted_) {
        report_untrusted_(partition, claim.claim_offset,
                          "trace time " + core::FormatIsoTime(claim.claim_ts, 0) + " is more than " +
                              std::to_string(lead) + " ms (process.max_partition_lead_ms) ahead of its partition " +
                              "and what followed there is earlier (" + core::FormatIsoTime(ts_ms, 0) +
                              "): not trusted" + (claim.claim_cluster != nullptr ? ", record dropped" : ""));
      }
    }
  }
  int64_t reference = t.trusted_ts;
  if (reference == kNoTime) {  // the partition's first time: the others' are all there is to go by
    for (size_t p = 0; p < trust_.size(); ++p) {
      if (p != static_cast<size_t>(partition)) reference = std::max(reference, trust_[p].trusted_ts);
    }
  }
  if (reference == kNoTime || ts_ms <= reference || ts_ms - reference <= lead) {
    t.trusted_ts = std::max(t.trusted_ts, ts_ms);
    return true;
  }
  t.claim_ts = ts_ms;
  t.claim_offset = offset;
  return false;
}

core::Status StreamProcessor::Progress(int partition, int64_t offset, int64_t ts_ms) {
  partition_idle_[partition] = false;
  const bool trusted = Trust(partition, offset, ts_ms);
  for (auto& [_, c] : clusters_) {
    if (offset >= 0 && offset < c->next_offset[partition]) continue;
    if (Observe(*c, partition, offset, trusted ? ts_ms : kNoTime)) {
      c->watermark = std::max(c->watermark, ComputeWatermark(*c));
    }
  }
  return CloseReadyWindows(false);
}

core::Status StreamProcessor::EndMarker(int partition, int64_t offset, std::string_view clusters, int64_t ts_ms) {
  partition_idle_[partition] = false;
  (void)Trust(partition, offset, ts_ms);  // the writer's last time: settles a pending jump, moves nothing
  for (auto& [name, c] : clusters_) {
    if (offset >= 0 && offset < c->next_offset[partition]) continue;
    if (clusters.empty() || NamesCluster(clusters, name)) c->writer_ended[partition] = 1;
    (void)Observe(*c, partition, offset, kNoTime);
  }
  return CloseReadyWindows(false);
}

std::vector<int> StreamProcessor::EndedPartitions(const std::string& cluster) const {
  std::vector<int> out;
  auto it = clusters_.find(cluster);
  if (it == clusters_.end()) return out;
  for (size_t p = 0; p < it->second->writer_ended.size(); ++p) {
    if (it->second->writer_ended[p] != 0) out.push_back(static_cast<int>(p));
  }
  return out;
}

core::Status StreamProcessor::Process(int partition, int64_t offset, core::Record&& record) {
  partition_idle_[partition] = false;
  const int64_t ts = core::TimestampMsOf(record);
  const bool trusted = Trust(partition, offset, ts);
  ClusterState* target = nullptr;
  {
    const std::string& cluster = ClusterOf(record);
    auto it = clusters_.find(cluster);
    if (it != clusters_.end()) {
      target = it->second.get();
    } else if (own_all_) {
      target = &CreateCluster(cluster);
    }
  }
  bool processed = false;
  for (auto& [_, c] : clusters_) {
    if (offset >= 0 && offset < c->next_offset[partition]) continue;  // covered by its snapshot
    if (c.get() == target) {
      // Late: below this partition's watermark or below the cluster's. Clamped into the oldest
      // window still open, which depends only on this partition's order (or, with an idle
      // partition, on the watermark).
      int64_t eff = ts;
      if (c->max_ts[partition] != kNoTime) eff = std::max(eff, c->max_ts[partition] - options_.allowed_lateness_ms);
      if (c->watermark != kNoTime) eff = std::max(eff, c->watermark);
      if (c->closed_through != kNoTime) eff = std::max(eff, c->closed_through);
      const bool late = eff != ts;
      if (late) ++stats_.late;
      last_kind_ = record.index();
      Pending p{eff, TopicRank(record), c->seq++, late, std::move(record)};
      std::vector<Pending>& window = c->buffer[FloorTo(eff, options_.base_window_ms())];
      if (window.capacity() == 0) TakeEmptyWindow(window);
      if (!trusted) {  // dropped again if the partition's next item shows its time false
        PartitionTrust& t = trust_[static_cast<size_t>(partition)];
        t.claim_cluster = c.get();
        t.claim_window = FloorTo(eff, options_.base_window_ms());
        t.claim_seq = p.seq;
      }
      window.push_back(std::move(p));
      c->writer_ended[partition] = 0;
      processed = true;
    }
    if (Observe(*c, partition, offset, trusted ? ts : kNoTime)) {
      c->watermark = std::max(c->watermark, ComputeWatermark(*c));
    }
  }
  if (processed) {
    ++stats_.records;
  } else {
    ++stats_.skipped;
  }
  return CloseReadyWindows(false);
}

void StreamProcessor::ReuseRecord(core::Record& record) {
  std::vector<core::Record>& spare = spare_[last_kind_];
  if (spare.empty() && worker_) {
    std::lock_guard lock(worker_->mu);
    spare.swap(worker_->recycled[last_kind_]);
  }
  if (spare.empty()) return;
  record = std::move(spare.back());
  spare.pop_back();
}

core::Status StreamProcessor::Finish() {
  if (core::Status s = CloseReadyWindows(true); !s.ok()) return s;
  // Time has reached the latest record of each cluster: the detectors move there, and every flag
  // still open ends with its evidence (the input ended).
  for (auto& [_, c] : clusters_) {
    int64_t reached = c->closed_through;
    for (const int64_t ts : c->max_ts) reached = std::max(reached, ts == kNoTime ? kNoTime : ts + 1);
    if (reached == kNoTime) continue;
    std::vector<Pending> none;
    if (core::Status s = Schedule(*c, reached, none, TimeStep::kFinish); !s.ok()) return s;
  }
  return Drain();
}

core::Status StreamProcessor::CloseReadyWindows(bool finishing) {
  const int64_t base = options_.base_window_ms();
  for (;;) {
    ClusterState* next = nullptr;
    int64_t next_start = 0;
    for (auto& [_, c] : clusters_) {  // in cluster name order: ties go to the first
      if (c->buffer.empty()) continue;
      const int64_t start = c->buffer.begin()->first;
      const bool ready = finishing || (c->watermark != kNoTime && start + base <= c->watermark);
      if (ready && (next == nullptr || start < next_start)) {
        next = c.get();
        next_start = start;
      }
    }
    if (next == nullptr) break;
    if (core::Status s = CloseWindow(*next, next_start); !s.ok()) return s;
  }
  if (finishing) return core::Status::Ok();
  // Time moves on without records (a heartbeat, a progress marker, other clusters' records): the
  // detectors of each cluster move with the watermark through the windows that have no records, so
  // flags close by their own rule in trace time, not at the next record days later. No metrics
  // window is written for them: what windows exist depends on the records only.
  for (auto& [_, c] : clusters_) {
    if (c->watermark == kNoTime || c->closed_through == kNoTime) continue;
    const int64_t through = FloorTo(c->watermark, base);
    if (through <= c->closed_through) continue;
    if (!c->buffer.empty() && c->buffer.begin()->first < through) continue;  // not closed yet: a window first
    c->closed_through = through;
    std::vector<Pending> none;
    if (core::Status s = Schedule(*c, through, none, TimeStep::kTick); !s.ok()) return s;
  }
  return core::Status::Ok();
}

core::Status StreamProcessor::CloseWindow(ClusterState& c, int64_t start_ms) {
  const int64_t end_ms = start_ms + options_.base_window_ms();
  auto node = c.buffer.extract(c.buffer.begin());
  c.closed_through = std::max(c.closed_through, end_ms);
  return Schedule(c, start_ms, node.mapped(), TimeStep::kWindow);
}

core::Status StreamProcessor::Schedule(ClusterState& c, int64_t start_ms, std::vector<Pending>& records, TimeStep step) {
  if (!worker_) {
    core::Status s = ApplyJob(c, start_ms, records, step);
    Recycle(records, spare_, empty_windows_);
    return s;
  }
  std::unique_lock lock(worker_->mu);
  worker_->changed.wait(lock, [&] {
    return worker_->jobs.empty() ||
           (worker_->jobs.size() < Worker::kMaxJobs && worker_->queued_records < Worker::kMaxQueuedRecords);
  });
  if (!worker_->error.ok()) return worker_->error;
  worker_->queued_records += records.size();
  worker_->jobs.push_back(Worker::Job{&c, start_ms, std::move(records), step});
  worker_->changed.notify_all();
  return core::Status::Ok();
}

core::Status StreamProcessor::Drain() const {
  if (!worker_) return core::Status::Ok();
  std::unique_lock lock(worker_->mu);
  worker_->changed.wait(lock, [&] { return worker_->jobs.empty() && !worker_->busy; });
  return worker_->error;
}

ProcessStats StreamProcessor::stats() const {
  ProcessStats out = stats_;
  out.windows = windows_written_.load(std::memory_order_relaxed);
  out.anomalies = anomalies_written_.load(std::memory_order_relaxed);
  out.suppressed = suppressed_.load(std::memory_order_relaxed);
  return out;
}

core::Status StreamProcessor::ApplyJob(ClusterState& c, int64_t start_ms, std::vector<Pending>& records,
                                      TimeStep step) {
  if (step == TimeStep::kWindow) return ApplyWindow(c, start_ms, records);
  // A tick or the finish: start_ms is the time reached (exclusive).
  anomalies_.clear();
  for (auto& d : c.detectors) d->AdvanceTo(start_ms - 1, anomalies_);
  c.evidence.Filter(start_ms - 1, anomalies_);
  if (step == TimeStep::kFinish) c.evidence.Finish(anomalies_);
  return WriteAnomalies();
}

core::Status StreamProcessor::WriteAnomalies() {
  for (const core::AnomalyEvent& a : anomalies_) {
    if (core::Status s = sink_.Write(core::Record(a)); !s.ok()) return s;
    anomalies_written_.fetch_add(1, std::memory_order_relaxed);
  }
  return core::Status::Ok();
}

core::Status StreamProcessor::ApplyWindow(ClusterState& c, int64_t start_ms, std::vector<Pending>& records) {
  const int64_t end_ms = start_ms + options_.base_window_ms();
  // Sorted by index: records stay where they are.
  order_.clear();
  for (uint32_t i = 0; i < records.size(); ++i) {
    const Pending& p = records[i];
    order_.push_back(OrderKey{p.eff_ts_ms, p.topic_rank, i, KeySuffix(p.record), p.seq});
  }
  // From stdin a window's records arrive in that order already (the replay writes them so): checking
  // costs one comparison per record, sorting ~log2(n). The order is total (seq breaks ties), so it is
  // the same either way.
  if (!std::is_sorted(order_.begin(), order_.end())) std::sort(order_.begin(), order_.end());
  for (const OrderKey& key : order_) {
    Pending& p = records[key.index];
    c.metrics.Apply(p.record, start_ms, p.late);
    if (!p.late) {
      for (auto& d : c.detectors) d->Observe(p.record);
      c.evidence.Observe(p.record);
    }
  }
  anomalies_.clear();
  for (auto& d : c.detectors) d->AdvanceTo(end_ms - 1, anomalies_);
  c.evidence.Filter(end_ms - 1, anomalies_);
  if (core::Status s = WriteAnomalies(); !s.ok()) return s;
  windows_.clear();
  c.metrics.CloseWindow(start_ms, windows_);
  for (core::MetricsWindow& w : windows_) {
    if (c.emitted_through != kNoTime && w.end_ms <= c.emitted_through) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (core::Status s = sink_.Write(core::Record(std::move(w))); !s.ok()) return s;
    windows_written_.fetch_add(1, std::memory_order_relaxed);
  }
  return core::Status::Ok();
}

void StreamProcessor::Recycle(std::vector<Pending>& records, SpareRecords& spare,
                              std::vector<std::vector<Pending>>& empty_windows) {
  for (Pending& p : records) {
    std::vector<core::Record>& kind = spare[p.record.index()];
    if (kind.size() < kMaxSpareRecords) kind.push_back(std::move(p.record));
  }
  records.clear();
  if (empty_windows.size() < kMaxEmptyWindows) empty_windows.push_back(std::move(records));
}

void StreamProcessor::TakeEmptyWindow(std::vector<Pending>& window) {
  if (empty_windows_.empty() && worker_) {
    std::lock_guard lock(worker_->mu);
    empty_windows_.swap(worker_->empty_windows);
  }
  if (empty_windows_.empty()) return;
  window = std::move(empty_windows_.back());
  empty_windows_.pop_back();
}

core::Result<std::string> StreamProcessor::Snapshot(const std::string& cluster, bool final_flush_follows) const {
  // Every closed window applied: the state is consistent (and not saved if one of them failed).
  if (core::Status s = Drain(); !s.ok()) return s;
  auto it = clusters_.find(cluster);
  if (it == clusters_.end()) return std::string();
  const ClusterState& c = *it->second;
  int64_t emitted = std::max(c.emitted_through, c.closed_through);
  if (final_flush_follows && !c.buffer.empty()) {
    emitted = std::max(emitted, c.buffer.rbegin()->first + options_.base_window_ms());
  }
  StateWriter out;
  out.Str(kSnapshotMagic);
  out(kSnapshotVersion, c.name);
  std::vector<std::tuple<std::string_view, uint64_t, std::string>> sections;
  ClusterSections(*this, partition_names_, c, emitted, options_.base_window_ms(), snapshot_group_,
                  [&](std::string_view name, uint64_t version, const auto& fields) {
                    StateWriter section;
                    fields(section);
                    sections.emplace_back(name, version, section.Take());
                  });
  out.U64(sections.size());
  for (const auto& [name, version, bytes] : sections) {
    out.Str(name);
    out(version);
    out.Str(bytes);
  }
  std::string bytes = out.Take();
  const uint32_t checksum = SnapshotChecksum(bytes);
  char tail[kSnapshotChecksumBytes];
  std::memcpy(tail, &checksum, sizeof tail);
  bytes.append(tail, sizeof tail);
  return bytes;
}

int StreamProcessor::PartitionIndex(std::string_view name) const {
  for (size_t i = 0; i < partition_names_.size(); ++i) {
    if (partition_names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

core::Status StreamProcessor::Restore(std::string_view snapshot, std::string* warning, std::string_view expected_cluster) {
  StateReader header(snapshot);
  if (header.Str() != kSnapshotMagic) return core::Status::Error("not a processor state snapshot");
  const uint64_t version = header.U64();
  if (version != kSnapshotVersion && version != kSnapshotVersionWithoutSections &&
      version != kSnapshotVersionWithoutEvidence &&
      version != kSnapshotVersionWithoutIdentity &&
      version != kSnapshotVersionWithoutWriterEnds &&
      version != kSnapshotVersionWithoutCapacity &&
      version != kSnapshotVersionWithoutDetectors) {
    return core::Status::Error("state snapshot version " + std::to_string(version) + " is not " +
                               std::to_string(kSnapshotVersion));
  }
  const std::string cluster = header.Str();
  if (!header.ok() || cluster.empty()) return core::Status::Error("state snapshot: truncated header");
  if (version >= kSnapshotVersionWithoutEvidence) {
    // Checked before anything is read from it: a flipped bit in a count or a time must not load.
    if (snapshot.size() < kSnapshotChecksumBytes) return core::Status::Error("state snapshot: truncated");
    uint32_t stored = 0;
    std::memcpy(&stored, snapshot.data() + snapshot.size() - kSnapshotChecksumBytes, sizeof stored);
    snapshot.remove_suffix(kSnapshotChecksumBytes);
    if (SnapshotChecksum(snapshot) != stored) {
      return core::Status::Error("state snapshot: checksum mismatch (the file is damaged or was altered)");
    }
  }
  if (!expected_cluster.empty() && cluster != expected_cluster) {
    return core::Status::Error("state snapshot is of cluster " + cluster + ", not " + std::string(expected_cluster));
  }
  if (core::Status s = Release(cluster); !s.ok()) return s;
  ClusterState& c = CreateCluster(cluster);
  std::string group = snapshot_group_;  // an older snapshot names none: taken as this one's
  bool has_detectors = version != kSnapshotVersionWithoutDetectors;
  const size_t header_bytes = 8 + kSnapshotMagic.size() + 8 + 8 + cluster.size();
  if (version >= kSnapshotVersion) {
    StateReader body(snapshot.substr(header_bytes));
    // The sections, read in whole first: each once, of a name and version this build reads.
    struct Section {
      uint64_t version;
      std::string bytes;
    };
    std::map<std::string, Section, std::less<>> sections;
    const uint64_t count = body.Count(8 + 8 + 8);  // each: its name's length, version and length
    for (uint64_t i = 0; i < count && body.ok(); ++i) {
      std::string name = body.Str();
      const uint64_t section_version = body.U64();
      std::string bytes = body.Str();
      if (!body.ok()) break;
      if (!sections.emplace(name, Section{section_version, std::move(bytes)}).second) {
        (void)Release(cluster);  // drained just before restoring: the error below is the one to tell
        return core::Status::Error("state snapshot of " + cluster + ": section " + core::QuotedValue(name) + " twice");
      }
    }
    if (!body.ok() || !body.at_end()) {
      (void)Release(cluster);  // drained just before restoring: the error below is the one to tell
      return core::Status::Error("state snapshot of " + cluster + ": truncated or malformed sections");
    }
    std::string error;
    std::vector<std::string_view> known;
    ClusterSections(*this, partition_names_, c, c.emitted_through, options_.base_window_ms(), group,
                    [&](std::string_view name, uint64_t newest, const auto& fields) {
                      known.push_back(name);
                      auto it = sections.find(name);
                      if (!error.empty() || it == sections.end()) {
                        if (name == "detectors") has_detectors = false;
                        return;  // not in this snapshot: its default
                      }
                      if (it->second.version == 0 || it->second.version > newest) {
                        error = "section " + std::string(name) + " has layout " + std::to_string(it->second.version) +
                                ", this build reads 1 to " + std::to_string(newest);
                        return;
                      }
                      StateReader in(it->second.bytes, static_cast<uint32_t>(it->second.version));
                      fields(in);
                      if (!in.ok() || !in.at_end()) {
                        error = in.error().empty() ? "section " + std::string(name) + ": truncated or malformed" : in.error();
                      }
                    });
    if (error.empty() && sections.count("windows") == 0) error = "no windows section";
    for (const auto& [name, section] : sections) {
      if (error.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
        error = "section " + core::QuotedValue(name) + " is not one this build reads (a newer acmetrace wrote it?)";
      }
    }
    if (!error.empty()) {
      (void)Release(cluster);  // drained just before restoring: the error below is the one to tell
      return core::Status::Error("state snapshot of " + cluster + ": " + error);
    }
  } else {
    StateReader in(snapshot.substr(header_bytes), static_cast<uint32_t>(version));
    LegacyClusterSnapshotFields(in, *this, partition_names_, c, c.emitted_through, options_.base_window_ms(), group);
    if (!in.ok() || !in.at_end()) {
      (void)Release(cluster);  // drained just before restoring: the error below is the one to tell
      return core::Status::Error("state snapshot of " + cluster + ": " +
                                 (in.error().empty() ? std::string("truncated or malformed") : in.error()));
    }
  }
  if (group != snapshot_group_) {
    (void)Release(cluster);  // drained just before restoring: the error below is the one to tell
    return core::Status::Error("state snapshot of " + cluster + " is of consumer group " + core::QuotedValue(group) +
                               ", not " + core::QuotedValue(snapshot_group_));
  }
  if (!has_detectors && warning != nullptr && !c.detectors.empty()) {
    *warning = "state snapshot of " + cluster + " has version " + std::to_string(version) +
               " (no detector state): its detectors start afresh";
  }
  return core::Status::Ok();
}

}  // namespace acmetrace::processors
