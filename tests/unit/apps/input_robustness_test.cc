// The binary under hostile input (issue 11): mutated feed lines into `process` and `export` are
// reported by line number and change nothing else; the data-directory defects of the table
// give counted errors; the series cap holds when fed from stdin.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_files.h"

namespace acmetrace {
namespace {

const std::string kFixture = std::string(ACMETRACE_FIXTURES) + "/release";

struct CommandRun {
  int exit_code;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `acmetrace ARGS` through the shell in dir, stdin from the file `in` (if any).
CommandRun RunBinary(const std::string& dir, const std::string& args, const std::string& in = "") {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  std::string command = std::string(ACMETRACE_BINARY) + " " + args + " >" + out + " 2>" + err;
  if (!in.empty()) command += " <" + in;
  const int status = std::system(command.c_str());
  return CommandRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

// Replaces the first `from` in line by `to` (the mutation must apply: the test says which).
std::string Replace(std::string line, const std::string& from, const std::string& to) {
  const size_t at = line.find(from);
  EXPECT_NE(at, std::string::npos) << from << " in " << line;
  if (at != std::string::npos) line.replace(at, from.size(), to);
  return line;
}

// The first line of lines containing what.
std::string LineWith(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines) {
    if (l.find(what) != std::string::npos) return l;
  }
  ADD_FAILURE() << "no line with " << what;
  return "";
}

// Mutations of real lines, each one a line the parser must refuse: invalid JSON, wrong types,
// NaN and Infinity, numbers too large, times out of range, deep nesting, unknown topics,
// truncation, invalid UTF-8, too many values.
std::vector<std::string> Mutations(const std::vector<std::string>& good) {
  const std::string util = LineWith(good, "\"topic\":\"acme.util\"");
  const std::string job = LineWith(good, "\"topic\":\"acme.jobs\"");
  const std::string power = LineWith(good, "\"topic\":\"acme.power\"");
  std::vector<std::string> bad = {
      util.substr(0, util.size() / 2),                                // truncated
      job.substr(0, job.size() - 1),                                  // the last brace missing
      "not json at all",
      "[1,2,3]",                                                      // not an object
      Replace(job, "\"topic\":\"acme.jobs\"", "\"topic\":\"acme.nope\""),  // unknown topic
      Replace(job, "\"topic\":\"acme.jobs\"", "\"topic\":7"),         // wrong type
      Replace(job, "\"gpu_num\":", "\"gpu_num\":\"8\",\"x\":"),       // a string for a count
      Replace(job, "\"cluster\":\"seren\"", "\"cluster\":null"),       // null for a string
      Replace(util, "\"ts_ms\":", "\"ts_ms\":\"soon\",\"y\":"),
      Replace(util, "\"ts_ms\":", "\"ts_ms\":4841740800000,\"y\":"),   // year 2123
      Replace(util, "\"ts_ms\":", "\"ts_ms\":1e30,\"y\":"),
      Replace(job, "\"ts_ms\":", "\"ts_ms\":-5,\"y\":"),
      Replace(util, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":[NaN,0.5],"),
      Replace(util, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":[Infinity],"),
      Replace(util, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":[1e400],"),
      Replace(util, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":[-1e999],"),
      Replace(util, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":\"0.5\","),
      Replace(util, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":" + std::string(5000, '[') + std::string(5000, ']') + ","),
      Replace(power, "\"fields\":{", "\"fields\":{\"Deep\":" + std::string(3000, '[') + "1" + std::string(3000, ']') + ","),
      std::string(20000, '[') + std::string(20000, ']'),
      Replace(util, "\"node\":\"", "\"node\":\"\xff\xfe"),            // invalid UTF-8
      Replace(power, "\"model\":", "\"model\":[],\"z\":"),
      Replace(util, "\"value\":", "\"value\":[],\"w\":"),
      "{\"topic\":\"acme.util\"}",                                    // no value
      "{\"value\":{}}",                                               // no topic
  };
  std::string many = "[0";
  for (int i = 1; i < 65; ++i) many += ",1";
  bad.push_back(Replace(util, "\"gpu\":{", "\"gpu\":{\"GPU_UTIL_65\":" + many + "],"));  // 65 GPUs
  return bad;
}

// Interleaves bad lines after every third good line; returns the 1-based numbers of the bad ones.
std::vector<int> Mix(const std::vector<std::string>& good, const std::vector<std::string>& bad,
                     std::vector<std::string>& mixed) {
  std::vector<int> numbers;
  size_t b = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    mixed.push_back(good[i]);
    if (i % 3 == 2 && b < bad.size()) {
      mixed.push_back(bad[b++]);
      numbers.push_back(static_cast<int>(mixed.size()));
    }
  }
  for (; b < bad.size(); ++b) {
    mixed.push_back(bad[b]);
    numbers.push_back(static_cast<int>(mixed.size()));
  }
  return numbers;
}

// Every bad line is named once, in the documented form, and nothing else is reported.
void ExpectEachReported(const std::string& err, const std::vector<int>& numbers) {
  std::set<int> reported;
  for (std::string line : Lines(err)) {
    // "TIME WARN  input: stdin:N: reason" (core/log.h): the message after the stage.
    if (const size_t at = line.find(" input: "); at != std::string::npos) line = line.substr(at + 8);
    if (line.rfind("stdin:", 0) != 0) continue;
    const size_t colon = line.find(": ", 6);
    if (colon == std::string::npos || colon == 6 ||
        line.find_first_not_of("0123456789", 6) != colon) {
      continue;
    }
    reported.insert(std::stoi(line.substr(6, colon - 6)));
    EXPECT_NE(line.compare(colon + 2, 2, ": "), 0) << "an empty FIELD slot: " << line;
    EXPECT_LT(line.size(), 400u) << "a message echoing its input: " << line.substr(0, 200);
  }
  EXPECT_EQ(reported, std::set<int>(numbers.begin(), numbers.end())) << err.substr(0, 4000);
}

TEST(InputRobustnessTest, ProcessReportsEachMutatedLineAndOutputsWhatTheGoodLinesGive) {
  const std::string dir = TestDir();
  const CommandRun replay = RunBinary(dir, "replay --data " + kFixture + " --sink stdout");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const std::vector<std::string> good = Lines(replay.out);
  ASSERT_GT(good.size(), 20u);
  std::vector<std::string> mixed;
  const std::vector<int> bad_numbers = Mix(good, Mutations(good), mixed);
  WriteFile(dir, "good.jsonl", Join(good));
  WriteFile(dir, "mixed.jsonl", Join(mixed));

  const CommandRun alone = RunBinary(dir, "process", dir + "/good.jsonl");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ASSERT_FALSE(alone.out.empty());
  const CommandRun with_bad = RunBinary(dir, "process", dir + "/mixed.jsonl");
  EXPECT_EQ(with_bad.exit_code, 0) << with_bad.err.substr(0, 2000);
  EXPECT_EQ(with_bad.out, alone.out);
  ExpectEachReported(with_bad.err, bad_numbers);

  // --strict stops at the first bad line with exit 1.
  EXPECT_EQ(RunBinary(dir, "process --strict", dir + "/mixed.jsonl").exit_code, 1);
}

TEST(InputRobustnessTest, ExportReportsEachMutatedLineAndServesWhatTheGoodLinesGive) {
  const std::string dir = TestDir();
  const CommandRun replay = RunBinary(dir, "replay --data " + kFixture + " --sink stdout");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  WriteFile(dir, "replayed.jsonl", replay.out);
  const CommandRun processed = RunBinary(dir, "process", dir + "/replayed.jsonl");
  ASSERT_EQ(processed.exit_code, 0) << processed.err;
  // What export reads in a pipeline: the processor's windows and anomalies, and the replayed feed.
  std::vector<std::string> good = Lines(processed.out);
  for (const std::string& l : Lines(replay.out)) good.push_back(l);
  std::vector<std::string> mixed;
  const std::vector<int> bad_numbers = Mix(good, Mutations(good), mixed);
  WriteFile(dir, "good.jsonl", Join(good));
  WriteFile(dir, "mixed.jsonl", Join(mixed));

  const std::string args = "export --listen 127.0.0.1:0 --until-end --metrics-out ";
  const CommandRun alone = RunBinary(dir, args + dir + "/good.prom", dir + "/good.jsonl");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const CommandRun with_bad = RunBinary(dir, args + dir + "/mixed.prom", dir + "/mixed.jsonl");
  EXPECT_EQ(with_bad.exit_code, 0) << with_bad.err.substr(0, 2000);
  ExpectEachReported(with_bad.err, bad_numbers);
  // The same exposition, but for the counters of what was read: records and input errors.
  auto served = [](const std::string& text) {
    std::string kept;
    for (const std::string& l : Lines(text)) {
      if (l.find("acmetrace_input_errors_total") != std::string::npos) continue;
      if (l.find("acmetrace_records_total") != std::string::npos) continue;
      if (l.find("acmetrace_lines_total") != std::string::npos) continue;
      kept += l + "\n";
    }
    return kept;
  };
  const std::string good_prom = Slurp(dir + "/good.prom"), mixed_prom = Slurp(dir + "/mixed.prom");
  ASSERT_NE(good_prom.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos) << good_prom.substr(0, 2000);
  EXPECT_EQ(served(mixed_prom), served(good_prom));
}

TEST(InputRobustnessTest, ProcessTakesAHugeButFiniteSampleWithoutAborting) {
  // SM_ACTIVE 1e308 is a valid JSON number; scaled to percent it overflowed to infinity and the
  // quantile sketch sized its buckets from it (std::length_error, exit 134).
  const std::string dir = TestDir();
  const CommandRun replay = RunBinary(dir, "replay --data " + kFixture + " --sink stdout");
  ASSERT_EQ(replay.exit_code, 0);
  std::vector<std::string> lines = Lines(replay.out);
  for (std::string& l : lines) {
    if (l.find("\"topic\":\"acme.util\"") != std::string::npos && l.find("\"gpu\":{") != std::string::npos) {
      l = Replace(l, "\"gpu\":{", "\"gpu\":{\"SM_ACTIVE\":[1e308,0.5],\"SM_OCCUPANCY\":[1.7976931348623157e308],");
    }
  }
  WriteFile(dir, "huge.jsonl", Join(lines));
  const CommandRun run = RunBinary(dir, "process", dir + "/huge.jsonl");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"topic\":\"acme.metrics\""), std::string::npos);
}

