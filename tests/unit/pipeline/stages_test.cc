// The stage runners over a scripted input: what arrives in what order must not change the answer,
// and an input ends only when every writer of every partition has ended.
#include "acmetrace/pipeline/stages.h"

#include <gtest/gtest.h>

#include <deque>

#include "acmetrace/core/record_json.h"

namespace acmetrace::pipeline {
namespace {

using Kind = core::InputItem::Kind;
constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01 00:00 UTC

// A RecordInput that hands over a fixed list of items, then nothing; it notes a read past its end.
class ScriptedInput : public core::RecordInput {
 public:
  struct Step {
    Kind kind;
    int partition;
    core::Record record;          // kRecord
    std::string clusters;         // kEnded
    int64_t ts_ms = core::InputItem::kNoTs;  // kProgress
    bool paused = false;                     // kProgress: its writer is paused
  };
  ScriptedInput(std::vector<core::InputPartition> partitions, std::deque<Step> steps, std::atomic<bool>& stop)
      : partitions_(std::move(partitions)), steps_(std::move(steps)), stop_(stop) {}
  const std::vector<core::InputPartition>& partitions() const override { return partitions_; }
  core::Result<core::InputItem> Next(int) override {
    core::InputItem item;
    if (steps_.empty()) {
      read_past_end_ = true;
      stop_.store(true);  // the runner did not see the end: stop it rather than hang the test
      return item;
    }
    current_ = std::move(steps_.front());
    steps_.pop_front();
    item.kind = current_.kind;
    item.partition = current_.partition;
    item.offset = offset_++;
    if (current_.kind == Kind::kRecord) {
      item.record = &current_.record;
      item.ts_ms = core::TimestampMsOf(current_.record);
    }
    if (current_.kind == Kind::kProgress || current_.kind == Kind::kEnded) item.ts_ms = current_.ts_ms;
    item.paused = current_.paused;
    item.clusters = current_.clusters;
    return item;
  }
  bool read_past_end() const { return read_past_end_; }
  size_t left() const { return steps_.size(); }  // steps not read yet

