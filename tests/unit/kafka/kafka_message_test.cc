// Record → Kafka message: the design's keys, the JSON value, timestamps and the trace_ts_ms header.
#include "acmetrace/kafka/kafka_message.h"

#include <gtest/gtest.h>

#include <string>

#include "acmetrace/core/record_json.h"

namespace acmetrace::kafka {
namespace {

core::JobEvent Job() {
  core::JobEvent e;
  e.cluster = "seren";
  e.event = core::JobEventKind::kSubmit;
  e.ts_ms = 1677601102000;
  e.job_id = "5778432";
  e.user = "u5907";
  e.type = "Other";
  e.node_num = 1;
  e.gpu_num = 8;
  e.cpu_num = 128;
  return e;
}

TEST(MessageEncoderTest, JobEventKeyValueAndReplayTimestamp) {
  MessageEncoder encoder(TimestampMode::kReplay);
  const core::Record record = Job();
  const OutgoingMessage m = encoder.Encode(record);
  EXPECT_EQ(m.topic, "acme.jobs");
  EXPECT_EQ(m.key, "seren/5778432");
  std::string json;
  core::AppendRecordJson(json, record);
  EXPECT_EQ(m.value, json);
  EXPECT_EQ(m.timestamp_ms, 0);  // librdkafka stamps the produce (wall) time
  EXPECT_EQ(m.trace_ts_ms, 1677601102000);
}

TEST(MessageEncoderTest, TraceModeUsesTheTraceTime) {
  MessageEncoder encoder(TimestampMode::kTrace);
  const OutgoingMessage m = encoder.Encode(core::Record(Job()));
  EXPECT_EQ(m.timestamp_ms, 1677601102000);
  EXPECT_EQ(m.trace_ts_ms, 1677601102000);
}

TEST(MessageEncoderTest, UtilAndPowerKeys) {
  MessageEncoder encoder(TimestampMode::kReplay);
  core::UtilSample u;
  u.cluster = "kalos";
  u.node = "10.140.1.10";
  u.ts_ms = 1688169600000;
  u.gpu.push_back({core::InternName("GPU_UTIL"), {99, core::kNoSample}});
  OutgoingMessage m = encoder.Encode(core::Record(u));
  EXPECT_EQ(m.topic, "acme.util");
  EXPECT_EQ(m.key, "kalos/10.140.1.10");
  EXPECT_NE(m.value.find("\"GPU_UTIL\":[99,null]"), std::string_view::npos) << m.value;

  core::PowerSample p;
  p.cluster = "seren";
  p.model = "GPU_AB";
  p.ts_ms = 1677601080000;
  p.fields.emplace_back(core::InternName("Sys_Total_Power"), 2520);
  m = encoder.Encode(core::Record(p));
  EXPECT_EQ(m.topic, "acme.power");
  EXPECT_EQ(m.key, "seren/GPU_AB");
  EXPECT_EQ(m.trace_ts_ms, 1677601080000);
}

TEST(MessageEncoderTest, BuffersAreReused) {
  MessageEncoder encoder(TimestampMode::kReplay);
  core::JobEvent a = Job();
  core::JobEvent b = Job();
  b.job_id = "7";
  (void)encoder.Encode(core::Record(a));
  const OutgoingMessage m = encoder.Encode(core::Record(b));
  EXPECT_EQ(m.key, "seren/7");
  EXPECT_EQ(m.value.find("5778432"), std::string_view::npos);
}

TEST(TraceTsHeaderTest, FormatsAndParsesDecimalMilliseconds) {
  char buf[24];
  EXPECT_EQ(FormatTraceTs(1677601102000, buf), "1677601102000");
  EXPECT_EQ(FormatTraceTs(-5, buf), "-5");
  EXPECT_EQ(ParseTraceTs("1677601102000"), 1677601102000);
  EXPECT_EQ(ParseTraceTs(""), std::nullopt);
  EXPECT_EQ(ParseTraceTs("12x"), std::nullopt);
  EXPECT_EQ(kTraceTsHeader, "trace_ts_ms");
}

TEST(StreamHeadersTest, MarkerTimesAreCheckedLikeRecordTimes) {
  // A marker at year 9999 or INT64_MAX said a partition was done for ever: 6,968 of 9,928 records late.
  using Kind = StreamHeaders::Kind;
  StreamHeaders h = ReadStreamHeaders("progress", "1688169600000");
  EXPECT_EQ(h.kind, Kind::kProgress);
  EXPECT_EQ(h.trace_ts_ms, 1688169600000);
  h = ReadStreamHeaders("progress", "253402300799000");
  EXPECT_EQ(h.kind, Kind::kInvalid);
  EXPECT_EQ(h.error, "header trace_ts_ms: outside the accepted years 2000-2099: '253402300799000'");
  h = ReadStreamHeaders("progress", "9223372036854775807");
  EXPECT_EQ(h.kind, Kind::kInvalid);
  EXPECT_EQ(h.error, "header trace_ts_ms: outside the accepted years 2000-2099: '9223372036854775807'");
  h = ReadStreamHeaders("progress", "99999999999999999999");
  EXPECT_EQ(h.error, "header trace_ts_ms: not a whole number of unix ms: '99999999999999999999'");
  EXPECT_EQ(ReadStreamHeaders("progress", "").error, "progress marker without a trace_ts_ms header");
  // Records: the header is checked the same way; none is fine.
  EXPECT_EQ(ReadStreamHeaders("", "1688169600000").kind, Kind::kRecord);
  EXPECT_EQ(ReadStreamHeaders("", "").kind, Kind::kRecord);
  EXPECT_EQ(ReadStreamHeaders("", "-1").kind, Kind::kInvalid);
  // End markers: their clusters, each a bounded name.
  h = ReadStreamHeaders("end:seren,kalos", "1688169600000");
  EXPECT_EQ(h.kind, Kind::kEnd);
  EXPECT_EQ(h.clusters, "seren,kalos");
  EXPECT_EQ(ReadStreamHeaders("end:", "").kind, Kind::kEnd);
  EXPECT_EQ(ReadStreamHeaders("end:seren," + std::string(257, 'k'), "").kind, Kind::kInvalid);
  EXPECT_EQ(ReadStreamHeaders("v9:later", "1688169600000").kind, Kind::kOtherMarker);
}

TEST(StreamHeadersTest, APausedWritersHeartbeatIsProgressThatSaysSo) {
  using Kind = StreamHeaders::Kind;
  StreamHeaders h = ReadStreamHeaders(kPausedProgressMarker, "1688169600000");
  EXPECT_EQ(h.kind, Kind::kProgress);
  EXPECT_TRUE(h.paused);
  EXPECT_EQ(h.trace_ts_ms, 1688169600000);
  EXPECT_FALSE(ReadStreamHeaders(kProgressMarker, "1688169600000").paused);
  EXPECT_EQ(ReadStreamHeaders(kPausedProgressMarker, "").kind, Kind::kInvalid);
}

}  // namespace
}  // namespace acmetrace::kafka
