// Micro-benchmarks of the reader hot path: core::CsvReader, core::ParseDouble, core::ParseTimeMs,
// producers::UtilizationSource and producers::JobEventSource, on files generated at start-up in
// the release's formats (a wide GPU_UTIL file and a Seren job trace). Figures, not pass/fail:
// the end-to-end comparison with pandas is bench/run_reader_bench.py (see bench/README.md).
//
//   build/bench/csv_parse_bench [--benchmark_filter=...]
//   ACMETRACE_BENCH_DIR=DIR   where the generated files go (default: a fresh /tmp directory,
//                             removed at exit); ACMETRACE_BENCH_UTIL_ROWS / _JOB_ROWS size them.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/csv_reader.h"
#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/number.h"
#include "acmetrace/core/time.h"
#include "acmetrace/producers/job_event_source.h"
#include "acmetrace/producers/utilization_source.h"

namespace {
namespace fs = std::filesystem;
using namespace acmetrace;

constexpr int kGpuColumns = 2345;  // Kalos GPU_UTIL: 293 full nodes and one partial

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

// A cell as pandas writes a float with up to 3 decimals: "57.123", "57.1", "0.0", "100.0".
void AppendCell(std::string& out, int64_t thousandths) {
  out += std::to_string(thousandths / 1000);
  int64_t frac = thousandths % 1000;
  out.push_back('.');
  if (frac == 0) {
    out.push_back('0');
    return;
  }
  char digits[3] = {char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10)};
  int n = 3;
  while (digits[n - 1] == '0') --n;
  out.append(digits, n);
}

// Polarized like the release (about a quarter 0, a quarter 100), 0.5% empty cells.
int64_t RandomUtil(std::mt19937_64& rng) {
  const uint64_t r = rng() % 1000;
  if (r < 260) return 0;
  if (r < 500) return 100000;
  if (r < 505) return -1;  // empty
  return static_cast<int64_t>(rng() % 100000);
}

struct Files {
  fs::path dir;
  bool owned = false;
  std::string util;  // DIR/util/data/utilization/kalos/GPU_UTIL.csv
  std::string jobs;  // DIR/jobs/trace_seren.csv
  int64_t util_bytes = 0, util_rows = 0, jobs_bytes = 0, job_rows = 0;
  std::vector<std::string> cells;      // a sample of utilization cells, for ParseDouble
  std::vector<std::string> unix_times; // "1688169600"
  std::vector<std::string> iso_times;  // "2023-03-01 00:18:22+08:00"

  ~Files() {
    std::error_code ec;
    if (owned) fs::remove_all(dir, ec);
  }
};

void WriteUtil(Files& f) {
  std::mt19937_64 rng(1);
  fs::create_directories(fs::path(f.util).parent_path());
  std::ofstream out(f.util, std::ios::binary);
  std::string line = "Time";
  for (int c = 0; c < kGpuColumns; ++c) {
    const int node = c / 8;
    line += ",10.140." + std::to_string(1 + node / 120) + "." + std::to_string(10 + node % 120) + "-" +
            std::to_string(c % 8);
  }
  line += '\n';
  out << line;
  for (int64_t r = 0; r < f.util_rows; ++r) {
    line = std::to_string(1688169600 + 15 * r);
    for (int c = 0; c < kGpuColumns; ++c) {
      line.push_back(',');
      const int64_t v = RandomUtil(rng);
      if (v >= 0) AppendCell(line, v);
      if (r == 0 && v >= 0) f.cells.push_back(line.substr(line.rfind(',') + 1));
    }
    line += '\n';
    out << line;
    f.unix_times.push_back(std::to_string(1688169600 + 15 * r));
  }
  out.close();
  f.util_bytes = static_cast<int64_t>(fs::file_size(f.util));
}

