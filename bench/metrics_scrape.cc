// /metrics under load: the full Seren dcgm-exporter persona (286 nodes x 8 GPUs x 13 metrics, plus
// host series and cluster aggregates) served by MetricsServer, scraped by N concurrent clients over
// real HTTP. Prints latency percentiles, exposition size and memory per series; no pass/fail.
// Usage: metrics_scrape [scrapers=4] [scrapes_per_scraper=50] [gzip=0|1] [render_cache_ms=0] [live=1]
// live=1: a writer thread keeps applying samples of every GPU during the scrapes (as a replay at full
// speed does), so every scrape sees a changed state and, without the render cache, renders anew.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acmetrace/exporters/exporter.h"
#include "acmetrace/exporters/metrics_server.h"

namespace {

using acmetrace::exporters::Exporter;

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

size_t Scrape(int port, bool gzip) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return 0;
  }
  std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n";
  if (gzip) request += "Accept-Encoding: gzip\r\n";
  request += "\r\n";
  (void)!::write(fd, request.data(), request.size());
  size_t total = 0;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) total += static_cast<size_t>(n);
  ::close(fd);
  return total;
}

void Populate(Exporter& exporter, int nodes, int64_t ts_ms) {
  static const char* kMetrics[] = {"XID_ERRORS", "GPU_TEMP",    "MEMORY_TEMP", "MEM_CLOCK",          "MEM_COPY_UTIL",
                                   "FB_FREE",    "FB_USED",     "DRAM_ACTIVE", "POWER_USAGE",        "GPU_UTIL",
                                   "SM_ACTIVE",  "SM_OCCUPANCY", "PIPE_TENSOR_ACTIVE"};
  for (int n = 0; n < nodes; ++n) {
    acmetrace::core::UtilSample s;
    s.cluster = "seren";
    s.node = "10.140." + std::to_string(n / 200) + "." + std::to_string(n % 200 + 10);
    s.ts_ms = ts_ms;
    for (const char* m : kMetrics) {
      std::vector<double> v(8);
      for (int g = 0; g < 8; ++g) v[static_cast<size_t>(g)] = (n * 8 + g) % 101 * 0.37;
      s.gpu.push_back(acmetrace::core::GpuMetric{acmetrace::core::InternName(m), std::move(v)});
    }
    s.host.push_back({acmetrace::core::InternName("NODE_CPU_UTILIZATION"), 0.3});
    s.host.push_back({acmetrace::core::InternName("NODE_MEMORY_UTILIZATION"), 0.4});
    s.host.push_back({acmetrace::core::InternName("NODE_IB_SEND"), 1200});
    s.host.push_back({acmetrace::core::InternName("NODE_IB_RECEIVE"), 1300});
    exporter.Apply(s);
  }
  // Cluster aggregates and job series as the processors write them (a base window and the hour view).
  acmetrace::core::MetricsWindow w;
  w.cluster = "seren";
  w.window_s = 60;
  w.end_ms = w.ts_ms = ts_ms;
  w.start_ms = ts_ms - 60'000;
  for (const char* type : {"Pretrain", "Eval", "SFT", "MLLM", "Debug", "Other"}) {
    const std::string t(type);
    w.metrics.push_back({"jobs_running{type=" + t + "}", 10});
    w.metrics.push_back({"jobs_pending{type=" + t + "}", 3});
    w.metrics.push_back({"jobs_submitted_total{type=" + t + "}", 1000});
    for (const char* state : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}) {
      w.metrics.push_back({"jobs_finished_total{kind=gpu,type=" + t + ",state=" + state + "}", 100});
      w.metrics.push_back({"job_gpu_seconds_total{type=" + t + ",state=" + state + "}", 12345});
    }
  }
  for (const char* stat : {"mean", "p50", "p95"}) {
    const std::string s(stat);
    for (const char* q : {"gpu_util_percent", "sm_active_percent", "tensor_active_percent", "dram_active_percent",
                          "fb_used_mib", "node_cpu_util_percent"}) {
      w.metrics.push_back({std::string(q) + "{stat=" + s + "}", 42});
    }
  }
  std::sort(w.metrics.begin(), w.metrics.end());
  exporter.Apply(w);
}

}  // namespace

