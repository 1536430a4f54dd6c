// The engine: windows close on the watermark, late records are counted and kept, the output does
// not depend on how the input is split or interleaved, snapshots resume exactly, ownership splits.
#include "acmetrace/processors/stream_processor.h"

#include <gtest/gtest.h>

#include <cstring>

#include "acmetrace/processors/evidence_gate.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/processors/state_codec.h"
#include "snapshot_sections.h"

namespace acmetrace::processors {
namespace {

constexpr int64_t kT0 = 1688169600000;  // 2023-07-01 00:00 UTC, a whole minute

/// Records every written record as its framed line.
class CaptureSink : public core::RecordSink {
 public:
  core::Status Write(const core::Record& record) override {
    core::AppendFramedLine(text, record);
    records.push_back(record);
    return core::Status::Ok();
  }
  core::Status Flush() override { return core::Status::Ok(); }
  std::vector<core::MetricsWindow> Windows(std::string_view cluster = "", int64_t window_s = 0) const {
    std::vector<core::MetricsWindow> out;
    for (const core::Record& r : records) {
      if (const auto* w = std::get_if<core::MetricsWindow>(&r)) {
        if ((cluster.empty() || w->cluster == cluster) && (window_s == 0 || w->window_s == window_s)) out.push_back(*w);
      }
    }
    return out;
  }
  std::string text;
  std::vector<core::Record> records;
};

double Metric(const core::MetricsWindow& w, const std::string& name) {
  for (const auto& [n, v] : w.metrics) {
    if (n == name) return v;
  }
  return -1;
}

/// A deterministic stand-in detector: a GPU with utilization 0 opens "test_idle", a later nonzero
/// sample closes it.
class IdleGpuDetector : public Detector {
 public:
  std::string_view kind() const override { return "test_idle"; }
  void Observe(const core::Record& record) override {
    const auto* s = std::get_if<core::UtilSample>(&record);
    if (s == nullptr) return;
    ASSERT_GE(s->ts_ms, last_ts_) << "detectors see event-time order";
    last_ts_ = s->ts_ms;
    for (const core::GpuMetric& m : s->gpu) {
      if (m.name != "GPU_UTIL") continue;
      for (size_t i = 0; i < m.values.size(); ++i) {
        const std::string subject = s->node + "-" + std::to_string(i);
        const bool idle = m.values[i] == 0;
        if (idle != open_[subject]) {
          open_[subject] = idle;
          core::AnomalyEvent a;
          a.cluster = s->cluster;
          a.kind = "test_idle";
          a.subject = subject;
          a.open = idle;
          a.ts_ms = s->ts_ms;
          a.value = m.values[i];
          a.threshold = 0;
          pending_.push_back(a);
        }
      }
    }
  }
  void AdvanceTo(int64_t watermark_ms, std::vector<core::AnomalyEvent>& out) override {
    std::stable_sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
      return std::tie(a.ts_ms, a.subject) < std::tie(b.ts_ms, b.subject);
    });
    size_t n = 0;
    while (n < pending_.size() && pending_[n].ts_ms <= watermark_ms) out.push_back(pending_[n++]);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // One instance per cluster (the engine makes one set per cluster): all of it is the cluster's.
  void SaveState(std::string_view, StateWriter& out) const override {
    out.I64(last_ts_);
    out.U64(open_.size());
    for (const auto& [subject, open] : open_) {
      out.Str(subject);
      out.U64(open ? 1 : 0);
    }
    out.U64(pending_.size());
    for (const core::AnomalyEvent& a : pending_) {
      std::string json;
      core::AppendRecordJson(json, core::Record(a));
      out.Str(json);
    }
  }
  void LoadState(std::string_view, StateReader& in) override {
    last_ts_ = in.I64();
    open_.clear();
    const uint64_t n = in.Count(16);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      std::string subject = in.Str();
      open_[subject] = in.U64() != 0;
    }
    pending_.clear();
    const uint64_t m = in.Count(8);
    core::RecordParser parser;
    for (uint64_t i = 0; i < m && in.ok(); ++i) {
      core::Record r;
      if (!parser.ParseValue("acme.anomalies", in.Str(), r).ok() || !std::holds_alternative<core::AnomalyEvent>(r)) {
        in.Fail();
        return;
      }
      pending_.push_back(std::get<core::AnomalyEvent>(r));
    }
  }

 private:
  int64_t last_ts_ = 0;
  std::map<std::string, bool> open_;
  std::vector<core::AnomalyEvent> pending_;
};

DetectorFactory FakeDetectors() {
  return [] {
    std::vector<std::unique_ptr<Detector>> d;
    d.push_back(std::make_unique<IdleGpuDetector>());
    return d;
  };
}

core::UtilSample Util(const std::string& cluster, const std::string& node, int64_t ts_ms, std::vector<double> util) {
  core::UtilSample s;
  s.cluster = cluster;
  s.node = node;
  s.ts_ms = ts_ms;
  s.gpu.push_back({core::InternName("GPU_UTIL"), std::move(util)});
  s.host.push_back({core::InternName("NODE_CPU_UTILIZATION"), 0.25});
  return s;
}

core::JobEvent Job(const std::string& cluster, core::JobEventKind kind, int64_t ts_ms, const std::string& id,
                   int64_t gpus) {
  core::JobEvent e;
  e.cluster = cluster;
  e.event = kind;
  e.ts_ms = ts_ms;
  e.job_id = id;
  e.user = "u";
  e.type = gpus > 8 ? "Pretrain" : "Eval";
  e.node_num = 1;
  e.gpu_num = gpus;
  e.cpu_num = 4;
  if (kind != core::JobEventKind::kSubmit) e.queue_s = 5;
  if (kind == core::JobEventKind::kEnd) {
    e.state = (std::hash<std::string>{}(id) % 3 == 0) ? "FAILED" : "COMPLETED";
    e.duration_s = 60;
    e.gpu_time = 60.0 * static_cast<double>(gpus);
  }
  return e;
}

