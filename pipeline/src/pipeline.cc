// In-process run (replay -> processors -> exporter over bounded queues) and the exporter's input
// loops over stdio and Kafka.
#include "acmetrace/pipeline/pipeline.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <variant>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/line_reader.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/kafka/kafka_source.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/producers/synth.h"

namespace acmetrace::pipeline {
namespace {

constexpr size_t kBatch = 256;
constexpr int64_t kPublishEvery = 1024;

std::string_view ClusterOf(const core::Record& record) {
  return std::visit([](const auto& r) -> std::string_view { return r.cluster; }, record);
}

}  // namespace

void DeclareRunConfig(core::Config& config) {
  using core::ConfigType;
  config.Declare("run.queue_capacity", "4096",
                 "records per in-process queue between stages (memory bound; a full queue blocks its writer)",
                 ConfigType::Int(1, 16'777'216));
  config.Declare("run.default_days", "1", "days synthesized for `acmetrace run` without --data", ConfigType::Int(1, 400));
  config.Declare("run.default_scale", "0.05", "cluster scale synthesized for `acmetrace run` without --data",
                 ConfigType::Double(0, 100, ConfigType::Bound::kOpen));
  config.Declare("run.default_speed", "60", "replay speed of `acmetrace run` without --data (unless --speed)",
                 producers::SpeedType());
  config.Declare("run.cache_dir", "",
                 "where the default data set is synthesized once and reused; empty = $XDG_CACHE_HOME/acmetrace or "
                 "~/.cache/acmetrace",
                 ConfigType::String());
}

// --- CountingTee ---------------------------------------------------------------------------------

CountingTee::CountingTee(std::string stage, exporters::Exporter& exporter, bool note_trace_time)
    : stage_(std::move(stage)), exporter_(exporter), note_trace_time_(note_trace_time) {}

CountingTee::~CountingTee() { Publish(); }

void CountingTee::AddOutput(core::RecordSink& out, Filter filter) { outputs_.emplace_back(&out, std::move(filter)); }

core::Status CountingTee::Write(const core::Record& record) {
  const std::string_view topic = core::TopicOf(record);
  auto it = pending_counts_.find(topic);
  if (it == pending_counts_.end()) it = pending_counts_.emplace(std::string(topic), 0).first;
  ++it->second;
  if (note_trace_time_) {
    const std::string_view cluster = ClusterOf(record);
    auto t = trace_ms_.find(cluster);
    if (t == trace_ms_.end()) t = trace_ms_.emplace(std::string(cluster), 0).first;
    t->second = std::max(t->second, core::TimestampMsOf(record));
  }
  if (++unpublished_ >= kPublishEvery) Publish();
  for (auto& [out, filter] : outputs_) {
    if (filter && !filter(record)) continue;
    if (core::Status s = out->Write(record); !s.ok()) return s;
  }
  return core::Status::Ok();
}

core::Status CountingTee::Flush() {
  Publish();
  for (auto& [out, filter] : outputs_) {
    if (core::Status s = out->Flush(); !s.ok()) return s;
  }
  return core::Status::Ok();
}

void CountingTee::Publish() {
  for (auto& [topic, n] : pending_counts_) {
    if (n > 0) exporter_.CountRecords(stage_, topic, n);
    n = 0;
  }
  for (const auto& [cluster, ms] : trace_ms_) exporter_.NoteTraceTime(cluster, ms);
  unpublished_ = 0;
}

// --- InProcessPipeline ---------------------------------------------------------------------------

InProcessPipeline::InProcessPipeline(PipelineOptions options, exporters::Exporter& exporter,
                                     core::InputErrors& errors)
    : options_(std::move(options)),
      exporter_(exporter),
      errors_(errors),
      to_process_(options_.queue_capacity, 1),
      to_export_(options_.queue_capacity, 2) {}

InProcessPipeline::~InProcessPipeline() { Stop(); }

void InProcessPipeline::Stop() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (replayer_ != nullptr) replayer_->Stop();
  }
  to_process_.Cancel();
  to_export_.Cancel();
}

