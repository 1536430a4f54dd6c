// JSON of records and the stdio framing, byte for byte as design.md "Records" writes them.
#include "acmetrace/core/record_json.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/core/transport.h"

namespace acmetrace::core {
namespace {

JobEvent SerenExampleJob(JobEventKind kind) {
  JobEvent e;
  e.cluster = "seren";
  e.event = kind;
  e.job_id = "5778432";
  e.user = "u5907";
  e.type = "Other";
  e.node_num = 1;
  e.gpu_num = 8;
  e.cpu_num = 128;
  switch (kind) {
    case JobEventKind::kSubmit:
      e.ts_ms = 1677601102000;
      break;
    case JobEventKind::kStart:
      e.ts_ms = 1677601134000;
      e.queue_s = 32;
      break;
    case JobEventKind::kEnd:
      e.ts_ms = 1677601251000;
      e.queue_s = 32;
      e.state = "FAILED";
      e.duration_s = 117;
      e.gpu_time = 936.0;
      break;
  }
  return e;
}

std::string Json(const Record& r) {
  std::string out;
  AppendRecordJson(out, r);
  return out;
}

std::string Number(double v) {
  std::string out;
  AppendJsonNumber(out, v);
  return out;
}

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

constexpr char kStatic[] =
    R"("job_id":"5778432","user":"u5907","type":"Other","node_num":1,"gpu_num":8,"cpu_num":128)";

TEST(RecordJsonTest, WritesTheDesignsSubmitEvent) {
  EXPECT_EQ(Json(SerenExampleJob(JobEventKind::kSubmit)),
            std::string(R"({"v":1,"cluster":"seren","event":"submit","ts_ms":1677601102000,)") + kStatic + "}");
}

TEST(RecordJsonTest, WritesTheDesignsStartEvent) {
  EXPECT_EQ(Json(SerenExampleJob(JobEventKind::kStart)),
            std::string(R"({"v":1,"cluster":"seren","event":"start","ts_ms":1677601134000,)") + kStatic +
                R"(,"queue_s":32})");
}

TEST(RecordJsonTest, WritesTheDesignsEndEvent) {
  EXPECT_EQ(Json(SerenExampleJob(JobEventKind::kEnd)),
            std::string(R"({"v":1,"cluster":"seren","event":"end","ts_ms":1677601251000,)") + kStatic +
                R"(,"state":"FAILED","duration_s":117,"queue_s":32,"gpu_time":936})");
}

TEST(RecordJsonTest, WritesMissingPublishedNumbersAsNull) {
  JobEvent e = SerenExampleJob(JobEventKind::kEnd);
  e.queue_s = kNoSample;
  e.duration_s = kNoSample;
  e.gpu_time = kNoSample;
  EXPECT_EQ(Json(e), std::string(R"({"v":1,"cluster":"seren","event":"end","ts_ms":1677601251000,)") + kStatic +
                         R"(,"state":"FAILED","duration_s":null,"queue_s":null,"gpu_time":null})");
}

TEST(RecordJsonTest, WritesTheDesignsUtilizationRecord) {
  UtilSample s;
  s.cluster = "seren";
  s.node = "10.140.1.10";
  s.ts_ms = 1688169600000;
  s.gpu.push_back(GpuMetric{InternName("GPU_UTIL"), {99, 98, 0, 100, 97, 99, kNoSample, 100}});
  s.gpu.push_back(GpuMetric{InternName("GPU_TEMP"), {41, 40, 38, 45, 44, 41, kNoSample, 43}});
  s.host.push_back(HostMetric{InternName("NODE_CPU_UTILIZATION"), 8.101});
  s.host.push_back(HostMetric{InternName("NODE_MEMORY_UTILIZATION"), 12.3});
  EXPECT_EQ(Json(s),
            R"({"v":1,"cluster":"seren","node":"10.140.1.10","ts_ms":1688169600000,)"
            R"("gpu":{"GPU_UTIL":[99,98,0,100,97,99,null,100],"GPU_TEMP":[41,40,38,45,44,41,null,43]},)"
            R"("host":{"NODE_CPU_UTILIZATION":8.101,"NODE_MEMORY_UTILIZATION":12.3}})");
}

TEST(RecordJsonTest, WritesAnEmptyMetricNameWithoutTouchingItsMissingData) {
  // Found by record_parser_fuzz under UBSan: an empty name's view has no data pointer, and memcpy
  // was handed it (undefined even for 0 bytes). Seed: corpus/record_parser_fuzz/empty_gpu_metric_name.
  UtilSample s;
  s.cluster = "seren";
  s.node = "n1";
  s.ts_ms = 1688169600000;
  s.gpu.push_back(GpuMetric{std::string_view(), {0.5}});
  EXPECT_EQ(Json(s), R"({"v":1,"cluster":"seren","node":"n1","ts_ms":1688169600000,"gpu":{"":[0.5]},"host":{}})");
}

// Whether a metric name needs escaping is remembered per interned name: a name that needs it is
// escaped every time, next to plain names, and two names that share their address's slot in the
// memory are each written as they are.
TEST(RecordJsonTest, EscapesInternedMetricNamesEveryTime) {
  UtilSample s;
  s.cluster = "seren";
  s.node = "n1";
  s.ts_ms = 1;
  s.gpu.push_back(GpuMetric{InternName("GPU_UTIL"), {1}});
  s.gpu.push_back(GpuMetric{InternName("odd\"name"), {2}});
  s.host.push_back(HostMetric{InternName("back\\slash"), 3});
  const std::string expected = R"({"v":1,"cluster":"seren","node":"n1","ts_ms":1,"gpu":{"GPU_UTIL":[1],"odd\"name":[2]},)"
                               R"("host":{"back\\slash":3}})";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Json(s), expected) << "round " << i;
  // Many names, plain and not, more than the remembered slots: each keeps its own escaping.
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back((i % 3 == 0 ? "q\"" : "M_") + std::to_string(i));
  for (int round = 0; round < 2; ++round) {
    for (const std::string& name : names) {
      UtilSample one;
      one.cluster = "c";
      one.node = "n";
      one.ts_ms = 0;
      one.host.push_back(HostMetric{InternName(name), 1});
      const std::string written = name[0] == 'q' ? "q\\\"" + name.substr(2) : name;
      ASSERT_EQ(Json(one), R"({"v":1,"cluster":"c","node":"n","ts_ms":0,"gpu":{},"host":{")" + written + R"(":1}})")
          << name;
    }
  }
}

