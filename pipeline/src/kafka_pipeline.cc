// KafkaPipeline: the stages of `acmetrace run` with Kafka between them.
#include "acmetrace/pipeline/kafka_pipeline.h"

#include <map>
#include <thread>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_partition_reader.h"
#include "acmetrace/kafka/kafka_sink.h"

namespace acmetrace::pipeline {
namespace {

const std::vector<std::string> kInputTopics = {std::string(core::kTopicJobs), std::string(core::kTopicUtil),
                                               std::string(core::kTopicPower)};
const std::vector<std::string> kExportTopics = {std::string(core::kTopicUtil), std::string(core::kTopicMetrics),
                                                std::string(core::kTopicAnomalies)};

// Reads partitions of some topics from the ends they had at a start point up to ends given later.
class BoundedReader {
 public:
  core::Status Open(const kafka::KafkaSettings& settings, const std::vector<std::string>& topics) {
    core::Result<std::unique_ptr<kafka::KafkaPartitionReader>> reader = kafka::KafkaPartitionReader::Open(settings);
    if (!reader.ok()) return reader.status();
    reader_ = std::move(reader).value();
    topics_ = topics;
    core::Result<std::vector<kafka::PartitionInfo>> parts =
        reader_->Describe(topics_, static_cast<int>(settings.connect_timeout_ms));
    if (!parts.ok()) return parts.status();
    parts_ = std::move(parts).value();
    std::vector<kafka::PartitionStart> starts;
    for (size_t i = 0; i < parts_.size(); ++i) {
      index_[{parts_[i].topic, parts_[i].partition}] = static_cast<int>(i);
      position_.push_back(parts_[i].high);  // only what this run writes
      starts.push_back(kafka::PartitionStart{parts_[i].topic, parts_[i].partition, parts_[i].high});
    }
    return reader_->Assign(starts);
  }
  const std::vector<kafka::PartitionInfo>& partitions() const { return parts_; }
  int IndexOf(std::string_view topic, int32_t partition) const {
    auto it = index_.find({std::string(topic), partition});
    return it == index_.end() ? -1 : it->second;
  }
  void Consumed(int index, int64_t next_offset) {
    position_[static_cast<size_t>(index)] = std::max(position_[static_cast<size_t>(index)], next_offset);
  }
  // Fixes the ends to read to: the topics' ends now.
  core::Status Bound() {
    core::Result<std::vector<kafka::PartitionInfo>> parts = reader_->Describe(topics_, 10'000);
    if (!parts.ok()) return parts.status();
    end_.assign(parts_.size(), 0);
    for (const kafka::PartitionInfo& p : parts.value()) {
      const int i = IndexOf(p.topic, p.partition);
      if (i >= 0) end_[static_cast<size_t>(i)] = p.high;
    }
    return core::Status::Ok();
  }
  bool bounded() const { return !end_.empty(); }
  bool AtBound() const {
    if (end_.empty()) return false;
    for (size_t i = 0; i < end_.size(); ++i) {
      if (position_[i] < end_[i]) return false;
    }
    return true;
  }
  kafka::KafkaPartitionReader& reader() { return *reader_; }

 private:
  std::unique_ptr<kafka::KafkaPartitionReader> reader_;
  std::vector<std::string> topics_;
  std::vector<kafka::PartitionInfo> parts_;
  std::map<std::pair<std::string, int32_t>, int> index_;
  std::vector<int64_t> position_;
  std::vector<int64_t> end_;
};

}  // namespace

KafkaPipeline::KafkaPipeline(PipelineOptions options, kafka::KafkaSettings settings, exporters::Exporter& exporter,
                             core::InputErrors& errors)
    : options_(std::move(options)), settings_(std::move(settings)), exporter_(exporter), errors_(errors) {}

KafkaPipeline::~KafkaPipeline() { Stop(); }

void KafkaPipeline::Stop() {
  stop_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  if (replayer_ != nullptr) replayer_->Stop();
}

producers::ReplayStatus KafkaPipeline::replay_status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return replayer_ == nullptr ? producers::ReplayStatus{} : replayer_->status();
}

core::Status KafkaPipeline::Run() {
  if (settings_.create_topics) {
    core::Result<std::unique_ptr<kafka::KafkaAdmin>> admin = kafka::KafkaAdmin::Open(settings_, stderr);
    if (!admin.ok()) return admin.status();
    core::Result<std::vector<kafka::TopicDescription>> ensured =
        admin.value()->EnsureTopics(kafka::TopicSpecsFromSettings(settings_));
    if (!ensured.ok()) return ensured.status();
  }
  core::Result<std::unique_ptr<producers::EventStream>> opened = producers::EventStream::Open(options_.stream, errors_);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<producers::EventStream> stream = std::move(opened).value();
  // Both readers take their start offsets before anything of this run is written.
  BoundedReader process_in;
  if (core::Status s = process_in.Open(settings_, kInputTopics); !s.ok()) return s;
  auto export_in = std::make_unique<BoundedReader>();
  if (core::Status s = export_in->Open(settings_, kExportTopics); !s.ok()) return s;

  core::Result<std::unique_ptr<kafka::KafkaSink>> replay_sink = kafka::KafkaSink::Open(settings_, stderr);
  if (!replay_sink.ok()) return replay_sink.status();
  CountingTee replay_out("replay", exporter_, /*note_trace_time=*/true);
  replay_out.AddOutput(*replay_sink.value());
  core::SteadyClock clock;
  producers::Replayer replayer(*stream, replay_out, clock, errors_, options_.replay);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replayer_ = &replayer;
  }
  if (stop_.load()) replayer.Stop();

