// Pipeline (`acmetrace run` over any Transport), CountingTee, the embedded default data set.
#include "acmetrace/pipeline/pipeline.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <variant>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/settings.h"
#include "acmetrace/producers/replay.h"
#include "acmetrace/producers/synth.h"

namespace acmetrace::pipeline {
namespace {

constexpr int64_t kPublishEvery = 1024;

std::string_view ClusterOf(const core::Record& record) {
  return std::visit([](const auto& r) -> std::string_view { return r.cluster; }, record);
}

}  // namespace

// --- CountingTee ---------------------------------------------------------------------------------

CountingTee::CountingTee(std::string stage, exporters::Exporter& exporter, bool note_trace_time, core::RecordSink& out)
    : stage_(std::move(stage)), exporter_(exporter), note_trace_time_(note_trace_time), out_(out) {}

CountingTee::~CountingTee() { Publish(); }

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
  return out_.Write(record);
}

core::Status CountingTee::Flush() {
  Publish();
  return out_.Flush();
}

core::Status CountingTee::Send() {
  Publish();
  return out_.Send();
}

core::Status CountingTee::Prepare(int64_t first_trace_ts_ms) { return out_.Prepare(first_trace_ts_ms); }

core::Status CountingTee::Heartbeat(int64_t trace_ts_ms, bool paused) {
  return out_.Heartbeat(trace_ts_ms, paused);
}

core::Status CountingTee::End(const std::vector<std::string>& clusters) {
  Publish();
  return out_.End(clusters);
}

void CountingTee::Publish() {
  for (auto& [topic, n] : pending_counts_) {
    if (n > 0) exporter_.CountRecords(stage_, topic, n);
    n = 0;
  }
  for (const auto& [cluster, ms] : trace_ms_) exporter_.NoteTraceTime(cluster, ms);
  unpublished_ = 0;
}

// --- Pipeline ------------------------------------------------------------------------------------

Pipeline::Pipeline(PipelineOptions options, Transport& transport, exporters::Exporter& exporter,
                   core::InputErrors& errors)
    : options_(std::move(options)), transport_(transport), exporter_(exporter), errors_(errors) {}

Pipeline::~Pipeline() { Stop(); }

void Pipeline::Stop() {
  stop_requested_.store(true);
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (replayer_ != nullptr) replayer_->Stop();
  }
  transport_.Cancel();
}

producers::ReplayStatus Pipeline::replay_status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (replayer_ == nullptr) return producers::ReplayStatus{};
  return replayer_->status();
}

core::Status Pipeline::Run() {
  core::Result<std::unique_ptr<producers::EventStream>> opened = producers::EventStream::Open(options_.stream, errors_);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<producers::EventStream> stream = std::move(opened).value();

  // Readers first: over Kafka they start where the topics end now, so they read only this run.
  InputHop process_hop{ProcessInputTopics(), InputHop::Start::kEnd, InputHop::Ownership::kAll, /*create_topics=*/true};
  core::Result<std::unique_ptr<core::RecordInput>> process_in = transport_.Reader(process_hop);
  if (!process_in.ok()) return core::Status::Error("process: " + process_in.status().message());
  core::Result<std::unique_ptr<core::RecordInput>> export_in =
      transport_.Reader(InputHop{ExportInputTopics(), InputHop::Start::kEnd, InputHop::Ownership::kAll, true});
  if (!export_in.ok()) return core::Status::Error("export: " + export_in.status().message());
  core::Result<std::unique_ptr<core::RecordSink>> replay_sink = transport_.Writer(OutputHop{ProcessInputTopics(), true});
  if (!replay_sink.ok()) return core::Status::Error("replay: " + replay_sink.status().message());
  core::Result<std::unique_ptr<core::RecordSink>> process_sink =
      transport_.Writer(OutputHop{ProcessOutputTopics(), false});
  if (!process_sink.ok()) return core::Status::Error("process: " + process_sink.status().message());

  CountingTee replay_out("replay", exporter_, /*note_trace_time=*/true, *replay_sink.value());
  core::SteadyClock clock;
  producers::Replayer replayer(*stream, replay_out, clock, errors_, options_.replay);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replayer_ = &replayer;
  }
  if (stop_.load()) replayer.Stop();
  // A failing stage stops the others.
  auto fail = [this, &replayer] {
    stop_.store(true);
    replayer.Stop();
    transport_.Cancel();
  };

  core::Status replay_status = core::Status::Ok();
  std::thread replay_thread([&] {
    core::Result<producers::ReplayStats> stats = replayer.Run();
    if (!stats.ok()) replay_status = stats.status();
    // End waits for every delivery: what the processors read to is all there.
    if (core::Status s = replay_out.End({}); !s.ok() && replay_status.ok() && !stop_.load()) replay_status = s;
    if (!replay_status.ok()) fail();
  });

  core::Status process_status = core::Status::Ok();
  std::thread process_thread([&] {
    CountingTee process_out("process", exporter_, /*note_trace_time=*/false, *process_sink.value());
    processors::StreamProcessor processor(options_.process, process_out, options_.detectors);
    core::Result<std::unique_ptr<ClusterOwnership>> owner =
        transport_.Ownership(process_hop, options_.process, process_out, [](const std::string&) {});
    process_status = owner.ok() ? RunProcessStage(*process_in.value(), processor, process_out, errors_, *owner.value(),
                                                  transport_.EndOfInput(true), stop_)
                                : owner.status();
    process_stats_ = processor.stats();
    if (!process_status.ok()) {
      (void)process_out.End({});  // the exporter still sees the end of what was written
      fail();
    }
  });

  // Exporter: this thread.
  const core::Status export_status =
      RunExportStage(*export_in.value(), exporter_, errors_, transport_.EndOfInput(true), stop_);
  if (!export_status.ok()) fail();
  replay_thread.join();
  process_thread.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    replayer_ = nullptr;
  }
  if (stop_requested_.load()) return core::Status::Ok();  // cancelled hops are not errors then
  if (!replay_status.ok()) return core::Status::Error("replay: " + replay_status.message());
  if (!process_status.ok()) return core::Status::Error("process: " + process_status.message());
  if (!export_status.ok()) return core::Status::Error("export: " + export_status.message());
  return core::Status::Ok();
}