producers::ReplayStatus InProcessPipeline::replay_status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (replayer_ == nullptr) return producers::ReplayStatus{};
  return replayer_->status();
}

core::Status InProcessPipeline::Run() {
  core::Result<std::unique_ptr<producers::EventStream>> opened = producers::EventStream::Open(options_.stream, errors_);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<producers::EventStream> stream = std::move(opened).value();

  // Replay: every record to the processors, acme.util also to the exporter (the persona).
  CountingTee replay_out("replay", exporter_, /*note_trace_time=*/true);
  replay_out.AddOutput(to_process_);
  replay_out.AddOutput(to_export_,
                       [](const core::Record& r) { return std::holds_alternative<core::UtilSample>(r); });
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
    if (core::Status s = replay_out.Flush(); !s.ok() && replay_status.ok() && !stop_.load()) replay_status = s;
    to_process_.CloseWriter();
    to_export_.CloseWriter();
    if (!replay_status.ok()) {
      to_process_.Cancel();
      to_export_.Cancel();
    }
  });

  // Processors: one partition (the queue keeps the replay's event-time order).
  core::Status process_status = core::Status::Ok();
  std::thread process_thread([&] {
    CountingTee process_out("process", exporter_, /*note_trace_time=*/false);
    process_out.AddOutput(to_export_);
    processors::StreamProcessor processor(options_.process, process_out, options_.detectors);
    processor.SetOwnAll(true);
    const int partition = processor.DeclarePartition("in-process");
    std::vector<core::Record> batch;
    batch.reserve(kBatch);
    bool ended = false;
    while (to_process_.Pop(batch, kBatch)) {
      for (core::Record& r : batch) {
        if (core::Status s = processor.Process(partition, -1, std::move(r)); !s.ok()) {
          process_status = s;
          break;
        }
      }
      if (!process_status.ok()) break;
    }
    ended = process_status.ok() && !stop_.load();
    if (ended) {
      // The end of the input closes every window.
      if (core::Status s = processor.Finish(); !s.ok()) process_status = s;
    }
    if (core::Status s = process_out.Flush(); !s.ok() && process_status.ok()) process_status = s;
    process_stats_ = processor.stats();
    to_export_.CloseWriter();
    if (!process_status.ok()) {
      to_process_.Cancel();
      to_export_.Cancel();
      replayer.Stop();
    }
  });

  // Exporter: this thread.
  std::vector<core::Record> batch;
  batch.reserve(kBatch);
  while (to_export_.Pop(batch, kBatch)) {
    for (const core::Record& r : batch) exporter_.Apply(r);
    exported_.fetch_add(static_cast<int64_t>(batch.size()));
  }
  replay_thread.join();
  process_thread.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replayer_ = nullptr;
  }
  if (stop_.load()) return core::Status::Ok();  // stopped on request: the cancelled queues are not errors
  if (!replay_status.ok()) return core::Status::Error("replay: " + replay_status.message());
  if (!process_status.ok()) return core::Status::Error("process: " + process_status.message());
  return core::Status::Ok();
}

// --- the exporter's input loops ------------------------------------------------------------------

core::Status ExportFromStdio(std::FILE* in, const std::string& name, exporters::Exporter& exporter,
                             core::InputErrors& errors, const std::atomic<bool>& stop) {
  core::RecordParser parser;
  core::Record record;
  core::LineReader lines(in);
  std::string_view line;
  for (core::LineReader::Result r; !stop.load(std::memory_order_relaxed) && !errors.must_stop() &&
                                   (r = lines.Next(line)) != core::LineReader::Result::kEnd;) {
    if (r == core::LineReader::Result::kTooLong) {
      errors.Report("", "record", name, lines.line_no(), "", lines.TooLongReason());
    } else if (line.empty()) {
      continue;
    } else if (core::Status s = parser.ParseFramedLine(line, record); !s.ok()) {
      errors.Report("", "record", name, lines.line_no(), "", s.message());
    } else {
      exporter.Apply(record);
    }
  }
  if (lines.failed()) return core::Status::Error("reading " + name + ": " + std::strerror(errno));
  if (errors.must_stop()) return core::Status::Error("stopping at the first input error (strict)");
  return core::Status::Ok();
}

