// The binary's configuration as a user meets it: a wrong value in a file, a flag or an environment
// variable is one line naming where it came from, exit 2, before anything is opened or started.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_files.h"

namespace {

using acmetrace::RunShellCapture;
using acmetrace::ShellOutput;

struct Outcome {
  int exit_code;
  std::string out;
  std::string err;
};

// This test's directory, made fresh once per test (TestDir() empties it on every call).
std::string Scratch() {
  static std::string dir, test;
  const std::string name = testing::UnitTest::GetInstance()->current_test_info()->name();
  if (name != test) {
    test = name;
    dir = acmetrace::TestDir();
  }
  return dir;
}

// stderr without each line's log prefix (core/log.h: "2026-12-01T15:21:10.909Z ERROR "), so the
// messages compare exactly; a line without the prefix is kept whole (and then fails the comparison).
std::string WithoutLogPrefix(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t z = line.find("Z ");
    if (z == 23 && line.size() > 25) {
      const size_t level_end = line.find(' ', z + 2);
      const size_t message = line.find_first_not_of(' ', level_end);
      if (level_end != std::string::npos && message != std::string::npos) line = line.substr(message);
    }
    out += line + "\n";
  }
  return out;
}

// Runs `env_prefix acmetrace args` through the shell, stdin from /dev/null.
Outcome RunBinary(const std::string& args, const std::string& env_prefix = "") {
  const std::string err_path = Scratch() + "/stderr.txt";
  const std::string command =
      env_prefix + " " + std::string(ACMETRACE_BINARY) + " " + args + " < /dev/null 2>" + err_path;
  const ShellOutput run = RunShellCapture(command);
  std::ifstream in(err_path);
  std::stringstream err;
  err << in.rdbuf();
  return Outcome{run.exit_code, run.out, WithoutLogPrefix(err.str())};
}

const std::string kData = std::string(ACMETRACE_FIXTURES) + "/release";

std::string WriteConfig(const std::string& text) {
  static int n = 0;
  return acmetrace::WriteFile(Scratch(), "config" + std::to_string(++n) + ".yaml", text);
}

TEST(ConfigCliTest, ABadDetectorKeyStopsRunBeforeAnythingRuns) {
  // The reproduction: this used to abort (exit 134) once the replay had started.
  const std::string path = WriteConfig("# thresholds\ndetect:\n  gpu_overheat.open_c: abc\n");
  const Outcome o = RunBinary("--config " + path + " run --data " + kData + " --listen 127.0.0.1:0 --until-end");
  EXPECT_EQ(o.exit_code, 2);
  // The only output: no "listening on", no "replaying", no progress.
  EXPECT_EQ(o.err, "acmetrace: " + path + ":3: detect.gpu_overheat.open_c: not a number: 'abc'\n");
  EXPECT_EQ(o.out, "");
}

TEST(ConfigCliTest, ABadKeyOfEachSectionStopsEachCommand) {
  struct Case {
    const char* yaml;
    std::string command;
    const char* error;  // after "FILE:"
  };
  const Case cases[] = {
      {"process:\n  windows_s: 60,abc\n", "process", "2: process.windows_s: item 2 of 2: not an integer: 'abc'"},
      {"detect:\n  util_drop.open_share: 1.5\n", "process", "2: detect.util_drop.open_share: must be <= 1, got 1.5"},
      {"replay:\n  loop_gap_s: -1\n", "replay --data " + kData, "2: replay.loop_gap_s: must be >= 0, got -1"},
      {"kafka:\n  linger_ms: -1\n", "replay --data " + kData + " --sink null",
       "2: kafka.linger_ms: must be >= 0, got -1"},
      {"export:\n  http_threads: 0\n", "export --listen 127.0.0.1:0 --until-end",
       "2: export.http_threads: must be >= 1, got 0"},
      {"run:\n  queue_capacity: 0\n", "run --data " + kData + " --listen 127.0.0.1:0 --until-end",
       "2: run.queue_capacity: must be >= 1, got 0"},
      {"synth:\n  scale: 0\n", "synth --out " + Scratch() + "/synth", "2: synth.scale: must be > 0, got 0"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteConfig(c.yaml);
    const Outcome o = RunBinary("--config " + path + " " + c.command);
    EXPECT_EQ(o.exit_code, 2) << c.yaml;
    EXPECT_EQ(o.err, "acmetrace: " + path + ":" + c.error + "\n") << c.yaml;
    EXPECT_EQ(o.out, "") << c.yaml;
  }
}

TEST(ConfigCliTest, EveryWrongValueOfTheFileIsReportedAtOnce) {
  // The table: out-of-range values that were accepted silently, and step_s 0 that never ended.
  const std::string path = WriteConfig(
      "detect:\n"
      "  failure_burst.step_s: 0\n"
      "  queue_backlog.step_s: 0\n"
      "  gpu_overheat.open_for_s: -30\n"
      "  failure_burst.windows_s: 0,-5,abc\n"
      "run:\n"
      "  queue_capacity: 0\n");
  const Outcome o = RunBinary("--config " + path + " run --data " + kData + " --listen 127.0.0.1:0 --until-end");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: " + path + ":4: detect.gpu_overheat.open_for_s: must be >= 0, got -30\n" +
                       "acmetrace: " + path + ":2: detect.failure_burst.step_s: must be >= 1, got 0\n" +
                       "acmetrace: " + path + ":5: detect.failure_burst.windows_s: item 1 of 3: must be > 0, got 0\n" +
                       "acmetrace: " + path + ":3: detect.queue_backlog.step_s: must be >= 1, got 0\n" +
                       "acmetrace: " + path + ":7: run.queue_capacity: must be >= 1, got 0\n");
}

