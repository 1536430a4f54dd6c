// The state codec: one Fields function drives both the writer and the reader; the encoding of each
// type is the one snapshots have always used; counts, lengths and flags from a snapshot are checked
// before they are trusted; a reader of an older layout reads what that layout had.
#include "acmetrace/processors/state_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace acmetrace::processors {
namespace {

struct Sample {
  int64_t ts_ms = 0;
  double value = 0;
  bool open = false;
  bool fresh = false, working = false;
  std::string name;
  std::vector<int64_t> times;
  std::deque<std::string> users;
  std::map<std::string, double> sums;
  std::unordered_map<std::string, int64_t> last_seen;
  uint64_t added_in_2 = 0;  // a field the layout gained in version 2

  template <class Io, class Self>
  static void Fields(Io& io, Self& s) {
    io(s.ts_ms, s.value, s.open, StateBits(s.fresh, s.working), s.name, s.times, s.users, s.sums, s.last_seen);
    if (io.version() >= 2) io(s.added_in_2);
  }
  bool operator==(const Sample&) const = default;
};

Sample Filled() {
  Sample s;
  s.ts_ms = -5;
  s.value = 2.5;
  s.open = true;
  s.working = true;
  s.name = "seren";
  s.times = {1, 2, 3};
  s.users = {"u1", "u2"};
  s.sums = {{"a", 1.5}, {"b", -2}};
  s.last_seen = {{"zed", 9}, {"amy", 7}, {"kim", 8}};
  s.added_in_2 = 42;
  return s;
}

TEST(StateCodecTest, OneFieldsFunctionWritesAndReadsEveryField) {
  const Sample s = Filled();
  StateWriter out;
  out(s);
  Sample back;
  StateReader in(out.bytes(), 2);
  in(back);
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(in.at_end());
  EXPECT_EQ(back, s);
}

TEST(StateCodecTest, TheEncodingIsTheSnapshotsFixedWidthLayout) {
  Sample s;
  s.ts_ms = 7;
  s.value = 1.0;
  s.open = true;
  s.fresh = true;
  s.working = true;
  s.name = "ab";
  s.last_seen = {{"b", 2}, {"a", 1}};
  StateWriter out;
  out(s);
  StateWriter expected;  // by hand, as the Save functions wrote it before the codec
  expected.I64(7);
  expected.F64(1.0);
  expected.U64(1);
  expected.U64(3);  // the two bits
  expected.Str("ab");
  expected.U64(0);  // times
  expected.U64(0);  // users
  expected.U64(0);  // sums
  expected.U64(2);  // last_seen, in key order whatever the hash order
  expected.Str("a");
  expected.I64(1);
  expected.Str("b");
  expected.I64(2);
  expected.U64(0);  // added_in_2
  EXPECT_TRUE(out.bytes() == expected.bytes());
}

// A plain struct without Fields: its members in declaration order, as a Fields naming them would.
struct Change {
  int64_t ts_ms;
  std::string job_id;
  double gpus;
  bool operator==(const Change&) const = default;
};

TEST(StateCodecTest, APlainStructIsItsMembersInOrder) {
  const std::vector<Change> changes = {{5, "j1", 8}, {-3, "", 0.5}};
  StateWriter out;
  out(changes);
  StateWriter expected;
  expected.U64(2);
  expected.I64(5);
  expected.Str("j1");
  expected.F64(8);
  expected.I64(-3);
  expected.Str("");
  expected.F64(0.5);
  EXPECT_TRUE(out.bytes() == expected.bytes());
  std::vector<Change> back;
  StateReader in(out.bytes(), 1);
  in(back);
  ASSERT_TRUE(in.ok() && in.at_end());
  EXPECT_EQ(back, changes);
  // A count from a snapshot is checked against the bytes one Change takes at the least.
  EXPECT_EQ(state_codec_internal::MinBytes<Change>(1), 24u);
}

TEST(StateCodecTest, AnOlderLayoutIsReadAsItWasWritten) {
  // Written by a layout without added_in_2: a version-1 reader takes it whole and leaves the field
  // at its default; the same bytes read as version 2 are short.
  Sample old = Filled();
  old.added_in_2 = 0;
  StateWriter out;
  out(old);
  std::string v1 = out.bytes().substr(0, out.bytes().size() - 8);
  Sample back;
  StateReader in(v1, 1);
  in(back);
  ASSERT_TRUE(in.ok() && in.at_end());
  EXPECT_EQ(back, old);
  StateReader as2(v1, 2);
  as2(back);
  EXPECT_FALSE(as2.ok());
}

TEST(StateCodecTest, EveryTruncationFails) {
  StateWriter out;
  out(Filled());
  for (size_t n = 0; n < out.bytes().size(); ++n) {
    Sample back;
    StateReader in(std::string_view(out.bytes()).substr(0, n), 2);
    in(back);
    EXPECT_FALSE(in.ok()) << n;
  }
}

TEST(StateCodecTest, AHugeCountIsRefusedBeforeAnythingIsAllocated) {
  StateWriter out;
  out.U64(UINT64_MAX / 2);  // a vector of that many times
  out.I64(1);
  std::vector<int64_t> v;
  StateReader in(out.bytes());
  in(v);
  EXPECT_FALSE(in.ok());
  EXPECT_TRUE(v.empty());
  // A count that fits the bytes left only if items were smaller than they can be: a Sample takes at
  // least 72 bytes (9 fields of 8), and 16 are left.
  StateWriter three;
  three.U64(3);
  three.I64(1);
  three.I64(2);
  std::vector<Sample> samples;
  StateReader in3(three.bytes());
  in3(samples);
  EXPECT_FALSE(in3.ok());
}

TEST(StateCodecTest, FlagsOutOfRangeAreRefused) {
  StateWriter flag;
  flag.U64(2);
  bool b = false;
  StateReader in(flag.bytes());
  in(b);
  EXPECT_FALSE(in.ok());

  StateWriter bits;
  bits.U64(4);  // a third bit where two are described
  bool x = false, y = false;
  StateReader in2(bits.bytes());
  in2(StateBits(x, y));
  EXPECT_FALSE(in2.ok());
}

TEST(StateCodecTest, AnIntegerNoStateHoldsIsRefusedButTheSentinelsLoad) {
  // Found by snapshot_fuzz: a time read as -2^63 + 12,237,498 made `now - since` overflow in
  // gpu_straggler. Times, offsets and counts stay far below 2^61; the lowest and highest int64 are
  // sentinels (kNoTime).
  for (const int64_t bad : {INT64_MIN + 12'237'498, (int64_t{1} << 61) + 1, -(int64_t{1} << 61) - 1, INT64_MAX - 1}) {
    StateWriter out;
    out.I64(bad);
    int64_t v = 0;
    StateReader in(out.bytes());
    in(v);
    EXPECT_FALSE(in.ok()) << bad;
  }
  for (const int64_t good : {INT64_MIN, INT64_MAX, int64_t{1} << 61, -(int64_t{1} << 61), int64_t{1'688'143'200'000}}) {
    StateWriter out;
    out.I64(good);
    int64_t v = 0;
    StateReader in(out.bytes());
    in(v);
    EXPECT_TRUE(in.ok()) << good;
    EXPECT_EQ(v, good);
  }
}

TEST(StateCodecTest, AnAdaptersReasonIsKept) {
  StateReader in("");
  in.Fail("buffered record: bad JSON");
  in.Fail("a later reason");
  EXPECT_FALSE(in.ok());
  EXPECT_EQ(in.error(), "buffered record: bad JSON");
}

}  // namespace
}  // namespace acmetrace::processors
