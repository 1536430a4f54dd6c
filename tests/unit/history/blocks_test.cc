// The promtool driver with a stand-in promtool (a script recording what it is given): chunks cut
// at block boundaries and at the size cap, each complete, failures reported by promtool's last
// line, the directory rules.
#include "acmetrace/history/blocks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_files.h"

namespace acmetrace::history {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A promtool that copies each chunk it is given into dir/seen-N.om (or fails with a message).
std::string FakePromtool(const std::string& dir, bool fail) {
  const std::string path = WriteFile(
      dir, "promtool",
      fail ? "#!/bin/sh\necho 'parse: something is wrong at line 3' >&2\nexit 1\n"
           : "#!/bin/sh\n# tsdb create-blocks-from openmetrics --quiet FILE OUT\nn=$(ls \"" + dir +
                 "\" | grep -c '^seen-')\ncp \"$5\" \"" + dir + "/seen-$n.om\"\necho \"$6\" > \"" + dir +
                 "/out-dir\"\n");
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

std::string Sample(int64_t t_ms) { return "m{job=\"j\",instance=\"i\"} 1 " + std::to_string(t_ms / 1000) + "\n"; }

TEST(PromtoolBlocksTest, ChunksNeverSpanTwoBlockRangesAndEachEndsTheText) {
  const std::string dir = TestDir();
  BlockOptions options;
  options.promtool = FakePromtool(dir, false);
  options.out_dir = dir + "/promdir";
  auto blocks = PromtoolBlocks::Open(options);
  ASSERT_TRUE(blocks.ok()) << blocks.status().message();
  const int64_t h = 3'600'000;
  const int64_t start = 1688140800000;  // 16:00Z, a 2 h boundary
  for (int64_t t = start + h; t < start + 5 * h; t += 15'000) ASSERT_TRUE(blocks.value()->Scrape(t, Sample(t)).ok());
  ASSERT_TRUE(blocks.value()->Finish().ok());
  EXPECT_EQ(blocks.value()->chunks(), 3);  // [17:00, 18:00), [18:00, 20:00), [20:00, 21:00)
  EXPECT_EQ(Read(dir + "/out-dir"), options.out_dir + "\n");
  int64_t lines = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string text = Read(dir + "/seen-" + std::to_string(i) + ".om");
    ASSERT_GE(text.size(), 6u);
    EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
    const int64_t block_start = start + 2 * i * h;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line == "# EOF") continue;
      const int64_t t = std::stoll(line.substr(line.rfind(' ') + 1)) * 1000;
      EXPECT_GE(t, block_start) << "chunk " << i;
      EXPECT_LT(t, block_start + 2 * h) << "chunk " << i;
      ++lines;
    }
  }
  EXPECT_EQ(lines, 4 * 240);  // every sample in exactly one chunk
  EXPECT_FALSE(fs::exists(options.out_dir + "/.backfill"));
}

