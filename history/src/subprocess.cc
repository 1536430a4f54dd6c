#include "acmetrace/history/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace acmetrace::history {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The last non-empty line of the log (what a failing Go program prints last: its error).
std::string LastLogLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  if (last.size() > 400) last = last.substr(0, 400) + "...";
  return last;
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return IsExecutableFile(name) ? std::optional(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

core::Result<Subprocess> Subprocess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                                           const std::string& working_dir) {
  if (argv.empty()) return core::Status::Error("no program to start");
  const std::optional<std::string> program = FindExecutable(argv[0]);
  if (!program) return core::Status::Error(argv[0] + ": not found (not on $PATH or not executable)");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program->c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return core::Status::Error("starting " + *program + ": " + std::strerror(rc));
  return Subprocess(pid, argv[0], log_path);
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), name_(std::move(other.name_)), log_path_(std::move(other.log_path_)) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Terminate();
    pid_ = std::exchange(other.pid_, -1);
    name_ = std::move(other.name_);
    log_path_ = std::move(other.log_path_);
  }
  return *this;
}

Subprocess::~Subprocess() { Terminate(); }

core::Status Subprocess::Reaped(int wait_status, const struct rusage& usage) {
  pid_ = -1;
  cpu_s_ = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  max_rss_bytes_ = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return core::Status::Ok();
  std::string how = WIFEXITED(wait_status) ? "exited with status " + std::to_string(WEXITSTATUS(wait_status))
                                           : "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  const std::string last = LastLogLine(log_path_);
  return core::Status::Error(name_ + " " + how + (last.empty() ? "" : ": " + last) + " (log: " + log_path_ + ")");
}

core::Status Subprocess::Wait() {
  if (pid_ < 0) return core::Status::Ok();
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid_, &status, 0, &usage) < 0) {
    if (errno != EINTR) return core::Status::Error("waiting for " + name_ + ": " + std::strerror(errno));
  }
  return Reaped(status, usage);
}

bool Subprocess::Running() {
  if (pid_ < 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  pid_ = -1;
  return false;
}

void Subprocess::Terminate(int timeout_ms) {
  if (pid_ < 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

}  // namespace acmetrace::history
