// RunProcessStage and RunExportStage: one read loop each over any RecordInput.
#include "acmetrace/pipeline/stages.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <variant>

#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/time.h"

namespace acmetrace::pipeline {
namespace {

using Kind = core::InputItem::Kind;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsInputTopic(std::string_view topic) {
  return topic == core::kTopicJobs || topic == core::kTopicUtil || topic == core::kTopicPower;
}

// When an input has ended. Each writer puts an end marker naming the clusters it wrote into every
// partition after all its records, and each cluster has one writer at a time (the replay writes
// them all; each process instance its own), so a partition is done once, for every cluster seen in
// the input, an end marker naming it has been read there since that cluster's last record there.
// A partition may carry several writers: one writer's marker says nothing of another's records
// still to come. A marker without names (a queue, a file) ends its partition for every cluster.
// Quiet is not ended: a writer with markers may be paused or between sparse records, so only its
// end marker ends its partition. A partition that never carried a marker (a writer without
// markers) counts as done, with until_end, once it has been idle for unmarked_end_after_ms.
class InputEnd {
 public:
  InputEnd(const std::vector<core::InputPartition>& partitions, int64_t unmarked_end_after_ms)
      : parts_(partitions.size()), unmarked_end_after_ms_(unmarked_end_after_ms) {}

  void OnRecord(int p, std::string_view cluster) {
    Part& part = parts_[static_cast<size_t>(p)];
    part.idle_since_ms = kNotIdle;
    part.ended_all = false;
    part.paused = false;
    if (cluster.empty()) return;
    if (seen_.find(cluster) == seen_.end()) seen_.emplace(cluster);
    if (auto it = part.ended.find(cluster); it != part.ended.end()) part.ended.erase(it);
  }
  // What an item other than a record says of its partition's end (both runners call it on every
  // item; a record's cluster is known once it is parsed: OnRecord).
  void Observe(const core::InputItem& item, int64_t now_ms) {
    switch (item.kind) {
      case Kind::kProgress:
        OnMarker(item.partition);
        parts_[static_cast<size_t>(item.partition)].paused = item.paused;
        break;
      case Kind::kCaughtUp:
        parts_[static_cast<size_t>(item.partition)].idle_since_ms = kNotIdle;
        break;
      case Kind::kIdle: {
        Part& part = parts_[static_cast<size_t>(item.partition)];
        if (part.idle_since_ms == kNotIdle) part.idle_since_ms = now_ms;
        break;
      }
      case Kind::kEnded:
        OnEnded(item.partition, item.clusters);
        break;
      default:
        break;
    }
  }
  // A progress marker: a writer with markers, alive (and writing again after an end without names).
  void OnMarker(int p) {
    Part& part = parts_[static_cast<size_t>(p)];
    part.idle_since_ms = kNotIdle;
    part.ended_all = false;
    part.has_markers = true;
  }
  void OnEnded(int p, std::string_view clusters) {
    Part& part = parts_[static_cast<size_t>(p)];
    part.idle_since_ms = kNotIdle;
    part.paused = false;
    part.marked = true;
    part.has_markers = true;
    if (clusters.empty()) part.ended_all = true;
    while (!clusters.empty()) {
      const size_t comma = clusters.find(',');
      part.ended.emplace(clusters.substr(0, comma));
      clusters = comma == std::string_view::npos ? std::string_view() : clusters.substr(comma + 1);
    }
  }
  // Its newest item is its writer's word that it is paused there (a `progress:paused` marker): the
  // partition stays where the pause left it, holding the watermark back, however long it is quiet.
  // Idleness is for writers that say nothing; released, a paused partition's first records after the
  // resume would be late whenever another partition's came through first (docs/kafka.md, "Idleness").
  bool Paused(int p) const { return parts_[static_cast<size_t>(p)].paused; }
  // until_end: a partition without markers idle long enough counts as done.
  bool Ended(bool until_end, int64_t now_ms) const {
    if (parts_.empty()) return until_end;
    for (const Part& part : parts_) {
      if (part.ended_all) continue;
      if (until_end && !part.has_markers && part.idle_since_ms != kNotIdle &&
          now_ms - part.idle_since_ms >= unmarked_end_after_ms_) {
        continue;
      }
      if (!part.marked) return false;
      for (const std::string& cluster : seen_) {
        if (part.ended.find(cluster) == part.ended.end()) return false;
      }
    }
    return true;
  }