void WriteJobs(Files& f) {
  std::mt19937_64 rng(2);
  fs::create_directories(fs::path(f.jobs).parent_path());
  std::ofstream out(f.jobs, std::ios::binary);
  out << "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n";
  static const char* kTypes[] = {"Eval", "Eval", "Eval", "SFT", "Other", "Pretrain", "MLLM", "Debug"};
  static const char* kStates[] = {"COMPLETED", "FAILED", "COMPLETED", "FAILED", "CANCELLED"};
  static const int kGpus[] = {0, 0, 0, 1, 1, 1, 2, 4, 8, 8, 16, 64};
  std::lognormal_distribution<double> run(std::log(122.0), 1.6);
  std::exponential_distribution<double> wait(1.0 / 150);
  int64_t submit = 1677600000;
  std::string line, ts;
  for (int64_t i = 0; i < f.job_rows; ++i) {
    submit += static_cast<int64_t>(rng() % 31);
    const int gpus = kGpus[rng() % 12];
    const int64_t queue = (rng() & 1) ? static_cast<int64_t>(rng() % 3) : std::min<int64_t>(600, static_cast<int64_t>(wait(rng)));
    const int64_t duration = std::clamp<int64_t>(static_cast<int64_t>(run(rng)), 10, 86400);
    const bool never_started = rng() % 100 < 3;
    auto iso = [&](int64_t s) {
      ts.clear();
      core::AppendIsoTime(ts, s * 1000, 480);
      return ts;
    };
    line = std::to_string(5778432 + i) + ",u" + std::to_string(rng() % 9000 + 1000) + "," +
           std::to_string(std::max(1, (gpus + 7) / 8)) + "," + std::to_string(gpus) + "," +
           std::to_string(gpus > 0 ? gpus * 16 : 4) + "," + kTypes[rng() % 8] + ",";
    if (never_started) {
      line += "CANCELLED," + iso(submit) + ",," + iso(submit + queue) + ",0,,0.0\n";
    } else {
      line += std::string(kStates[rng() % 5]) + "," + iso(submit) + ",";
      line += iso(submit + queue) + ",";
      line += iso(submit + queue + duration) + "," + std::to_string(duration) + "," + std::to_string(queue) + "," +
              std::to_string(duration * gpus) + ".0\n";
    }
    if (i < 4096) f.iso_times.push_back(iso(submit));
    out << line;
  }
  out.close();
  f.jobs_bytes = static_cast<int64_t>(fs::file_size(f.jobs));
}

Files& Data() {
  static Files f;  // destroyed at exit: removes the generated files if it made the directory
  static const bool ready = [] {
    if (const char* d = std::getenv("ACMETRACE_BENCH_DIR"); d != nullptr && *d != '\0') {
      f.dir = d;
    } else {
      f.dir = fs::temp_directory_path() / ("acmetrace-csv-bench-" + std::to_string(::getpid()));
      f.owned = true;
    }
    f.util = (f.dir / "util/data/utilization/kalos/GPU_UTIL.csv").string();
    f.jobs = (f.dir / "jobs/trace_seren.csv").string();
    f.util_rows = EnvInt("ACMETRACE_BENCH_UTIL_ROWS", 2000);  // ~28 MB
    f.job_rows = EnvInt("ACMETRACE_BENCH_JOB_ROWS", 200000);  // ~30 MB, ~590k events
    WriteUtil(f);
    WriteJobs(f);
    std::fprintf(stderr, "csv_parse_bench: %s (%.1f MB, %lld rows x %d columns), %s (%.1f MB, %lld rows)\n",
                 f.util.c_str(), static_cast<double>(f.util_bytes) / 1e6, static_cast<long long>(f.util_rows),
                 kGpuColumns + 1, f.jobs.c_str(), static_cast<double>(f.jobs_bytes) / 1e6,
                 static_cast<long long>(f.job_rows));
    return true;
  }();
  (void)ready;
  return f;
}

// Reads the file once into the page cache so the first iteration is not a cold read.
void Warm(const std::string& path) {
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (in == nullptr) return;
  static char buf[1 << 16];
  while (std::fread(buf, 1, sizeof buf, in) > 0) {
  }
  std::fclose(in);
}

// --- CsvReader -----------------------------------------------------------------------------------

void CsvReaderFile(benchmark::State& state, const std::string& path, int64_t bytes) {
  Warm(path);
  std::vector<std::string_view> fields;
  int64_t rows = 0, cells = 0;
  for (auto _ : state) {
    core::CsvReader csv;
    if (!csv.Open(path).ok()) state.SkipWithError("cannot open");
    while (csv.NextRow(fields)) {
      ++rows;
      cells += static_cast<int64_t>(fields.size());
    }
    benchmark::DoNotOptimize(fields.data());
  }
  state.SetBytesProcessed(bytes * state.iterations());
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["cells/s"] = benchmark::Counter(static_cast<double>(cells), benchmark::Counter::kIsRate);
}

void BM_CsvReader_WideUtil(benchmark::State& state) {
  CsvReaderFile(state, Data().util, Data().util_bytes);
}
BENCHMARK(BM_CsvReader_WideUtil)->Unit(benchmark::kMillisecond);

