// Integration-test helpers: processes, brokers (scripts/kafka-local), framed lines, generated data.
#include "kafka_test_support.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "acmetrace/kafka/kafka_source.h"
#include "test_files.h"

namespace acmetrace::kafka::testing {
namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string KafkaLocal() { return std::string(SourceDir()) + "/scripts/kafka-local"; }

}  // namespace

CommandResult RunCommand(const std::string& command) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "cmd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  const std::string full = "(" + command + ") >" + base + ".out 2>" + base + ".err";
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadWhole(base + ".out");
  r.err = ReadWhole(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

BackgroundCommand::BackgroundCommand(const std::string& command, const std::string& out_path,
                                     const std::string& err_path) {
  const std::string full = "exec " + command + " >" + out_path + " 2>" + err_path;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl("/bin/sh", "sh", "-c", full.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    (void)Wait();
  }
}

void BackgroundCommand::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

int BackgroundCommand::Wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string SharedBroker() { return Trim(ReadWhole(ACMETRACE_KAFKA_BOOTSTRAP_FILE)); }

OwnBroker::OwnBroker() {
  CommandResult r = RunCommand(KafkaLocal() + " --port 0 start");
  if (r.exit_code != 0) {
    ADD_FAILURE() << "scripts/kafka-local --port 0 start failed:\n" << r.err;
    return;
  }
  bootstrap_ = Trim(r.out);
  port_ = std::atoi(bootstrap_.substr(bootstrap_.rfind(':') + 1).c_str());
}

OwnBroker::~OwnBroker() {
  if (port_ > 0) (void)RunCommand(KafkaLocal() + " --port " + std::to_string(port_) + " reset");
}

bool OwnBroker::Stop() { return RunCommand(KafkaLocal() + " --port " + std::to_string(port_) + " stop").exit_code == 0; }

bool OwnBroker::Start() {
  CommandResult r = RunCommand(KafkaLocal() + " --port " + std::to_string(port_) + " start");
  if (r.exit_code != 0) ADD_FAILURE() << "restart failed:\n" << r.err;
  return r.exit_code == 0;
}

std::string ReadFile(const std::string& path) { return ReadWhole(path); }

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "acmetrace-it-" + std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::acmetrace::internal::test_dir_cleanup.Add(dir);  // removed after the tests if they all passed
  return dir;
}

std::vector<Framed> ParseFramedLines(const std::string& text) {
  std::vector<Framed> out;
  std::istringstream in(text);
  std::string line;
  static const std::string kTopic = "{\"topic\":\"", kKey = "\",\"key\":\"", kValue = "\",\"value\":";
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t key_at = line.find(kKey);
    const size_t value_at = line.find(kValue, key_at);
    if (line.rfind(kTopic, 0) != 0 || key_at == std::string::npos || value_at == std::string::npos ||
        line.back() != '}') {
      ADD_FAILURE() << "not a framed line: " << line;
      continue;
    }
    Framed f;
    f.topic = line.substr(kTopic.size(), key_at - kTopic.size());
    f.key = line.substr(key_at + kKey.size(), value_at - key_at - kKey.size());
    f.value = line.substr(value_at + kValue.size(), line.size() - 1 - value_at - kValue.size());
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Framed> ConsumeAll(const std::string& brokers, const std::vector<std::string>& topics,
                               const std::string& group, int timeout_ms) {
  std::vector<Framed> out;
  KafkaSettings settings;
  settings.brokers = brokers;
  settings.group_id = group;
  core::Result<std::unique_ptr<KafkaSource>> source = KafkaSource::Open(settings, {topics, true});
  if (!source.ok()) {
    ADD_FAILURE() << source.status().message();
    return out;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!source.value()->at_end()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "consumer did not reach the end of " << topics.size() << " topic(s) in " << timeout_ms
                    << " ms; read " << out.size();
      break;
    }
    core::Result<const FramedRecord*> next = source.value()->Next(500);
    if (!next.ok()) {
      ADD_FAILURE() << next.status().message();
      break;
    }
    if (next.value() == nullptr) continue;
    const FramedRecord& r = *next.value();
    if (!r.marker.empty()) {  // a stream marker (progress, end), not a record
      EXPECT_TRUE(source.value()->MarkProcessed(r).ok());
      continue;
    }
    out.push_back(Framed{std::string(r.topic), std::string(r.key), std::string(r.value), r.timestamp_ms, r.trace_ts_ms,
                         std::string(r.trace_ts_text)});
    EXPECT_TRUE(source.value()->MarkProcessed(r).ok());
  }
  EXPECT_TRUE(source.value()->Close().ok());
  return out;
}

int64_t TsMsOf(const std::string& json) {
  const size_t at = json.find("\"ts_ms\":");
  return at == std::string::npos ? 0 : std::strtoll(json.c_str() + at + 8, nullptr, 10);
}

int64_t NumberBefore(const std::string& text, const std::string& label) {
  const size_t at = text.find(" " + label);
  if (at == std::string::npos) return -1;
  size_t start = at;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1]))) --start;
  if (start == at) return -1;
  return std::strtoll(text.c_str() + start, nullptr, 10);
}

void WriteSyntheticRelease(const std::string& dir, int jobs, int nodes, int hours) {
  std::filesystem::create_directories(dir + "/data/job_trace");
  std::filesystem::create_directories(dir + "/data/utilization/seren");
  const int64_t t0 = 1677600000;  // 2023-03-01 00:00:00 +08:00
  const int64_t span = int64_t{hours} * 3600;
  auto local_time = [](int64_t unix_s) {
    const std::time_t t = static_cast<std::time_t>(unix_s + 8 * 3600);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S+08:00", &tm);
    return std::string(buf);
  };
  uint64_t rng = 42;
  auto next = [&rng](uint64_t n) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng >> 33) % n;
  };
  std::ofstream trace(dir + "/data/job_trace/trace_seren.csv");
  trace << "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
  for (int j = 0; j < jobs; ++j) {
    const int64_t submit = t0 + span * j / jobs;
    const int64_t queue = static_cast<int64_t>(next(120));
    const int64_t duration = 10 + static_cast<int64_t>(next(1800));
    const int gpus = static_cast<int>(next(3)) * 4;
    trace << (6000000 + j) << ",u" << (1000 + next(50)) << ",1," << gpus << "," << (gpus * 16 + 4) << ","
          << (next(4) == 0 ? "Debug" : "Other") << "," << (next(5) == 0 ? "FAILED" : "COMPLETED") << ","
          << local_time(submit) << "," << local_time(submit + queue) << "," << local_time(submit + queue + duration)
          << "," << duration << "," << queue << "," << (duration * gpus) << ".0\n";
  }
  std::ofstream util(dir + "/data/utilization/seren/GPU_UTIL.csv");
  util << "Time";
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < 8; ++g) util << ",10.140." << (2 + n / 200) << "." << (n % 200) << "-" << g;
  }
  util << "\n";
  for (int64_t t = t0; t < t0 + span; t += 15) {
    util << t;
    for (int c = 0; c < nodes * 8; ++c) util << "," << next(101);
    util << "\n";
  }
}

int64_t UnixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace acmetrace::kafka::testing
