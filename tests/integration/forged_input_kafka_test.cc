// A foreign writer on the input topics: forged progress markers (20 minutes ahead in one partition,
// in every partition, at year 9999 and INT64_MAX) and forged valid records 20 minutes ahead, put
// between the replay's records, and a record whose value is cut short before its time. `process
// --source kafka` must write what it writes from the honest records alone, count no record late,
// and report each forgery that honest data after it shows false, and the cut record, as input errors.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "acmetrace/core/record.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_config.h"
#include "kafka_test_support.h"

namespace acmetrace::kafka::testing {
namespace {

constexpr int kPartitions = 3;  // per topic: 9 input partitions
const std::vector<std::string> kTopics = {"acme.jobs", "acme.util", "acme.power"};

// A producer that writes where it is told, with the headers it is given (the forger's tools).
class RawProducer {
 public:
  explicit RawProducer(const std::string& brokers) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof err);
    // Order kept through retries: without idempotence a batch retried on a fresh broker ("Coordinator
    // load in progress") lands after the ones sent behind it, and a partition's first records then
    // follow its end marker (the stage rightly waits for another end, and the test hung).
    rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err);
    rd_kafka_conf_set_opaque(conf, &undelivered_);
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) ++*static_cast<int*>(opaque);
    });
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    EXPECT_NE(rk_, nullptr) << err;
  }
  // Every message delivered, or the test says so: a lost end marker would leave `process --until-end`
  // waiting for it (in a full parallel run on two cores this test once ran into its 300 s timeout).
  ~RawProducer() {
    if (rk_ == nullptr) return;
    const rd_kafka_resp_err_t flushed = rd_kafka_flush(rk_, 120'000);
    EXPECT_EQ(flushed, RD_KAFKA_RESP_ERR_NO_ERROR) << "messages still queued after 120 s: " << rd_kafka_outq_len(rk_);
    EXPECT_EQ(undelivered_, 0) << "messages the broker did not take";
    rd_kafka_destroy(rk_);
  }
  // A record (key and value) or, with both empty, a marker; headers as given ("" = left out).
  void Send(const std::string& topic, int partition, const std::string& key, const std::string& value,
            const std::string& marker, const std::string& trace_ts) {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(2);
    if (!marker.empty()) rd_kafka_header_add(headers, "acmetrace_marker", -1, marker.data(), static_cast<ssize_t>(marker.size()));
    if (!trace_ts.empty()) rd_kafka_header_add(headers, "trace_ts_ms", -1, trace_ts.data(), static_cast<ssize_t>(trace_ts.size()));
    const bool is_marker = key.empty() && value.empty();
    rd_kafka_resp_err_t e = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_KEY(is_marker ? nullptr : key.data(), is_marker ? 0 : key.size()),
        RD_KAFKA_V_VALUE(is_marker ? nullptr : const_cast<char*>(value.data()), is_marker ? 0 : value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_headers_destroy(headers);
      ADD_FAILURE() << rd_kafka_err2str(e);
    }
    rd_kafka_poll(rk_, 0);
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  int undelivered_ = 0;
};

int PartitionOfKey(const std::string& key) {
  uint32_t h = 2166136261u;
  for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return static_cast<int>(h % kPartitions);
}

std::set<std::string> WindowLines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  core::RecordParser parser;
  while (std::getline(in, line)) {
    core::Record r;
    if (parser.ParseFramedLine(line, r).ok() && !std::holds_alternative<core::JobEvent>(r)) out.insert(line);
  }
  return out;
}

