// NodeCursor (detector_support.h): the detectors' node lookups follow the record order with a hint,
// and must always find exactly the entry map[key] would, whatever the order, after entries are erased
// by a snapshot load, and in a copy (whose hint would point into another map).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "../../../processors/src/detectors/detector_support.h"

namespace acmetrace::processors::detectors {
namespace {

using Map = std::map<std::string, int>;

std::vector<std::string> Nodes(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("10.140.0." + std::to_string(100 + i));
  return out;
}

TEST(NodeCursorTest, FindsWhatTheMapsSubscriptFindsInAnyOrder) {
  Map with_cursor, plain;
  NodeCursor<Map> cursor;
  const std::vector<std::string> nodes = Nodes(40);
  std::mt19937 rng(14);
  for (int step = 0; step < 5000; ++step) {
    // Mostly the replay's order (node after node, wrapping), sometimes a jump or a new node.
    const std::string& key = step % 7 == 3 ? nodes[rng() % nodes.size()] : nodes[static_cast<size_t>(step) % nodes.size()];
    int& a = cursor.Find(with_cursor, key);
    int& b = plain[key];
    ++a;
    ++b;
    ASSERT_EQ(&a, &with_cursor.find(key)->second) << key;
  }
  EXPECT_EQ(with_cursor, plain);
}

TEST(NodeCursorTest, AfterASnapshotLoadErasedEntriesItDoesNotFollowItsHint) {
  Map map;
  NodeCursor<Map> cursor;
  cursor.Find(map, "a") = 1;
  cursor.Find(map, "b") = 2;
  cursor.Find(map, "c") = 3;
  cursor.Find(map, "a");  // the hint now points at "b"
  map.erase("b");         // as NodeEntriesRef::Read erases a cluster's entries
  NodeMapEntriesErased();
  int& b = cursor.Find(map, "b");
  EXPECT_EQ(b, 0);  // made afresh
  ASSERT_NE(map.find("b"), map.end());
  EXPECT_EQ(&b, &map.find("b")->second);
}

TEST(NodeCursorTest, NodeEntriesRefReadDropsTheHints) {
  // The real erasing path: a cluster's entries replaced from a saved state.
  std::map<std::string, std::vector<HysteresisState>> nodes;
  NodeKey<std::vector<HysteresisState>> scratch;
  NodeEntry(nodes, scratch, "seren", "n1").resize(1);
  NodeEntry(nodes, scratch, "seren", "n2").resize(2);
  NodeEntry(nodes, scratch, "seren", "n3").resize(3);
  NodeEntry(nodes, scratch, "seren", "n1");  // hint: "seren/n2"
  StateWriter out;
  std::map<std::string, std::vector<HysteresisState>> saved;
  saved["seren/n3"].resize(3);
  NodeEntriesOf(saved, "seren").Write(out);
  const std::string bytes = out.Take();
  StateReader in(bytes);
  NodeEntriesOf(nodes, "seren").Read(in);  // "seren/n1" and "seren/n2" are gone
  ASSERT_TRUE(in.ok());
  std::vector<HysteresisState>& n2 = NodeEntry(nodes, scratch, "seren", "n2");
  EXPECT_TRUE(n2.empty());
  EXPECT_EQ(&n2, &nodes.find("seren/n2")->second);
  EXPECT_EQ(nodes.size(), 2u);
}

TEST(NodeCursorTest, ACopyLooksUpInItsOwnMap) {
  Map first;
  NodeCursor<Map> cursor;
  cursor.Find(first, "a");
  cursor.Find(first, "b");
  cursor.Find(first, "a");  // the hint: first's "b"
  Map second = first;
  NodeCursor<Map> copy = cursor;
  int& b = copy.Find(second, "b");
  EXPECT_EQ(&b, &second.find("b")->second);
  NodeCursor<Map> assigned;
  assigned = cursor;
  EXPECT_EQ(&assigned.Find(second, "b"), &second.find("b")->second);
}

TEST(StepClockTest, ALoadedClockMustBeUnsetOrATraceTime) {
  // Found by snapshot_fuzz: a clock loaded at -2^61 was walked a step at a time up to the watermark.
  auto load = [](int64_t next_ms, int64_t first_ms) {
    StateWriter out;
    out(next_ms, first_ms);
    StateReader in(out.bytes());
    StepClock clock;
    in(clock);
    return in.ok();
  };
  EXPECT_TRUE(load(kNoTimeMs, kNoTimeMs));
  EXPECT_TRUE(load(1'688'143'260'000, 1'688'143'260'000));
  EXPECT_FALSE(load(-(int64_t{1} << 61), 1'688'143'260'000));
  EXPECT_FALSE(load(1'688'143'260'000, 0));
  EXPECT_FALSE(load(core::kMaxTraceTimeMs, kNoTimeMs));
}

}  // namespace
}  // namespace acmetrace::processors::detectors