 private:
  std::vector<core::InputPartition> partitions_;
  std::deque<Step> steps_;
  std::atomic<bool>& stop_;
  Step current_{Kind::kNothing, 0, core::Record{}, "", core::InputItem::kNoTs};
  int64_t offset_ = 0;
  bool read_past_end_ = false;
};

class CaptureSink : public core::RecordSink {
 public:
  core::Status Write(const core::Record& record) override {
    std::string json;
    core::AppendRecordJson(json, record);
    lines.push_back(json);
    return core::Status::Ok();
  }
  core::Status Flush() override { return core::Status::Ok(); }
  core::Status End(const std::vector<std::string>& clusters) override {
    ended_with = clusters;
    ended = true;
    return core::Status::Ok();
  }
  std::vector<std::string> lines;
  std::vector<std::string> ended_with;
  bool ended = false;
};

core::Record Util(int64_t t_ms) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = "n1";
  s.ts_ms = t_ms;
  s.gpu.push_back({core::InternName("GPU_UTIL"), {50.0}});
  return s;
}

core::Record Submit(int64_t t_ms) {
  core::JobEvent j;
  j.cluster = "seren";
  j.event = core::JobEventKind::kSubmit;
  j.ts_ms = t_ms;
  j.job_id = "j1";
  j.user = "u1";
  j.type = "Other";
  j.gpu_num = 8;
  j.node_num = 1;
  return j;
}

const std::vector<core::InputPartition> kInputs = {{"acme.jobs/0", "acme.jobs", "acme.jobs[0]"},
                                                   {"acme.util/0", "acme.util", "acme.util[0]"}};

// What a process stage did over a scripted input.
struct ProcessRun {
  std::vector<std::string> lines;  // its output
  processors::ProcessStats stats;
  bool ended = false;          // it ended its output stream (the input ended)
  bool read_past_end = false;  // it read on after the script: it was stopped, not ended
};

ProcessRun Process(std::deque<ScriptedInput::Step> steps, StageOptions stage = StageOptions{}) {
  std::atomic<bool> stop{false};
  ScriptedInput input(kInputs, std::move(steps), stop);
  CaptureSink sink;
  processors::ProcessOptions options;
  options.allowed_lateness_ms = 30'000;
  processors::StreamProcessor processor(options, sink, nullptr);
  core::InputErrors errors(nullptr);
  OwnAllClusters all;
  EXPECT_TRUE(RunProcessStage(input, processor, sink, errors, all, stage, stop).ok());
  return ProcessRun{sink.lines, processor.stats(), sink.ended, input.read_past_end()};
}

TEST(ProcessStageTest, AQuietOrPausedWriterWithMarkersIsNotAnEnd) {
  // A replay paused through its control endpoint for longer than the idleness timeout: both
  // partitions go idle. Its markers say it is a writer that ends with an end marker, so the input
  // has not ended, however long the wait (here: no wait at all).
  StageOptions stage;
  stage.unmarked_end_after_ms = 0;
  std::deque<ScriptedInput::Step> paused;
  for (int64_t t = 0; t <= 300'000; t += 15'000) paused.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  paused.push_back({Kind::kProgress, 0, {}, "", kT0 + 300'000});
  paused.push_back({Kind::kProgress, 1, {}, "", kT0 + 300'000});
  paused.push_back({Kind::kIdle, 0, {}, ""});
  paused.push_back({Kind::kIdle, 1, {}, ""});
  const ProcessRun run = Process(paused, stage);
  EXPECT_TRUE(run.read_past_end) << "a pause was taken for the end of the input";
  EXPECT_FALSE(run.ended);

  // Topics written by a tool without markers: idleness for unmarked_end_after_ms is their end.
  std::deque<ScriptedInput::Step> unmarked;
  for (int64_t t = 0; t <= 300'000; t += 15'000) unmarked.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  unmarked.push_back({Kind::kIdle, 0, {}, ""});
  unmarked.push_back({Kind::kIdle, 1, {}, ""});
  const ProcessRun ended = Process(unmarked, stage);
  EXPECT_FALSE(ended.read_past_end);
  EXPECT_TRUE(ended.ended);

  // ... but not before that wait.
  stage.unmarked_end_after_ms = 600'000;
  const ProcessRun waiting = Process(unmarked, stage);
  EXPECT_TRUE(waiting.read_past_end);
  EXPECT_FALSE(waiting.ended);
}

TEST(ProcessStageTest, AResumedReplayMakesNothingLateHoweverLongItsPause) {
  // A replay paused for longer than kafka.idle_timeout_ms: its paused markers, then both partitions
  // idle. On the resume the util partition's records come through first, ten trace minutes of them,
  // then the job event at 5 min 30 s. Had idleness taken the paused jobs partition out of the
  // watermark, the util records would have moved it past the job event: late.
  std::deque<ScriptedInput::Step> steps;
  for (int64_t t = 0; t <= 300'000; t += 15'000) steps.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  steps.push_back({Kind::kProgress, 0, {}, "", kT0 + 300'000, true});
  steps.push_back({Kind::kProgress, 1, {}, "", kT0 + 300'000, true});
  steps.push_back({Kind::kIdle, 0, {}, ""});
  steps.push_back({Kind::kIdle, 1, {}, ""});
  for (int64_t t = 315'000; t <= 900'000; t += 15'000) steps.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  steps.push_back({Kind::kRecord, 0, Submit(kT0 + 330'000), ""});
  steps.push_back({Kind::kEnded, 0, {}, "seren"});
  steps.push_back({Kind::kEnded, 1, {}, "seren"});
  const ProcessRun got = Process(steps);
  EXPECT_TRUE(got.ended);
  EXPECT_EQ(got.stats.late, 0);

  // A writer that says nothing (no paused marker) is taken out by idleness, as Flink's withIdleness:
  // the same order then makes the job event late, which is what idleness is for.
  std::deque<ScriptedInput::Step> silent;
  for (const ScriptedInput::Step& step : steps) {
    if (step.kind != Kind::kProgress) silent.push_back(step);
  }
  EXPECT_EQ(Process(silent).stats.late, 1);
}

TEST(ProcessStageTest, APartitionReadToItsEndStillHoldsTheWatermarkWhileItsWriterIsLive) {
  // The jobs partition is caught up early (its writer has not delivered yet) while the util
  // partition runs ten minutes ahead; then the job event at 30 s arrives. It is late only if the
  // caught-up partition had stopped holding the watermark (the bug of a concurrent replay).
  std::deque<ScriptedInput::Step> live = {{Kind::kCaughtUp, 0, {}, ""}};
  for (int64_t t = 0; t <= 600'000; t += 15'000) live.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  live.push_back({Kind::kCaughtUp, 1, {}, ""});
  live.push_back({Kind::kRecord, 0, Submit(kT0 + 30'000), ""});
  live.push_back({Kind::kEnded, 0, {}, "seren"});
  live.push_back({Kind::kEnded, 1, {}, "seren"});
  const ProcessRun got = Process(live);
  EXPECT_TRUE(got.ended);
  EXPECT_EQ(got.stats.late, 0);

  // The same records in trace-time order give the same windows.
  std::deque<ScriptedInput::Step> ordered;
  for (int64_t t = 0; t <= 600'000; t += 15'000) {
    ordered.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
    if (t == 30'000) ordered.push_back({Kind::kRecord, 0, Submit(kT0 + 30'000), ""});
  }
  ordered.push_back({Kind::kEnded, 0, {}, "seren"});
  ordered.push_back({Kind::kEnded, 1, {}, "seren"});
  const ProcessRun expected = Process(ordered);
  EXPECT_EQ(got.lines, expected.lines);
  EXPECT_EQ(expected.stats.late, 0);
}

TEST(ProcessStageTest, AProgressMarkerLetsAQuietPartitionsWindowsClose) {
  // Without the marker the quiet jobs partition holds every window open until the end.
  std::deque<ScriptedInput::Step> steps;
  for (int64_t t = 0; t <= 300'000; t += 15'000) steps.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  steps.push_back({Kind::kProgress, 0, {}, "", kT0 + 300'000});
  const ProcessRun run = Process(steps);
  EXPECT_TRUE(run.read_past_end);  // no end markers: it was stopped, not ended
  EXPECT_FALSE(run.ended);
  // Windows up to 300 s - 30 s of lateness closed while the input was still open.
  EXPECT_GE(run.stats.windows, 4);
}

// Takes seren over from a snapshot at its first Poll, as a consumer group's new owner does.
class TakeOverFromSnapshot : public ClusterOwnership {
 public:
  explicit TakeOverFromSnapshot(std::string snapshot) : snapshot_(std::move(snapshot)) {}
  core::Status Start(processors::StreamProcessor& processor, core::RecordInput&) override {
    processor_ = &processor;
    return core::Status::Ok();
  }
  core::Result<bool> Poll(int64_t) override {
    if (!snapshot_.empty()) {
      if (core::Status s = processor_->Restore(snapshot_); !s.ok()) return s;
      snapshot_.clear();
    }
    return true;
  }
  core::Status Consider(std::string_view) override { return core::Status::Ok(); }
  core::Status Checkpoint(int64_t, Save) override { return core::Status::Ok(); }
  core::Status Close() override { return core::Status::Ok(); }

 private:
  std::string snapshot_;
  processors::StreamProcessor* processor_ = nullptr;
};

TEST(ProcessStageTest, AnOwnerTakingOverAfterTheEndMarkersEndsWithTheLastWindows) {
  // The first owner has read every record and both partitions' end markers when a rebalance takes
  // seren from it (its snapshot, saved at the revocation, resumes after the markers). The new owner
  // reads nothing more: it must still end its input and write the windows still open, as one
  // uninterrupted run does, not wait for idleness that may come after the exporter has stopped.
  std::deque<ScriptedInput::Step> steps;
  for (int64_t t = 0; t <= 600'000; t += 15'000) steps.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  steps.push_back({Kind::kRecord, 0, Submit(kT0 + 30'000), ""});
  steps.push_back({Kind::kEnded, 0, {}, "seren"});
  steps.push_back({Kind::kEnded, 1, {}, "seren"});
  const ProcessRun whole = Process(steps);
  ASSERT_TRUE(whole.ended);

  processors::ProcessOptions options;
  options.allowed_lateness_ms = 30'000;
  CaptureSink first_sink;
  processors::StreamProcessor first(options, first_sink, nullptr);
  for (const core::InputPartition& p : kInputs) first.DeclarePartition(p.name);
  first.Own("seren");
  int64_t offset = 0;
  for (ScriptedInput::Step& step : steps) {
    const core::Status s = step.kind == Kind::kRecord ? first.Process(step.partition, offset, std::move(step.record))
                                                      : first.EndMarker(step.partition, offset, step.clusters);
    ASSERT_TRUE(s.ok()) << s.message();
    ++offset;
  }
  ASSERT_TRUE(first.Drain().ok());
  EXPECT_EQ(first.EndedPartitions("seren"), (std::vector<int>{0, 1}));
  ASSERT_LT(first_sink.lines.size(), whole.lines.size()) << "some windows must still be open at the revocation";

  std::atomic<bool> stop{false};
  ScriptedInput rest(kInputs, {}, stop);  // resumed after the markers: nothing left to read
  CaptureSink sink;
  processors::StreamProcessor next(options, sink, nullptr);
  core::InputErrors errors(nullptr);
  TakeOverFromSnapshot take_over(first.Snapshot("seren").value());
  ASSERT_TRUE(RunProcessStage(rest, next, sink, errors, take_over, StageOptions{}, stop).ok());
  EXPECT_FALSE(rest.read_past_end()) << "the new owner did not learn that the input had ended";
  EXPECT_TRUE(sink.ended);
  EXPECT_EQ(sink.ended_with, std::vector<std::string>{"seren"});
  std::vector<std::string> both = first_sink.lines;
  both.insert(both.end(), sink.lines.begin(), sink.lines.end());
  EXPECT_EQ(both, whole.lines);
}

// Owns every cluster; its save before the final windows fails, as on a read-only state directory or
// a full disk.
class SaveFailsAtTheEnd : public OwnAllClusters {
 public:
  core::Status Checkpoint(int64_t, Save when) override {
    if (when == Save::kBeforeFinishing) return core::Status::Error("state/g.seren.state.tmp: cannot write state snapshot: Read-only file system");
    return core::Status::Ok();
  }
};

TEST(ProcessStageTest, ASnapshotThatCannotBeSavedAtTheEndLosesNoWindows) {
  // The windows finish() writes were lost with the failed save (612 of 624 written).
  std::deque<ScriptedInput::Step> steps;
  for (int64_t t = 0; t <= 600'000; t += 15'000) steps.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
  steps.push_back({Kind::kEnded, 0, {}, "seren"});
  steps.push_back({Kind::kEnded, 1, {}, "seren"});
  const ProcessRun whole = Process(steps);
  ASSERT_TRUE(whole.ended);

  std::atomic<bool> stop{false};
  ScriptedInput input(kInputs, steps, stop);
  CaptureSink sink;
  processors::ProcessOptions options;
  options.allowed_lateness_ms = 30'000;
  processors::StreamProcessor processor(options, sink, nullptr);
  core::InputErrors errors(nullptr);
  SaveFailsAtTheEnd failing;
  const core::Status s = RunProcessStage(input, processor, sink, errors, failing, StageOptions{}, stop);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Read-only file system"), std::string::npos) << s.message();
  EXPECT_EQ(sink.lines, whole.lines);
  EXPECT_TRUE(sink.ended);
}

TEST(ProcessStageTest, AForgedProgressMarkerIsAnInputErrorNamingWhereItWas) {
  // A marker 20 minutes ahead in the jobs partition: not trusted, reported, no record late.
  std::deque<ScriptedInput::Step> steps;
  for (int64_t t = 0; t <= 600'000; t += 15'000) {
    steps.push_back({Kind::kRecord, 1, Util(kT0 + t), ""});
    if (t == 60'000) steps.push_back({Kind::kRecord, 0, Submit(kT0 + t), ""});
    if (t == 120'000) steps.push_back({Kind::kProgress, 0, {}, "", kT0 + t + 20 * 60'000});
    if (t == 180'000) steps.push_back({Kind::kProgress, 0, {}, "", kT0 + t});
  }
  std::atomic<bool> stop{false};
  ScriptedInput input(kInputs, steps, stop);
  CaptureSink sink;
  processors::ProcessOptions options;
  options.allowed_lateness_ms = 30'000;
  processors::StreamProcessor processor(options, sink, nullptr);
  core::InputErrors errors(nullptr);
  OwnAllClusters all;
  ASSERT_TRUE(RunProcessStage(input, processor, sink, errors, all, StageOptions{}, stop).ok());
  EXPECT_EQ(errors.total(), 1);
  EXPECT_NE(errors.first().find("acme.jobs[0]:"), std::string::npos) << errors.first();
  EXPECT_NE(errors.first().find("not trusted"), std::string::npos) << errors.first();
  EXPECT_EQ(processor.stats().late, 0);
  EXPECT_EQ(processor.stats().untrusted, 1);
}

TEST(ProcessStageTest, ARecordAfterTheEndMarkerReopensThePartition) {
  // A writer that ended and a cluster's record after it (another run appending): the partition is
  // live again for that cluster, in the processor's state as in the stage.
  processors::ProcessOptions options;
  CaptureSink sink;
  processors::StreamProcessor p(options, sink, nullptr);
  for (const core::InputPartition& in : kInputs) p.DeclarePartition(in.name);
  p.Own("seren");
  p.Own("kalos");
  ASSERT_TRUE(p.EndMarker(1, 0, "kalos,seren").ok());
  ASSERT_TRUE(p.EndMarker(0, 0, "kalos").ok());
  EXPECT_EQ(p.EndedPartitions("seren"), (std::vector<int>{1}));
  EXPECT_EQ(p.EndedPartitions("kalos"), (std::vector<int>{0, 1}));
  ASSERT_TRUE(p.Process(1, 1, Util(kT0)).ok());
  EXPECT_TRUE(p.EndedPartitions("seren").empty());
  EXPECT_EQ(p.EndedPartitions("kalos"), (std::vector<int>{0, 1}));
  ASSERT_TRUE(p.EndMarker(1, 2, "").ok());  // a marker without names ends it for every cluster
  EXPECT_EQ(p.EndedPartitions("seren"), (std::vector<int>{1}));
  // The snapshot carries it to the next owner.
  CaptureSink next_sink;
  processors::StreamProcessor next(options, next_sink, nullptr);
  for (const core::InputPartition& in : kInputs) next.DeclarePartition(in.name);
  ASSERT_TRUE(next.Restore(p.Snapshot("kalos").value()).ok());
  EXPECT_EQ(next.EndedPartitions("kalos"), (std::vector<int>{0, 1}));
}

TEST(ExportStageTest, OneWritersEndMarkerDoesNotEndAPartitionAnotherStillWrites) {
  // Two processor instances write acme.metrics: kalos's ends first; seren's writer still has a
  // window to write into the same partition.
  auto window = [](const std::string& cluster, int64_t end_ms, double records) {
    core::MetricsWindow w;
    w.cluster = cluster;
    w.window_s = 60;
    w.start_ms = end_ms - 60'000;
    w.end_ms = end_ms;
    w.ts_ms = end_ms;
    w.metrics.push_back({"records_total", records});
    return core::Record(w);
  };
  const std::vector<core::InputPartition> partitions = {{"acme.metrics/0", "acme.metrics", "acme.metrics[0]"},
                                                        {"acme.metrics/1", "acme.metrics", "acme.metrics[1]"}};
  std::deque<ScriptedInput::Step> steps = {
      {Kind::kEnded, 1, {}, "seren"},
      {Kind::kEnded, 1, {}, "kalos"},
      {Kind::kRecord, 0, window("seren", kT0 + 60'000, 1), ""},
      {Kind::kRecord, 0, window("kalos", kT0 + 60'000, 2), ""},
      {Kind::kEnded, 0, {}, "kalos"},
      {Kind::kRecord, 0, window("seren", kT0 + 120'000, 7), ""},
      {Kind::kEnded, 0, {}, "seren"},
  };
  std::atomic<bool> stop{false};
  ScriptedInput input(partitions, steps, stop);
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  ASSERT_TRUE(RunExportStage(input, exporter, errors, StageOptions{}, stop).ok());
  EXPECT_FALSE(input.read_past_end()) << "the stage did not see its input end";
  EXPECT_NE(exporter.Exposition().find("acmetrace_cluster_records_total{cluster=\"seren\"} 7"), std::string::npos)
      << exporter.Exposition();
}

// A writer whose stream ended without names (a queue, a file) and that writes again (a progress
// marker, then a record): its partition is not ended until its next end, though every other partition
// has ended meanwhile, in both runners alike.
TEST(ExportStageTest, AProgressMarkerAfterAnEndWithoutNamesReopensThePartitionAsInTheProcessStage) {
  const std::deque<ScriptedInput::Step> steps = {
      {Kind::kRecord, 1, Util(kT0), ""},
      {Kind::kEnded, 1, {}, ""},
      {Kind::kProgress, 1, {}, "", kT0 + 60'000},
      {Kind::kEnded, 0, {}, ""},  // the other partition's writer is done
      {Kind::kRecord, 1, Util(kT0 + 60'000), ""},
      {Kind::kEnded, 1, {}, ""},
  };
  std::atomic<bool> stop{false};
  ScriptedInput input(kInputs, steps, stop);
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  ASSERT_TRUE(RunExportStage(input, exporter, errors, StageOptions{}, stop).ok());
  EXPECT_EQ(input.left(), 0u) << "the export stage ended before the partition's second end";
  EXPECT_FALSE(input.read_past_end());
  const ProcessRun run = Process(steps);
  EXPECT_TRUE(run.ended);
  EXPECT_FALSE(run.read_past_end);
  EXPECT_EQ(run.stats.records, 2) << "the process stage ended before the partition's second end";
}

// What a scrape of n1's persona shows after the script.
std::string PersonaAfter(const std::vector<core::InputPartition>& partitions, std::deque<ScriptedInput::Step> steps) {
  std::atomic<bool> stop{false};
  ScriptedInput input(partitions, std::move(steps), stop);
  core::InputErrors errors(nullptr);
  exporters::Exporter exporter(exporters::ExportOptions{}, &errors);
  EXPECT_TRUE(RunExportStage(input, exporter, errors, StageOptions{}, stop).ok());
  return exporter.Exposition("n1");
}

TEST(ExportStageTest, APersonaLeavesOneTtlAfterItsLastSampleWhenTheTelemetryEnds) {
  // Ten minutes of n1's samples, then the replay's heartbeats as it paces job events for hours: a
  // real exporter whose GPUs stopped reporting is gone from Prometheus, so the persona must go too.
  const int64_t last = kT0 + 600'000;
  const int64_t ttl = exporters::ExportOptions{}.series_ttl_ms;
  const std::vector<core::InputPartition> one = {{"in-process", "", "in-process"}};
  auto samples = [&](int partition) {
    std::deque<ScriptedInput::Step> steps;
    for (int64_t t = kT0; t <= last; t += 60'000) steps.push_back({Kind::kRecord, partition, Util(t), ""});
    return steps;
  };
  std::deque<ScriptedInput::Step> steps = samples(0);
  steps.push_back({Kind::kProgress, 0, {}, "", last + ttl / 2});
  steps.push_back({Kind::kEnded, 0, {}, ""});
  EXPECT_NE(PersonaAfter(one, steps).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << "gone too early";

  steps = samples(0);
  steps.push_back({Kind::kProgress, 0, {}, "", last + ttl + ttl / 2});
  steps.push_back({Kind::kEnded, 0, {}, ""});
  EXPECT_EQ(PersonaAfter(one, steps).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << "frozen after the data ended";

  // One ordered input without heartbeats (`replay | export` through a pipe): the replay's job events
  // after the telemetry are its time moving on.
  steps = samples(0);
  steps.push_back({Kind::kRecord, 0, Submit(last + ttl / 2), ""});
  EXPECT_NE(PersonaAfter(one, steps).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << "gone too early";
  steps = samples(0);
  steps.push_back({Kind::kRecord, 0, Submit(last + ttl + ttl / 2), ""});
  EXPECT_EQ(PersonaAfter(one, steps).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos)
      << "frozen while the pipe's job events went on";

  // The end of the stream is time moving on: over Kafka each util partition's end marker carries the
  // writer's last trace time (hours after the telemetry stopped).
  const std::vector<core::InputPartition> kafka = {{"acme.util/0", "acme.util", "acme.util[0]"},
                                                   {"acme.util/1", "acme.util", "acme.util[1]"}};
  steps = samples(0);
  steps.push_front({Kind::kProgress, 1, {}, "", kT0});
  steps.push_back({Kind::kEnded, 0, {}, "", last + 3'600'000});
  steps.push_back({Kind::kEnded, 1, {}, "", last + 3'600'000});
  EXPECT_EQ(PersonaAfter(kafka, steps).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << "frozen after the data ended";

  // While another util partition is behind, nothing of n1 expires: its records may still come.
  steps = samples(0);
  steps.push_front({Kind::kProgress, 1, {}, "", kT0});
  steps.push_back({Kind::kProgress, 0, {}, "", last + 3'600'000});
  steps.push_back({Kind::kEnded, 0, {}, "", last + 3'600'000});
  EXPECT_NE(PersonaAfter(kafka, steps).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos)
      << "expired while a partition was behind";
}

TEST(ExportStageTest, APausedReplaysPartitionHoldsTheTelemetryBoundWhileIdle) {
  // As in the process stage: a util partition whose writer said it is paused is not taken out by
  // idleness, so the other partition's telemetry, an hour on, does not expire n1 ahead of it.
  const std::vector<core::InputPartition> kafka = {{"acme.util/0", "acme.util", "acme.util[0]"},
                                                   {"acme.util/1", "acme.util", "acme.util[1]"}};
  const int64_t last = kT0 + 600'000;
  auto steps = [&](bool paused) {
    std::deque<ScriptedInput::Step> out;
    out.push_back({Kind::kProgress, 1, {}, "", kT0, paused});
    out.push_back({Kind::kIdle, 1, {}, ""});
    for (int64_t t = kT0; t <= last; t += 60'000) out.push_back({Kind::kRecord, 0, Util(t), ""});
    out.push_back({Kind::kProgress, 0, {}, "", last + 3'600'000});
    return out;
  };
  EXPECT_NE(PersonaAfter(kafka, steps(true)).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos)
      << "expired ahead of the paused partition";
  // A writer that said nothing for the idleness timeout holds nothing back (Flink's withIdleness).
  EXPECT_EQ(PersonaAfter(kafka, steps(false)).find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos)
      << "an idle partition still held the bound";
}

}  // namespace
}  // namespace acmetrace::pipeline