void BM_CsvReader_JobTrace(benchmark::State& state) {
  CsvReaderFile(state, Data().jobs, Data().jobs_bytes);
}
BENCHMARK(BM_CsvReader_JobTrace)->Unit(benchmark::kMillisecond);

// Tokenizing plus ParseDouble of every cell: the work of UtilizationMetricReader minus the records.
void BM_CsvReader_WideUtil_ParseCells(benchmark::State& state) {
  Files& f = Data();
  Warm(f.util);
  std::vector<std::string_view> fields;
  int64_t cells = 0;
  for (auto _ : state) {
    core::CsvReader csv;
    if (!csv.Open(f.util).ok()) state.SkipWithError("cannot open");
    csv.NextRow(fields);  // header
    double sum = 0;
    while (csv.NextRow(fields)) {
      benchmark::DoNotOptimize(core::ParseTimeMs(fields[0]));
      for (size_t i = 1; i < fields.size(); ++i) {
        if (fields[i].empty()) continue;
        if (std::optional<double> v = core::ParseDouble(fields[i])) sum += *v;
      }
      cells += static_cast<int64_t>(fields.size());
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(f.util_bytes * state.iterations());
  state.counters["cells/s"] = benchmark::Counter(static_cast<double>(cells), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CsvReader_WideUtil_ParseCells)->Unit(benchmark::kMillisecond);

// --- number and time parsing ---------------------------------------------------------------------

void BM_ParseDouble_UtilCells(benchmark::State& state) {
  const std::vector<std::string>& cells = Data().cells;
  std::vector<std::string_view> views(cells.begin(), cells.end());
  int64_t bytes = 0;
  for (const auto& c : cells) bytes += static_cast<int64_t>(c.size());
  for (auto _ : state) {
    double sum = 0;
    for (std::string_view c : views) {
      if (std::optional<double> v = core::ParseDouble(c)) sum += *v;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(views.size()) * state.iterations());
  state.SetBytesProcessed(bytes * state.iterations());
}
BENCHMARK(BM_ParseDouble_UtilCells);

void BM_ParseTimeMs_UnixSeconds(benchmark::State& state) {
  std::vector<std::string_view> views(Data().unix_times.begin(), Data().unix_times.end());
  for (auto _ : state) {
    int64_t sum = 0;
    for (std::string_view t : views) sum += core::ParseTimeMs(t).value_or(0);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(views.size()) * state.iterations());
}
BENCHMARK(BM_ParseTimeMs_UnixSeconds);

void BM_ParseTimeMs_Iso(benchmark::State& state) {
  std::vector<std::string_view> views(Data().iso_times.begin(), Data().iso_times.end());
  for (auto _ : state) {
    int64_t sum = 0;
    for (std::string_view t : views) sum += core::ParseTimeMs(t).value_or(0);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(views.size()) * state.iterations());
}
BENCHMARK(BM_ParseTimeMs_Iso);

// --- sources -------------------------------------------------------------------------------------

void BM_UtilizationSource_WideUtil(benchmark::State& state) {
  Files& f = Data();
  Warm(f.util);
  int64_t records = 0;
  for (auto _ : state) {
    core::InputErrors errors(nullptr);
    producers::UtilizationSource source("kalos", {f.util}, errors, producers::TimeRange{});
    while (const core::Record* r = source.Next()) {
      benchmark::DoNotOptimize(r);
      ++records;
    }
    if (errors.total() != 0) state.SkipWithError("input errors");
  }
  state.SetBytesProcessed(f.util_bytes * state.iterations());
  state.counters["records/s"] = benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_UtilizationSource_WideUtil)->Unit(benchmark::kMillisecond);

void BM_JobEventSource_SerenTrace(benchmark::State& state) {
  Files& f = Data();
  Warm(f.jobs);
  int64_t events = 0;
  for (auto _ : state) {
    core::InputErrors errors(nullptr);
    producers::JobEventSource source(errors, producers::TimeRange{}, 60000);
    if (!source.Open(f.jobs, "seren").ok()) state.SkipWithError("cannot open");
    while (const core::Record* r = source.Next()) {
      benchmark::DoNotOptimize(r);
      ++events;
    }
    if (errors.total() != 0) state.SkipWithError("input errors");
  }
  state.SetBytesProcessed(f.jobs_bytes * state.iterations());
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_JobEventSource_SerenTrace)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
