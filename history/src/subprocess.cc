#include "acmetrace/history/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
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

bool SaysWhyItFailed(const std::string& line) {
  std::string lower(line.size(), ' ');
  std::transform(line.begin(), line.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"error", "err=", "panic:", "fatal", "no space left", "permission denied"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string MeaningfulLogLine(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last, last_error;
  while (std::getline(in, line)) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty()) continue;
    last = line;
    // A Go panic's stack follows its "panic:" line; the cause is that line, not the last frame.
    if (SaysWhyItFailed(line) && (last_error.rfind("panic:", 0) != 0)) last_error = line;
  }
  std::string out = last_error.empty() ? last : last_error;
  if (out.size() > 400) out = out.substr(0, 400) + "...";
  return out;
}

void StopRequest::Request(int signal) {
  int none = 0;
  signal_.compare_exchange_strong(none, signal);
  std::lock_guard<std::mutex> lock(mutex_);
  for (pid_t group : groups_) ::kill(-group, SIGTERM);
}

bool StopRequest::Register(pid_t group) {
  std::lock_guard<std::mutex> lock(mutex_);
  groups_.insert(group);
  return !requested();
}

void StopRequest::Unregister(pid_t group) {
  std::lock_guard<std::mutex> lock(mutex_);
  groups_.erase(group);
}

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
                                           const std::string& working_dir, StopRequest* stop) {
  if (argv.empty()) return core::Status::Error("no program to start");
  const std::optional<std::string> program = FindExecutable(argv[0]);
  if (!program) return core::Status::Error(argv[0] + ": not found (not on $PATH or not executable)");
  // Everything the child needs is made before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int report[2];  // the child writes errno here if it cannot exec; closed on a successful exec
  if (::pipe2(report, O_CLOEXEC) != 0) return core::Status::Error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    return core::Status::Error("starting " + *program + ": " + std::strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: stopping it stops whatever it starts
    // Killed with the thread that started it, even if that one is SIGKILLed. The parent may have
    // died before this line: then nobody would ever stop the child.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    // The backfill blocks SIGINT/SIGTERM in every thread (its signal thread takes them); exec keeps
    // the mask, and a child that cannot see SIGTERM could only be SIGKILLed.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    int e = 0;
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || ::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(out, STDERR_FILENO) < 0 || (!working_dir.empty() && ::chdir(working_dir.c_str()) != 0)) {
      e = errno;
    } else {
      ::execve(program->c_str(), args.data(), environ);
      e = errno;
    }
    (void)!::write(report[1], &e, sizeof(e));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before anyone signals it
  ::close(report[1]);
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(report[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n > 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return core::Status::Error("starting " + *program + ": " + std::strerror(child_errno));
  }
  if (stop != nullptr && !stop->Register(pid)) ::kill(-pid, SIGTERM);  // asked to stop meanwhile
  return Subprocess(pid, argv[0], log_path, stop);
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      name_(std::move(other.name_)),
      log_path_(std::move(other.log_path_)),
      stop_(other.stop_),
      reaped_(std::move(other.reaped_)),
      cpu_s_(other.cpu_s_),
      max_rss_bytes_(other.max_rss_bytes_) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Terminate();
    pid_ = std::exchange(other.pid_, -1);
    name_ = std::move(other.name_);
    log_path_ = std::move(other.log_path_);
    stop_ = other.stop_;
    reaped_ = std::move(other.reaped_);
    cpu_s_ = other.cpu_s_;
    max_rss_bytes_ = other.max_rss_bytes_;
  }
  return *this;
}

Subprocess::~Subprocess() { Terminate(); }

core::Status Subprocess::Reaped(int wait_status, const struct rusage& usage) {
  if (stop_ != nullptr) stop_->Unregister(pid_);
  ::kill(-pid_, SIGKILL);  // anything it left running in its group
  pid_ = -1;
  cpu_s_ = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  max_rss_bytes_ = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return core::Status::Ok();
  std::string how = WIFEXITED(wait_status) ? "exited with status " + std::to_string(WEXITSTATUS(wait_status))
                                           : "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  // The cause itself: the log is removed with the backfill's work files, so its path would help no one.
  const std::string why = MeaningfulLogLine(log_path_);
  return core::Status::Error(name_ + " " + how + (why.empty() ? "" : ": " + why));
}

core::Status Subprocess::Wait() {
  if (reaped_) return *std::exchange(reaped_, std::nullopt);
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
  struct rusage usage {};
  const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
  if (r == 0) return true;
  if (r == pid_) reaped_ = Reaped(status, usage);
  return false;
}

void Subprocess::Terminate(int timeout_ms) {
  if (pid_ < 0) return;
  ::kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid_, SIGKILL);  // anything it left running in its group
  if (stop_ != nullptr) stop_->Unregister(pid_);
  pid_ = -1;
}

}  // namespace acmetrace::history
