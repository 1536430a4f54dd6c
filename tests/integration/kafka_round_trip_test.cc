// Replay into a real broker and read back: exactly the stdout feed, per topic and key, with the
// design's keys, the trace time in the value (a trace_ts_ms header only when asked) and replay-time
// timestamps; one delivery report per record.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_message.h"
#include "acmetrace/kafka/kafka_partition_reader.h"
#include "acmetrace/kafka/kafka_sink.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

using PerKey = std::map<std::pair<std::string, std::string>, std::vector<std::string>>;

PerKey ByTopicAndKey(const std::vector<Framed>& records) {
  PerKey out;
  for (const Framed& f : records) out[{f.topic, f.key}].push_back(f.value);
  return out;
}

TEST(KafkaRoundTripTest, ReplayReadsBackAsTheStdoutFeed) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty()) << "no broker: run through ctest (fixture kafka_broker)";
  const std::string data = std::string(Fixtures()) + "/release";

  CommandResult to_stdout = RunCommand(std::string(Binary()) + " replay --data " + data + " --sink stdout");
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  const std::vector<Framed> expected = ParseFramedLines(to_stdout.out);
  ASSERT_GT(expected.size(), 10u);

  const std::string dir = FreshDir("round-trip");
  std::ofstream(dir + "/acmetrace.yaml") << "kafka:\n  partitions: 3\n  retention_ms: -1\n  linger_ms: 5\n";
  const int64_t started_ms = UnixNowMs();
  CommandResult to_kafka = RunCommand(std::string(Binary()) + " --config " + dir + "/acmetrace.yaml replay --data " +
                                      data + " --sink kafka --brokers " + brokers);
  ASSERT_EQ(to_kafka.exit_code, 0) << to_kafka.err;
  const auto n = static_cast<int64_t>(expected.size());
  EXPECT_EQ(NumberBefore(to_kafka.err, "records produced"), n) << to_kafka.err;
  // One end marker into each of the 9 partitions, and progress markers each kafka.progress_interval_ms
  // of trace time into those partitions that got no record since the last ones (ProgressMarkersTest).
  const int64_t markers = NumberBefore(to_kafka.err, "stream markers");
  EXPECT_GE(markers, 9) << to_kafka.err;
  EXPECT_EQ(NumberBefore(to_kafka.err, "delivery reports"), n + markers) << to_kafka.err;
  EXPECT_EQ(NumberBefore(to_kafka.err, "delivered,"), n + markers) << to_kafka.err;
  EXPECT_EQ(NumberBefore(to_kafka.err, "failed)"), 0) << to_kafka.err;
  EXPECT_NE(to_kafka.err.find("created topic acme.jobs (3 partitions, retention.ms=-1)"), std::string::npos)
      << to_kafka.err;

  const std::vector<Framed> got = ConsumeAll(brokers, {"acme.jobs", "acme.util", "acme.power"},
                                             "round-trip-" + std::to_string(::getpid()));
  EXPECT_EQ(got.size(), expected.size());
  // Same records per topic and key, in the same order (a key lives in one partition).
  EXPECT_EQ(ByTopicAndKey(got), ByTopicAndKey(expected));

  // Before its schedule started, the replay put a progress marker at its first record's trace time
  // into every partition and waited for it (RecordSink::Prepare): the first message of each of the
  // 9 partitions.
  {
    int64_t first_trace_ms = INT64_MAX;
    for (const Framed& f : expected) first_trace_ms = std::min(first_trace_ms, TsMsOf(f.value));
    KafkaSettings reader_settings;
    reader_settings.brokers = brokers;
    core::Result<std::unique_ptr<KafkaPartitionReader>> reader = KafkaPartitionReader::Open(reader_settings);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    std::vector<PartitionStart> starts;
    for (const char* topic : {"acme.jobs", "acme.util", "acme.power"}) {
      for (int32_t p = 0; p < 3; ++p) starts.push_back({topic, p, 0});
    }
    ASSERT_TRUE(reader.value()->Assign(starts).ok());
    std::map<std::pair<std::string, int32_t>, std::pair<std::string, int64_t>> first;  // marker, trace time
    // Empty polls only are counted: a partition fetched late (a loaded machine) comes after many
    // records of the others, which the reader does not hold back for more than 5 s.
    for (int empty_polls = 0; first.size() < starts.size() && empty_polls < 200;) {
      core::Result<ReaderEvent> next = reader.value()->Next(100);
      ASSERT_TRUE(next.ok()) << next.status().message();
      if (next.value().kind == ReaderEvent::Kind::kNone) ++empty_polls;
      if (next.value().kind != ReaderEvent::Kind::kRecord) continue;
      const FramedRecord& r = *next.value().record;
      first.emplace(std::make_pair(std::string(r.topic), r.partition),
                    std::make_pair(std::string(r.marker), r.trace_ts_ms));
    }
    ASSERT_EQ(first.size(), starts.size());
    for (const auto& [partition, message] : first) {
      EXPECT_EQ(message.first, kProgressMarker) << partition.first << "[" << partition.second << "]";
      EXPECT_EQ(message.second, first_trace_ms) << partition.first << "[" << partition.second << "]";
    }
  }
  const int64_t finished_ms = UnixNowMs();
  for (const Framed& f : got) {
    EXPECT_EQ(f.trace_ts_header, "") << "a record with a trace_ts_ms header by default: " << f.value;
    EXPECT_EQ(f.trace_ts_ms, TsMsOf(f.value)) << "the reader's trace time is not the value's: " << f.value;
    EXPECT_GE(f.timestamp_ms, started_ms - 1000) << "Kafka timestamp is not the replay time: " << f.value;
    EXPECT_LE(f.timestamp_ms, finished_ms + 1000);
  }

  // Every configured topic exists as configured, the processors' outputs included.
  KafkaSettings settings;
  settings.brokers = brokers;
  core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  for (const char* topic : {"acme.jobs", "acme.util", "acme.power", "acme.metrics", "acme.anomalies"}) {
    core::Result<TopicDescription> d = admin.value()->Describe(topic);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d.value().partitions, 3) << topic;
    EXPECT_EQ(d.value().retention_ms, "-1") << topic;
  }
}