TEST(InputRobustnessTest, JobEventsACenturyApartEndPromptly) {
  // Times inside the accepted years can still be a century apart: the detectors judged every 60 s
  // of event time in between (failure_burst and queue_backlog: 52 million judgements, minutes of
  // CPU). They now jump over judgements that cannot change anything. `timeout` turns a spin into a
  // failure instead of a hung suite.
  const std::string dir = TestDir();
  auto submit = [](const std::string& id, int64_t ts_ms) {
    return "{\"topic\":\"acme.jobs\",\"key\":\"seren/" + id + "\",\"value\":{\"cluster\":\"seren\",\"event\":\"submit\","
           "\"ts_ms\":" + std::to_string(ts_ms) + ",\"job_id\":\"" + id + "\",\"user\":\"u\",\"type\":\"Other\","
           "\"node_num\":1,\"gpu_num\":8,\"cpu_num\":1}}\n";
  };
  WriteFile(dir, "century.jsonl", submit("a", 946684800000) + submit("b", 4102444000000));
  const int status = std::system(("timeout 60 " + std::string(ACMETRACE_BINARY) + " process <" + dir +
                                  "/century.jsonl >/dev/null 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process did not end within 60 s";
}

// A copy of the release fixture in dir/data, to spoil one file of.
std::string CopyFixture(const std::string& dir) {
  std::filesystem::copy(kFixture + "/data", dir + "/data", std::filesystem::copy_options::recursive);
  return dir;
}

TEST(InputRobustnessTest, ADirectoryWhereAFileShouldBeIsACountedErrorNamingIt) {
  for (const std::string name : {"job_trace/trace_seren.csv", "utilization/seren/GPU_UTIL.csv",
                                 "utilization/ipmi/GPU_AB_Power.csv"}) {
    const std::string dir = TestDir();
    CopyFixture(dir);
    const std::string path = dir + "/data/" + name;
    std::filesystem::remove(path);
    std::filesystem::create_directories(path);
    const CommandRun lenient = RunBinary(dir, "replay --data " + dir + " --sink null");
    EXPECT_EQ(lenient.exit_code, 0) << name << ": " << lenient.err;
    EXPECT_NE(lenient.err.find(path + ": is a directory, not a file; skipped"), std::string::npos)
        << name << ": " << lenient.err;
    const CommandRun strict = RunBinary(dir, "replay --data " + dir + " --sink null --strict");
    EXPECT_EQ(strict.exit_code, 1) << name << ": " << strict.err;
  }
}

TEST(InputRobustnessTest, RunTakesAHugeSmActiveCell) {
  // The second form of the 1e308 abort: the cell in SM_ACTIVE.csv, then `run`.
  const std::string dir = TestDir();
  CopyFixture(dir);
  WriteFile(dir, "data/utilization/seren/SM_ACTIVE.csv",
            "Time,10.140.1.10-0,10.140.1.10-1\n1677601080,1e308,0.5\n1677601095,0.25,1.7976931348623157e308\n");
  const CommandRun run =
      RunBinary(dir, "run --data " + dir + " --speed max --until-end --listen 127.0.0.1:0 --metrics-out " + dir + "/out.prom");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(Slurp(dir + "/out.prom").find("acmetrace_"), std::string::npos);
}

TEST(InputRobustnessTest, AYear9999RowIsSkippedAndTheRowsAfterItKept) {
  const std::string dir = TestDir();
  CopyFixture(dir);
  // Three rows: the second is year 9999; the first and third must both be replayed.
  WriteFile(dir, "data/utilization/seren/GPU_UTIL.csv",
            "Time,10.140.1.10-0\n1677601080,11\n9999-01-01 00:00:00+00:00,22\n1677601095,33\n");
  const CommandRun run = RunBinary(dir, "replay --data " + dir + " --clusters seren --sink stdout");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("GPU_UTIL.csv:3: Time: outside the accepted years 2000-2099: '9999-01-01 00:00:00+00:00'"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("goes back in time"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("\"GPU_UTIL\":[11]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"GPU_UTIL\":[33]"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("\"GPU_UTIL\":[22]"), std::string::npos) << run.out;
}

TEST(InputRobustnessTest, ExportCapsDistinctSeriesFedFromStdinAndSaysHowManyWereDropped) {
  const std::string dir = TestDir();
  // 300 distinct anomaly subjects of one kind, and a cap of 50 series per metric.
  std::string feed;
  for (int i = 0; i < 300; ++i) {
    feed += "{\"topic\":\"acme.anomalies\",\"key\":\"k\",\"value\":{\"cluster\":\"seren\",\"kind\":\"gpu_overheat\","
            "\"subject\":\"10.140.1." + std::to_string(i) + "-0\",\"state\":\"open\",\"ts_ms\":" +
            std::to_string(1677601080000 + i * 1000) + ",\"value\":90,\"threshold\":85}}\n";
  }
  WriteFile(dir, "anomalies.jsonl", feed);
  WriteFile(dir, "cap.yaml", "export:\n  max_series_per_metric: 50\n");
  const CommandRun run = RunBinary(dir, "--config " + dir + "/cap.yaml export --listen 127.0.0.1:0 --until-end --metrics-out " +
                                     dir + "/out.prom", dir + "/anomalies.jsonl");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string prom = Slurp(dir + "/out.prom");
  int open_series = 0;
  for (const std::string& l : Lines(prom)) {
    if (l.rfind("acmetrace_anomaly_active{", 0) == 0) ++open_series;
  }
  EXPECT_EQ(open_series, 50) << prom.substr(0, 3000);
  EXPECT_NE(prom.find("acmetrace_series_dropped_total{metric=\"acmetrace_anomaly_active\"} 250"), std::string::npos)
      << prom.substr(0, 3000);
}

}  // namespace
}  // namespace acmetrace