  core::Status replay_status = core::Status::Ok();
  std::thread replay_thread([&] {
    core::Result<producers::ReplayStats> stats = replayer.Run();
    if (!stats.ok()) replay_status = stats.status();
    // Flush waits for every delivery report: what the processors drain to is all there.
    if (core::Status s = replay_out.Flush(); !s.ok() && replay_status.ok()) replay_status = s;
    if (!replay_status.ok()) stop_.store(true);
    replay_done_.store(true);
  });

  core::Status process_status = core::Status::Ok();
  std::thread process_thread([&] {
    core::Result<std::unique_ptr<kafka::KafkaSink>> sink = kafka::KafkaSink::Open(settings_, stderr);
    if (!sink.ok()) {
      process_status = sink.status();
    } else {
      CountingTee process_out("process", exporter_, /*note_trace_time=*/false);
      process_out.AddOutput(*sink.value());
      processors::StreamProcessor processor(options_.process, process_out, options_.detectors);
      processor.SetOwnAll(true);
      for (const kafka::PartitionInfo& p : process_in.partitions()) {
        processor.DeclarePartition(p.topic + "/" + std::to_string(p.partition));
      }
      core::RecordParser parser;
      core::Record record;
      while (!stop_.load()) {
        if (!process_in.bounded() && replay_done_.load()) {
          if (core::Status s = process_in.Bound(); !s.ok()) {
            process_status = s;
            break;
          }
        }
        if (process_in.AtBound()) break;
        core::Result<kafka::ReaderEvent> event = process_in.reader().Next(100);
        if (!event.ok()) {
          process_status = event.status();
          break;
        }
        const kafka::ReaderEvent& e = event.value();
        if (e.kind == kafka::ReaderEvent::Kind::kPartitionEnd) {
          const int p = process_in.IndexOf(e.topic, e.partition);
          if (p >= 0) {
            process_in.Consumed(p, e.offset);
            processor.SetPartitionIdle(p, true);  // caught up: stops holding the watermark back
          }
          continue;
        }
        if (e.kind != kafka::ReaderEvent::Kind::kRecord) continue;
        const kafka::FramedRecord& r = *e.record;
        const int p = process_in.IndexOf(r.topic, r.partition);
        if (p < 0) continue;
        process_in.Consumed(p, r.offset + 1);
        core::Status s = core::Status::Ok();
        if (core::Status parsed = parser.ParseValue(r.topic, r.value, record); !parsed.ok()) {
          errors_.Report(r.key.substr(0, r.key.find('/')), "record",
                         std::string(r.topic) + "[" + std::to_string(r.partition) + "]", r.offset, "",
                         parsed.message());
          s = processor.Skip(p, r.offset, r.trace_ts_ms == kafka::kNoTraceTs ? processors::kNoTime : r.trace_ts_ms);
        } else {
          s = processor.Process(p, r.offset, std::move(record));
          processor.ReuseRecord(record);
        }
        if (!s.ok()) {
          process_status = s;
          break;
        }
      }
      if (process_status.ok() && !stop_.load()) {
        if (core::Status s = processor.Finish(); !s.ok()) process_status = s;
      }
      if (core::Status s = process_out.Flush(); !s.ok() && process_status.ok()) process_status = s;
      process_stats_ = processor.stats();
    }
    if (!process_status.ok()) {
      stop_.store(true);
      replayer.Stop();
    }
    process_done_.store(true);
  });

  // Exporter: this thread.
  core::Status export_status = core::Status::Ok();
  {
    core::RecordParser parser;
    core::Record record;
    while (!stop_.load()) {
      if (!export_in->bounded() && process_done_.load()) {
        if (core::Status s = export_in->Bound(); !s.ok()) {
          export_status = s;
          break;
        }
      }
      if (export_in->AtBound()) break;
      core::Result<kafka::ReaderEvent> event = export_in->reader().Next(100);
      if (!event.ok()) {
        export_status = event.status();
        break;
      }
      const kafka::ReaderEvent& e = event.value();
      if (e.kind == kafka::ReaderEvent::Kind::kPartitionEnd) {
        if (const int p = export_in->IndexOf(e.topic, e.partition); p >= 0) export_in->Consumed(p, e.offset);
        continue;
      }
      if (e.kind != kafka::ReaderEvent::Kind::kRecord) continue;
      const kafka::FramedRecord& r = *e.record;
      if (const int p = export_in->IndexOf(r.topic, r.partition); p >= 0) export_in->Consumed(p, r.offset + 1);
      if (core::Status parsed = parser.ParseValue(r.topic, r.value, record); !parsed.ok()) {
        errors_.Report(r.key.substr(0, r.key.find('/')), "record",
                       std::string(r.topic) + "[" + std::to_string(r.partition) + "]", r.offset, "", parsed.message());
        continue;
      }
      exporter_.Apply(record);
    }
    if (!export_status.ok()) {
      stop_.store(true);
      replayer.Stop();
    }
  }
  replay_thread.join();
  process_thread.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replayer_ = nullptr;
  }
  if (!replay_status.ok()) return core::Status::Error("replay: " + replay_status.message());
  if (!process_status.ok()) return core::Status::Error("process: " + process_status.message());
  if (!export_status.ok()) return core::Status::Error("export: " + export_status.message());
  return core::Status::Ok();
}

}  // namespace acmetrace::pipeline