 private:
  static constexpr int64_t kNotIdle = INT64_MIN;
  struct Part {
    std::set<std::string, std::less<>> ended;  // clusters whose writer ended here since their last record
    bool ended_all = false;                     // a marker without names
    bool marked = false;                        // any end marker read
    bool has_markers = false;                   // any stream marker read: only an end marker ends it
    bool paused = false;                        // its newest item is a paused progress marker
    int64_t idle_since_ms = kNotIdle;           // when the input said it went idle
  };
  std::vector<Part> parts_;
  std::set<std::string, std::less<>> seen_;
  int64_t unmarked_end_after_ms_;
};

// Turns an item into a record: a parsed one as it is, a framed one parsed into scratch. A record
// that cannot be read is reported by its place (stdin:LINE, topic[partition]:OFFSET) and nullptr
// returned.
class ItemReader {
 public:
  ItemReader(const core::RecordInput& input, core::InputErrors& errors) : input_(input), errors_(errors) {}

  core::Record* Read(const core::InputItem& item) {
    if (item.kind == Kind::kRecord) return item.record;
    if (item.kind == Kind::kUnreadable) {
      Report(item, item.error);
      return nullptr;
    }
    const core::Status parsed = item.topic.empty() && !item.line.empty()
                                    ? parser_.ParseFramedLine(item.line, scratch_)
                                    : parser_.ParseValue(item.topic, item.value, scratch_);
    if (!parsed.ok()) {
      Report(item, parsed.message());
      return nullptr;
    }
    return &scratch_;
  }
  core::Record& scratch() { return scratch_; }

 private:
  void Report(const core::InputItem& item, std::string_view message) {
    const core::InputPartition& p = input_.partitions()[static_cast<size_t>(item.partition)];
    errors_.Report(item.cluster, "record", p.where, item.line_no >= 0 ? item.line_no : item.offset, "",
                   std::string(message));
  }
  const core::RecordInput& input_;
  core::InputErrors& errors_;
  core::RecordParser parser_;
  core::Record scratch_;
};

std::string_view ClusterOfRecord(const core::Record& record) {
  return std::visit([](const auto& r) -> std::string_view { return r.cluster; }, record);
}

// Calls options.on_progress about every interval.
class ProgressTicker {
 public:
  explicit ProgressTicker(const StageOptions& options)
      : options_(options), next_ms_(options.on_progress ? SteadyMs() + options.progress_interval_ms : INT64_MAX) {}
  bool Due(int64_t now) {
    if (now < next_ms_ || options_.progress_interval_ms <= 0) return false;
    next_ms_ = now + options_.progress_interval_ms;
    return true;
  }