TEST(ForgedInputKafkaTest, ForgedMarkersAndRecordsAheadMakeNothingLateAndAreInputErrors) {
  OwnBroker broker;
  ASSERT_FALSE(broker.bootstrap().empty()) << "could not start a broker (scripts/kafka-local)";
  const std::string dir = FreshDir("forged_input");
  WriteSyntheticRelease(dir + "/release", 60, 4, 2);
  CommandResult replay = RunCommand(std::string(Binary()) + " replay --data " + dir + "/release --speed max --sink stdout");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  // The reference: the honest records through stdin.
  const std::string honest_path = dir + "/honest.jsonl";
  { std::ofstream(honest_path) << replay.out; }
  CommandResult reference = RunCommand(std::string(Binary()) + " process < " + honest_path);
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const std::set<std::string> expected = WindowLines(reference.out);
  ASSERT_GT(expected.size(), 50u);

  KafkaSettings settings;
  settings.brokers = broker.bootstrap();
  core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(settings);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  std::vector<TopicSpec> specs;
  for (const std::string& t : kTopics) specs.push_back(TopicSpec{t, kPartitions, 1, -1});
  ASSERT_TRUE(admin.value()->EnsureTopics(specs).ok());

  const std::vector<Framed> records = ParseFramedLines(replay.out);
  ASSERT_GT(records.size(), 500u);
  int forged = 0;
  {
    RawProducer producer(broker.bootstrap());
    auto marker = [&](const std::string& topic, int p, int64_t ts) {
      producer.Send(topic, p, "", "", "progress", std::to_string(ts));
    };
    const int64_t twenty_minutes = 20 * 60'000;
    int64_t last_ts = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      const Framed& r = records[i];
      const int64_t t = TsMsOf(r.value);
      if (i == records.size() / 5) {  // one partition, 20 minutes ahead
        marker("acme.util", 0, t + twenty_minutes);
        forged += 1;
      } else if (i == 2 * records.size() / 5) {  // every partition
        // Each is shown false by an earlier record after it in its partition; in a partition that
        // gets none (acme.power: this release has no IPMI files) it claims nothing false and does
        // no harm, so it is not reported.
        std::set<std::pair<std::string, int>> written_after;
        for (size_t k = i; k < records.size(); ++k) written_after.emplace(records[k].topic, PartitionOfKey(records[k].key));
        for (const std::string& topic : kTopics) {
          for (int p = 0; p < kPartitions; ++p) marker(topic, p, t + twenty_minutes);
        }
        forged += static_cast<int>(written_after.size());
        EXPECT_GE(written_after.size(), 6u);
      } else if (i == 3 * records.size() / 5) {  // year 9999, INT64_MAX
        marker("acme.util", 1, 253'402'300'799'000);
        marker("acme.jobs", 2, INT64_MAX);
        forged += 2;
      } else if (i == 4 * records.size() / 5) {  // valid records 20 minutes ahead, in every util partition
        for (int p = 0; p < kPartitions; ++p) {
          core::UtilSample s;
          s.cluster = "seren";
          s.node = "10.0.0." + std::to_string(p);
          s.ts_ms = t + twenty_minutes;
          s.gpu.push_back({core::InternName("GPU_UTIL"), {0, 0, 0, 0, 0, 0, 0, 0}});
          std::string value;
          core::AppendRecordJson(value, core::Record(s));
          producer.Send("acme.util", p, "seren/" + s.node, value, "", "");  // its value says when
        }
        forged += kPartitions;
      } else if (i == records.size() / 2) {  // a value cut short before its time: reported, holds nothing up
        producer.Send("acme.util", 0, "seren/10.0.0.9", R"({"v":1,"cluster":"seren","node":"10.0.0.9","ts_ms":)", "", "");
      }
      // As the replay writes them (the trace time in the value only) and, every other one, as it does
      // with kafka.trace_ts_header (a trace_ts_ms header too): readers take either.
      producer.Send(r.topic, PartitionOfKey(r.key), r.key, r.value, "", i % 2 == 0 ? std::to_string(t) : "");
      last_ts = std::max(last_ts, t);
    }
    for (const std::string& topic : kTopics) {
      for (int p = 0; p < kPartitions; ++p) producer.Send(topic, p, "", "", "end:seren", std::to_string(last_ts));
    }
  }
  CommandResult processed = RunCommand("timeout 300 " + std::string(Binary()) + " process --source kafka --sink stdout" +
                                       " --brokers " + broker.bootstrap() + " --group forged --until-end");
  ASSERT_EQ(processed.exit_code, 0) << processed.err;
  EXPECT_EQ(WindowLines(processed.out), expected) << processed.err;
  // Each forgery reported once where it was; nothing else.
  size_t reported = 0;
  for (size_t at = processed.err.find("not trusted"); at != std::string::npos; at = processed.err.find("not trusted", at + 1)) {
    ++reported;
  }
  size_t headers = 0;
  for (size_t at = processed.err.find("header trace_ts_ms: outside the accepted years"); at != std::string::npos;
       at = processed.err.find("header trace_ts_ms: outside the accepted years", at + 1)) {
    ++headers;
  }
  EXPECT_EQ(static_cast<int>(reported + headers), forged) << processed.err;
  EXPECT_EQ(headers, 2u) << processed.err;
  // The cut record: one input error where it is, naming its value.
  size_t cut = 0;
  std::istringstream err(processed.err);
  for (std::string line; std::getline(err, line);) {
    cut += line.find("acme.util[0]:") != std::string::npos && line.find("value") != std::string::npos;
  }
  EXPECT_EQ(cut, 1u) << processed.err;
}

}  // namespace
}  // namespace acmetrace::kafka::testing
