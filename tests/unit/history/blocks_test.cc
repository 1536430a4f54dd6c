// The promtool driver with a stand-in promtool (a script recording what it is given): chunks cut
// at block boundaries and at the size cap, each complete, failures reported by promtool's last
// line, the directory rules.
#include "acmetrace/history/blocks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

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

// A promtool that copies each chunk it is given into dir/seen-chunk-N.om (or fails with a message).
// Named by the chunk, not by arrival: two runs go at once.
std::string FakePromtool(const std::string& dir, bool fail) {
  const std::string path = WriteFile(
      dir, "promtool",
      fail ? "#!/bin/sh\necho 'parse: something is wrong at line 3' >&2\nexit 1\n"
           : "#!/bin/sh\n# tsdb create-blocks-from openmetrics --quiet FILE OUT\ncp \"$5\" \"" + dir +
                 "/seen-$(basename \"$5\")\"\necho \"$6\" > \"" + dir + "/out-dir\"\n");
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
  // promtool writes aside, next to PROMDIR; PROMDIR appears only at Commit.
  EXPECT_EQ(Read(dir + "/out-dir"), blocks.value()->blocks_dir() + "\n");
  EXPECT_EQ(fs::path(blocks.value()->staging_dir()).parent_path(), fs::path(dir));
  EXPECT_FALSE(fs::exists(options.out_dir));
  int64_t lines = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string text = Read(dir + "/seen-chunk-" + std::to_string(i) + ".om");
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
  EXPECT_FALSE(fs::exists(blocks.value()->staging_dir() + "/chunks"));
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
  EXPECT_EQ(s.message().find("log"), std::string::npos) << "no path of a log removed at exit: " << s.message();
}

// promtool's own words when the disk is full come before its usage text and a blank line: the
// message carries the cause, not the last line.
TEST(PromtoolBlocksTest, AFailingChildSaysItsRealCause) {
  const std::string dir = TestDir();
  const std::string tool = WriteFile(dir, "promtool",
                                     "#!/bin/sh\n"
                                     "echo 'level=info msg=\"Writing block\"' >&2\n"
                                     "echo 'level=error msg=\"create blocks\" err=\"write /x/chunks/000001: no space "
                                     "left on device\"' >&2\n"
                                     "echo 'usage: promtool tsdb create-blocks-from openmetrics [<flags>]' >&2\n"
                                     "echo '' >&2\nexit 1\n");
  fs::permissions(tool, fs::perms::owner_all);
  BlockOptions options;
  options.promtool = tool;
  options.out_dir = dir + "/promdir";
  auto blocks = PromtoolBlocks::Open(options);
  ASSERT_TRUE(blocks.ok());
  ASSERT_TRUE(blocks.value()->Scrape(1688140800000, Sample(1688140800000)).ok());
  const core::Status s = blocks.value()->Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no space left on device"), std::string::npos) << s.message();
}

TEST(PromtoolBlocksTest, BlocksMoveIntoPromdirInOneRenameAtCommit) {
  for (const bool existing_empty : {false, true}) {
    const std::string dir = TestDir();
    BlockOptions options;
    options.promtool = WriteFile(dir, "promtool", "#!/bin/sh\nmkdir -p \"$6/01BLOCK\" && echo '{}' > \"$6/01BLOCK/meta.json\"\n");
    fs::permissions(options.promtool, fs::perms::owner_all);
    options.out_dir = dir + "/promdir";
    if (existing_empty) fs::create_directories(options.out_dir);
    auto blocks = PromtoolBlocks::Open(options);
    ASSERT_TRUE(blocks.ok()) << blocks.status().message();
    ASSERT_TRUE(blocks.value()->Scrape(1688140800000, Sample(1688140800000)).ok());
    ASSERT_TRUE(blocks.value()->Finish().ok());
    EXPECT_EQ(fs::exists(options.out_dir), existing_empty) << "PROMDIR is written only at Commit";
    ASSERT_TRUE(blocks.value()->Commit().ok());
    EXPECT_TRUE(fs::exists(options.out_dir + "/01BLOCK/meta.json"));
    EXPECT_FALSE(fs::exists(blocks.value()->staging_dir()));
  }
}

