// The acmetrace binary end to end: the documented config file, exit codes, --help everywhere.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "test_files.h"

namespace {

using acmetrace::RunShellCapture;
using acmetrace::ShellOutput;

// Runs the binary with args through the shell; stdout captured, stderr discarded.
// env: NAME=VALUE assignments put before the command (the shell's syntax).
ShellOutput RunAcmetrace(const std::string& args, const std::string& env = "") {
  return RunShellCapture((env.empty() ? "" : env + " ") + std::string(ACMETRACE_BINARY) + " " + args + " 2>/dev/null");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kRepo = std::string(ACMETRACE_FIXTURES) + "/../..";

TEST(CliTest, ShippedConfigIsTheDocumentedDefaults) {
  // configs/acmetrace.yaml must list every key with its default and help: regenerate it with
  // `build/apps/acmetrace config --defaults > configs/acmetrace.yaml` when a key changes.
  ShellOutput run = RunAcmetrace("config --defaults");
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, ReadFile(kRepo + "/configs/acmetrace.yaml"));
}

TEST(CliTest, ConfigPrintsTheEffectiveValuesAndWhereEachWasSet) {
  // A file sets one key and a variable another: `acmetrace config` shows both values with where they
  // came from, the rest at their defaults; --defaults ignores both.
  const std::string path = testing::TempDir() + "/effective.yaml";
  std::ofstream(path) << "export:\n  http_threads: 8\n";
  ShellOutput run = RunAcmetrace("--config " + path + " config", "ACMETRACE_PROCESS_UNITS=percent");
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("  # set by " + path + ":2: export.http_threads (default: 4)\n  http_threads: 8\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  # set by ACMETRACE_PROCESS_UNITS (default: raw)\n  units: percent\n"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  render_cache_ms: 1000\n"), std::string::npos);
  ShellOutput defaults = RunAcmetrace("--config " + path + " config --defaults", "ACMETRACE_PROCESS_UNITS=percent");
  EXPECT_EQ(defaults.out, ReadFile(kRepo + "/configs/acmetrace.yaml"));
}

TEST(CliTest, ShippedConfigLoadsWithoutError) {
  EXPECT_EQ(RunAcmetrace("--config " + kRepo + "/configs/acmetrace.yaml config").exit_code, 0);
}

TEST(CliTest, UnknownConfigKeyIsAUsageError) {
  const std::string path = testing::TempDir() + "/bad_config.yaml";
  std::ofstream(path) << "replay:\n  sped: 10\n";
  EXPECT_EQ(RunAcmetrace("--config " + path + " replay --data " + std::string(ACMETRACE_FIXTURES) + "/release").exit_code, 2);
}

TEST(CliTest, VersionPrintsNameVersionAndRevision) {
  ShellOutput run = RunAcmetrace("--version");
  ASSERT_EQ(run.exit_code, 0);
  // "acmetrace 0.1.0 (revision abcdef012345, GNU 12.2.0)"
  EXPECT_EQ(run.out.rfind(std::string("acmetrace ") + ACMETRACE_PROJECT_VERSION + " (revision ", 0), 0u) << run.out;
  EXPECT_EQ(run.out.find("revision unknown"), std::string::npos) << "built from a git checkout: " << run.out;
  EXPECT_EQ(run.out.back(), '\n');
}

TEST(CliTest, VersionNamesTheAllocatorTheBinaryRunsOn) {
  // tcmalloc is linked unless configured off (ACMETRACE_MALLOC=glibc) or a sanitizer build.
  ShellOutput run = RunAcmetrace("--version");
  ASSERT_EQ(run.exit_code, 0);
  const std::string expected = std::string(ACMETRACE_MALLOC_USED) == "tcmalloc" ? ", tcmalloc (gperftools " : ", glibc malloc)";
  EXPECT_NE(run.out.find(expected), std::string::npos) << run.out;
}

TEST(CliTest, HelpOnEverySubcommandExitsZero) {
  for (const char* sub : {"", "synth", "summary", "replay", "process", "export", "run", "config"}) {
    ShellOutput run = RunAcmetrace(std::string(sub) + " --help");
    EXPECT_EQ(run.exit_code, 0) << sub;
    EXPECT_NE(run.out.find("--help"), std::string::npos) << sub;
  }
}

TEST(CliTest, ExitCodes) {
  const std::string fixture = std::string(ACMETRACE_FIXTURES) + "/release";
  EXPECT_EQ(RunAcmetrace("").exit_code, 2);                               // no subcommand
  EXPECT_EQ(RunAcmetrace("replay --data " + fixture + " --bogus").exit_code, 2);
  EXPECT_EQ(RunAcmetrace("replay --data " + fixture + " --speed fast").exit_code, 2);
  EXPECT_EQ(RunAcmetrace("replay --data " + fixture + " --shard 2/2").exit_code, 2);
  EXPECT_EQ(RunAcmetrace("replay --data /nonexistent/acmetrace").exit_code, 1);
  EXPECT_EQ(RunAcmetrace("summary /nonexistent/trace_seren.csv").exit_code, 1);
  EXPECT_EQ(RunAcmetrace("replay --data " + fixture + " --sink null").exit_code, 0);
}

TEST(CliTest, RunAndExportExitCodes) {
  const std::string fixture = std::string(ACMETRACE_FIXTURES) + "/release";
  EXPECT_EQ(RunAcmetrace("run --data " + fixture + " --speed fast --until-end").exit_code, 2);
  EXPECT_EQ(RunAcmetrace("run --data " + fixture + " --listen nonsense --until-end").exit_code, 2);
  EXPECT_EQ(RunAcmetrace("run --data /nonexistent/acmetrace --listen 127.0.0.1:0 --until-end").exit_code, 1);
  EXPECT_EQ(RunAcmetrace("export --source bogus").exit_code, 2);
  EXPECT_EQ(RunAcmetrace("export --bogus").exit_code, 2);
  // An address that cannot be bound is a failure, not a crash.
  EXPECT_EQ(RunAcmetrace("export --listen 192.0.2.1:1 --until-end < /dev/null").exit_code, 1);
}

TEST(CliTest, RunUntilEndWritesTheFinalExposition) {
  const std::string out = testing::TempDir() + "/run_final.prom";
  ShellOutput run = RunAcmetrace("run --data " + std::string(ACMETRACE_FIXTURES) +
                                   "/release --speed max --until-end --listen 127.0.0.1:0 --metrics-out " + out);
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out.rfind("listening on http://127.0.0.1:", 0), 0u) << run.out;
  const std::string text = ReadFile(out);
  EXPECT_NE(text.find("acmetrace_job_gpu_seconds_total{cluster=\"seren\",type=\"Other\",state=\"FAILED\"} 936\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("acmetrace_replay_speed 0\n"), std::string::npos);  // max
}

TEST(CliTest, ProcessPipedIntoExportServesItsRecords) {
  const std::string out = testing::TempDir() + "/export_final.prom";
  const std::string fixture = std::string(ACMETRACE_FIXTURES) + "/release";
  ShellOutput run = RunAcmetrace("replay --data " + fixture + " --sink stdout | " + std::string(ACMETRACE_BINARY) +
                                   " process | " + std::string(ACMETRACE_BINARY) +
                                   " export --listen 127.0.0.1:0 --until-end --metrics-out " + out);
  ASSERT_EQ(run.exit_code, 0);
  const std::string text = ReadFile(out);
  EXPECT_NE(text.find("acmetrace_jobs_submitted_total{cluster=\"seren\",type=\"Other\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("acmetrace_records_total{stage=\"export\",topic=\"acme.metrics\"}"), std::string::npos);
}

TEST(CliTest, ReplayToStdoutFramesEveryRecord) {
  ShellOutput run = RunAcmetrace("replay --data " + std::string(ACMETRACE_FIXTURES) + "/release --sink stdout");
  ASSERT_EQ(run.exit_code, 0);
  std::istringstream lines(run.out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(line.rfind("{\"topic\":\"acme.", 0), 0u) << line;
    EXPECT_NE(line.find("\"key\":\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"value\":{\"v\":1,"), std::string::npos) << line;
  }
  EXPECT_GT(count, 10);
}

TEST(CliTest, SummaryCheckNamesDifferencesFromTheRelease) {
  // The fixture is not the release: --check must say so with exit 1, not pretend.
  EXPECT_EQ(RunAcmetrace("summary --check " + std::string(ACMETRACE_FIXTURES) + "/release/data/job_trace/trace_seren.csv").exit_code, 1);
}

}  // namespace
