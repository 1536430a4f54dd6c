// The Kafka path's equality test over the file transport, without a broker: replay, process and
// export as three processes started together, hopping through files (file.dir, three partitions per
// topic), and `run` with every hop through files, end in exactly the state of the in-process `run`
// on the same data (tests/integration/kafka_pipeline_equality_test.cc for Kafka).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "exposition_state.h"
#include "test_files.h"

namespace acmetrace::pipeline {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FileTransportEqualityTest, ThreeProcessesAndRunOverFilesEndInTheInProcessState) {
  const std::string dir = TestDir();
  const std::string bin = ACMETRACE_BINARY;
  ShellOutput synth = RunShellCapture(bin + " synth --out " + dir + "/data --clusters seren,kalos --days 1 --scale 0.01 " +
                                      "--seed 29 --inject-faults 2>&1");
  ASSERT_EQ(synth.exit_code, 0) << synth.out;
  const std::string config = WriteFile(dir, "acmetrace.yaml", "file:\n  dir: " + dir + "/hops\n  partitions: 3\n");
  const std::string acmetrace = bin + " --config " + config;
  const std::string run = acmetrace + " run --data " + dir + "/data --until-end --listen 127.0.0.1:0 --speed max";
  ShellOutput local = RunShellCapture(run + " --metrics-out " + dir + "/in-process.prom 2>&1");
  ASSERT_EQ(local.exit_code, 0) << local.out;
  const std::vector<std::string> expected = test::ExpositionState(ReadAll(dir + "/in-process.prom"));
  ASSERT_GT(expected.size(), 300u);

  // The readers start first, as a deployment's would, and follow the files as the replay writes them.
  ShellOutput three = RunShellCapture(
      "cd " + dir + " && " + acmetrace + " process --source file --sink file --until-end 2>process.err & p=$!; " +
      acmetrace + " export --source file --until-end --listen 127.0.0.1:0 --metrics-out " + dir +
      "/export.prom >/dev/null 2>export.err & e=$!; " + acmetrace + " replay --data " + dir +
      "/data --sink file --speed max 2>replay.err; r=$?; wait $p; pr=$?; wait $e; echo \"$r $pr $?\"");
  EXPECT_EQ(three.out, "0 0 0\n") << ReadAll(dir + "/replay.err") << ReadAll(dir + "/process.err")
                                  << ReadAll(dir + "/export.err");
  EXPECT_NE(ReadAll(dir + "/process.err").find(" 0 late,"), std::string::npos) << ReadAll(dir + "/process.err");
  const std::vector<std::string> got = test::ExpositionState(ReadAll(dir + "/export.prom"));
  EXPECT_EQ(got, expected) << "three processes over files:" << test::StateDifference(expected, got);

  // run reads only what it writes itself: the files of the run above stay where they are.
  ShellOutput over_files = RunShellCapture("ACMETRACE_RUN_TRANSPORT=file " + run + " --metrics-out " + dir +
                                           "/files.prom 2>&1");
  ASSERT_EQ(over_files.exit_code, 0) << over_files.out;
  EXPECT_NE(over_files.out.find("every hop through file"), std::string::npos) << over_files.out;
  EXPECT_NE(over_files.out.find("(0 late)"), std::string::npos) << over_files.out;
  const std::vector<std::string> run_got = test::ExpositionState(ReadAll(dir + "/files.prom"));
  EXPECT_EQ(run_got, expected) << "run over files:" << test::StateDifference(expected, run_got);
}

}  // namespace
}  // namespace acmetrace::pipeline
