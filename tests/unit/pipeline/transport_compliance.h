// The compliance suite every registered transport passes, as Vector's sources pass theirs: what a
// writer writes reaches a reader whole, in order per partition, with its progress and its end, and
// a reader restarted from a position reads on from there. A binary instantiates it for the kinds it
// can make (INSTANTIATE_TEST_SUITE_P with TransportCase values): the unit tests for those without a
// server, the kafka integration tests for Kafka.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/record_json.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/pipeline/config_keys.h"
#include "acmetrace/pipeline/hops.h"

namespace acmetrace::pipeline::testing {

/// A kind under test and how to configure it (a directory, a broker). Value type.
struct TransportCase {
  std::string kind;
  std::function<void(core::Config&)> configure;
};

// Tests name the kind, not the bytes of the struct.
inline void PrintTo(const TransportCase& c, std::ostream* os) { *os << c.kind; }

inline std::string CaseName(const ::testing::TestParamInfo<TransportCase>& info) {
  std::string name;
  for (char c : info.param.kind) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

/// What a reader saw of one partition, in order: records as their framed line, markers by name.
struct SeenItem {
  int64_t offset = -1;
  std::string what;
};

class TransportComplianceTest : public ::testing::TestWithParam<TransportCase> {
 protected:
  static constexpr int64_t kT0 = 1'688'169'600'000;  // 2023-07-01

  void SetUp() override {
    kind_ = FindTransport(GetParam().kind);
    ASSERT_NE(kind_, nullptr) << GetParam().kind << " is not registered";
    DeclareAllConfig(config_);
    if (GetParam().configure) GetParam().configure(config_);
    core::Result<std::unique_ptr<Transport>> made = kind_->make(config_, stderr);
    ASSERT_TRUE(made.ok()) << made.status().message();
    transport_ = std::move(made).value();
  }

  static InputHop Hop() {
    return InputHop{ProcessOutputTopics(), InputHop::Start::kEnd, InputHop::Ownership::kAll, /*create_topics=*/true};
  }

  // A closed window of cluster, i minutes after kT0.
  static core::Record Window(const std::string& cluster, int64_t i) {
    core::MetricsWindow w;
    w.cluster = cluster;
    w.start_ms = kT0 + i * 60'000;
    w.end_ms = w.start_ms + 60'000;
    w.ts_ms = w.end_ms;
    w.metrics = {{"gpu_util_mean", static_cast<double>(i)}};
    return w;
  }
  static std::string Line(const core::Record& record) {
    std::string line;
    core::AppendFramedLine(line, record);
    return line;
  }

  // Reads until every partition has ended (records, progress and ends; caught-up and idle items
  // left out), or a bounded number of reads: a transport that never ends its input fails here.
  std::vector<std::vector<SeenItem>> ReadToTheEnd(core::RecordInput& input) {
    const size_t n = input.partitions().size();
    std::vector<std::vector<SeenItem>> seen(n);
    std::vector<bool> ended(n, false);
    size_t ended_count = 0;
    core::RecordParser parser;
    for (int reads = 0; reads < 3000 && ended_count < n; ++reads) {
      core::Result<core::InputItem> next = input.Next(100);
      if (!next.ok()) {
        ADD_FAILURE() << next.status().message();
        break;
      }
      const core::InputItem& item = next.value();
      if (item.partition < 0) continue;
      const size_t p = static_cast<size_t>(item.partition);
      SeenItem s{item.offset, ""};
      switch (item.kind) {
        case core::InputItem::Kind::kRecord:
          s.what = Line(*item.record);
          break;
        case core::InputItem::Kind::kFramed: {
          core::Record record;
          const core::Status parsed = item.topic.empty() ? parser.ParseFramedLine(item.line, record)
                                                         : parser.ParseValue(item.topic, item.value, record);
          EXPECT_TRUE(parsed.ok()) << parsed.message();
          s.what = Line(record);
          break;
        }
        case core::InputItem::Kind::kProgress:
          s.what = std::string(item.paused ? "paused@" : "progress@") + std::to_string(item.ts_ms);
          break;
        case core::InputItem::Kind::kEnded:
          s.what = "end";
          if (!ended[p]) ++ended_count;
          ended[p] = true;
          break;
        case core::InputItem::Kind::kUnreadable:
          ADD_FAILURE() << "unreadable: " << item.error;
          continue;
        default:
          continue;
      }
      seen[p].push_back(std::move(s));
    }
    EXPECT_EQ(ended_count, n) << "partitions that never ended";
    return seen;
  }

  const TransportKind* kind_ = nullptr;
  core::Config config_;
  std::unique_ptr<Transport> transport_;
};

// Every record written arrives once, and each partition keeps the order its records were written
// in (here each cluster's windows, in time order); after its last record every partition ends.
TEST_P(TransportComplianceTest, EveryRecordArrivesInItsPartitionsOrderThenTheEnd) {
  core::Result<std::unique_ptr<core::RecordInput>> input = transport_->Reader(Hop());
  ASSERT_TRUE(input.ok()) << input.status().message();
  core::Result<std::unique_ptr<core::RecordSink>> sink = transport_->Writer(OutputHop{ProcessOutputTopics(), false});
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  std::vector<std::string> written;
  for (int64_t i = 0; i < 40; ++i) {
    for (const char* cluster : {"seren", "kalos"}) {
      const core::Record r = Window(cluster, i);
      written.push_back(Line(r));
      ASSERT_TRUE(sink.value()->Write(r).ok());
    }
  }
  ASSERT_TRUE(sink.value()->End({}).ok());

  const std::vector<std::vector<SeenItem>> seen = ReadToTheEnd(*input.value());
  std::vector<std::string> got;
  for (const std::vector<SeenItem>& part : seen) {
    ASSERT_FALSE(part.empty());
    EXPECT_EQ(part.back().what, "end") << "something came after the end";
    int64_t last_index = -1;
    for (const SeenItem& s : part) {
      if (s.what.front() != '{') continue;
      got.push_back(s.what);
      const auto at = std::find(written.begin(), written.end(), s.what);
      ASSERT_NE(at, written.end()) << "never written: " << s.what;
      const int64_t index = at - written.begin();
      EXPECT_GT(index, last_index) << "out of the order written: " << s.what;
      last_index = index;
    }
  }
  std::sort(got.begin(), got.end());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(got, written);
}

// An ordered writer's progress reaches every partition, whether or not records went there, and a
// paused writer's heartbeat says it is paused (alive, not ended).
TEST_P(TransportComplianceTest, AnOrderedWritersProgressReachesEveryPartition) {
  core::Result<std::unique_ptr<core::RecordInput>> input = transport_->Reader(Hop());
  ASSERT_TRUE(input.ok()) << input.status().message();
  core::Result<std::unique_ptr<core::RecordSink>> sink = transport_->Writer(OutputHop{ProcessOutputTopics(), true});
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ASSERT_TRUE(sink.value()->Prepare(kT0 + 60'000).ok());
  ASSERT_TRUE(sink.value()->Write(Window("seren", 0)).ok());
  const int64_t later = kT0 + 3'600'000;
  ASSERT_TRUE(sink.value()->Heartbeat(later, false).ok());
  ASSERT_TRUE(sink.value()->Write(Window("kalos", 61)).ok());  // a queue keeps the newest of heartbeats in a row
  ASSERT_TRUE(sink.value()->Heartbeat(later + 180'000, true).ok());
  ASSERT_TRUE(sink.value()->End({}).ok());

  for (const std::vector<SeenItem>& part : ReadToTheEnd(*input.value())) {
    std::vector<std::string> markers;
    for (const SeenItem& s : part) {
      if (s.what.front() != '{') markers.push_back(s.what);
    }
    EXPECT_NE(std::find(markers.begin(), markers.end(), "progress@" + std::to_string(later)), markers.end())
        << ::testing::PrintToString(markers);
    EXPECT_NE(std::find(markers.begin(), markers.end(), "paused@" + std::to_string(later + 180'000)), markers.end())
        << ::testing::PrintToString(markers);
  }
}

// A reader restarted from the positions an earlier one had reached (a snapshot's offsets: the next
// offset is the last one read plus one) reads exactly what the earlier one read after them.
TEST_P(TransportComplianceTest, AReaderRestartedFromAPositionReadsOnFromThere) {
  if (!kind_->can_seek) GTEST_SKIP() << kind_->name << " keeps no positions: a restart starts over";
  core::Result<std::unique_ptr<core::RecordInput>> first = transport_->Reader(Hop());
  ASSERT_TRUE(first.ok()) << first.status().message();
  core::Result<std::unique_ptr<core::RecordSink>> sink = transport_->Writer(OutputHop{ProcessOutputTopics(), false});
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  for (int64_t i = 0; i < 30; ++i) ASSERT_TRUE(sink.value()->Write(Window(i % 3 == 0 ? "kalos" : "seren", i)).ok());
  ASSERT_TRUE(sink.value()->End({}).ok());
  const std::vector<std::vector<SeenItem>> all = ReadToTheEnd(*first.value());

  // Half of each partition read: the restart resumes after it.
  std::vector<int64_t> next_offsets;
  for (const std::vector<SeenItem>& part : all) next_offsets.push_back(part[part.size() / 2].offset);
  core::Result<std::unique_ptr<core::RecordInput>> restarted = transport_->Reader(Hop());
  ASSERT_TRUE(restarted.ok()) << restarted.status().message();
  ASSERT_TRUE(restarted.value()->Seek(next_offsets).ok());
  const std::vector<std::vector<SeenItem>> rest = ReadToTheEnd(*restarted.value());
  ASSERT_EQ(rest.size(), all.size());
  for (size_t p = 0; p < all.size(); ++p) {
    std::vector<std::string> expected, got;
    for (size_t i = all[p].size() / 2; i < all[p].size(); ++i) expected.push_back(all[p][i].what);
    for (const SeenItem& s : rest[p]) got.push_back(s.what);
    EXPECT_EQ(got, expected) << "partition " << p;
  }
}

}  // namespace acmetrace::pipeline::testing