// A killed backfill (SIGKILL, a crash: no destructor ran) left its staging directory behind, gigabytes
// of it at scale. The next backfill into the same PROMDIR removes it and says so; a live backfill's
// (its lock held) and another PROMDIR's stay.
TEST(PromtoolBlocksTest, TheStagingOfAKilledBackfillIntoTheSamePromdirIsRemoved) {
  const std::string dir = TestDir();
  BlockOptions options;
  options.promtool = FakePromtool(dir, false);
  options.out_dir = dir + "/promdir";
  auto staging = [&](const std::string& name) {
    const fs::path p = fs::path(dir) / name;
    fs::create_directories(p / "blocks");
    WriteFile((p / "blocks").string(), "chunk-0.om", std::string(size_t{3} << 20, 'x'));
    return p;
  };
  // Gone: a lock nobody holds (a killed process's lock goes with it); an older version's, without a
  // lock file, named by a PID no process has (above Linux's pid_max).
  const fs::path killed = staging(".promdir.backfill-12345");
  WriteFile(killed.string(), "lock", "");
  const fs::path older = staging(".promdir.backfill-999999999");
  // Alive: a lock held (by this test, as a running backfill holds its own); an older version's named
  // by a live PID (this test's parent); another PROMDIR's.
  const fs::path live = staging(".promdir.backfill-23456");
  const int held = ::open((live / "lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  const fs::path live_older = staging(".promdir.backfill-" + std::to_string(::getppid()));
  const fs::path other = staging(".other.backfill-999999999");

  auto blocks = PromtoolBlocks::Open(options);
  ASSERT_TRUE(blocks.ok()) << blocks.status().message();
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_FALSE(fs::exists(older));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(live_older));
  EXPECT_TRUE(fs::exists(other));
  std::vector<std::string> removed = blocks.value()->removed_stale();
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{killed.string() + " (3 MB)", older.string() + " (3 MB)"}));
  // This backfill holds its own lock: a backfill started beside it does not take it for gone.
  const int probe = ::open((fs::path(blocks.value()->staging_dir()) / "lock").c_str(), O_RDWR);
  ASSERT_GE(probe, 0);
  EXPECT_NE(::flock(probe, LOCK_EX | LOCK_NB), 0);
  ::close(probe);
  ::close(held);
}

// A stop (SIGINT/SIGTERM to the backfill) stops the promtool runs at once, and the staging
// directory goes with the backfill; PROMDIR is as it was.
TEST(PromtoolBlocksTest, AStopEndsPromtoolAndLeavesPromdirAsItWas) {
  const std::string dir = TestDir();
  BlockOptions options;
  // Writes its pid, then runs until stopped (exec: the pid is the one that must go).
  options.promtool = WriteFile(dir, "promtool", "#!/bin/sh\necho $$ > \"$5.pid\"\nexec sleep 600\n");
  fs::permissions(options.promtool, fs::perms::owner_all);
  options.out_dir = dir + "/promdir";
  StopRequest stop;
  options.stop = &stop;
  options.chunk_ms = 15'000;  // every scrape its own chunk
  std::string staging;
  {
    auto blocks = PromtoolBlocks::Open(options);
    ASSERT_TRUE(blocks.ok());
    staging = blocks.value()->staging_dir();
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(blocks.value()->Scrape(1688140800000 + i * 15'000, Sample(1688140800000 + i * 15'000)).ok());
    }
    ASSERT_TRUE(blocks.value()->Scrape(1688140830000, Sample(1688140830000)).ok());  // two promtool runs now
    stop.Request(SIGTERM);
    const core::Status s = blocks.value()->Finish();  // waits for them: they end at once
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "stopped");
    EXPECT_EQ(stop.signal(), SIGTERM);
  }
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_FALSE(fs::exists(options.out_dir));
}

TEST(CheckRuleFilesTest, AFailingPromtoolCheckRulesNamesTheFileAndWhy) {
  const std::string dir = TestDir();
  const std::string promtool = WriteFile(
      dir, "promtool",
      "#!/bin/sh\n# check rules FILE\ngrep -q 'bad' \"$3\" || exit 0\necho \"Checking $3\"\n"
      "echo '  FAILED:'\necho \"$3: 5:11: group \\\"g\\\", rule 1, \\\"x\\\": could not parse expression: 1:3: "
      "parse error: unexpected <EOF>\"\nexit 1\n");
  fs::permissions(promtool, fs::perms::owner_all);
  EXPECT_TRUE(CheckRuleFiles(promtool, {{"good.yml", "groups: []\n"}}, dir + "/work").ok());
  const core::Status s = CheckRuleFiles(promtool, {{"good.yml", "groups: []\n"}, {"mine.yml", "bad\n"}}, dir + "/work");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("mine.yml: promtool check rules: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("parse error: unexpected <EOF>"), std::string::npos) << s.message();
  // The real promtool, when there is one: the shipped rules pass.
  if (std::optional<std::string> real = FindExecutable("promtool")) {
    EXPECT_TRUE(CheckRuleFiles(*real, scoring::ShippedRules(), dir + "/real").ok());
    const core::Status bad = CheckRuleFiles(
        *real, {{"broken.yml", "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: sum(\n"}},
        dir + "/real");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.message().rfind("broken.yml: promtool check rules: ", 0), 0u) << bad.message();
    EXPECT_NE(bad.message().find("exited with status 1: broken.yml: 5:15: group \"g\", rule 1, \"a:b\": could not "
                                 "parse expression: 1:5: parse error: unclosed left parenthesis"),
              std::string::npos)
        << bad.message();
  }
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
  std::string staging;
  {
    auto blocks = PromtoolBlocks::Open(options);
    ASSERT_TRUE(blocks.ok());
    staging = blocks.value()->staging_dir();
    ASSERT_TRUE(fs::exists(staging));
    ASSERT_TRUE(blocks.value()->Scrape(1688140800000, Sample(1688140800000)).ok());
    ASSERT_TRUE(blocks.value()->Finish().ok());
  }  // destroyed without Commit: the backfill failed
  EXPECT_FALSE(fs::exists(options.out_dir));
  EXPECT_FALSE(fs::exists(staging));
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