 private:
  const StageOptions& options_;
  int64_t next_ms_;
};

}  // namespace

core::Status OwnAllClusters::Start(processors::StreamProcessor& processor, core::RecordInput&) {
  processor.SetOwnAll(true);
  return core::Status::Ok();
}

core::Status RunProcessStage(core::RecordInput& input, processors::StreamProcessor& processor, core::RecordSink& sink,
                             core::InputErrors& errors, ClusterOwnership& ownership, const StageOptions& options,
                             const std::atomic<bool>& stop) {
  const std::vector<core::InputPartition>& partitions = input.partitions();
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (processor.DeclarePartition(partitions[i].name) != static_cast<int>(i)) {
      return core::Status::Error("internal: partition " + partitions[i].name + " declared twice");
    }
  }
  if (core::Status s = ownership.Start(processor, input); !s.ok()) return s;
  // A time that a partition's next item shows false (process.max_partition_lead_ms) is an input error.
  processor.SetUntrustedReporter([&errors, &partitions](int p, int64_t offset, const std::string& reason) {
    errors.Report("", "record", partitions[static_cast<size_t>(p)].where, offset, "", reason);
  });
  InputEnd end(partitions, options.unmarked_end_after_ms);
  ItemReader reader(input, errors);
  ProgressTicker ticker(options);
  int64_t items = 0;
  bool writer_paused = false;
  uint64_t ownership_changes = 0;  // so clusters owned from the start are looked at too
  bool finished = false;  // every window closed at the input's end
  // Closes every window and ends the output stream, once. The windows are written even when the
  // snapshot before them cannot be saved (a read-only state directory, a full disk): the save's
  // error is the stage's, but the output is not lost with it.
  auto finish = [&]() -> core::Status {
    finished = true;
    const core::Status saved = ownership.Checkpoint(SteadyMs(), ClusterOwnership::Save::kBeforeFinishing);
    if (core::Status s = processor.Finish(); !s.ok()) return s;
    if (core::Status s = sink.End(processor.owned()); !s.ok()) return s;
    return saved;
  };
  core::Status status = core::Status::Ok();
  while (status.ok() && !stop.load(std::memory_order_relaxed)) {
    if (errors.must_stop()) {
      status = core::Status::Error("stopping at the first input error (strict)");
      break;
    }
    const int64_t now = SteadyMs();
    core::Result<bool> ready = ownership.Poll(now);
    if (!ready.ok()) {
      status = ready.status();
      break;
    }
    if (processor.ownership_changes() != ownership_changes) {
      // A cluster taken over from a snapshot may have been read past its writer's end markers by
      // its earlier owner: the input has ended for it where the snapshot says so.
      ownership_changes = processor.ownership_changes();
      for (const std::string& cluster : processor.owned()) {
        for (const int p : processor.EndedPartitions(cluster)) end.OnEnded(p, cluster);
      }
    }
    if (!finished && end.Ended(options.until_end, now)) {
      status = finish();
      if (!status.ok() || options.until_end) break;
    }
    if (core::Status s = ownership.Checkpoint(now, ClusterOwnership::Save::kIfDue); !s.ok()) {
      status = s;
      break;
    }
    if (ticker.Due(now)) {
      StageProgress progress;
      progress.items = items;
      progress.writer_paused = writer_paused;
      for (const std::string& cluster : processor.owned()) {
        const int64_t wm = processor.watermark_ms(cluster);
        progress.watermarks.push_back(cluster + "=" +
                                      (wm == processors::kNoTime ? std::string("none") : core::FormatIsoTime(wm, 0)));
      }
      options.on_progress(progress);
    }
    if (!ready.value()) continue;
    core::Result<core::InputItem> next = input.Next(100);
    if (!next.ok()) {
      status = next.status();
      break;
    }
    const core::InputItem& item = next.value();
    const int p = item.partition;
    end.Observe(item, now);
    switch (item.kind) {
      case Kind::kNothing:
      case Kind::kCaughtUp:
        continue;
      case Kind::kIdle:
        if (!end.Paused(p)) processor.SetPartitionIdle(p, true);
        continue;
      case Kind::kEnded:
        status = processor.EndMarker(p, item.offset, item.clusters,
                                     item.ts_ms == core::InputItem::kNoTs ? processors::kNoTime : item.ts_ms);
        processor.SetPartitionIdle(p, true);  // its writer is done: it holds no watermark back
        ++items;
        continue;
      case Kind::kProgress:
        writer_paused = item.paused;
        status = processor.Progress(p, item.offset, item.ts_ms);
        ++items;
        continue;
      case Kind::kRecord:
      case Kind::kFramed:
      case Kind::kUnreadable:
        break;
    }
    ++items;
    // A record of a cluster owned elsewhere is not parsed: its time moves the watermark only.
    std::string_view cluster = item.kind == Kind::kFramed ? item.cluster
                               : item.kind == Kind::kRecord ? ClusterOfRecord(*item.record)
                                                            : std::string_view();
    if (!cluster.empty() && !processor.Owns(cluster)) {
      if (core::Status s = ownership.Consider(cluster); !s.ok()) {
        status = s;
        break;
      }
    }
    if (!cluster.empty() && !processor.Owns(cluster)) {
      end.OnRecord(p, cluster);
      status = processor.Skip(p, item.offset, item.ts_ms == core::InputItem::kNoTs ? processors::kNoTime : item.ts_ms);
      continue;
    }
    core::Record* record = reader.Read(item);
    if (record == nullptr) {
      end.OnRecord(p, {});
      status = processor.Skip(p, item.offset, processors::kNoTime);
      continue;
    }
    end.OnRecord(p, ClusterOfRecord(*record));
    if (!IsInputTopic(core::TopicOf(*record))) {
      status = processor.Skip(p, item.offset, processors::kNoTime);
      continue;
    }
    status = processor.Process(p, item.offset, std::move(*record));
    processor.ReuseRecord(*record);
  }
  if (status.ok() && !finished && !stop.load() && options.until_end) status = finish();
  if (status.ok() && !finished) status = ownership.Checkpoint(SteadyMs(), ClusterOwnership::Save::kNow);  // stopped: saved as it is
  if (core::Status s = processor.Drain(); !s.ok() && status.ok()) status = s;
  if (core::Status s = sink.Flush(); !s.ok() && status.ok()) status = s;
  if (core::Status s = ownership.Close(); !s.ok() && status.ok()) status = s;
  processor.SetUntrustedReporter(nullptr);
  return status;
}