int main(int argc, char** argv) {
  const int scrapers = argc > 1 ? std::atoi(argv[1]) : 4;
  const int per_scraper = argc > 2 ? std::atoi(argv[2]) : 50;
  const bool gzip = argc > 3 && std::atoi(argv[3]) != 0;
  const int64_t cache_ms = argc > 4 ? std::atoll(argv[4]) : 0;
  const bool live = argc > 5 ? std::atoi(argv[5]) != 0 : true;
  constexpr int kNodes = 286;  // Seren: 2,288 GPUs

  const long rss_empty = RssKiB();
  acmetrace::exporters::ExportOptions options;
  Exporter exporter(options);
  Populate(exporter, kNodes, 1'688'169'600'000);
  const long rss_full = RssKiB();
  const int64_t series = exporter.store().total_series();
  // A second round of samples: the steady state updates values, allocates nothing new.
  Populate(exporter, kNodes, 1'688'169'615'000);

  acmetrace::exporters::MetricsServer server(exporter, {"127.0.0.1:0", "", "", std::max(scrapers, 1), cache_ms});
  if (!server.Start().ok()) {
    std::fprintf(stderr, "cannot start the server\n");
    return 1;
  }
  const size_t bytes = Scrape(server.port(), gzip);  // warm-up, and the size
  const std::string text = exporter.Exposition();

  std::atomic<bool> done{false};
  std::atomic<int64_t> applied_rounds{0};
  std::thread writer([&] {
    int64_t ts = 1'688'169'630'000;
    while (live && !done.load()) {
      Populate(exporter, kNodes, ts);
      ts += 15'000;
      applied_rounds.fetch_add(1);
    }
  });
  std::mutex mutex;
  std::vector<double> latencies_ms;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int s = 0; s < scrapers; ++s) {
    threads.emplace_back([&] {
      std::vector<double> mine;
      for (int i = 0; i < per_scraper; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        Scrape(server.port(), gzip);
        mine.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::lock_guard<std::mutex> lock(mutex);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  done.store(true);
  writer.join();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double q) { return latencies_ms[static_cast<size_t>(q * static_cast<double>(latencies_ms.size() - 1))]; };

  // Collect alone (no HTTP, no serialization) and serialization alone, one thread.
  auto t0 = std::chrono::steady_clock::now();
  auto families = exporter.Collect();
  const double collect_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  const std::string again = exporter.Exposition();
  const double exposition_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::printf("series: %lld (persona %d GPUs x 13 + %d nodes x 4 host + aggregates and self metrics)\n",
              static_cast<long long>(series), kNodes * 8, kNodes);
  std::printf("exposition: %zu bytes text, %zu bytes on the wire (%s), render cache %lld ms\n", text.size(), bytes,
              gzip ? "gzip" : "identity", static_cast<long long>(cache_ms));
  std::printf("memory: %.0f bytes per series (RSS %ld KiB -> %ld KiB while populating)\n",
              static_cast<double>(rss_full - rss_empty) * 1024.0 / static_cast<double>(series), rss_empty, rss_full);
  std::printf("scrapes: %d scrapers x %d, %.2f s, %.1f scrapes/s; %s (%lld rounds of 2,288 GPU samples applied meanwhile)\n",
              scrapers, per_scraper, wall_s, static_cast<double>(latencies_ms.size()) / wall_s,
              live ? "state changing during the scrapes" : "static state", static_cast<long long>(applied_rounds.load()));
  std::printf("latency ms: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (goal p99 <= 100 ms: ratio %.2f)\n", pct(0.5),
              pct(0.9), pct(0.99), latencies_ms.back(), pct(0.99) / 100.0);
  std::printf("single thread: Collect (prometheus-cpp types) %.1f ms, text rendering %.1f ms\n", collect_ms,
              exposition_ms);
  server.Stop();
  return 0;
}