TEST(RecordJsonTest, WritesEmptyUtilizationGroupsAsEmptyObjects) {
  UtilSample s;
  s.cluster = "kalos";
  s.node = "lingjun-pod9-0016";
  s.ts_ms = 1684321260000;
  s.gpu.push_back(GpuMetric{InternName("GPU_UTIL"), {100, kNoSample, kNoSample, 0}});
  EXPECT_EQ(Json(s), R"({"v":1,"cluster":"kalos","node":"lingjun-pod9-0016","ts_ms":1684321260000,)"
                     R"("gpu":{"GPU_UTIL":[100,null,null,0]},"host":{}})");
  s.gpu.clear();
  s.host.push_back(HostMetric{InternName("NODE_IB_SEND"), 12345});
  EXPECT_EQ(Json(s), R"({"v":1,"cluster":"kalos","node":"lingjun-pod9-0016","ts_ms":1684321260000,)"
                     R"("gpu":{},"host":{"NODE_IB_SEND":12345}})");
}

TEST(RecordJsonTest, WritesThePowerRecord) {
  PowerSample p;
  p.cluster = "seren";
  p.model = "GPU_AB";
  p.ts_ms = 1677601080000;
  p.fields.emplace_back(InternName("Sys_Total_Power"), 2520);
  EXPECT_EQ(Json(p), R"({"v":1,"cluster":"seren","model":"GPU_AB","ts_ms":1677601080000,)"
                     R"("fields":{"Sys_Total_Power":2520}})");
  p.fields.emplace_back(InternName("CPU_Power"), 400.5);
  EXPECT_EQ(Json(p), R"({"v":1,"cluster":"seren","model":"GPU_AB","ts_ms":1677601080000,)"
                     R"("fields":{"Sys_Total_Power":2520,"CPU_Power":400.5}})");
}

TEST(RecordJsonTest, FramesALineWithTopicAndKey) {
  std::string out;
  AppendFramedLine(out, SerenExampleJob(JobEventKind::kSubmit));
  EXPECT_EQ(out, std::string(R"({"topic":"acme.jobs","key":"seren/5778432","value":)") +
                     R"({"v":1,"cluster":"seren","event":"submit","ts_ms":1677601102000,)" + kStatic + "}}\n");

  UtilSample s;
  s.cluster = "seren";
  s.node = "10.140.1.10";
  out.clear();
  AppendFramedLine(out, s);
  EXPECT_EQ(out.rfind(R"({"topic":"acme.util","key":"seren/10.140.1.10","value":{"v":1,)", 0), 0u) << out;

  PowerSample p;
  p.cluster = "seren";
  p.model = "GPU_B";
  out.clear();
  AppendFramedLine(out, p);
  EXPECT_EQ(out.rfind(R"({"topic":"acme.power","key":"seren/GPU_B","value":{"v":1,)", 0), 0u) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);
}