// Three clients (kafka.producer_connections) over four partitions: client 0 writes partitions 0 and 3.
// Read on its own, each partition must be what one client would have written: the start round first,
// its records in the order produced, none below a progress marker before it, the end marker last.
TEST(KafkaRoundTripTest, APartitionKeepsItsOrderAcrossConnections) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  const std::string topic = "it.connections." + std::to_string(::getpid());
  KafkaSettings settings;
  settings.brokers = brokers;
  settings.topics = {topic};
  settings.partitions = 4;
  settings.producer_connections = 3;
  settings.linger_ms = 1;  // many small batches: more chances for one client to overtake another
  core::Result<std::unique_ptr<KafkaSink>> opened = KafkaSink::Open(settings);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  KafkaSink& sink = *opened.value();
  ASSERT_TRUE(sink.DeclareStream({topic}, 60'000).ok());
  // Trace times from 2023-07-01: readers take trace_ts_ms headers in the trace years only.
  constexpr int64_t kT0 = 1'688'169'600'000;
  ASSERT_TRUE(sink.Prepare(kT0).ok());
  // 40 keys (nodes), a record each per 10 s of trace time for an hour; every other 10 minutes all but
  // one fall quiet, so the other partitions get progress markers between records.
  std::map<std::string, std::vector<std::string>> produced;  // by key, in order
  int64_t records = 0;
  for (int64_t ts = kT0; ts < kT0 + 3'600'000; ts += 10'000) {
    for (int node = 0; node < 40; ++node) {
      if (node > 0 && ((ts - kT0) / 600'000) % 2 == 1) continue;
      OutgoingMessage m;
      const std::string key = "seren/10.140.0." + std::to_string(node);
      const std::string value = "{\"ts_ms\":" + std::to_string(ts) + "}";
      m.topic = topic;
      m.key = key;
      m.value = value;
      m.trace_ts_ms = ts;
      ASSERT_TRUE(sink.Produce(m).ok());
      produced[key].push_back(value);
      ++records;
    }
  }
  ASSERT_TRUE(sink.End({"seren"}).ok());
  EXPECT_EQ(sink.counts().delivered, records + sink.counts().markers);

  KafkaSettings reader_settings;
  reader_settings.brokers = brokers;
  core::Result<std::unique_ptr<KafkaPartitionReader>> reader = KafkaPartitionReader::Open(reader_settings);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<PartitionStart> starts;
  for (int32_t p = 0; p < 4; ++p) starts.push_back({topic, p, -1});
  ASSERT_TRUE(reader.value()->Assign(starts).ok());
  struct Seen {
    std::vector<std::string> markers;  // in order
    int64_t watermark = -1;            // the highest progress marker so far
    int64_t below_watermark = 0;       // records after a marker above their trace time
    bool ended = false;
  };
  std::map<int32_t, Seen> seen;
  std::map<std::string, std::vector<std::string>> read;  // by key, in order
  size_t ended = 0;
  for (int empty_polls = 0; ended < starts.size() && empty_polls < 300;) {
    core::Result<ReaderEvent> next = reader.value()->Next(100);
    ASSERT_TRUE(next.ok()) << next.status().message();
    if (next.value().kind == ReaderEvent::Kind::kNone) ++empty_polls;
    if (next.value().kind == ReaderEvent::Kind::kPartitionEnd) {
      if (!seen[next.value().partition].ended) ++ended;
      seen[next.value().partition].ended = true;
      continue;
    }
    if (next.value().kind != ReaderEvent::Kind::kRecord) continue;
    const FramedRecord& r = *next.value().record;
    Seen& s = seen[r.partition];
    if (!r.marker.empty()) {
      s.markers.emplace_back(r.marker);
      if (r.marker == kProgressMarker) s.watermark = std::max(s.watermark, r.trace_ts_ms);
      continue;
    }
    // (A topic of no record kind: the reader knows no field to take the time from; the test does.)
    if (TsMsOf(std::string(r.value)) < s.watermark) ++s.below_watermark;
    read[std::string(r.key)].emplace_back(r.value);
  }
  ASSERT_EQ(ended, starts.size());
  EXPECT_EQ(read, produced);  // every record once, each key's in the order produced
  int quiet_partitions_marked = 0;
  for (const auto& [partition, s] : seen) {
    ASSERT_GE(s.markers.size(), 2u) << partition;
    EXPECT_EQ(s.markers.front(), kProgressMarker) << "partition " << partition << ": the start round first";
    EXPECT_EQ(s.markers.back(), std::string(kEndMarkerPrefix) + "seren") << "partition " << partition;
    EXPECT_EQ(s.below_watermark, 0) << "partition " << partition << ": records behind a progress marker";
    if (s.markers.size() > 2) ++quiet_partitions_marked;
  }
  EXPECT_GT(quiet_partitions_marked, 0) << "no progress marker between records: the check above saw none";
}

// kcat sees keys and values, the trace time in the value; the trace_ts_ms header only with
// kafka.trace_ts_header.
TEST(KafkaRoundTripTest, KcatSeesKeysValuesAndTheTraceHeaderWhenAskedFor) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  for (const bool header : {false, true}) {
    const std::string topic = "it.kcat." + std::to_string(::getpid()) + (header ? ".header" : "");
    KafkaSettings settings;
    settings.brokers = brokers;
    settings.topics = {topic};
    settings.partitions = 1;
    settings.trace_ts_header = header;
    core::Result<std::unique_ptr<KafkaSink>> sink = KafkaSink::Open(settings);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    OutgoingMessage m;
    m.topic = topic;
    m.key = "seren/5778432";
    m.value = R"({"v":1,"ts_ms":1677601102000})";
    m.trace_ts_ms = 1677601102000;
    ASSERT_TRUE(sink.value()->Produce(m).ok());
    ASSERT_TRUE(sink.value()->Flush().ok());
    CommandResult kcat = RunCommand("kcat -b " + brokers + " -C -t " + topic + " -o beginning -e -q -f '%k|%s|%h\\n'");
    ASSERT_EQ(kcat.exit_code, 0) << kcat.err;
    EXPECT_EQ(kcat.out, std::string("seren/5778432|{\"v\":1,\"ts_ms\":1677601102000}|") +
                            (header ? "trace_ts_ms=1677601102000" : "") + "\n");
  }
}

TEST(KafkaRoundTripTest, AProgressMarkerGoesOnlyWhereNoRecordWentInTheLastInterval) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  const std::string topic = "it.progress." + std::to_string(::getpid());
  KafkaSettings settings;
  settings.brokers = brokers;
  settings.topics = {topic};
  settings.partitions = 2;
  core::Result<std::unique_ptr<KafkaSink>> opened = KafkaSink::Open(settings);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  KafkaSink& sink = *opened.value();
  ASSERT_TRUE(sink.DeclareStream({topic}, 60'000).ok());
  // One key, so one partition gets every record: a record a minute of trace time for 5 minutes,
  // then 3 quiet minutes (a record at their end makes the last round).
  auto produce = [&](int64_t ts) {
    OutgoingMessage m;
    m.topic = topic;
    m.key = "seren/job";
    const std::string value = "{\"ts_ms\":" + std::to_string(ts) + "}";
    m.value = value;
    m.trace_ts_ms = ts;
    return sink.Produce(m);
  };
  for (int64_t minute = 0; minute < 5; ++minute) ASSERT_TRUE(produce(minute * 60'000).ok());
  ASSERT_TRUE(produce(8 * 60'000).ok());
  ASSERT_TRUE(sink.End({"seren"}).ok());
  EXPECT_EQ(sink.counts().markers, 5 + 1 + 2);  // the quiet partition: 5 rounds; the busy one: 1; 2 end markers

  CommandResult kcat = RunCommand("kcat -b " + brokers + " -C -t " + topic + " -o beginning -e -q -f '%p|%k|%h\\n'");
  ASSERT_EQ(kcat.exit_code, 0) << kcat.err;
  std::map<std::string, std::vector<std::string>> by_partition;
  std::string busy;
  for (size_t at = 0; at < kcat.out.size();) {
    const size_t nl = kcat.out.find('\n', at);
    const std::string line = kcat.out.substr(at, nl - at);
    at = nl + 1;
    const std::string partition = line.substr(0, line.find('|'));
    const std::string rest = line.substr(line.find('|') + 1);
    if (rest.rfind("seren/job|", 0) == 0) busy = partition;
    by_partition[partition].push_back(rest);
  }
  ASSERT_EQ(by_partition.size(), 2u) << kcat.out;
  const std::string quiet = busy == "0" ? "1" : "0";
  // The records' trace times say how far the busy partition has got: it gets a progress marker
  // only in the round after the quiet minutes, when its last record is more than a minute behind.
  // Records carry no header (their values have the time); markers always do.
  EXPECT_EQ(by_partition[busy],
            (std::vector<std::string>{"seren/job|", "seren/job|", "seren/job|", "seren/job|", "seren/job|",
                                      "|trace_ts_ms=480000,acmetrace_marker=progress", "seren/job|",
                                      "|trace_ts_ms=480000,acmetrace_marker=end:seren"}));
  EXPECT_EQ(by_partition[quiet], (std::vector<std::string>{"|trace_ts_ms=60000,acmetrace_marker=progress",
                                                           "|trace_ts_ms=120000,acmetrace_marker=progress",
                                                           "|trace_ts_ms=180000,acmetrace_marker=progress",
                                                           "|trace_ts_ms=240000,acmetrace_marker=progress",
                                                           "|trace_ts_ms=480000,acmetrace_marker=progress",
                                                           "|trace_ts_ms=480000,acmetrace_marker=end:seren"}));
}

TEST(KafkaRoundTripTest, TraceTimestampModeStampsTheTraceTime) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  const std::string topic = "it.trace-ts." + std::to_string(::getpid());
  KafkaSettings settings;
  settings.brokers = brokers;
  settings.topics = {topic};
  settings.partitions = 2;
  settings.timestamp = TimestampMode::kTrace;
  core::Result<std::unique_ptr<KafkaSink>> sink = KafkaSink::Open(settings);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  MessageEncoder encoder(TimestampMode::kTrace);
  core::PowerSample p;
  p.cluster = "seren";
  p.model = "GPU_AB";
  p.ts_ms = 1677601080000;
  p.fields.emplace_back(core::InternName("Sys_Total_Power"), 2520);
  OutgoingMessage m = encoder.Encode(core::Record(p));
  m.topic = topic;
  ASSERT_TRUE(sink.value()->Produce(m).ok());
  ASSERT_TRUE(sink.value()->Flush().ok());
  EXPECT_EQ(sink.value()->counts().delivered, 1);
  const std::vector<Framed> got = ConsumeAll(brokers, {topic}, "trace-ts-" + std::to_string(::getpid()));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].timestamp_ms, 1677601080000);
  EXPECT_EQ(TsMsOf(got[0].value), 1677601080000);
  EXPECT_EQ(got[0].trace_ts_header, "");  // the time is in the value (kafka.trace_ts_header off)
  EXPECT_EQ(got[0].key, "seren/GPU_AB");
}

TEST(KafkaRoundTripTest, AFatalProducerErrorStopsTheSink) {
  const std::string brokers = SharedBroker();
  ASSERT_FALSE(brokers.empty());
  const std::string topic = "it.fatal." + std::to_string(::getpid());
  KafkaSettings settings;
  settings.brokers = brokers;
  settings.topics = {topic};
  core::Result<std::unique_ptr<KafkaSink>> sink = KafkaSink::Open(settings);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ASSERT_TRUE(sink.value()->Produce({topic, "k", "{}", 0, kNoTraceTs}).ok());
  ASSERT_TRUE(sink.value()->Flush().ok());
  sink.value()->TriggerFatalErrorForTesting("sequence broken on purpose");
  core::Status s = sink.value()->Produce({topic, "k", "{}", 0, kNoTraceTs});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("kafka producer fatal error"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("sequence broken on purpose"), std::string::npos) << s.message();
  EXPECT_FALSE(sink.value()->Flush().ok());
  EXPECT_EQ(sink.value()->counts().delivered, 1);
}

TEST(KafkaRoundTripTest, UnreachableBrokerExitsOneWithAClearMessage) {
  const std::string dir = FreshDir("unreachable");
  std::ofstream(dir + "/acmetrace.yaml") << "kafka:\n  connect_timeout_ms: 1500\n";
  CommandResult r = RunCommand(std::string(Binary()) + " --config " + dir + "/acmetrace.yaml replay --data " +
                               Fixtures() + "/release --sink kafka --brokers 127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ERROR replay: cannot reach Kafka at 127.0.0.1:1 within 1500 ms (kafka.connect_timeout_ms)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace acmetrace::kafka::testing