// Where the exporter's telemetry stands. An input with several acme.util partitions (Kafka): the
// bound is the lowest time any of them has reached (by record, progress marker or end marker),
// leaving out those whose writer ended or that went idle; once every one has ended, the telemetry
// has reached the latest of their ends. One ordered input (a queue, stdin) needs no bound: its
// writer's heartbeats, and the times of its job events (a replay writes in trace-time order; stdout
// has no heartbeats), say how far the telemetry has got.
class TelemetryBound {
 public:
  TelemetryBound(const std::vector<core::InputPartition>& partitions, exporters::Exporter& exporter)
      : exporter_(exporter), parts_(partitions.size()) {
    for (size_t p = 0; p < partitions.size(); ++p) {
      if (partitions[p].topic == core::kTopicUtil) parts_[p].util = true;
    }
    if (std::any_of(parts_.begin(), parts_.end(), [](const Part& part) { return part.util; })) {
      exporter_.AdvanceTelemetryBound(INT64_MIN);  // until every util partition has said something
      active_ = true;
    }
  }
  void Reached(int p, int64_t ts_ms, const core::Record& record) {
    if (active_) {
      Advance(p, ts_ms);
    } else if (std::holds_alternative<core::JobEvent>(record)) {
      exporter_.NoteTelemetryReached(ts_ms);
    }
  }
  // A heartbeat or progress item: on one ordered input it says where the telemetry is.
  void Progress(int p, int64_t ts_ms) {
    if (active_) {
      Advance(p, ts_ms);
    } else if (ts_ms != core::InputItem::kNoTs) {
      exporter_.NoteTelemetryReached(ts_ms);
    }
  }
  void Idle(int p) { Leave(p, State::kIdle, core::InputItem::kNoTs); }
  void Ended(int p, int64_t ts_ms) { Leave(p, State::kEnded, ts_ms); }

 private:
  enum class State { kActive, kIdle, kEnded };
  struct Part {
    bool util = false;
    State state = State::kActive;
    int64_t reached = core::InputItem::kNoTs;
  };
  void Advance(int p, int64_t ts_ms) {
    Part& part = parts_[static_cast<size_t>(p)];
    if (!part.util || ts_ms == core::InputItem::kNoTs) return;
    const bool changed = ts_ms > part.reached || part.state != State::kActive;
    part.reached = std::max(part.reached, ts_ms);
    part.state = State::kActive;
    if (changed) Publish();
  }
  void Leave(int p, State state, int64_t ts_ms) {  // holds nothing back until it brings something again
    Part& part = parts_[static_cast<size_t>(p)];
    if (!active_ || !part.util) return;
    part.state = state;
    if (ts_ms != core::InputItem::kNoTs) part.reached = std::max(part.reached, ts_ms);
    Publish();
  }
  void Publish() {
    int64_t lowest = INT64_MAX;
    int64_t latest_end = core::InputItem::kNoTs;
    for (const Part& part : parts_) {
      if (!part.util) continue;
      if (part.state == State::kActive) lowest = std::min(lowest, part.reached);
      if (part.state == State::kEnded) latest_end = std::max(latest_end, part.reached);
    }
    exporter_.AdvanceTelemetryBound(lowest);
    if (lowest != INT64_MAX) {
      exporter_.NoteTelemetryReached(lowest);
    } else if (latest_end != core::InputItem::kNoTs) {
      exporter_.NoteTelemetryReached(latest_end);
    }
  }
  exporters::Exporter& exporter_;
  std::vector<Part> parts_;
  bool active_ = false;
};

// Its item switch stays apart from RunProcessStage's: the kinds are the same, what each stage does with
// them is not (the processor snapshots offsets and markers, the exporter moves the telemetry bound).
core::Status RunExportStage(core::RecordInput& input, exporters::Exporter& exporter, core::InputErrors& errors,
                            const StageOptions& options, const std::atomic<bool>& stop) {
  InputEnd end(input.partitions(), options.unmarked_end_after_ms);
  TelemetryBound bound(input.partitions(), exporter);
  ItemReader reader(input, errors);
  ProgressTicker ticker(options);
  int64_t items = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    if (errors.must_stop()) return core::Status::Error("stopping at the first input error (strict)");
    const int64_t now = SteadyMs();
    if (options.until_end && end.Ended(true, now)) break;
    if (ticker.Due(now)) options.on_progress(StageProgress{items, {}});
    core::Result<core::InputItem> next = input.Next(100);
    if (!next.ok()) return next.status();
    const core::InputItem& item = next.value();
    const int p = item.partition;
    end.Observe(item, now);
    switch (item.kind) {
      case Kind::kNothing:
      case Kind::kCaughtUp:
        continue;
      case Kind::kProgress:
        bound.Progress(p, item.ts_ms);
        continue;
      case Kind::kIdle:
        if (!end.Paused(p)) bound.Idle(p);
        continue;
      case Kind::kEnded:
        bound.Ended(p, item.ts_ms);
        continue;
      case Kind::kRecord:
      case Kind::kFramed:
      case Kind::kUnreadable:
        break;
    }
    ++items;
    const core::Record* record = reader.Read(item);
    if (record == nullptr) {
      end.OnRecord(p, {});
      continue;
    }
    end.OnRecord(p, ClusterOfRecord(*record));
    bound.Reached(p, core::TimestampMsOf(*record), *record);
    exporter.Apply(*record);
  }
  return core::Status::Ok();
}

}  // namespace acmetrace::pipeline