/// A time-ordered feed of two clusters over `minutes`: 4 nodes sampled every 15 s each, jobs
/// submitted, started and ended, an IPMI row a minute. Deterministic.
std::vector<core::Record> Feed(int minutes, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::vector<core::Record> out;
  int job = 0;
  std::multimap<int64_t, core::Record> later;  // starts and ends, by time
  for (int64_t t = kT0; t < kT0 + minutes * 60'000; t += 15'000) {
    while (!later.empty() && later.begin()->first <= t) {
      out.push_back(later.begin()->second);
      later.erase(later.begin());
    }
    for (const char* cluster : {"kalos", "seren"}) {
      for (int n = 0; n < 4; ++n) {
        std::vector<double> util;
        for (int g = 0; g < 4; ++g) util.push_back(static_cast<double>(rng() % 3 == 0 ? 0 : rng() % 101));
        out.emplace_back(Util(cluster, "10.0.0." + std::to_string(n), t, util));
      }
      if (rng() % 2 == 0) {
        const std::string id = std::string(cluster) + "-" + std::to_string(job++);
        const int64_t gpus = static_cast<int64_t>(rng() % 3) * 8;
        out.emplace_back(Job(cluster, core::JobEventKind::kSubmit, t + 1000, id, gpus));
        const int64_t start = t + 1000 + static_cast<int64_t>(rng() % 40) * 1000;
        later.emplace(start, Job(cluster, core::JobEventKind::kStart, start, id, gpus));
        const int64_t end = start + static_cast<int64_t>(1 + rng() % 300) * 1000;
        later.emplace(end, Job(cluster, core::JobEventKind::kEnd, end, id, gpus));
      }
    }
    if ((t - kT0) % 60'000 == 0) {
      core::PowerSample p;
      p.cluster = "seren";
      p.model = "GPU_A";
      p.ts_ms = t;
      p.fields = {{core::InternName("Sys_Total_Power"), 2000.0 + static_cast<double>(rng() % 100)}};
      out.emplace_back(p);
    }
  }
  // The feed is ordered by time (ties keep the order they were made in, as the replay does).
  std::stable_sort(out.begin(), out.end(),
                   [](const core::Record& a, const core::Record& b) { return core::TimestampMsOf(a) < core::TimestampMsOf(b); });
  return out;
}

ProcessOptions TestOptions() {
  ProcessOptions o;
  o.allowed_lateness_ms = 30'000;
  return o;
}

std::string RunOnePartition(const std::vector<core::Record>& feed, ProcessOptions options = TestOptions()) {
  CaptureSink sink;
  StreamProcessor p(options, sink, FakeDetectors());
  p.SetOwnAll(true);
  const int part = p.DeclarePartition("stdin");
  for (core::Record r : feed) EXPECT_TRUE(p.Process(part, -1, std::move(r)).ok());
  EXPECT_TRUE(p.Finish().ok());
  EXPECT_EQ(p.stats().late, 0);
  return sink.text;
}