// --- the embedded default ------------------------------------------------------------------------

core::Result<std::string> PrepareDefaultData(const core::Config& config,
                                             const std::function<void(const std::string&)>& log) {
  namespace fs = std::filesystem;
  const RunSettings run = RunSettingsFromConfig(config);
  std::string base = run.cache_dir;
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
  synth.days = run.default_days;
  synth.scale = run.default_scale;
  synth.inject_faults = true;
  const std::string scale_text = core::SettingNumberText(run.default_scale);
  const std::string dir = base + "/default-d" + std::to_string(synth.days) + "-s" + scale_text + "-faults";
  // The marker names the generator: data set by an older one (other incidents for the same seed) is
  // made again rather than scored against what this build's synth would list.
  const std::string done_marker = dir + "/.complete";
  const std::string made_by = "synthesized by acmetrace run, synth generation " +
                              std::to_string(producers::kSynthGeneration) + "\n";
  auto complete = [&] {
    std::ifstream marker(done_marker);
    std::stringstream seen;
    seen << marker.rdbuf();
    return marker && seen.str() == made_by;
  };
  if (complete()) return dir;
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec) return core::Status::Error(base + ": cannot create: " + ec.message());
  // One synthesizer at a time: a second run waits for the first's data set instead of removing the
  // directory under it. The lock is the descriptor's, so it goes with a killed process.
  const std::string lock_path = dir + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return core::Status::Error(lock_path + ": cannot open: " + std::strerror(errno));
  struct LockHolder {
    int fd;
    ~LockHolder() { ::close(fd); }
  } holder{lock_fd};
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    log("waiting for another acmetrace that is synthesizing " + dir);
    while (::flock(lock_fd, LOCK_EX) != 0) {
      if (errno != EINTR) return core::Status::Error(lock_path + ": cannot lock: " + std::strerror(errno));
    }
  }
  if (complete()) return dir;  // made by the one waited for
  log("synthesizing the default data set (" + std::to_string(synth.days) + " day(s), scale " +
      scale_text + ", faults) into " + dir);
  // Written aside and renamed into place complete: dir is either absent, an older generation's, or
  // whole. Whatever an interrupted attempt left aside goes first (nobody else writes: the lock).
  const std::string aside_prefix = fs::path(dir).filename().string() + ".partial-";
  for (const fs::directory_entry& e : fs::directory_iterator(base, ec)) {
    if (e.path().filename().string().rfind(aside_prefix, 0) == 0) fs::remove_all(e.path(), ec);
  }
  const std::string aside = dir + ".partial-" + std::to_string(::getpid());
  fs::remove_all(aside, ec);
  fs::create_directories(aside, ec);
  if (ec) return core::Status::Error(aside + ": cannot create: " + ec.message());
  synth.out_dir = aside;
  core::Result<producers::SynthReport> report = producers::WriteSynthetic(synth);
  if (!report.ok()) {
    fs::remove_all(aside, ec);
    return report.status();
  }
  {
    std::ofstream marker(aside + "/.complete");
    marker << made_by;
    marker.close();
    if (!marker) {
      fs::remove_all(aside, ec);
      return core::Status::Error(aside + "/.complete: cannot write");
    }
  }
  fs::remove_all(dir, ec);  // an older generation's
  fs::rename(aside, dir, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(aside, ec);
    return core::Status::Error(dir + ": cannot move the synthesized data set into place: " + why);
  }
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