TEST(ConfigCliTest, MalformedYamlIsOneLineWithItsLine) {
  const std::string path = WriteConfig("replay:\n  speed: 60\n  clusters: [seren\n");
  const Outcome o = RunBinary("--config " + path + " replay --data " + kData + " --sink null");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err.rfind("acmetrace: " + path + ":", 0), 0u) << o.err;
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << o.err;
}

TEST(ConfigCliTest, ABadFlagIsNamedByTheFlag) {
  for (const std::string& sub : {"replay --data " + kData + " --sink null", "run --data " + kData + " --until-end"}) {
    Outcome o = RunBinary(sub + " --speed 0");
    EXPECT_EQ(o.exit_code, 2) << sub;
    EXPECT_EQ(o.err, "acmetrace: --speed: not max or a number in [0.001, 1000000000]: '0'\n") << sub;
    o = RunBinary(sub + " --speed abc");
    EXPECT_EQ(o.exit_code, 2) << sub;
    EXPECT_EQ(o.err, "acmetrace: --speed: not max or a number in [0.001, 1000000000]: 'abc'\n") << sub;
  }
  Outcome o = RunBinary("replay --data " + kData + " --shard 2/2");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: --shard: expected i/n with 0 <= i < n <= 1000000, got '2/2'\n");
  o = RunBinary("export --listen nonsense --until-end");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: --listen: expected HOST:PORT, got 'nonsense'\n");
  o = RunBinary("synth --out " + Scratch() + "/s --days 0");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: --days: must be >= 1, got 0\n");
}

// Every flag that sets a key names it in its help ("[key]"), and a value its key refuses, given by
// the flag, is one line naming the flag: each flag reaches the key it names. Whether the key refuses
// the value is asked of the binary itself (`acmetrace config` with the key's variable). A variable
// that is always wrong keeps every command from starting.
TEST(ConfigCliTest, EveryFlagThatSetsAKeyIsNamedWhenItsKeyRefusesTheValue) {
  const std::string kValue = "-1/x";
  const std::string kStop = "ACMETRACE_RUN_QUEUE_CAPACITY=0";
  const std::vector<std::string> commands = {"replay --data " + kData, "run", "export", "process", "backfill",
                                             "synth --out " + Scratch() + "/s"};
  int named = 0, taken = 0;
  for (const std::string& command : commands) {
    const Outcome help = RunBinary(command.substr(0, command.find(' ')) + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      // "  --speed TEXT      trace seconds per wall second, or max [replay.speed]"
      const size_t open = line.rfind(" [");
      if (line.rfind("  --", 0) != 0 || line.empty() || line.back() != ']' || open == std::string::npos) continue;
      const std::string flag = line.substr(2, line.find(' ', 2) - 2);
      const std::string key = line.substr(open + 2, line.size() - open - 3);
      if (key == "remote_write.*" || line.compare(2 + flag.size(), 6, " TEXT ") != 0) continue;  // not one key; no value
      std::string variable = "ACMETRACE_";
      for (char c : key) variable += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
      const bool refused = RunBinary("config", "env " + variable + "=" + kValue).exit_code != 0;
      const Outcome o = RunBinary(command + " " + flag + " " + kValue, "env " + kStop);
      EXPECT_EQ(o.exit_code, 2) << command << " " << flag;
      const bool names_flag = o.err.find("acmetrace: " + flag + ": ") != std::string::npos;
      EXPECT_EQ(names_flag, refused) << command << " " << flag << " [" << key << "]: " << o.err;
      ++(refused ? named : taken);
    }
  }
  EXPECT_GE(named, 25);
  EXPECT_GT(taken, 3);  // free text: --brokers, --clusters, --group, --state-dir, --promtool
}