TEST(RecordJsonTest, EscapesKeysThatNeedIt) {
  JobEvent e = SerenExampleJob(JobEventKind::kSubmit);
  e.job_id = "a\"b\\c";
  std::string out;
  AppendFramedLine(out, e);
  EXPECT_EQ(out.rfind(R"({"topic":"acme.jobs","key":"seren/a\"b\\c","value":)", 0), 0u) << out;
  EXPECT_NE(out.find(R"("job_id":"a\"b\\c")"), std::string::npos) << out;
}

TEST(AppendJsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("a\"b"), R"("a\"b")");
  EXPECT_EQ(JsonString("a\\b"), R"("a\\b")");
  EXPECT_EQ(JsonString("l1\nl2\r\t"), R"("l1\u000al2\u000d\u0009")");
  EXPECT_EQ(JsonString(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(JsonString(std::string("nul\0x", 5)), R"("nul\u0000x")");
}

// Names are checked eight bytes at a time (a short one padded, a long one's tail as its last eight
// bytes): a character to escape is found at every position of a string of every length up to
// three words, and every other byte (digits, dots, UTF-8) passes.
TEST(AppendJsonStringTest, EscapesAtEveryPositionOfStringsOfEveryLength) {
  const std::string full = "10.140.1.10-mlx5_0/\xC2\xB0" "Cabc";
  for (size_t length = 0; length <= full.size(); ++length) {
    const std::string base = full.substr(0, length);
    EXPECT_EQ(JsonString(base), "\"" + base + "\"");
    for (size_t pos = 0; pos < base.size(); ++pos) {
      for (const auto& [c, escaped] : {std::pair<char, std::string>{'"', "\\\""}, {'\\', "\\\\"},
                                       {'\n', "\\u000a"}, {'\x1f', "\\u001f"}, {'\0', "\\u0000"}}) {
        std::string text = base;
        text[pos] = c;
        EXPECT_EQ(JsonString(text), "\"" + base.substr(0, pos) + escaped + base.substr(pos + 1) + "\"")
            << "length " << length << " at " << pos;
      }
    }
  }
}

TEST(AppendJsonStringTest, PassesUtf8Through) {
  EXPECT_EQ(JsonString("\xC2\xB0" "C \xE2\x9C\x93"), "\"\xC2\xB0" "C \xE2\x9C\x93\"");
}

TEST(AppendJsonNumberTest, WritesIntegralValuesWithoutAFraction) {
  EXPECT_EQ(Number(10.0), "10");  // Kalos queue "10.0"
  EXPECT_EQ(Number(936.0), "936");
  EXPECT_EQ(Number(0.0), "0");
  EXPECT_EQ(Number(-3.0), "-3");
  EXPECT_EQ(Number(4560592618.0), "4560592618");
}

TEST(AppendJsonNumberTest, WritesTheShortestRoundTrip) {
  EXPECT_EQ(Number(8.101), "8.101");
  EXPECT_EQ(Number(0.437), "0.437");
  EXPECT_EQ(Number(0.08101), "0.08101");
  EXPECT_EQ(Number(0.1 + 0.2), "0.30000000000000004");
  for (double v : {1e-7, 123.456, -0.5, 1e20, 6.02214076e23, 2.5e-300, 1234567.891}) {
    const std::string text = Number(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    EXPECT_EQ(text.find_first_not_of("0123456789.-+e"), std::string::npos) << text;  // valid JSON
  }
}

// Values of up to three decimals take a shortcut (the digits of m / 1000); it must write exactly
// what std::to_chars writes, the shortest round trip, for every one of them and for their
// neighbours one ulp away (which must not take it).
std::string ToChars(double v) {
  char buf[32];
  if (v == std::trunc(v) && std::fabs(v) < 1e15) {
    return std::string(buf, std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(v)).ptr);
  }
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

TEST(AppendJsonNumberTest, ShortDecimalsAreWrittenAsToCharsWritesThem) {
  std::vector<double> values;
  for (int64_t m = -20000; m <= 2000000; ++m) values.push_back(static_cast<double>(m) / 1000.0);
  for (int64_t m = 999000000; m <= 1000001000; m += 7) values.push_back(static_cast<double>(m) / 1000.0);
  for (int64_t m = 999999000000; m < 1000000000000; ++m) values.push_back(static_cast<double>(m) / 1000.0);
  for (double scale : {10.0, 100.0, 10000.0}) {
    for (int64_t m = -5000; m <= 200000; ++m) values.push_back(static_cast<double>(m) / scale);
  }
  for (double power = 1; power < 2e15; power *= 10) {  // integers of every length, both signs
    for (double d = -1; d <= 1; ++d) {
      values.push_back(power + d);
      values.push_back(-(power + d));
    }
  }
  for (const double v : values) {
    for (const double x : {v, std::nextafter(v, 0.0), std::nextafter(v, 2e12)}) {
      ASSERT_EQ(Number(x), ToChars(x)) << std::hexfloat << x;
    }
  }
}

// Integers (timestamps, ids, counts) are written by their digit count from the bit width: every
// length from 1 to 19 digits, at each power of ten and one either side, and the int64 extremes.
TEST(AppendRecordJsonTest, IntegersOfEveryLengthAreWrittenAsToCharsWritesThem) {
  std::vector<int64_t> values = {0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::min() + 1};
  for (int64_t power = 1;; power *= 10) {
    for (int64_t d : {-1, 0, 1}) {
      values.push_back(power + d);
      values.push_back(-(power + d));
    }
    if (power > std::numeric_limits<int64_t>::max() / 10) break;
  }
  for (int bit = 0; bit < 63; ++bit) {  // each bit width, at its ends
    values.push_back(int64_t{1} << bit);
    values.push_back((int64_t{1} << bit) - 1);
  }
  UtilSample util;
  util.cluster = "seren";
  util.node = "n1";
  for (const int64_t v : values) {
    util.ts_ms = v;
    std::string json;
    AppendRecordJson(json, Record(util));
    char buf[24];
    const std::string expected = std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
    ASSERT_NE(json.find("\"ts_ms\":" + expected + ","), std::string::npos) << v << ": " << json;
  }
}

TEST(AppendJsonNumberTest, WritesNonFiniteAsNull) {
  EXPECT_EQ(Number(kNoSample), "null");
  EXPECT_EQ(Number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(Number(-std::numeric_limits<double>::infinity()), "null");
}

TEST(RecordTest, TopicsTimestampsAndKeys) {
  const Record job = SerenExampleJob(JobEventKind::kEnd);
  UtilSample util;
  util.cluster = "kalos";
  util.node = "lingjun-pod9-0016";
  util.ts_ms = 5;
  PowerSample power;
  power.cluster = "seren";
  power.model = "CPU_D";
  power.ts_ms = 7;
  EXPECT_EQ(TopicOf(job), "acme.jobs");
  EXPECT_EQ(TopicOf(Record(util)), "acme.util");
  EXPECT_EQ(TopicOf(Record(power)), "acme.power");
  EXPECT_EQ(TimestampMsOf(job), 1677601251000);
  EXPECT_EQ(TimestampMsOf(Record(util)), 5);
  EXPECT_EQ(TimestampMsOf(Record(power)), 7);
  std::string key;
  AppendKey(key, job);
  EXPECT_EQ(key, "seren/5778432");
  key.clear();
  AppendKey(key, util);
  EXPECT_EQ(key, "kalos/lingjun-pod9-0016");
  key.clear();
  AppendKey(key, power);
  EXPECT_EQ(key, "seren/CPU_D");
  EXPECT_EQ(JobEventKindName(JobEventKind::kSubmit), "submit");
  EXPECT_EQ(JobEventKindName(JobEventKind::kStart), "start");
  EXPECT_EQ(JobEventKindName(JobEventKind::kEnd), "end");
}

TEST(InternNameTest, ReturnsOneStableCopyPerName) {
  std::string name = "GPU_UTIL_intern_test";
  const std::string_view a = InternName(name);
  name[0] = 'X';  // the interned copy must not alias the argument
  const std::string_view b = InternName("GPU_UTIL_intern_test");
  EXPECT_EQ(a, "GPU_UTIL_intern_test");
  EXPECT_EQ(a.data(), b.data());
  EXPECT_NE(InternName("GPU_TEMP_intern_test").data(), a.data());
}

TEST(StdioSinkTest, WritesOneFramedLinePerRecord) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* mem = open_memstream(&data, &size);
  ASSERT_NE(mem, nullptr);
  {
    StdioSink sink(mem);
    ASSERT_TRUE(sink.Write(SerenExampleJob(JobEventKind::kSubmit)).ok());
    ASSERT_TRUE(sink.Write(SerenExampleJob(JobEventKind::kStart)).ok());
    ASSERT_TRUE(sink.Flush().ok());
  }
  std::fclose(mem);
  std::string expected;
  AppendFramedLine(expected, SerenExampleJob(JobEventKind::kSubmit));
  AppendFramedLine(expected, SerenExampleJob(JobEventKind::kStart));
  EXPECT_EQ(std::string(data, size), expected);
  std::free(data);
}

TEST(NullSinkTest, CountsPerTopic) {
  NullSink sink;
  ASSERT_TRUE(sink.Write(SerenExampleJob(JobEventKind::kSubmit)).ok());
  ASSERT_TRUE(sink.Write(SerenExampleJob(JobEventKind::kEnd)).ok());
  ASSERT_TRUE(sink.Write(UtilSample{}).ok());
  EXPECT_EQ(sink.counts().at("acme.jobs"), 2);
  EXPECT_EQ(sink.counts().at("acme.util"), 1);
  EXPECT_EQ(sink.counts().count("acme.power"), 0u);
}

}  // namespace
}  // namespace acmetrace::core
