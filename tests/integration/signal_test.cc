// The binary stopped by signals, as a closing terminal, a supervisor and a process group send them:
// SIGHUP is the clean stop SIGTERM is (final output, --metrics-out, exit 0); a second signal during
// the stop is waited out; a third exits at once with 128 + its number and says what it lost.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "local_processes.h"
#include "test_files.h"

namespace acmetrace::test {
namespace {

namespace fs = std::filesystem;

const std::string kRelease = std::string(ACMETRACE_FIXTURES) + "/release";

bool Contains(const std::string& path, const std::string& text) { return ReadFile(path).find(text) != std::string::npos; }

TEST(SignalTest, SighupStopsRunCleanlyAndWritesMetricsOut) {
  // SIGHUP exited 129 with no message and no --metrics-out.
  const std::string dir = TestDir();
  const std::string out = dir + "/run.out", err = dir + "/run.err", metrics = dir + "/final.prom";
  Child run({Binary(), "run", "--data", kRelease, "--speed", "1", "--listen", "127.0.0.1:0", "--metrics-out", metrics},
            out, err);
  ASSERT_TRUE(WaitUntil([&] { return Contains(out, "listening on"); }, 60)) << ReadFile(err);
  EXPECT_EQ(run.Signal(SIGHUP), 0) << ReadFile(err);
  EXPECT_TRUE(Contains(err, "stopping (signal 1)")) << ReadFile(err);
  EXPECT_TRUE(Contains(metrics, "acmetrace_records_total")) << "no --metrics-out";
}

TEST(SignalTest, SighupStopsReplayCleanly) {
  const std::string dir = TestDir();
  const std::string out = dir + "/replay.out", err = dir + "/replay.err";
  Child replay({Binary(), "replay", "--data", kRelease, "--speed", "1", "--sink", "stdout"}, out, err);
  // Paced at 1x, the first record is flushed when due; the rest would take days.
  ASSERT_TRUE(WaitUntil([&] { return Contains(out, "\"topic\""); }, 60)) << ReadFile(err);
  EXPECT_EQ(replay.Signal(SIGHUP), 0) << ReadFile(err);
  EXPECT_TRUE(Contains(err, "stopping (signal 1)")) << ReadFile(err);
}

// A replay whose stdout is a pipe nobody reads: it blocks in write, so its stop cannot finish and
// the second and third signals come while it is stopping.
TEST(SignalTest, ASecondSignalIsWaitedOutAndAThirdExitsSayingWhatIsLost) {
  const std::string dir = TestDir();
  ASSERT_EQ(RunShell(std::string(Binary()) + " synth --out " + dir + "/day --days 1 --scale 0.02 2>/dev/null"), 0);
  const std::string fifo = dir + "/stdout.fifo", err = dir + "/replay.err";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Child replay({Binary(), "replay", "--data", dir + "/day", "--speed", "max", "--sink", "stdout", "--control", "127.0.0.1:0"},
               fifo, err);
  const int reader = ::open(fifo.c_str(), O_RDONLY);  // opened, never read: the pipe fills
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(WaitUntil([&] { return Contains(err, "control endpoint on"); }, 60)) << ReadFile(err);
  ::kill(replay.pid(), SIGTERM);
  ASSERT_TRUE(WaitUntil([&] { return Contains(err, "stopping (signal 15)"); }, 30)) << ReadFile(err);
  ::kill(replay.pid(), SIGTERM);
  ASSERT_TRUE(WaitUntil([&] { return Contains(err, "already stopping; finishing"); }, 30)) << ReadFile(err);
  EXPECT_TRUE(replay.Running()) << "the second signal must not end the stop";
  EXPECT_EQ(replay.Signal(SIGHUP), 128 + SIGHUP) << ReadFile(err);
  EXPECT_TRUE(Contains(err, "signal 1: exiting now; lost:")) << ReadFile(err);
  ::close(reader);
}

}  // namespace
}  // namespace acmetrace::test
