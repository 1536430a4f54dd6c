// The loops of `acmetrace process`: stdin (framed JSON lines) or Kafka (assignment reading, ownership
// by consumer group, snapshots and group commits) into the stream processor.
#include "acmetrace/pipeline/process_run.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "acmetrace/core/line_reader.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/time.h"
#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_partition_reader.h"
#include "acmetrace/processors/state_store.h"

namespace acmetrace::pipeline {
namespace {


// Progress lines every 10 s (ACMETRACE_PROGRESS_MS overrides, for tests).
const int64_t kProgressIntervalMs = [] {
  const char* p = std::getenv("ACMETRACE_PROGRESS_MS");
  return p != nullptr ? std::max<int64_t>(100, std::atoi(p)) : int64_t{10'000};
}();
const std::vector<std::string> kInputTopics = {std::string(core::kTopicJobs), std::string(core::kTopicUtil),
                                               std::string(core::kTopicPower)};

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view ClusterOfKey(std::string_view key) {
  const size_t slash = key.find('/');
  return slash == std::string_view::npos ? key : key.substr(0, slash);
}

// The "ts_ms" of a record's JSON without parsing it (records of clusters owned elsewhere).
int64_t ScanTsMs(std::string_view json) {
  const size_t at = json.find("\"ts_ms\":");
  if (at == std::string_view::npos) return processors::kNoTime;
  int64_t v = 0;
  const char* begin = json.data() + at + 8;
  const auto r = std::from_chars(begin, json.data() + json.size(), v);
  return r.ec == std::errc() ? v : processors::kNoTime;
}

bool IsInputTopic(std::string_view topic) {
  return topic == core::kTopicJobs || topic == core::kTopicUtil || topic == core::kTopicPower;
}

void PrintSummaryLine(const processors::ProcessStats& s, const core::InputErrors& errors, int64_t wall_ms) {
  const double seconds = static_cast<double>(wall_ms) / 1000.0;
  std::fprintf(stderr,
               "acmetrace process: %lld records processed, %lld skipped, %lld late, %lld input errors; wrote %lld "
               "windows and %lld anomaly transitions (%lld windows already written before a restore) in %.2f s "
               "(%.0f records/s)\n",
               static_cast<long long>(s.records), static_cast<long long>(s.skipped), static_cast<long long>(s.late),
               static_cast<long long>(errors.total()), static_cast<long long>(s.windows),
               static_cast<long long>(s.anomalies), static_cast<long long>(s.suppressed), seconds,
               seconds > 0 ? static_cast<double>(s.records + s.skipped) / seconds : 0.0);
}

// stdin: one partition; the end of the input closes every window.
int RunStdinLoop(processors::StreamProcessor& processor, core::RecordSink& sink, core::InputErrors& errors,
             const std::atomic<bool>& stop) {
  processor.SetOwnAll(true);
  const int partition = processor.DeclarePartition("stdin");
  core::RecordParser parser;
  core::Record record;
  core::LineReader lines(stdin);
  int64_t next_progress = SteadyMs() + kProgressIntervalMs;
  std::string_view line;
  for (core::LineReader::Result r; !stop.load(std::memory_order_relaxed) && !errors.must_stop() &&
                                   (r = lines.Next(line)) != core::LineReader::Result::kEnd;) {
    core::Status s = core::Status::Ok();
    if (r == core::LineReader::Result::kTooLong) {
      errors.Report("", "record", "stdin", lines.line_no(), "", lines.TooLongReason());
      s = processor.Skip(partition, -1, processors::kNoTime);
    } else if (line.empty()) {
      continue;
    } else if (core::Status parsed = parser.ParseFramedLine(line, record); !parsed.ok()) {
      errors.Report("", "record", "stdin", lines.line_no(), "", parsed.message());
      s = processor.Skip(partition, -1, processors::kNoTime);
    } else if (!IsInputTopic(core::TopicOf(record))) {
      s = processor.Skip(partition, -1, processors::kNoTime);
    } else {
      s = processor.Process(partition, -1, std::move(record));
      processor.ReuseRecord(record);
    }
    if (!s.ok()) {
      std::fprintf(stderr, "acmetrace process: %s\n", s.message().c_str());
      return 1;
    }
    if ((lines.line_no() & 4095) == 0 && SteadyMs() >= next_progress) {
      next_progress += kProgressIntervalMs;
      std::fprintf(stderr, "acmetrace process: %lld lines read\n", static_cast<long long>(lines.line_no()));
    }
  }
  if (lines.failed()) {
    std::fprintf(stderr, "acmetrace process: reading stdin: %s\n", std::strerror(errno));
    return 1;
  }
  if (core::Status s = processor.Finish(); !s.ok()) {
    std::fprintf(stderr, "acmetrace process: %s\n", s.message().c_str());
    return 1;
  }
  if (core::Status s = sink.Flush(); !s.ok()) {
    std::fprintf(stderr, "acmetrace process: %s\n", s.message().c_str());
    return 1;
  }
  if (errors.must_stop()) return 1;
  return 0;
}

uint32_t Fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// Kafka: every partition of the input topics, read by assignment; clusters owned through the
// consumer group's assignment of the ownership topic; state and offsets in snapshots, the offsets
// also committed to the group after each save.
class KafkaProcessRun {
 public:
  KafkaProcessRun(processors::StreamProcessor& processor, core::RecordSink& sink, core::InputErrors& errors,
                  const processors::ProcessOptions& options, const kafka::KafkaSettings& settings, bool until_end,
                  const std::atomic<bool>& stop)
      : processor_(processor),
        sink_(sink),
        errors_(errors),
        options_(options),
        settings_(settings),
        until_end_(until_end),
        stop_(stop) {}

  int Run() {
    if (core::Status s = Setup(); !s.ok()) {
      std::fprintf(stderr, "acmetrace process: %s\n", s.message().c_str());
      return 1;
    }
    core::Status s = Loop();
    if (!s.ok()) {
      std::fprintf(stderr, "acmetrace process: %s\n", s.message().c_str());
      (void)membership_->Close();
      return 1;
    }
    // Stopping: what was written is delivered, then the state and offsets covering it are saved.
    if (until_end_) {
      s = SaveSnapshots(/*final_flush_follows=*/true);
      if (s.ok()) s = processor_.Finish();
      if (s.ok()) s = sink_.Flush();
    } else {
      s = SaveSnapshots(false);
    }
    finished_ = true;  // the revocation below must not save state past the snapshot above
    const core::Status closed = membership_->Close();
    if (!s.ok() || !closed.ok()) {
      std::fprintf(stderr, "acmetrace process: %s\n", (!s.ok() ? s : closed).message().c_str());
      return 1;
    }
    return 0;
  }

 private:
  core::Status Setup() {
    if (!options_.state_dir.empty()) {
      store_ = std::make_unique<processors::FileStateStore>(options_.state_dir, settings_.group_id);
      if (core::Status s = store_->Open(); !s.ok()) return s;
    } else {
      std::fprintf(stderr,
                   "acmetrace process: no process.state_dir: a restart starts over from the beginning of the topics\n");
    }
    if (settings_.create_topics) {
      core::Result<std::unique_ptr<kafka::KafkaAdmin>> admin = kafka::KafkaAdmin::Open(settings_, stderr);
      if (!admin.ok()) return admin.status();
      std::vector<kafka::TopicSpec> specs;
      for (const kafka::TopicSpec& spec : kafka::TopicSpecsFromSettings(settings_)) {
        if (IsInputTopic(spec.name)) specs.push_back(spec);
      }
      specs.push_back(kafka::TopicSpec{options_.ownership_topic, static_cast<int32_t>(options_.clusters.size()),
                                       settings_.replication_factor, -1});
      core::Result<std::vector<kafka::TopicDescription>> ensured = admin.value()->EnsureTopics(specs);
      if (!ensured.ok()) return ensured.status();
    }
    core::Result<std::unique_ptr<kafka::KafkaPartitionReader>> reader = kafka::KafkaPartitionReader::Open(settings_);
    if (!reader.ok()) return reader.status();
    reader_ = std::move(reader).value();
    core::Result<std::vector<kafka::PartitionInfo>> parts = reader_->Describe(kInputTopics);
    if (!parts.ok()) return parts.status();
    partitions_ = std::move(parts).value();
    for (size_t i = 0; i < partitions_.size(); ++i) {
      const kafka::PartitionInfo& p = partitions_[i];
      const int index = processor_.DeclarePartition(p.topic + "/" + std::to_string(p.partition));
      if (index != static_cast<int>(i)) return core::Status::Error("internal: partition index mismatch");
      if (p.partition == 0) topic_first_.emplace_back(p.topic, index);
    }
    position_.assign(partitions_.size(), 0);
    core::Result<std::vector<kafka::PartitionInfo>> owners = reader_->Describe({options_.ownership_topic});
    if (!owners.ok()) return owners.status();
    ownership_partitions_ = static_cast<int32_t>(owners.value().size());
    core::Result<std::unique_ptr<kafka::KafkaGroupMembership>> membership = kafka::KafkaGroupMembership::Open(
        settings_, options_.ownership_topic, [this](const std::vector<int32_t>& p) { OnAssigned(p); },
        [this](const std::vector<int32_t>& p) { OnRevoked(p); });
    if (!membership.ok()) return membership.status();
    membership_ = std::move(membership).value();
    return core::Status::Ok();
  }

  int32_t OwnerPartition(std::string_view cluster) const {
    for (size_t i = 0; i < options_.clusters.size(); ++i) {
      if (options_.clusters[i] == cluster) return static_cast<int32_t>(i % ownership_partitions_);
    }
    return static_cast<int32_t>(Fnv1a(cluster) % static_cast<uint32_t>(ownership_partitions_));
  }

  // Owns cluster from its snapshot if there is one, else fresh.
  core::Status Adopt(const std::string& cluster) {
    if (store_) {
      core::Result<std::optional<std::string>> saved = store_->Load(cluster);
      if (!saved.ok()) return saved.status();
      if (saved.value()) {
        std::string warning;
        core::Status s = processor_.Restore(*saved.value(), &warning);
        if (!s.ok()) return core::Status::Error(store_->PathOf(cluster) + ": " + s.message());
        if (!warning.empty()) {
          std::fprintf(stderr, "acmetrace process: warning: %s: %s\n", store_->PathOf(cluster).c_str(), warning.c_str());
        }
        std::fprintf(stderr, "acmetrace process: owns %s (resumed from %s)\n", cluster.c_str(),
                     store_->PathOf(cluster).c_str());
        return core::Status::Ok();
      }
    }
    processor_.Own(cluster);
    std::fprintf(stderr, "acmetrace process: owns %s (from the beginning)\n", cluster.c_str());
    return core::Status::Ok();
  }

  void OnRevoked(const std::vector<int32_t>&) {
    have_assignment_ = false;
    if (finished_) return;
    if (core::Status s = SaveSnapshots(false); !s.ok() && callback_error_.ok()) callback_error_ = s;
  }

  void OnAssigned(const std::vector<int32_t>& assigned) {
    held_.clear();
    held_.insert(assigned.begin(), assigned.end());
    // Clusters no longer ours go; ours that were kept in memory stay (their snapshot, saved at the
    // revocation, is still the latest: nobody else owned them in between).
    for (const std::string& cluster : processor_.owned()) {
      if (held_.count(OwnerPartition(cluster)) == 0) processor_.Release(cluster);
    }
    std::set<std::string> candidates(options_.clusters.begin(), options_.clusters.end());
    for (const std::string& cluster : candidates) {
      if (held_.count(OwnerPartition(cluster)) == 0 || processor_.Owns(cluster)) continue;
      if (core::Status s = Adopt(cluster); !s.ok() && callback_error_.ok()) callback_error_ = s;
    }
    have_assignment_ = true;
    reassign_ = true;
  }

  core::Status Reassign() {
    reassign_ = false;
    advanced_to_ = std::numeric_limits<int64_t>::min();
    std::vector<kafka::PartitionStart> starts;
    if (!processor_.owned().empty() || !held_.empty()) {
      for (size_t i = 0; i < partitions_.size(); ++i) {
        const kafka::PartitionInfo& p = partitions_[i];
        const int index = static_cast<int>(i);
        const int64_t resume = processor_.owned().empty() ? -1 : processor_.ResumeOffset(index);
        position_[i] = resume < 0 ? p.low : resume;
        if (until_end_ && position_[i] >= p.high) {
          processor_.SetPartitionIdle(index, true);
          continue;  // nothing of it to read in a bounded run
        }
        starts.push_back(kafka::PartitionStart{p.topic, p.partition, resume});
      }
    }
    return reader_->Assign(starts);
  }

  // The processor's index of a partition (= its place in partitions_), -1 if not an input.
  int IndexOf(std::string_view topic, int32_t partition) const {
    for (const auto& [name, first] : topic_first_) {
      if (name == topic) {
        const int index = first + partition;
        return index < static_cast<int>(partitions_.size()) && partitions_[static_cast<size_t>(index)].topic == topic &&
                       partitions_[static_cast<size_t>(index)].partition == partition
                   ? index
                   : -1;
      }
    }
    return -1;
  }

  bool AllConsumed() const {
    for (size_t i = 0; i < partitions_.size(); ++i) {
      if (position_[i] < partitions_[i].high) return false;
    }
    return true;
  }

  core::Status SaveSnapshots(bool final_flush_follows) {
    if (core::Status s = processor_.Drain(); !s.ok()) return s;
    if (core::Status s = sink_.Flush(); !s.ok()) return s;
    if (!store_) return core::Status::Ok();
    for (const std::string& cluster : processor_.owned()) {
      if (core::Status s = store_->Save(cluster, processor_.Snapshot(cluster, final_flush_follows)); !s.ok()) return s;
    }
    CommitSnapshotOffsets();
    return core::Status::Ok();
  }

  // Publishes what the snapshots just saved cover to the consumer group, for kafka-consumer-groups.sh
  // and lag exporters: per input partition, the lowest next offset over the owned clusters. The
  // snapshots stay authoritative (a restart reads its offsets from them), so a failed commit (e.g.
  // during a rebalance) is reported and the next save commits again.
  void CommitSnapshotOffsets() {
    if (!membership_ || processor_.owned_count() == 0) return;
    std::vector<kafka::PartitionStart> offsets;
    for (size_t i = 0; i < partitions_.size(); ++i) {
      const int64_t next = processor_.ResumeOffset(static_cast<int>(i));
      if (next < 0) continue;  // an owned cluster has read nothing of it yet
      offsets.push_back(kafka::PartitionStart{partitions_[i].topic, partitions_[i].partition, next});
    }
    const core::Status s = membership_->Commit(offsets);
    if (!s.ok() && s.message() != last_commit_error_) {
      std::fprintf(stderr, "acmetrace process: warning: %s (the snapshots hold the offsets)\n", s.message().c_str());
    }
    last_commit_error_ = s.ok() ? "" : s.message();
  }

  core::Status HandleRecord(const kafka::FramedRecord& r) {
    const int p = IndexOf(r.topic, r.partition);
    if (p < 0) return core::Status::Ok();
    const size_t pi = static_cast<size_t>(p);
    if (until_end_ && r.offset >= partitions_[pi].high) {
      // Produced after we started: a bounded run stops at the end it saw.
      position_[pi] = partitions_[pi].high;
      processor_.SetPartitionIdle(p, true);
      return reader_->Pause(partitions_[pi].topic, partitions_[pi].partition);
    }
    position_[pi] = r.offset + 1;
    const std::string_view cluster = ClusterOfKey(r.key);
    if (!processor_.Owns(cluster) && !cluster.empty() && held_.count(OwnerPartition(cluster)) > 0) {
      if (core::Status s = Adopt(std::string(cluster)); !s.ok()) return s;
    }
    core::Status s = core::Status::Ok();
    if (processor_.Owns(cluster)) {
      if (core::Status parsed = parser_.ParseValue(r.topic, r.value, record_); !parsed.ok()) {
        errors_.Report(cluster, "record", std::string(r.topic) + "[" + std::to_string(r.partition) + "]", r.offset, "",
                       parsed.message());
        s = processor_.Skip(p, r.offset, processors::kNoTime);
      } else {
        s = processor_.Process(p, r.offset, std::move(record_));
        processor_.ReuseRecord(record_);
      }
    } else {
      const int64_t ts = r.trace_ts_ms != kafka::kNoTraceTs ? r.trace_ts_ms : ScanTsMs(r.value);
      s = processor_.Skip(p, r.offset, ts);
    }
    if (s.ok() && until_end_ && position_[pi] >= partitions_[pi].high) {
      processor_.SetPartitionIdle(p, true);
      s = reader_->Pause(partitions_[pi].topic, partitions_[pi].partition);
    }
    return s;
  }

  core::Status Loop() {
    const int64_t started = SteadyMs();
    int64_t next_poll = 0;
    int64_t next_snapshot = started + options_.snapshot_interval_ms;
    int64_t next_progress = started + kProgressIntervalMs;
    int64_t last_records = 0;
    for (;;) {
      if (stop_.load(std::memory_order_relaxed)) return core::Status::Ok();
      const int64_t now = SteadyMs();
      if (now >= next_poll || !have_assignment_) {
        next_poll = now + 100;
        if (core::Status s = membership_->Poll(have_assignment_ ? 0 : 100); !s.ok()) return s;
        if (!callback_error_.ok()) return callback_error_;
        if (!have_assignment_) continue;
        if (reassign_) {
          if (core::Status s = Reassign(); !s.ok()) return s;
        }
      }
      if (until_end_ && !reassign_ && (AllConsumed() || processor_.owned_count() == 0)) return core::Status::Ok();
      core::Result<kafka::ReaderEvent> event = reader_->Next(100);
      if (!event.ok()) return event.status();
      const kafka::ReaderEvent& e = event.value();
      if (e.kind == kafka::ReaderEvent::Kind::kRecord) {
        if (core::Status s = HandleRecord(*e.record); !s.ok()) return s;
        if (e.pending_low_ts != kafka::kNoTraceTs && e.pending_low_ts > advanced_to_) {
          advanced_to_ = e.pending_low_ts;
          if (core::Status s = processor_.AdvanceInputs(e.pending_low_ts); !s.ok()) return s;
        }
        if (errors_.must_stop()) return core::Status::Error("stopping at the first input error (strict)");
      } else if (e.kind == kafka::ReaderEvent::Kind::kPartitionEnd) {
        if (const int p = IndexOf(e.topic, e.partition); p >= 0) {
          const size_t pi = static_cast<size_t>(p);
          position_[pi] = std::max(position_[pi], e.offset);
          processor_.SetPartitionIdle(p, true);
        }
      }
      if (now >= next_snapshot) {
        next_snapshot = now + options_.snapshot_interval_ms;
        const int64_t done = processor_.stats().records + processor_.stats().skipped;
        if (done != saved_at_records_) {  // nothing new: the last snapshot still holds
          saved_at_records_ = done;
          if (core::Status s = SaveSnapshots(false); !s.ok()) return s;
        }
      }
      if (now >= next_progress) {
        const processors::ProcessStats& st = processor_.stats();
        const int64_t total = st.records + st.skipped;
        std::string watermarks;
        for (const std::string& cluster : processor_.owned()) {
          const int64_t wm = processor_.watermark_ms(cluster);
          watermarks += " " + cluster + "=" + (wm == processors::kNoTime ? std::string("none") : core::FormatIsoTime(wm, 0));
        }
        std::fprintf(stderr, "acmetrace process: %lld records (%.0f/s), %lld windows written, watermark%s\n",
                     static_cast<long long>(total),
                     static_cast<double>(total - last_records) * 1000.0 / static_cast<double>(kProgressIntervalMs),
                     static_cast<long long>(st.windows), watermarks.empty() ? " none" : watermarks.c_str());
        last_records = total;
        next_progress = now + kProgressIntervalMs;
      }
    }
  }

  processors::StreamProcessor& processor_;
  core::RecordSink& sink_;
  core::InputErrors& errors_;
  const processors::ProcessOptions& options_;
  const kafka::KafkaSettings& settings_;
  const bool until_end_;
  const std::atomic<bool>& stop_;

  std::unique_ptr<processors::FileStateStore> store_;
  std::unique_ptr<kafka::KafkaPartitionReader> reader_;
  std::unique_ptr<kafka::KafkaGroupMembership> membership_;
  std::vector<kafka::PartitionInfo> partitions_;
  std::vector<std::pair<std::string, int>> topic_first_;  // topic -> index of its partition 0
  std::vector<int64_t> position_;  // per partitions_ entry: the next offset to read
  int32_t ownership_partitions_ = 1;
  std::set<int32_t> held_;
  bool have_assignment_ = false;
  bool reassign_ = false;
  bool finished_ = false;
  int64_t saved_at_records_ = -1;
  int64_t advanced_to_ = std::numeric_limits<int64_t>::min();  // the reader's last pending_low_ts passed on
  core::Status callback_error_ = core::Status::Ok();
  std::string last_commit_error_;
  core::RecordParser parser_;
  core::Record record_;
};


}  // namespace

int RunProcessStdin(processors::StreamProcessor& processor, core::RecordSink& sink, core::InputErrors& errors,
                    const std::atomic<bool>& stop) {
  return RunStdinLoop(processor, sink, errors, stop);
}

int RunProcessKafka(processors::StreamProcessor& processor, core::RecordSink& sink, core::InputErrors& errors,
                    const processors::ProcessOptions& options, const kafka::KafkaSettings& settings, bool until_end,
                    const std::atomic<bool>& stop) {
  KafkaProcessRun run(processor, sink, errors, options, settings, until_end, stop);
  return run.Run();
}

void PrintProcessSummary(const processors::ProcessStats& stats, const core::InputErrors& errors, int64_t wall_ms) {
  PrintSummaryLine(stats, errors, wall_ms);
}

}  // namespace acmetrace::pipeline
