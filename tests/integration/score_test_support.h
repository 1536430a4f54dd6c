// What the `acmetrace score` integration tests share: a Prometheus of their own (Debian's binary) on a
// TSDB built from hand-written OpenMetrics with promtool, and running the acmetrace binary.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_processes.h"

namespace acmetrace::score_test {

namespace fs = std::filesystem;

using acmetrace::test::FreePort;

// The HTTP status of GET path on 127.0.0.1:port (0: no answer).
inline int HttpStatus(int port, const std::string& path) { return acmetrace::test::HttpGet(port, path).status; }

inline std::string ReadAll(const std::string& path) { return acmetrace::test::ReadFile(path); }

struct CommandRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command line, stdout and stderr captured together.
inline CommandRun RunCommand(const std::string& command) {
  CommandRun run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) run.output.append(buf.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// A Prometheus serving the blocks promtool makes of `openmetrics`, killed by the destructor.
class LocalPrometheus {
 public:
  // web_config: the contents of a --web.config.file (TLS, basic auth), and the shell command that
  // exits 0 once such a server is ready (plain HTTP GETs /-/ready otherwise).
  LocalPrometheus(const std::string& dir, const std::string& openmetrics, const std::string& web_config = "",
                  const std::string& ready_command = "")
      : dir_(dir) {
    fs::create_directories(dir);
    std::ofstream(dir + "/data.om") << openmetrics;
    std::ofstream(dir + "/prometheus.yml") << "global: {}\n";  // no scrapes: the blocks are the data
    const CommandRun blocks =
        RunCommand("promtool tsdb create-blocks-from openmetrics " + dir + "/data.om " + dir + "/tsdb");
    if (blocks.exit_code != 0) {
      error_ = "promtool: " + blocks.output;
      return;
    }
    if (!web_config.empty()) std::ofstream(dir + "/web.yml") << web_config;
    port_ = FreePort();
    pid_ = ::fork();
    if (pid_ == 0) {
      std::freopen((dir + "/prometheus.log").c_str(), "w", stdout);
      std::freopen((dir + "/prometheus.log").c_str(), "a", stderr);
      const std::string tsdb = "--storage.tsdb.path=" + dir + "/tsdb";
      const std::string config = "--config.file=" + dir + "/prometheus.yml";
      const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
      const std::string web = "--web.config.file=" + dir + "/web.yml";
      ::execl("/usr/bin/prometheus", "prometheus", tsdb.c_str(), "--storage.tsdb.retention.time=100y",
              config.c_str(), listen.c_str(), web_config.empty() ? static_cast<char*>(nullptr) : web.c_str(),
              static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    // Real components take real time to start.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready_command.empty() ? HttpStatus(port_, "/-/ready") == 200
                                : RunCommand(ReplacePort(ready_command)).exit_code == 0) {
        return;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    error_ = "prometheus did not become ready: " + ReadAll(dir + "/prometheus.log");
  }
  ~LocalPrometheus() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  LocalPrometheus(const LocalPrometheus&) = delete;
  LocalPrometheus& operator=(const LocalPrometheus&) = delete;

  const std::string& error() const { return error_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  // command with each PORT replaced by the server's port.
  std::string ReplacePort(std::string command) const {
    for (size_t p = command.find("PORT"); p != std::string::npos; p = command.find("PORT", p)) {
      command.replace(p, 4, std::to_string(port_));
    }
    return command;
  }

 private:
  std::string dir_;
  std::string error_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// 2023-07-01T00:00:00Z and the scene the tests score: four hours of 15 s samples.
inline constexpr int64_t kT0 = 1'688'169'600;
inline constexpr int64_t kHours = 4;

// OpenMetrics of the scene:
// - acmetrace_anomaly_active for GPU n1-3: 1 over [01:00, 01:10), else 0;
// - DCGM_FI_DEV_GPU_TEMP of n1 GPU 3: 90 over [01:00, 01:12) (the overheat), 88 over [02:30, 02:35)
//   (a spike nobody injected), else 60;
// - flap_metric: 1 two minutes, 0 two minutes, all along; always_metric: 1 all along.
inline std::string SceneOpenMetrics() {
  std::string om;
  auto series = [&](const std::string& name, const std::string& labels, auto value_at) {
    for (int64_t t = kT0; t < kT0 + kHours * 3600; t += 15) {
      om += name + "{" + labels + "} " + std::to_string(value_at(t - kT0)) + " " + std::to_string(t) + "\n";
    }
  };
  om += "# TYPE acmetrace_anomaly_active gauge\n";
  series("acmetrace_anomaly_active", "cluster=\"seren\",kind=\"gpu_overheat\",subject=\"n1-3\"",
         [](int64_t s) { return s >= 3600 && s < 4200 ? 1 : 0; });
  om += "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n";
  series("DCGM_FI_DEV_GPU_TEMP", "cluster=\"seren\",Hostname=\"n1\",gpu=\"3\",UUID=\"GPU-1\",modelName=\"A100\"",
         [](int64_t s) { return s >= 3600 && s < 4320 ? 90 : s >= 9000 && s < 9300 ? 88 : 60; });
  om += "# TYPE flap_metric gauge\n";
  series("flap_metric", "cluster=\"seren\"", [](int64_t s) { return (s / 120) % 2 == 0 ? 1 : 0; });
  om += "# TYPE always_metric gauge\n";
  series("always_metric", "cluster=\"seren\"", [](int64_t) { return 1; });
  om += "# EOF\n";
  return om;
}

// The overheat (caught) and an XID error at 03:00 nothing alerts on (missed).
inline std::string SceneFaults() {
  return "cluster,kind,subject,start,end\n"
         "seren,gpu_overheat,n1-3," + std::to_string(kT0 + 3600) + "," + std::to_string(kT0 + 4200) + "\n" +
         "seren,xid_error,n2-0," + std::to_string(kT0 + 3 * 3600) + "," + std::to_string(kT0 + 3 * 3600 + 300) + "\n";
}

inline const char* SceneRules() {
  return R"(groups:
  - name: scene
    rules:
      - alert: GpuHot
        expr: max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) >= 85
        for: 2m
      - alert: Overheat
        expr: max by (cluster, kind, subject) (acmetrace_anomaly_active{kind="gpu_overheat"}) > 0
        for: 0s
      - alert: Never
        expr: DCGM_FI_DEV_GPU_TEMP > 200
      - alert: AlwaysOn
        expr: always_metric > 0
      - alert: Flapping
        expr: flap_metric > 0
      - alert: FlappingKept
        expr: flap_metric > 0
        keep_firing_for: 5m
  - name: every-second
    interval: 1s
    rules:
      - alert: OverheatEverySecond
        expr: max by (cluster, kind, subject) (acmetrace_anomaly_active{kind="gpu_overheat"}) > 0
)";
}

}  // namespace acmetrace::score_test