core::Status ExportFromKafka(const kafka::KafkaSettings& settings, bool until_end, exporters::Exporter& exporter,
                             core::InputErrors& errors, const std::atomic<bool>& stop) {
  kafka::KafkaSourceOptions options;
  options.topics = {std::string(core::kTopicUtil), std::string(core::kTopicMetrics),
                    std::string(core::kTopicAnomalies)};
  options.stop_at_end = until_end;
  core::Result<std::unique_ptr<kafka::KafkaSource>> opened = kafka::KafkaSource::Open(settings, options, stderr);
  if (!opened.ok()) return opened.status();
  kafka::KafkaSource& source = *opened.value();
  core::RecordParser parser;
  core::Record record;
  while (!stop.load(std::memory_order_relaxed) && !source.at_end()) {
    core::Result<const kafka::FramedRecord*> next = source.Next(200);
    if (!next.ok()) return next.status();
    const kafka::FramedRecord* r = next.value();
    if (r == nullptr) continue;
    if (core::Status s = parser.ParseValue(r->topic, r->value, record); !s.ok()) {
      const std::string_view key = r->key;
      errors.Report(key.substr(0, key.find('/')), "record",
                    std::string(r->topic) + "[" + std::to_string(r->partition) + "]", r->offset, "", s.message());
    } else {
      exporter.Apply(record);
    }
    if (core::Status s = source.MarkProcessed(*r); !s.ok()) return s;
    if (errors.must_stop()) return core::Status::Error("stopping at the first input error (strict)");
  }
  return source.Close();
}

// --- the embedded default ------------------------------------------------------------------------

core::Result<std::string> PrepareDefaultData(const core::Config& config, std::FILE* log) {
  namespace fs = std::filesystem;
  std::string base = config.GetString("run.cache_dir");
  if (base.empty()) {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
      base = std::string(xdg) + "/acmetrace";
    } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
      base = std::string(home) + "/.cache/acmetrace";
    } else {
      base = (fs::temp_directory_path() / "acmetrace").string();
    }
  }
  producers::SynthOptions synth;
  synth.days = static_cast<int>(config.GetInt("run.default_days"));
  synth.scale = config.GetDouble("run.default_scale");
  synth.inject_faults = true;
  if (synth.days < 1 || !(synth.scale > 0)) {
    throw std::invalid_argument("run.default_days and run.default_scale: must be positive");
  }
  const std::string dir =
      base + "/default-d" + std::to_string(synth.days) + "-s" + config.GetString("run.default_scale") + "-faults";
  const std::string done_marker = dir + "/.complete";
  std::error_code ec;
  if (fs::exists(done_marker, ec)) return dir;
  if (log != nullptr) {
    std::fprintf(log, "acmetrace run: synthesizing the default data set (%d day(s), scale %s, faults) into %s\n",
                 synth.days, config.GetString("run.default_scale").c_str(), dir.c_str());
  }
  fs::remove_all(dir, ec);  // an interrupted earlier attempt
  fs::create_directories(dir, ec);
  if (ec) return core::Status::Error(dir + ": cannot create: " + ec.message());
  synth.out_dir = dir;
  core::Result<producers::SynthReport> report = producers::WriteSynthetic(synth);
  if (!report.ok()) return report.status();
  std::ofstream(done_marker) << "synthesized by acmetrace run\n";
  return dir;
}

}  // namespace acmetrace::pipeline

namespace acmetrace::pipeline {

void StopLatch::Trigger() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flag_.store(true);
  }
  cv_.notify_all();
}

bool StopLatch::WaitFor(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return flag_.load(); });
  return flag_.load();
}

core::Status WriteExposition(exporters::Exporter& exporter, const std::string& path) {
  const std::string text = exporter.Exposition();
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return core::Status::Error(path + ": cannot write: " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return core::Status::Error(path + ": write failed: " + std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return core::Status::Error(path + ": cannot rename into place: " + ec.message());
  return core::Status::Ok();
}

}  // namespace acmetrace::pipeline