TEST(StreamProcessorTest, WindowsCloseOnlyWhenTheWatermarkPassesTheirEnd) {
  CaptureSink sink;
  ProcessOptions options = TestOptions();
  StreamProcessor p(options, sink, nullptr);
  p.SetOwnAll(true);
  const int part = p.DeclarePartition("stdin");
  ASSERT_TRUE(p.Process(part, -1, Util("seren", "n1", kT0 + 5'000, {1})).ok());
  ASSERT_TRUE(p.Process(part, -1, Util("seren", "n1", kT0 + 60'000, {2})).ok());
  // Watermark = 60 s - 30 s lateness: the first minute is still open.
  EXPECT_EQ(p.watermark_ms("seren"), kT0 + 30'000);
  EXPECT_TRUE(sink.records.empty());
  ASSERT_TRUE(p.Process(part, -1, Util("seren", "n1", kT0 + 89'999, {3})).ok());
  EXPECT_TRUE(sink.records.empty());
  ASSERT_TRUE(p.Process(part, -1, Util("seren", "n1", kT0 + 90'000, {4})).ok());
  ASSERT_EQ(sink.Windows().size(), 3u);  // 60, 300 and 3600 s views of the first minute
  EXPECT_EQ(sink.Windows()[0].end_ms, kT0 + 60'000);
  EXPECT_EQ(Metric(sink.Windows()[0], "records"), 1);
  ASSERT_TRUE(p.Finish().ok());
  const auto minutes = sink.Windows("seren", 60);
  ASSERT_EQ(minutes.size(), 2u);
  EXPECT_EQ(Metric(minutes[1], "records"), 3);
  EXPECT_EQ(Metric(minutes[1], "records_total"), 4);
}

TEST(StreamProcessorTest, LateRecordsAreCountedAndFoldedIntoTheOldestOpenWindow) {
  CaptureSink sink;
  StreamProcessor p(TestOptions(), sink, nullptr);
  p.SetOwnAll(true);
  const int part = p.DeclarePartition("stdin");
  ASSERT_TRUE(p.Process(part, -1, Job("seren", core::JobEventKind::kSubmit, kT0 + 1'000, "j", 8)).ok());
  ASSERT_TRUE(p.Process(part, -1, Job("seren", core::JobEventKind::kStart, kT0 + 2'000, "j", 8)).ok());
  ASSERT_TRUE(p.Process(part, -1, Util("seren", "n", kT0 + 100'000, {1})).ok());  // closes minute 0
  ASSERT_EQ(sink.Windows("seren", 60).size(), 1u);
  EXPECT_EQ(Metric(sink.Windows("seren", 60)[0], "jobs_running{type=Eval}"), 1);
  // The job's end comes 97 s behind: below the watermark (70 s). Not dropped: counted as late and
  // applied at the watermark, so the running gauge comes back to 0.
  ASSERT_TRUE(p.Process(part, -1, Job("seren", core::JobEventKind::kEnd, kT0 + 3'000, "j", 8)).ok());
  EXPECT_EQ(p.stats().late, 1);
  ASSERT_TRUE(p.Finish().ok());
  const auto minutes = sink.Windows("seren", 60);
  ASSERT_EQ(minutes.size(), 2u);
  EXPECT_EQ(minutes[1].start_ms, kT0 + 60'000);  // the window holding the watermark (70 s)
  EXPECT_EQ(Metric(minutes[1], "late_records"), 1);
  EXPECT_EQ(Metric(minutes[1], "late_records_total"), 1);
  EXPECT_EQ(Metric(minutes[1], "jobs_running{type=Eval}"), 0);
  EXPECT_EQ(Metric(minutes[1], "jobs_finished_total{kind=gpu,type=Eval,state=" +
                                   std::string(std::hash<std::string>{}("j") % 3 == 0 ? "FAILED" : "COMPLETED") + "}"),
            1);
}

TEST(StreamProcessorTest, TheWatermarkIsTheLowestOverPartitionsAndIdlePartitionsDoNotHoldIt) {
  CaptureSink sink;
  StreamProcessor p(TestOptions(), sink, nullptr);
  p.SetOwnAll(true);
  const int a = p.DeclarePartition("acme.util/0");
  const int b = p.DeclarePartition("acme.util/1");
  ASSERT_TRUE(p.Process(a, 0, Util("seren", "n1", kT0 + 200'000, {1})).ok());
  EXPECT_EQ(p.watermark_ms("seren"), kNoTime) << "partition b has said nothing yet";
  ASSERT_TRUE(p.Process(b, 0, Util("seren", "n2", kT0 + 10'000, {1})).ok());
  EXPECT_EQ(p.watermark_ms("seren"), kT0 - 20'000);
  // b lags a by minutes, yet its records are in order in b: not late.
  ASSERT_TRUE(p.Process(b, 1, Util("seren", "n2", kT0 + 70'000, {1})).ok());
  EXPECT_EQ(p.stats().late, 0);
  EXPECT_EQ(p.watermark_ms("seren"), kT0 + 40'000);
  EXPECT_TRUE(sink.records.empty());
  p.SetPartitionIdle(b, true);  // b caught up: a alone sets the watermark
  EXPECT_EQ(p.watermark_ms("seren"), kT0 + 170'000);
  EXPECT_EQ(sink.Windows("seren", 60).size(), 2u);
}

TEST(StreamProcessorTest, ASparsePartitionStopsHoldingTheWatermarkAtItsWritersProgressMarker) {
  CaptureSink sink;
  StreamProcessor p(TestOptions(), sink, nullptr);
  p.SetOwnAll(true);
  const int util = p.DeclarePartition("acme.util/0");
  const int jobs = p.DeclarePartition("acme.jobs/0");
  ASSERT_TRUE(p.Process(jobs, 0, Job("seren", core::JobEventKind::kSubmit, kT0 + 1'000, "j", 8)).ok());
  for (int64_t t = 0; t <= 180'000; t += 15'000) {
    ASSERT_TRUE(p.Process(util, t / 15'000, Util("seren", "n1", kT0 + t, {1})).ok());
  }
  // The jobs partition's next record is far ahead, but the processor cannot know: it holds.
  EXPECT_EQ(p.watermark_ms("seren"), kT0 + 1'000 - 30'000);
  EXPECT_TRUE(sink.records.empty());
  // The replay's progress marker in the jobs partition: nothing before 180 s will come from it.
  ASSERT_TRUE(p.Progress(jobs, 1, kT0 + 180'000).ok());
  EXPECT_EQ(p.watermark_ms("seren"), kT0 + 150'000);
  EXPECT_EQ(sink.Windows("seren", 60).size(), 2u);
  EXPECT_EQ(p.stats().late, 0);
}

// The feed split into three partitions by key (two of telemetry, one of job and power records),
// as the replay writes it into Kafka, with forged items put in before record `at` of the feed.
struct PartitionedRun {
  CaptureSink sink;
  StreamProcessor p;
  std::vector<int64_t> next_offset = std::vector<int64_t>(3, 0);
  std::vector<std::string> untrusted;  // what the reporter was told, "partition:offset: reason"
  explicit PartitionedRun(ProcessOptions options) : p(options, sink, FakeDetectors()) {
    p.SetOwnAll(true);
    for (const char* name : {"acme.util/0", "acme.util/1", "acme.jobs/0"}) p.DeclarePartition(name);
    p.SetUntrustedReporter([this](int partition, int64_t offset, const std::string& reason) {
      untrusted.push_back(std::to_string(partition) + ":" + std::to_string(offset) + ": " + reason);
    });
  }
  static int PartitionOf(const core::Record& r) {
    if (const auto* u = std::get_if<core::UtilSample>(&r)) return (u->node.back() - '0') % 2;
    return 2;
  }
  void Record(core::Record r) {
    const int part = PartitionOf(r);
    ASSERT_TRUE(p.Process(part, next_offset[part]++, std::move(r)).ok());
  }
  void Marker(int part, int64_t ts_ms) { ASSERT_TRUE(p.Progress(part, next_offset[part]++, ts_ms).ok()); }
  // Feeds the feed; before record `at`, calls forge(*this, the time of record `at`).
  template <typename Forge>
  std::string Run(const std::vector<core::Record>& feed, size_t at, Forge forge) {
    for (size_t i = 0; i < feed.size(); ++i) {
      if (i == at) forge(*this, core::TimestampMsOf(feed[i]));
      Record(feed[i]);
    }
    EXPECT_TRUE(p.Finish().ok());
    return sink.text;
  }
};

TEST(StreamProcessorTest, ForgedProgressMarkersAheadAreInputErrorsThatMakeNothingLate) {
  // One forged marker 20 minutes ahead in one partition made 134 records late; one in every
  // partition dropped windows; one at year 9999 or INT64_MAX made most of the rest late.
  const std::vector<core::Record> feed = Feed(40);
  const size_t at = feed.size() / 3;
  PartitionedRun honest(TestOptions());
  const std::string expected = honest.Run(feed, at, [](PartitionedRun&, int64_t) {});
  ASSERT_EQ(honest.p.stats().late, 0);
  ASSERT_TRUE(honest.untrusted.empty());
  const int64_t twenty_minutes = 20 * 60'000;
  struct Case {
    const char* what;
    std::function<void(PartitionedRun&, int64_t)> forge;
    size_t forged;
  };
  const std::vector<Case> cases = {
      {"one partition, 20 min ahead", [&](PartitionedRun& r, int64_t t) { r.Marker(0, t + twenty_minutes); }, 1},
      {"every partition, 20 min ahead",
       [&](PartitionedRun& r, int64_t t) {
         for (int part = 0; part < 3; ++part) r.Marker(part, t + twenty_minutes);
       },
       3},
      {"year 9999", [](PartitionedRun& r, int64_t) { r.Marker(1, 253'402'300'799'000); }, 1},
      {"INT64_MAX", [](PartitionedRun& r, int64_t) { r.Marker(2, INT64_MAX); }, 1},
  };
  for (const Case& c : cases) {
    PartitionedRun forged(TestOptions());
    EXPECT_EQ(forged.Run(feed, at, c.forge), expected) << c.what;
    EXPECT_EQ(forged.p.stats().late, 0) << c.what;
    EXPECT_EQ(forged.p.stats().untrusted, static_cast<int64_t>(c.forged)) << c.what;
    ASSERT_EQ(forged.untrusted.size(), c.forged) << c.what;
    EXPECT_NE(forged.untrusted[0].find("ms (process.max_partition_lead_ms) ahead of its partition and what followed "
                                       "there is earlier"),
              std::string::npos)
        << forged.untrusted[0];
  }
  // Without the bound, the same forgery does the damage the bound prevents.
  ProcessOptions trusting = TestOptions();
  trusting.max_partition_lead_ms = 0;
  PartitionedRun unbounded(trusting);
  unbounded.Run(feed, at, cases[1].forge);
  EXPECT_GT(unbounded.p.stats().late, 100);
}

TEST(StreamProcessorTest, ForgedValidRecordsAheadAreDroppedAsInputErrors) {
  // 18 forged valid records 20 minutes ahead (one per partition) made 1,404 records late and raised
  // fleet-wide telemetry_gap flags.
  const std::vector<core::Record> feed = Feed(40);
  const size_t at = feed.size() / 2;
  PartitionedRun honest(TestOptions());
  const std::string expected = honest.Run(feed, at, [](PartitionedRun&, int64_t) {});
  PartitionedRun forged(TestOptions());
  const std::string output = forged.Run(feed, at, [](PartitionedRun& r, int64_t t) {
    r.Record(Util("seren", "10.0.0.0", t + 20 * 60'000, {0, 0, 0, 0}));  // partition 0
    r.Record(Util("seren", "10.0.0.1", t + 20 * 60'000, {0, 0, 0, 0}));  // partition 1
    r.Record(Job("seren", core::JobEventKind::kSubmit, t + 20 * 60'000, "forged", 8));  // partition 2
  });
  EXPECT_EQ(output, expected);
  EXPECT_EQ(forged.p.stats().late, 0);
  EXPECT_EQ(forged.p.stats().untrusted, 3);
  EXPECT_EQ(forged.p.stats().records, honest.p.stats().records);
  ASSERT_EQ(forged.untrusted.size(), 3u);
  EXPECT_NE(forged.untrusted[0].find(", record dropped"), std::string::npos) << forged.untrusted[0];
}

TEST(StreamProcessorTest, AnHonestJumpAheadIsTrustedOnceItsPartitionGoesOnFromIt) {
  // After a quiet spell the replay's markers and records jump ahead in every partition at once:
  // the same output as with every time trusted at once, and no input error.
  std::vector<core::Record> feed = Feed(10);
  for (core::Record r : Feed(10, 2)) {  // the same again, an hour later
    std::visit([](auto& v) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, core::JobEvent>) {
        v.job_id += "-later";
      }
      v.ts_ms += 3'600'000;
    }, r);
    feed.push_back(std::move(r));
  }
  auto run = [&](int64_t lead) {
    ProcessOptions options = TestOptions();
    options.max_partition_lead_ms = lead;
    PartitionedRun r(options);
    const std::string text = r.Run(feed, Feed(10).size(), [](PartitionedRun& r, int64_t t) {
      for (int part = 0; part < 3; ++part) r.Marker(part, t);  // the replay's round before the jump's first record
    });
    EXPECT_TRUE(r.untrusted.empty()) << r.untrusted.front();
    EXPECT_EQ(r.p.stats().late, 0);
    return text;
  };
  EXPECT_EQ(run(300'000), run(0));
}

TEST(StreamProcessorTest, TheWorkerThreadWritesTheSameBytesAndSnapshots) {
  const std::vector<core::Record> feed = Feed(40);
  const std::string reference = RunOnePartition(feed);
  ProcessOptions with_worker = TestOptions();
  with_worker.worker_thread = true;
  EXPECT_EQ(RunOnePartition(feed, with_worker), reference);

  // A snapshot taken mid-stream waits for the worker: it is the one-thread snapshot.
  CaptureSink one_sink, two_sink;
  StreamProcessor one(TestOptions(), one_sink, FakeDetectors());
  StreamProcessor two(with_worker, two_sink, FakeDetectors());
  for (StreamProcessor* p : {&one, &two}) {
    p->SetOwnAll(true);
    const int part = p->DeclarePartition("stdin");
    for (size_t i = 0; i < feed.size() / 2; ++i) {
      core::Record r = feed[i];
      ASSERT_TRUE(p->Process(part, static_cast<int64_t>(i), std::move(r)).ok());
      p->ReuseRecord(r);
    }
  }
  EXPECT_EQ(two.Snapshot("seren").value(), one.Snapshot("seren").value());
  ASSERT_TRUE(two.Drain().ok());
  EXPECT_EQ(two_sink.text, one_sink.text);
  EXPECT_EQ(two.stats().windows, one.stats().windows);
  EXPECT_GT(two.stats().windows, 0);
}

TEST(StreamProcessorTest, SameInputSplitDifferentlyGivesByteIdenticalOutput) {
  const std::vector<core::Record> feed = Feed(40);
  const std::string reference = RunOnePartition(feed);
  ASSERT_FALSE(reference.empty());
  EXPECT_NE(reference.find("\"test_idle\""), std::string::npos) << "the detector's output is part of the check";

  for (uint32_t seed : {1u, 2u, 3u}) {
    for (int partitions : {2, 3, 6}) {
      // Records keyed to partitions as Kafka does (by key), each partition in order, partitions
      // interleaved at random in chunks, and neighbours of different keys swapped within a
      // partition (jitter well inside the allowed lateness).
      std::vector<std::vector<core::Record>> parts(static_cast<size_t>(partitions));
      for (const core::Record& r : feed) {
        std::string key;
        core::AppendKey(key, r);
        parts[std::hash<std::string>{}(key) % parts.size()].push_back(r);
      }
      std::mt19937 rng(seed);
      for (auto& part : parts) {
        for (size_t i = 1; i < part.size(); ++i) {
          std::string k1, k2;
          core::AppendKey(k1, part[i - 1]);
          core::AppendKey(k2, part[i]);
          if (k1 != k2 && rng() % 4 == 0 && core::TimestampMsOf(part[i]) - core::TimestampMsOf(part[i - 1]) < 20'000) {
            std::swap(part[i - 1], part[i]);
            ++i;
          }
        }
      }
      CaptureSink sink;
      StreamProcessor p(TestOptions(), sink, FakeDetectors());
      p.SetOwnAll(true);
      std::vector<int> ids;
      for (int i = 0; i < partitions; ++i) ids.push_back(p.DeclarePartition("acme.util/" + std::to_string(i)));
      std::vector<size_t> next(parts.size(), 0);
      for (;;) {
        std::vector<size_t> open;
        for (size_t i = 0; i < parts.size(); ++i) {
          if (next[i] < parts[i].size()) open.push_back(i);
        }
        if (open.empty()) break;
        const size_t i = open[rng() % open.size()];
        const size_t chunk = 1 + rng() % 50;
        for (size_t k = 0; k < chunk && next[i] < parts[i].size(); ++k, ++next[i]) {
          ASSERT_TRUE(p.Process(ids[i], static_cast<int64_t>(next[i]), core::Record(parts[i][next[i]])).ok());
        }
        if (next[i] == parts[i].size()) p.SetPartitionIdle(ids[i], true);
      }
      ASSERT_TRUE(p.Finish().ok());
      EXPECT_EQ(p.stats().late, 0);
      EXPECT_EQ(sink.text, reference) << "seed " << seed << ", " << partitions << " partitions";
    }
  }
}

TEST(StreamProcessorTest, ARestoredSnapshotResumesWithoutCountingAnythingTwice) {
  const std::vector<core::Record> feed = Feed(30, 7);
  ProcessOptions options = TestOptions();
  CaptureSink whole;
  {
    StreamProcessor p(options, whole, nullptr);
    p.Own("seren");
    p.Own("kalos");
    const int part = p.DeclarePartition("acme.util/0");
    for (size_t i = 0; i < feed.size(); ++i) ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
    ASSERT_TRUE(p.Finish().ok());
  }
  for (size_t cut : {size_t{1}, feed.size() / 3, feed.size() / 2, feed.size() - 1}) {
    CaptureSink first, second;
    std::vector<std::string> snapshots;
    {
      StreamProcessor p(options, first, nullptr);
      p.Own("seren");
      p.Own("kalos");
      const int part = p.DeclarePartition("acme.util/0");
      for (size_t i = 0; i < cut; ++i) ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
      for (const std::string& c : p.owned()) snapshots.push_back(p.Snapshot(c).value());
      // ...and it goes on a little after the snapshot before it is killed: that output is lost
      // with it, or written again by the next run.
      for (size_t i = cut; i < std::min(cut + 40, feed.size()); ++i) {
        ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
      }
    }
    StreamProcessor p(options, second, nullptr);
    const int part = p.DeclarePartition("acme.util/0");
    for (const std::string& s : snapshots) ASSERT_TRUE(p.Restore(s).ok());
    EXPECT_EQ(p.ResumeOffset(part), static_cast<int64_t>(cut));
    // A reader that starts a little early (another cluster's older offset, or a re-fetch) is harmless.
    for (size_t i = cut > 10 ? cut - 10 : 0; i < feed.size(); ++i) {
      ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
    }
    ASSERT_TRUE(p.Finish().ok());
    // What the first run wrote up to its snapshot plus what the second wrote is the whole output.
    std::string before_snapshot;
    {
      CaptureSink again;
      StreamProcessor q(options, again, nullptr);
      q.Own("seren");
      q.Own("kalos");
      const int qp = q.DeclarePartition("acme.util/0");
      for (size_t i = 0; i < cut; ++i) ASSERT_TRUE(q.Process(qp, static_cast<int64_t>(i), core::Record(feed[i])).ok());
      before_snapshot = again.text;
    }
    EXPECT_EQ(before_snapshot + second.text, whole.text) << "cut at " << cut;
  }
}

// The fake plus every real kind, tuned so that the random feed opens and closes flags of several.
DetectorFactory FakeAndRealDetectors() {
  return [] {
    core::Config config;
    DeclareDetectorConfig(config);
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"detect.node_failure.states", "FAILED"},
             {"detect.node_failure.hold_s", "300"},
             {"detect.large_job_failure.min_gpus", "16"},
             {"detect.large_job_failure.hold_s", "120"},
             {"detect.telemetry_gap.open_after_s", "15"},
             {"detect.failure_burst.min_history_s", "300"},
             {"detect.failure_burst.baseline_s", "600"},
             {"detect.failure_burst.windows_s", "60,120"},
             {"detect.failure_burst.dedupe_s", "0"},
             {"detect.failure_burst.open_score", "1"},
             {"detect.failure_burst.close_score", "0.5"},
             {"detect.failure_burst.close_for_s", "60"},
         }) {
      EXPECT_TRUE(config.Set(k, v).ok()) << k;
    }
    std::vector<std::unique_ptr<Detector>> d = FakeDetectors()();
    for (auto& real : MakeDetectors(config)) d.push_back(std::move(real));
    return d;
  };
}

std::vector<core::AnomalyEvent> Anomalies(const CaptureSink& sink) {
  std::vector<core::AnomalyEvent> out;
  for (const core::Record& r : sink.records) {
    if (const auto* a = std::get_if<core::AnomalyEvent>(&r)) out.push_back(*a);
  }
  return out;
}

std::string AnomalyText(const std::vector<core::AnomalyEvent>& anomalies) {
  std::string out;
  for (const core::AnomalyEvent& a : anomalies) core::AppendFramedLine(out, core::Record(a));
  return out;
}

TEST(StreamProcessorTest, FlagsCloseInTraceTimeWithoutRecordsAndNoneOutlivesTheData) {
  // Ten minutes of telemetry with a large job failing at its end, then only the replay's progress
  // (it paces job events hours apart): the large job's flag closes hold_s (120 s) after the job's
  // end when the watermark passes it, not at the next record; the telemetry stopped, so no telemetry
  // flag stays open; at the end of the input nothing is open.
  std::vector<core::Record> feed = Feed(10, 5);
  const int64_t end_ms = kT0 + 10 * 60'000;
  core::JobEvent failed = Job("seren", core::JobEventKind::kEnd, end_ms, "big", 32);
  failed.state = "FAILED";
  feed.emplace_back(failed);
  CaptureSink sink;
  StreamProcessor p(TestOptions(), sink, FakeAndRealDetectors());
  p.SetOwnAll(true);
  const int part = p.DeclarePartition("in-process");
  for (core::Record r : feed) ASSERT_TRUE(p.Process(part, -1, std::move(r)).ok());
  std::map<std::string, int> open;  // kind/subject -> open count written so far
  auto open_flags = [&] {
    open.clear();
    for (const core::AnomalyEvent& a : Anomalies(sink)) open[a.kind + "/" + a.subject] += a.open ? 1 : -1;
    std::erase_if(open, [](const auto& kv) { return kv.second == 0; });
    return open;
  };
  // Two hours of heartbeats, a minute apart: time moves on without a record.
  for (int64_t t = end_ms + 60'000; t <= end_ms + 2 * 3'600'000; t += 60'000) ASSERT_TRUE(p.Progress(part, -1, t).ok());
  bool closed_at_hold = false;
  for (const core::AnomalyEvent& a : Anomalies(sink)) {
    if (a.kind == "large_job_failure" && a.subject == "big" && !a.open) closed_at_hold = a.ts_ms == end_ms + 120'000;
  }
  EXPECT_TRUE(closed_at_hold) << AnomalyText(Anomalies(sink));
  // Only the fake kind (of no known evidence: it ends with the input) may still be open.
  for (const auto& [flag, n] : open_flags()) {
    EXPECT_EQ(flag.rfind("test_idle/", 0), 0u) << flag << " open two hours after its evidence ended";
  }
  ASSERT_TRUE(p.Finish().ok());
  EXPECT_TRUE(open_flags().empty()) << "open after the end of the input: " << open.begin()->first;
  // No metrics window was written for the two hours without records.
  for (const core::Record& r : sink.records) {
    if (const auto* w = std::get_if<core::MetricsWindow>(&r)) {
      EXPECT_LE(w->end_ms, end_ms + 60'000);
    }
  }
}

TEST(StreamProcessorTest, ARestoredSnapshotResumesDetectorsWithoutFlaggingAnythingTwice) {
  // Some nodes fall silent for a while (telemetry_gap) besides the fake's idle GPUs and the job flags.
  std::vector<core::Record> feed;
  for (core::Record& r : Feed(30, 11)) {
    const auto* u = std::get_if<core::UtilSample>(&r);
    if (u != nullptr && u->node == "10.0.0.3" && u->ts_ms > kT0 + 300'000 && u->ts_ms < kT0 + 600'000) continue;
    feed.push_back(std::move(r));
  }
  const ProcessOptions options = TestOptions();
  CaptureSink whole;
  {
    StreamProcessor p(options, whole, FakeAndRealDetectors());
    p.Own("seren");
    p.Own("kalos");
    const int part = p.DeclarePartition("acme.util/0");
    for (size_t i = 0; i < feed.size(); ++i) ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
    ASSERT_TRUE(p.Finish().ok());
  }
  const std::vector<core::AnomalyEvent> expected = Anomalies(whole);
  std::set<std::string> kinds;
  for (const core::AnomalyEvent& a : expected) kinds.insert(a.kind);
  EXPECT_GE(kinds.size(), 4u) << "the feed should exercise several kinds";
  for (const char* kind : {"node_failure", "large_job_failure", "telemetry_gap", "test_idle"}) {
    EXPECT_EQ(kinds.count(kind), 1u) << kind;
  }

  for (size_t cut : {size_t{1}, feed.size() / 5, feed.size() / 3, feed.size() / 2, feed.size() - 1}) {
    std::vector<std::string> snapshots;
    std::vector<core::AnomalyEvent> before;
    {
      CaptureSink first;
      StreamProcessor p(options, first, FakeAndRealDetectors());
      p.Own("seren");
      p.Own("kalos");
      const int part = p.DeclarePartition("acme.util/0");
      for (size_t i = 0; i < cut; ++i) ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
      for (const std::string& c : p.owned()) snapshots.push_back(p.Snapshot(c).value());
      before = Anomalies(first);
      // Killed a little after the snapshot: what it wrote after it is lost or written again.
      for (size_t i = cut; i < std::min(cut + 40, feed.size()); ++i) {
        ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
      }
    }
    CaptureSink second;
    StreamProcessor p(options, second, FakeAndRealDetectors());
    const int part = p.DeclarePartition("acme.util/0");
    for (const std::string& s : snapshots) {
      std::string warning;
      ASSERT_TRUE(p.Restore(s, &warning).ok());
      EXPECT_EQ(warning, "");
    }
    for (size_t i = cut > 10 ? cut - 10 : 0; i < feed.size(); ++i) {
      ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
    }
    ASSERT_TRUE(p.Finish().ok());
    std::vector<core::AnomalyEvent> resumed = before;
    for (const core::AnomalyEvent& a : Anomalies(second)) resumed.push_back(a);
    EXPECT_EQ(AnomalyText(resumed), AnomalyText(expected)) << "cut at " << cut;
  }
}

TEST(StreamProcessorTest, ATruncatedSnapshotIsAnErrorAndAnOldVersionLoadsWithFreshDetectors) {
  const std::vector<core::Record> feed = Feed(10, 3);
  const ProcessOptions options = TestOptions();
  CaptureSink sink;
  StreamProcessor p(options, sink, FakeAndRealDetectors());
  p.Own("seren");
  const int part = p.DeclarePartition("acme.util/0");
  for (size_t i = 0; i < feed.size() / 2; ++i) ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
  const std::string snapshot = p.Snapshot("seren").value();
  for (size_t n = 0; n < snapshot.size(); n += (n < 64 ? 1 : 13)) {
    CaptureSink s2;
    StreamProcessor q(options, s2, FakeAndRealDetectors());
    EXPECT_FALSE(q.Restore(std::string_view(snapshot).substr(0, n)).ok()) << "truncated to " << n;
    EXPECT_EQ(q.owned_count(), 0u);
  }
  {
    CaptureSink s2;
    StreamProcessor q(options, s2, FakeAndRealDetectors());
    EXPECT_FALSE(q.Restore(snapshot + "x").ok()) << "trailing bytes";
  }

  // Versions 1-6 were one run of fields, each the one before with a piece more at its end (1: the windows;
  // 2: the detectors; 3: the capacity; 4: the partitions whose writer ended; 5: the consumer group and a
  // checksum; 6: the evidence gate). Made from this build's sections, each loads, and is saved again as
  // version 7 with what it lacked at its default.
  {
    StreamProcessor without(options, sink, nullptr);
    without.Own("seren");
    const int wp = without.DeclarePartition("acme.util/0");
    for (size_t i = 0; i < feed.size() / 2; ++i) ASSERT_TRUE(without.Process(wp, static_cast<int64_t>(i), core::Record(feed[i])).ok());
    const std::string v7 = without.Snapshot("seren").value();
    const testing::SnapshotSections now = testing::ReadSnapshotSections(v7);
    ASSERT_TRUE(now.ok);
    ASSERT_EQ(now.version, 7u);
    ASSERT_EQ(now.Names(), (std::vector<std::string>{"windows", "detectors", "capacity", "writer_ends", "group", "evidence"}));
    ASSERT_EQ(now.Bytes("group"), std::string(8, '\0')) << "the group is \"\" here";
    StateWriter empty_gate;
    empty_gate(EvidenceGate{});
    ASSERT_NE(now.Bytes("evidence"), empty_gate.bytes()) << "the gate should have seen the nodes";
    auto saved_again = [&](const std::string& old, std::string* warning = nullptr) {
      CaptureSink s;
      StreamProcessor r(options, s, nullptr);
      EXPECT_TRUE(r.Restore(old, warning).ok());
      return testing::ReadSnapshotSections(r.Snapshot("seren").value());
    };
    // Version 6: everything; saved again to the byte.
    {
      CaptureSink s6;
      StreamProcessor r(options, s6, nullptr);
      ASSERT_TRUE(r.Restore(testing::LegacySnapshot(now, 6, now.Names())).ok());
      EXPECT_TRUE(r.Snapshot("seren").value() == v7);
    }
    // Version 4 (before the checksum): the group is taken as this one's, the gate starts afresh.
    const testing::SnapshotSections from4 =
        saved_again(testing::LegacySnapshot(now, 4, {"windows", "detectors", "capacity", "writer_ends"}));
    ASSERT_TRUE(from4.ok);
    for (const char* name : {"windows", "detectors", "capacity", "writer_ends", "group"}) {
      EXPECT_TRUE(from4.Bytes(name) == now.Bytes(name)) << name;
    }
    EXPECT_TRUE(from4.Bytes("evidence") == empty_gate.bytes());
    // Version 3: no ended writer either.
    {
      CaptureSink s3;
      StreamProcessor r(options, s3, nullptr);
      ASSERT_TRUE(r.Restore(testing::LegacySnapshot(now, 3, {"windows", "detectors", "capacity"})).ok());
      EXPECT_TRUE(r.EndedPartitions("seren").empty());
      const testing::SnapshotSections from3 = testing::ReadSnapshotSections(r.Snapshot("seren").value());
      EXPECT_TRUE(from3.Bytes("windows") == now.Bytes("windows"));
      EXPECT_TRUE(from3.Bytes("capacity") == now.Bytes("capacity"));
    }
    // Version 1: the windows only; detectors start afresh, with a warning, and it resumes where it was.
    CaptureSink s1;
    StreamProcessor q(options, s1, FakeAndRealDetectors());
    std::string warning;
    ASSERT_TRUE(q.Restore(testing::LegacySnapshot(now, 1, {"windows"}), &warning).ok());
    EXPECT_NE(warning.find("detectors start afresh"), std::string::npos) << warning;
    EXPECT_EQ(q.ResumeOffset(0), static_cast<int64_t>(feed.size() / 2));
  }
}

// Version 7's sections: a new piece of state is a new section. A section this build does not know
// (written by a newer one), one twice, one at a newer layout, or no windows section: refused by name,
// nothing owned; a section left out (an older writer's) loads at its default.
TEST(StreamProcessorTest, SnapshotSectionsUnknownTwiceNewerOrMissingAreRefusedByName) {
  const std::vector<core::Record> feed = Feed(10, 3);
  const ProcessOptions options = TestOptions();
  CaptureSink sink;
  StreamProcessor p(options, sink, FakeAndRealDetectors());
  p.Own("seren");
  const int part = p.DeclarePartition("acme.util/0");
  for (size_t i = 0; i < feed.size() / 2; ++i) ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
  const testing::SnapshotSections now = testing::ReadSnapshotSections(p.Snapshot("seren").value());
  ASSERT_TRUE(now.ok);
  auto write = [&](const std::vector<std::pair<std::string, std::pair<uint64_t, std::string>>>& sections) {
    StateWriter w;
    w.Str(now.magic);
    w(now.version, now.cluster);
    w.U64(sections.size());
    for (const auto& [name, part] : sections) {
      w.Str(name);
      w(part.first);
      w.Str(part.second);
    }
    std::string bytes = w.Take();
    const uint32_t crc = testing::SnapshotCrc(bytes);
    bytes.append(reinterpret_cast<const char*>(&crc), sizeof crc);
    return bytes;
  };
  auto refusal = [&](const std::string& snapshot) {
    CaptureSink s;
    StreamProcessor q(options, s, FakeAndRealDetectors());
    const core::Status status = q.Restore(snapshot);
    EXPECT_EQ(q.owned_count(), status.ok() ? 1u : 0u);
    return status.ok() ? std::string("loaded") : status.message();
  };
  ASSERT_EQ(refusal(write(now.sections)), "loaded");
  auto with_extra = now.sections;
  with_extra.push_back({"gpu_power", {1, "x"}});
  EXPECT_EQ(refusal(write(with_extra)),
            "state snapshot of seren: section 'gpu_power' is not one this build reads (a newer acmetrace wrote it?)");
  auto twice = now.sections;
  twice.push_back(now.sections[4]);
  EXPECT_EQ(refusal(write(twice)), "state snapshot of seren: section 'group' twice");
  auto newer = now.sections;
  newer[1].second.first = 2;
  EXPECT_EQ(refusal(write(newer)), "state snapshot of seren: section detectors has layout 2, this build reads 1 to 1");
  auto no_windows = now.sections;
  no_windows.erase(no_windows.begin());
  EXPECT_EQ(refusal(write(no_windows)), "state snapshot of seren: no windows section");
  auto cut = now.sections;
  cut[0].second.second.pop_back();
  EXPECT_EQ(refusal(write(cut)), "state snapshot of seren: section windows: truncated or malformed");
  // Without the evidence section (as a writer before it would have left it): loads, the gate afresh.
  auto older = now.sections;
  older.pop_back();
  EXPECT_EQ(refusal(write(older)), "loaded");
}

TEST(StreamProcessorTest, ClustersOwnedByTwoInstancesGiveTheSameOutputAsOne) {
  const std::vector<core::Record> feed = Feed(25, 3);
  const std::string reference = RunOnePartition(feed);
  std::map<std::string, std::string> by_cluster;
  for (const char* cluster : {"kalos", "seren"}) {
    CaptureSink sink;
    StreamProcessor p(TestOptions(), sink, FakeDetectors());
    p.Own(cluster);
    const int part = p.DeclarePartition("stdin");
    for (size_t i = 0; i < feed.size(); ++i) {
      const auto& cl = std::visit([](const auto& v) -> const std::string& { return v.cluster; }, feed[i]);
      if (p.Owns(cl)) {
        ASSERT_TRUE(p.Process(part, static_cast<int64_t>(i), core::Record(feed[i])).ok());
      } else {
        ASSERT_TRUE(p.Skip(part, static_cast<int64_t>(i), core::TimestampMsOf(feed[i])).ok());
      }
    }
    ASSERT_TRUE(p.Finish().ok());
    by_cluster[cluster] = sink.text;
  }
  // Each instance's output is exactly its cluster's lines of the single instance's output.
  std::map<std::string, std::string> expected;
  size_t start = 0;
  while (start < reference.size()) {
    const size_t nl = reference.find('\n', start);
    const std::string line = reference.substr(start, nl + 1 - start);
    expected[line.find("\"key\":\"seren") != std::string::npos ? "seren" : "kalos"] += line;
    start = nl + 1;
  }
  EXPECT_EQ(by_cluster["seren"], expected["seren"]);
  EXPECT_EQ(by_cluster["kalos"], expected["kalos"]);
}

TEST(StreamProcessorTest, StateIsBoundedByTheWindowsNotTheHistory) {
  // The state (buffered records, minute aggregates of the longest view, jobs in flight) after 70
  // minutes and after 4 hours is about the same size: it follows the windows, not the history.
  CaptureSink sink;
  StreamProcessor p(TestOptions(), sink, nullptr);
  p.SetOwnAll(true);
  const int part = p.DeclarePartition("stdin");
  const std::vector<core::Record> feed = Feed(240, 5);
  size_t at_70_minutes = 0;
  for (const core::Record& r : feed) {
    if (at_70_minutes == 0 && core::TimestampMsOf(r) >= kT0 + 70 * 60'000) at_70_minutes = p.Snapshot("seren").value().size();
    ASSERT_TRUE(p.Process(part, -1, core::Record(r)).ok());
  }
  const size_t at_end = p.Snapshot("seren").value().size();
  ASSERT_GT(at_70_minutes, 0u);
  EXPECT_LT(static_cast<double>(at_end), 1.3 * static_cast<double>(at_70_minutes));
  EXPECT_EQ(p.ResumeOffset(part), -1);
}

}  // namespace
}  // namespace acmetrace::processors
