// Issue #12 point 4, as a user sees it: `acmetrace replay --speed 360 --sink stdout | consumer`. The real
// binary writes into a pipe; this test is the consumer, timestamping each line when it arrives, and compares
// the arrival with the schedule wall0 + (trace - trace0) / speed (wall0: the first line's arrival). Every
// line must arrive within 50 ms of its schedule, neither late (held in a buffer) nor early (a buffer flushed
// ahead of its time), in the best of up to three runs. CTest label `pacing`; 10-35 s of wall time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr double kSpeed = 360;         // an hour of trace in 10 s
constexpr double kToleranceMs = 50;    // the replay's pacing goal (docs/design.md)
constexpr int64_t kT0 = 1688169600;    // 2023-07-01 00:00:00 UTC

std::string FreshDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / ("acmetrace_pacing_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// One hour of a small cluster: 4 nodes x 8 GPUs sampled every 15 s, and a job every 90 s (submit, start and end
// events at their own times): records at ~400 distinct times, 9 ms to 42 ms of wall time apart at x360.
void WriteHour(const std::string& dir) {
  std::filesystem::create_directories(dir + "/data/utilization/seren");
  std::filesystem::create_directories(dir + "/data/job_trace");
  std::ofstream util(dir + "/data/utilization/seren/GPU_UTIL.csv");
  util << "Time";
  for (int node = 0; node < 4; ++node) {
    for (int gpu = 0; gpu < 8; ++gpu) util << ",10.140.1." << (10 + node) << "-" << gpu;
  }
  util << "\n";
  for (int64_t t = kT0; t <= kT0 + 3600; t += 15) {
    util << t;
    for (int i = 0; i < 32; ++i) util << "," << (t / 15 + i) % 101;
    util << "\n";
  }
  std::ofstream jobs(dir + "/data/job_trace/trace_seren.csv");
  jobs << "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
  for (int j = 0; j < 40; ++j) {
    const int64_t submit = kT0 + 90 * j + 7;
    jobs << (6000000 + j) << ",u1,1,8,128,Other,COMPLETED," << submit << "," << (submit + 20) << "," << (submit + 620)
         << ",600,20,4800.0\n";
  }
}

int64_t TraceMsOf(const std::string& line) {
  const size_t at = line.find("\"ts_ms\":");
  if (at == std::string::npos) return -1;
  return std::strtoll(line.c_str() + at + 8, nullptr, 10);
}

// One replay of the hour through a pipe, as the consumer saw it.
struct PipeRun {
  size_t lines = 0;
  double span_ms = 0;       // first to last arrival
  double worst_late = 0;    // ms after its schedule, at the reading end
  double worst_early = 0;   // ms before it
  size_t worst_late_at = 0, worst_early_at = 0;
  std::string replay_said;  // the replay's own worst lateness when it handed a line over
};

void RunThroughAPipe(const std::string& data, PipeRun& run) {
  const std::string stderr_path = data + "/replay.err";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const int log = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(log, STDERR_FILENO);
    ::execl(ACMETRACE_BINARY, ACMETRACE_BINARY, "replay", "--data", data.c_str(), "--speed", "360", "--sink", "stdout",
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(fds[1]);

  // The consumer: read whatever the pipe has as soon as it has it, and stamp each complete line.
  using Clock = std::chrono::steady_clock;
  struct Arrival {
    double wall_ms;
    int64_t trace_ms;
  };
  std::vector<Arrival> arrivals;
  std::string pending;
  char buf[1 << 16];
  const Clock::time_point start = Clock::now();
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, 20'000) <= 0) break;  // bounded: a stuck replay fails below instead of hanging
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    const double now_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    pending.append(buf, static_cast<size_t>(n));
    size_t line_start = 0;
    for (size_t nl; (nl = pending.find('\n', line_start)) != std::string::npos; line_start = nl + 1) {
      arrivals.push_back({now_ms, TraceMsOf(pending.substr(line_start, nl - line_start))});
    }
    pending.erase(0, line_start);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "replay failed, status " << status;
  ASSERT_GT(arrivals.size(), 1000u);

  const double wall0 = arrivals.front().wall_ms;
  const int64_t trace0 = arrivals.front().trace_ms;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    ASSERT_GE(arrivals[i].trace_ms, 0) << "line " << i << " has no ts_ms";
    const double due = wall0 + static_cast<double>(arrivals[i].trace_ms - trace0) / kSpeed;
    const double late = arrivals[i].wall_ms - due;
    if (late > run.worst_late) run.worst_late = late, run.worst_late_at = i;
    if (-late > run.worst_early) run.worst_early = -late, run.worst_early_at = i;
  }
  run.lines = arrivals.size();
  run.span_ms = arrivals.back().wall_ms - wall0;
  // The replay's own account of its worst lateness (when it handed a line over): a line late at the reader but
  // not at the replay was held on the way; late at both, the replay itself was starved of CPU.
  std::string replay_log;
  {
    std::ifstream in(stderr_path);
    replay_log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t own = replay_log.find("worst lateness behind schedule ");
  if (own != std::string::npos) run.replay_said = replay_log.substr(own + 31, replay_log.find('\n', own) - own - 31);
}

TEST(PacingPipeTest, LinesArriveAtTheReadingEndWithin50MsOfTheirSchedule) {
  const std::string data = FreshDir("data");
  WriteHour(data);
  // A timing test on a machine shared with other work: the best of up to three runs. A replay or a
  // reader that waited for a core is late by chance, once; held lines (the defect of issue #12: stdout
  // block-buffered, lines seconds late or early) are late in every run.
  PipeRun run;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    run = PipeRun{};
    RunThroughAPipe(data, run);
    if (HasFatalFailure()) return;
    std::printf("pacing through a pipe at x%.0f, run %d: %zu lines over %.0f ms; worst lateness %.1f ms (line %zu), "
                "worst earliness %.1f ms (line %zu); the replay's own worst lateness: %s\n",
                kSpeed, attempt, run.lines, run.span_ms, run.worst_late, run.worst_late_at, run.worst_early,
                run.worst_early_at, run.replay_said.empty() ? "?" : run.replay_said.c_str());
    if (run.worst_late <= kToleranceMs && run.worst_early <= kToleranceMs) break;
  }
  EXPECT_GT(run.span_ms, 9'000);  // paced: the hour took its 10 s
  EXPECT_LE(run.worst_late, kToleranceMs) << "a line reached the consumer more than 50 ms after its schedule (the "
                                              "replay's own worst lateness: " << run.replay_said << ")";
  EXPECT_LE(run.worst_early, kToleranceMs) << "a line reached the consumer more than 50 ms before its schedule";
}

}  // namespace