TEST(ConfigCliTest, ABadEnvironmentVariableIsNamedByTheVariable) {
  Outcome o = RunBinary("replay --data " + kData + " --sink null", "env ACMETRACE_REPLAY_SPEED=abc");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: ACMETRACE_REPLAY_SPEED: not max or a number in [0.001, 1000000000]: 'abc'\n");
  o = RunBinary("process", "env ACMETRACE_DETECT_GPU_OVERHEAT_OPEN_C=hot");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: ACMETRACE_DETECT_GPU_OVERHEAT_OPEN_C: not a number: 'hot'\n");
  // Another tool's variable with the kafka prefix is not taken for a misspelt key.
  EXPECT_EQ(RunBinary("replay --data " + kData + " --sink null", "env ACMETRACE_KAFKA_HOME=/tmp").exit_code, 0);
  o = RunBinary("replay --data " + kData + " --sink null", "env ACMETRACE_REPLAY_SPEEED=60");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "acmetrace: ACMETRACE_REPLAY_SPEEED: no such configuration key (see `acmetrace config`)\n");
}

TEST(ConfigCliTest, FlagBeatsEnvironmentBeatsFile) {
  // Judged by which value is checked: the losing one is wrong, so exit 0 proves the winner was used.
  const std::string bad_file = WriteConfig("replay:\n  sink: carrier-pigeon\n");
  const std::string replay = "replay --data " + kData;
  EXPECT_EQ(RunBinary("--config " + bad_file + " " + replay).exit_code, 2);
  EXPECT_EQ(RunBinary("--config " + bad_file + " " + replay, "env ACMETRACE_REPLAY_SINK=null").exit_code, 0);
  EXPECT_EQ(RunBinary(replay + " --sink null", "env ACMETRACE_REPLAY_SINK=carrier-pigeon").exit_code, 0);
  const Outcome o = RunBinary("--config " + bad_file + " " + replay, "env ACMETRACE_REPLAY_SINK=nowhere");
  EXPECT_EQ(o.exit_code, 2);
  // The choices are the registered transports' (TransportRegistryTest): whatever they are, the
  // environment's value is the one judged.
  EXPECT_EQ(o.err.rfind("acmetrace: ACMETRACE_REPLAY_SINK: expected stdout, null, ", 0), 0u) << o.err;
  EXPECT_NE(o.err.find(", got 'nowhere'\n"), std::string::npos) << o.err;
  // And the value that wins is the one used: stdout sink writes records, null writes none.
  const std::string stdout_file = WriteConfig("replay:\n  sink: stdout\n");
  EXPECT_NE(RunBinary("--config " + stdout_file + " " + replay).out, "");
  EXPECT_EQ(RunBinary("--config " + stdout_file + " " + replay, "env ACMETRACE_REPLAY_SINK=null").out, "");
  EXPECT_NE(RunBinary("--config " + stdout_file + " " + replay + " --sink stdout", "env ACMETRACE_REPLAY_SINK=null").out, "");
}

}  // namespace

namespace {

TEST(SynthCliTest, ADataSetASynthDidNotFinishIsRefusedByReplay) {
  // synth stopped mid-write left cut files and no faults.csv, and replay read them with 0 errors.
  const std::string out = Scratch() + "/day";
  std::filesystem::create_directories(out + "/data");
  acmetrace::WriteFile(out + "/data", "utilization", "a file where synth makes a directory");  // synth fails there
  Outcome o = RunBinary("synth --out " + out + " --clusters seren --days 1 --scale 0.01");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/.acmetrace-synth-incomplete"));
  o = RunBinary("replay --data " + out + " --sink null");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find(out + ": an acmetrace synth has not finished writing it"), std::string::npos) << o.err;
  // Finished, it leaves no marker and replays.
  std::filesystem::remove(out + "/data/utilization");
  o = RunBinary("synth --out " + out + " --clusters seren --days 1 --scale 0.01");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/.acmetrace-synth-incomplete"));
  EXPECT_EQ(RunBinary("replay --data " + out + " --sink null").exit_code, 0);
}

}  // namespace