TEST(PromtoolBlocksTest, ABigChunkIsCutAtAScrape) {
  const std::string dir = TestDir();
  BlockOptions options;
  options.promtool = FakePromtool(dir, false);
  options.out_dir = dir + "/promdir";
  options.max_chunk_bytes = 1000;
  auto blocks = PromtoolBlocks::Open(options);
  ASSERT_TRUE(blocks.ok());
  const std::string scrape = Sample(1688140800000) + Sample(1688140800000);  // ~60 bytes
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(blocks.value()->Scrape(1688140800000 + i * 15'000, scrape).ok());
  ASSERT_TRUE(blocks.value()->Finish().ok());
  EXPECT_GE(blocks.value()->chunks(), 5);
  EXPECT_EQ(blocks.value()->text_bytes(), static_cast<int64_t>(100 * scrape.size()));
}

TEST(PromtoolBlocksTest, APromtoolFailureIsReportedWithItsLastLine) {
  const std::string dir = TestDir();
  BlockOptions options;
  options.promtool = FakePromtool(dir, true);
  options.out_dir = dir + "/promdir";
  auto blocks = PromtoolBlocks::Open(options);
  ASSERT_TRUE(blocks.ok());
  ASSERT_TRUE(blocks.value()->Scrape(1688140800000, Sample(1688140800000)).ok());
  const core::Status s = blocks.value()->Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exited with status 1: parse: something is wrong at line 3"), std::string::npos)
      << s.message();
}

TEST(PromtoolBlocksTest, RefusesANonEmptyDirectoryAndAMissingPromtool) {
  const std::string dir = TestDir();
  WriteFile(dir, "promdir/01ABC/meta.json", "{}");
  BlockOptions options;
  options.promtool = FakePromtool(dir, false);
  options.out_dir = dir + "/promdir";
  auto refused = PromtoolBlocks::Open(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not empty"), std::string::npos);
  options.out_dir = dir + "/new";
  options.promtool = dir + "/no-such-promtool";
  auto missing = PromtoolBlocks::Open(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("promtool not found"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/new"));
}

TEST(PromtoolBlocksTest, AFailedBackfillLeavesNoDirectoryItMade) {
  const std::string dir = TestDir();
  BlockOptions options;
  options.promtool = FakePromtool(dir, false);
  options.out_dir = dir + "/made";
  {
    auto blocks = PromtoolBlocks::Open(options);
    ASSERT_TRUE(blocks.ok());
    ASSERT_TRUE(fs::exists(options.out_dir));
  }  // destroyed without Finish: the backfill failed
  EXPECT_FALSE(fs::exists(options.out_dir));
}

TEST(RulesTest, RecordingRulesAreCountedAndBadFilesNamed) {
  core::Result<int> n = CountRecordingRules(
      {"r.yml", "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: up\n      - alert: X\n"
                "        expr: up > 0\n"});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
  core::Result<int> bad = CountRecordingRules({"bad.yml", "groups: [\n"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("bad.yml:", 0), 0u) << bad.status().message();
  EXPECT_EQ(scoring::ShippedRules().front().name.rfind("configs/prometheus/rules/", 0), 0u);
  EXPECT_FALSE(CountRecordingRules({"x.yml", "groups: 3\n"}).ok());
  // The shipped files are built in and are rule files.
  ASSERT_FALSE(scoring::ShippedRules().empty());
  int shipped = 0;
  for (const scoring::RuleFileText& file : scoring::ShippedRules()) {
    core::Result<int> c = CountRecordingRules(file);
    ASSERT_TRUE(c.ok()) << c.status().message();
    shipped += c.value();
  }
  EXPECT_GE(shipped, 3);
}

TEST(RulesTest, RetentionKeepsEveryBlockCountedFromTheNewest) {
  EXPECT_EQ(RetentionFor(0, 0), "2d");
  EXPECT_EQ(RetentionFor(0, 7 * 86'400'000LL), "9d");
  EXPECT_EQ(RetentionFor(0, 183 * 86'400'000LL + 5), "185d");
}

// The rules step lists the blocks of a directory that also holds its own work directory (.rules):
// an entry without meta.json made the listing fail whenever the directory order put it last
// (block names are random ULIDs), a CI run's "backfill: .../sliced: No such file or directory".
TEST(RulesTest, BlocksAreListedWhateverElseIsInTheDirectory) {
  const fs::path dir = TestDir();
  EXPECT_TRUE(ListBlocks(dir).ok());
  EXPECT_TRUE(ListBlocks(dir).value().empty());
  for (int i = 0; i < 20; ++i) fs::create_directories(dir / (".rules" + std::to_string(i)) / "blocks");
  std::ofstream(dir / "lock");
  fs::create_directories(dir / "01HXBLOCK");
  std::ofstream(dir / "01HXBLOCK" / "meta.json") << R"({"ulid":"01HXBLOCK","minTime":1000,"maxTime":7201000})";
  core::Result<std::vector<BlockSpan>> blocks = ListBlocks(dir);
  ASSERT_TRUE(blocks.ok()) << blocks.status().message();
  ASSERT_EQ(blocks.value().size(), 1u);
  EXPECT_EQ(blocks.value()[0].dir.filename(), "01HXBLOCK");
  EXPECT_EQ(blocks.value()[0].min_ms, 1000);
  EXPECT_EQ(blocks.value()[0].max_ms, 7201000);
  EXPECT_FALSE(ListBlocks(dir / "missing").ok());
}

}  // namespace
}  // namespace acmetrace::history
