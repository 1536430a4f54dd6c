// acmetrace backfill --remote-write into Debian's VictoriaMetrics (label victoria-metrics) and
// Debian's Prometheus with --web.enable-remote-write-receiver and an out-of-order window (label
// prometheus): every sample read back equals what the blocks path is given (the same backfill's
// OpenMetrics text, promtool's input), at its trace time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "local_processes.h"

namespace {

namespace fs = std::filesystem;
using namespace acmetrace::test;  // NOLINT: the local process helpers
// "name{k=v,...}" (labels sorted) -> ts_ms -> value; finite values only (NaN is not a value to compare).
using Samples = std::map<std::string, std::map<int64_t, double>>;

constexpr int64_t kStart = 1688140800;  // synth's default start
constexpr int64_t kFrom = kStart + 6 * 3600;
constexpr int64_t kTo = kFrom + 2 * 3600;  // two hours of trace: a short test

std::string Key(const std::map<std::string, std::string>& labels) {
  std::string key = labels.count("__name__") ? labels.at("__name__") : "";
  key += '{';
  for (const auto& [k, v] : labels) {
    if (k != "__name__") key += k + "=\"" + v + "\",";
  }
  return key + '}';
}

// The OpenMetrics text of --openmetrics: name{labels} value seconds[.ms].
Samples ParseOpenMetrics(const std::string& text) {
  Samples out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t i = line.find_first_of("{ ");
    std::map<std::string, std::string> labels{{"__name__", line.substr(0, i)}};
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const size_t eq = line.find('=', i);
        std::string v;
        size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            v += line[j] == 'n' ? '\n' : line[j];
          } else {
            v += line[j];
          }
        }
        labels[line.substr(i, eq - i)] = v;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    const size_t space = line.find(' ', i + 1);
    const double value = std::stod(line.substr(i + 1, space - i - 1));
    const int64_t ts_ms = std::llround(std::stod(line.substr(space + 1)) * 1000);
    if (std::isfinite(value)) out[Key(labels)][ts_ms] = value;
  }
  return out;
}

std::map<std::string, std::string> Labels(const nlohmann::json& metric) {
  std::map<std::string, std::string> labels;
  for (const auto& [k, v] : metric.items()) labels[k] = v.get<std::string>();
  return labels;
}

// Values equal to 1e-12 relative: VictoriaMetrics keeps about 12 significant digits.
bool SameValue(double got, double want) { return std::fabs(got - want) <= 1e-12 * std::max(1.0, std::fabs(want)); }

// The first difference between two sample sets (values to 1e-12 relative), or "".
std::string FirstDifference(const Samples& want, const Samples& got) {
  if (want.size() != got.size()) {
    for (const auto& [key, _] : want) {
      if (!got.count(key)) return "missing series " + key + " (" + std::to_string(got.size()) + " of " +
                                  std::to_string(want.size()) + " series)";
    }
    for (const auto& [key, _] : got) {
      if (!want.count(key)) return "unexpected series " + key;
    }
  }
  for (const auto& [key, points] : want) {
    const auto& other = got.at(key);
    if (points.size() != other.size()) {
      return key + ": " + std::to_string(other.size()) + " samples, want " + std::to_string(points.size());
    }
    for (const auto& [ts, v] : points) {
      auto it = other.find(ts);
      if (it == other.end()) return key + ": no sample at " + std::to_string(ts);
      if (!SameValue(it->second, v)) {
        return key + " at " + std::to_string(ts) + ": " + std::to_string(it->second) + ", want " + std::to_string(v);
      }
    }
  }
  return "";
}

// The first sample of got that want does not hold at its time with its value (SameValue), or "".
std::string FirstSampleNotIn(const Samples& got, const Samples& want) {
  for (const auto& [key, points] : got) {
    auto series = want.find(key);
    for (const auto& [ts, v] : points) {
      if (series == want.end()) return "unexpected series " + key;
      auto it = series->second.find(ts);
      if (it == series->second.end() || !SameValue(v, it->second)) return key + " at " + std::to_string(ts) + ": not the blocks path's sample";
    }
  }
  return "";
}

int64_t Count(const Samples& s) {
  int64_t n = 0;
  for (const auto& [_, points] : s) n += static_cast<int64_t>(points.size());
  return n;
}

class BackfillRemoteWriteTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = fs::temp_directory_path() / ("acmetrace-remote-write-" + std::to_string(::getpid()));
    fs::create_directories(work_);
    ASSERT_EQ(RunShell("cd " + work_.string() + " && " + Binary() +
                       " synth --out day --days 1 --scale 0.01 --inject-faults > synth.log 2>&1"),
              0)
        << ReadFile((work_ / "synth.log").string());
    ASSERT_EQ(RunShell("cd " + work_.string() + " && " + Binary() + " backfill --data day " + Window() +
                       " --openmetrics ref.om > ref.out 2> ref.err"),
              0)
        << ReadFile((work_ / "ref.err").string());
    reference_ = ParseOpenMetrics(ReadFile((work_ / "ref.om").string()));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(work_, ec);
  }
  static std::string Window() { return "--from " + std::to_string(kFrom) + " --to " + std::to_string(kTo); }
  // backfill --remote-write URL (extra flags appended, env VAR=value settings before it); its exit
  // code, stderr in err.
  static int Backfill(const std::string& url, const std::string& extra, std::string& err, const std::string& env = "") {
    const std::string log = (work_ / "rw.err").string();
    const int rc = RunShell("cd " + work_.string() + " && " + env + Binary() + " backfill --data day " + Window() +
                            " --remote-write " + url + " " + extra + " > rw.out 2> " + log);
    err = ReadFile(log);
    return rc;
  }
  // The fault tests, the same for every Receiver (LocalVictoriaMetrics, LocalPrometheus: Ready, log,
  // WriteUrl, Export), with tests/integration/remote_write_fault_proxy.py in front of it.
  // The first six requests answered 429: retried, every sample arrives, exit 0.
  template <class Receiver>
  static void Expect429sRetried(const fs::path& dir);
  // Every seventh request answered 400: not retried, reported, exit 1; the receiver holds exactly
  // the samples not refused, each as the blocks path has it. Live-sized requests (20,000 samples):
  // the window is then about 30 requests, not one per shard.
  template <class Receiver>
  static void Expect400sReportedAndTheRestDelivered(const fs::path& dir);
  // The window's backfill started in the background, in 200-sample requests on one shard, its output
  // in dir/backfill.{out,err}: it is still sending when the first requests have landed, so a receiver
  // restarted then meets it mid-way (with 2,000-sample requests on the default shards the two hours
  // were sometimes all sent before the stop, and the test saw nothing retried).
  static std::unique_ptr<Child> BackfillInSmallRequests(const fs::path& dir, const std::string& url) {
    const std::string env =
        "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND=200 ACMETRACE_REMOTE_WRITE_CAPACITY=400 "
        "ACMETRACE_REMOTE_WRITE_SHARDS=1 ";
    return std::make_unique<Child>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 env + Binary() + " backfill --data " + (work_ / "day").string() + " " + Window() +
                                     " --remote-write " + url},
        (dir / "backfill.out").string(), (dir / "backfill.err").string());
  }
  static inline fs::path work_;
  static inline Samples reference_;
};

// Debian's VictoriaMetrics on a free port, its data in dir; stopped by the destructor.
class LocalVictoriaMetrics {
 public:
  // extra: more flags (-maxInsertRequestSize=N...).
  explicit LocalVictoriaMetrics(const fs::path& dir, std::vector<std::string> extra = {})
      : dir_(dir), port_(FreePort()), extra_(std::move(extra)) {
    Start();
  }
  bool Ready() { return WaitUntil([&] { return HttpGet(port_, "/health").status == 200; }, 30); }
  // Stopped (SIGTERM: what it acknowledged is flushed to disk) and started again on the same port
  // and storage, as an operator restarts it.
  int Stop() { return vm_->Signal(SIGTERM); }
  void Start() {
    std::vector<std::string> args = {"/usr/bin/victoria-metrics", "-httpListenAddr=127.0.0.1:" + std::to_string(port_),
                                     "-storageDataPath=" + (dir_ / "data").string(), "-retentionPeriod=100y"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    vm_ = std::make_unique<Child>(args, (dir_ / "vm.out").string(), (dir_ / "vm.err").string());
  }
  int port() const { return port_; }
  // query_range of every series over the window at the scrape step, as a dashboard reads it:
  // series -> [(t, value text)].
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> QueryRange() {
    EXPECT_EQ(HttpGet(port_, "/internal/force_flush").status, 200);
    const HttpResponse r = HttpGet(port_, "/api/v1/query_range?query=" + UrlEncode("{__name__=~\".+\"}") +
                                              "&start=" + std::to_string(kFrom) + "&end=" + std::to_string(kTo) +
                                              "&step=15s");
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
    std::map<std::string, std::vector<std::pair<int64_t, std::string>>> out;
    const nlohmann::json answer = nlohmann::json::parse(r.body);
    for (const auto& series : answer["data"]["result"]) {
      auto& points = out[Key(Labels(series["metric"]))];
      for (const auto& p : series["values"]) points.emplace_back(p[0].get<int64_t>(), p[1].get<std::string>());
    }
    return out;
  }
  std::string log() const { return ReadFile((dir_ / "vm.err").string()); }
  std::string WriteUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }
  // Every sample it holds once it holds `samples` of them (or after 30 s, what it holds then): a
  // series VictoriaMetrics has just created is indexed a moment after it acknowledged the samples,
  // and an export right after a backfill missed a few series now and then under load.
  Samples Holding(int64_t samples, int64_t from = kFrom - 60, int64_t to = kTo + 60) {
    Samples got;
    WaitUntil([&] { return Count(got = Export(from, to)) == samples; }, 30);
    return got;
  }
  // Every sample it holds in the window (after a flush: what was written is searchable).
  Samples Export(int64_t from = kFrom - 60, int64_t to = kTo + 60) {
    EXPECT_EQ(HttpGet(port_, "/internal/force_flush").status, 200);
    const HttpResponse r = HttpGet(port_, "/api/v1/export?match%5B%5D=" + UrlEncode("{__name__=~\".+\"}") +
                                              "&start=" + std::to_string(from) + "&end=" + std::to_string(to));
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
    Samples got;
    std::istringstream lines(r.body);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      const nlohmann::json row = nlohmann::json::parse(line);
      auto& points = got[Key(Labels(row["metric"]))];
      for (size_t i = 0; i < row["timestamps"].size(); ++i) {
        const double v = row["values"][i].get<double>();
        if (std::isfinite(v)) points[row["timestamps"][i].get<int64_t>()] = v;
      }
    }
    return got;
  }

 private:
  fs::path dir_;
  int port_;
  std::vector<std::string> extra_;
  std::unique_ptr<Child> vm_;
};

// tests/integration/remote_write_fault_proxy.py in front of a receiver.
class FaultProxy {
 public:
  FaultProxy(const fs::path& dir, const std::string& upstream, const std::string& mode, const std::string& arg)
      : port_(FreePort()),
        out_((dir / "proxy.out").string()),
        proxy_({"/usr/bin/python3", std::string(ACMETRACE_SOURCE_DIR) + "/tests/integration/remote_write_fault_proxy.py",
                std::to_string(port_), upstream, mode, arg},
               out_, (dir / "proxy.err").string()) {}
  FaultProxy(const fs::path& dir, const std::string& upstream, const std::string& mode, int n)
      : FaultProxy(dir, upstream, mode, std::to_string(n)) {}
  std::string output() const { return ReadFile(out_); }
  bool Ready() {
    return WaitUntil([&] { return ReadFile(out_).find("ready") != std::string::npos; }, 30);
  }
  std::string WriteUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }

 private:
  int port_;
  std::string out_;
  Child proxy_;
};

// The number after `word ` in text ("563598 samples sent" -> NumberBefore(text, " samples sent")).
int64_t NumberBefore(const std::string& text, const std::string& what) {
  const size_t at = text.find(what);
  if (at == std::string::npos) return -1;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  return begin == at ? -1 : std::stoll(text.substr(begin, at - begin));
}

template <class Receiver>
void BackfillRemoteWriteTest::Expect429sRetried(const fs::path& dir) {
  fs::create_directories(dir);
  Receiver receiver(dir);
  ASSERT_TRUE(receiver.Ready()) << receiver.log();
  FaultProxy proxy(dir, receiver.WriteUrl(), "429", 6);
  ASSERT_TRUE(proxy.Ready());
  std::string err;
  ASSERT_EQ(Backfill(proxy.WriteUrl(), "", err), 0) << err;
  EXPECT_GT(NumberBefore(err, " retried"), 0) << err;
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  EXPECT_EQ(FirstDifference(reference_, receiver.Holding(Count(reference_))), "");
}

template <class Receiver>
void BackfillRemoteWriteTest::Expect400sReportedAndTheRestDelivered(const fs::path& dir) {
  fs::create_directories(dir);
  Receiver receiver(dir);
  ASSERT_TRUE(receiver.Ready()) << receiver.log();
  FaultProxy proxy(dir, receiver.WriteUrl(), "400", 7);
  ASSERT_TRUE(proxy.Ready());
  std::string err;
  ASSERT_EQ(Backfill(proxy.WriteUrl(), "", err, "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND=20000 "), 1) << err;
  EXPECT_NE(err.find("HTTP 400: bad request: refused by the fault proxy"), std::string::npos) << err;
  const int64_t failed = NumberBefore(err, " failed");
  EXPECT_GT(failed, 0) << err;
  EXPECT_EQ(NumberBefore(err, " retried"), 0) << err;  // a 400 is not retried
  // Nothing silently lost: what was not refused is there, as the blocks path has it, and only that.
  const Samples got = receiver.Holding(Count(reference_) - failed);
  EXPECT_EQ(Count(got) + failed, Count(reference_)) << err;
  EXPECT_EQ(FirstSampleNotIn(got, reference_), "");
}

TEST_F(BackfillRemoteWriteTest, VictoriaMetricsHoldsEverySampleOfTheBlocksPath) {
  ASSERT_GT(Count(reference_), 100'000);  // the persona's GPUs, the jobs, the injected faults
  fs::create_directories(work_ / "vm");
  LocalVictoriaMetrics vm(work_ / "vm");
  ASSERT_TRUE(vm.Ready()) << vm.log();
  std::string err;
  // A tenant header, as a VictoriaMetrics cluster or Mimir routes on (a single node ignores it).
  ASSERT_EQ(Backfill(vm.WriteUrl(), "--header 'X-Scope-OrgID: t1'", err), 0) << err;
  EXPECT_EQ(NumberBefore(err, " samples sent"), Count(reference_)) << err;
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  // docs/monitoring.md quotes this run's last line.
  const size_t line = err.find("backfill: remote write: ");
  ASSERT_NE(line, std::string::npos) << err;
  const std::string last = err.substr(line, err.find('\n', line) - line);
  EXPECT_NE(ReadFile(std::string(ACMETRACE_SOURCE_DIR) + "/docs/monitoring.md").find("# last line: " + last),
            std::string::npos)
      << "docs/monitoring.md should quote: " << last;
  const Samples got = vm.Holding(Count(reference_));
  EXPECT_EQ(FirstDifference(reference_, got), "");
  EXPECT_EQ(Count(got), Count(reference_));
}

// A receiver's request size limit (VictoriaMetrics's -maxInsertRequestSize: 32 MiB by default, 1 MiB
// here) refuses requests above it whole; remote_write.max_bytes_per_send at or below it makes every
// request fit and every sample arrive (docs/monitoring.md, "Request size").
TEST_F(BackfillRemoteWriteTest, VictoriaMetricsWithA1MiBRequestLimitGetsEverySampleWithMaxBytesPerSendAtIt) {
  fs::create_directories(work_ / "vmsize");
  LocalVictoriaMetrics vm(work_ / "vmsize", {"-maxInsertRequestSize=1048576"});
  ASSERT_TRUE(vm.Ready()) << vm.log();
  std::string err;
  const std::string docs = ReadFile(std::string(ACMETRACE_SOURCE_DIR) + "/docs/monitoring.md");
  ASSERT_EQ(Backfill(vm.WriteUrl(), "", err, "ACMETRACE_REMOTE_WRITE_MAX_BYTES_PER_SEND=1048576 "), 0) << err;
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  EXPECT_EQ(FirstDifference(reference_, vm.Holding(Count(reference_))), "");
  const std::string requests = std::to_string(NumberBefore(err, " requests (0 refused)"));
  EXPECT_NE(docs.find("then the two hours above go in " + requests + " requests"), std::string::npos)
      << "docs/monitoring.md should say " << requests << " requests";
  // With the default bound (16 MiB) the requests pass this receiver's limit: refused, not retried, exit 1.
  ASSERT_EQ(Backfill(vm.WriteUrl(), "", err), 1) << err;
  EXPECT_NE(err.find("too big unpacked request; mustn't exceed `-maxInsertRequestSize=1048576` bytes"),
            std::string::npos)
      << err;
  EXPECT_EQ(NumberBefore(err, " retried"), 0) << err;
  // docs/monitoring.md quotes the refusal (the receiver's address and the first request's size left out).
  const size_t at = err.find("backfill: remote write: the receiver refused ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string said = err.substr(at, err.find("; the first: ", at) - at);
  EXPECT_NE(docs.find(said + "; the first: HTTP 400: ...; too big unpacked request"), std::string::npos)
      << "docs/monitoring.md should quote: " << said;
}

TEST_F(BackfillRemoteWriteTest, VictoriaMetricsBehindAReceiverAnswering429GetsEverySampleRetried) {
  Expect429sRetried<LocalVictoriaMetrics>(work_ / "vm429");
}

TEST_F(BackfillRemoteWriteTest, VictoriaMetricsBehindAReceiverAnswering400SomeRequestsRefusalsReportedExit1) {
  Expect400sReportedAndTheRestDelivered<LocalVictoriaMetrics>(work_ / "vm400");
}

TEST_F(BackfillRemoteWriteTest, VictoriaMetricsGetsEverySampleScrapedBeforeASigtermAndExit143) {
  fs::create_directories(work_ / "vmterm");
  LocalVictoriaMetrics vm(work_ / "vmterm");
  ASSERT_TRUE(vm.Ready()) << vm.log();
  const std::string err_path = (work_ / "vmterm" / "backfill.err").string();
  // The whole day (about 20 s of work at this scale): stopped a second into its samples.
  Child backfill({Binary(), "backfill", "--data", (work_ / "day").string(), "--remote-write", vm.WriteUrl()},
                 (work_ / "vmterm" / "backfill.out").string(), err_path);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(err_path).find("scrapes every") != std::string::npos; }, 30));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(backfill.Signal(SIGTERM), 128 + SIGTERM) << ReadFile(err_path);
  const std::string err = ReadFile(err_path);
  EXPECT_NE(err.find("stopped by SIGTERM during the data phase: the samples scraped so far were sent"),
            std::string::npos)
      << err;
  const int64_t sent = NumberBefore(err, " samples sent");
  EXPECT_GT(sent, 0) << err;
  // Stopped before the day's end: fewer than the day's 5,760 scrapes' worth (the backfill's own
  // estimate of a scrape, printed at its start). A bound of five two-hour windows was passed once the
  // target sink sent 5.4 windows' worth in its first second.
  const int64_t per_scrape = NumberBefore(err, " a scrape)");
  ASSERT_GT(per_scrape, 0) << err;
  EXPECT_LT(sent, 5760 * per_scrape) << err;
  EXPECT_EQ(NumberBefore(err, " pending"), 0) << err;
  // Every sample the backfill says it sent is in the store (the window's start to well past it).
  Samples got = vm.Holding(sent, kStart - 60, kStart + 2 * 86400);
  EXPECT_EQ(Count(got), sent);
}

// The recipe for the whole release (docs/monitoring.md, "Six months"): N backfills over disjoint
// slices of the window into one store. Two slices, cut off the scrape grid, into one VictoriaMetrics
// hold exactly the whole window's samples.
TEST_F(BackfillRemoteWriteTest, TwoSlicesIntoOneVictoriaMetricsHoldTheWholeWindow) {
  fs::create_directories(work_ / "slices");
  LocalVictoriaMetrics vm(work_ / "slices");
  ASSERT_TRUE(vm.Ready()) << vm.log();
  const int64_t cut = kFrom + 3607;
  for (const auto& [from, to] : {std::pair{kFrom, cut}, std::pair{cut, kTo}}) {
    const std::string log = (work_ / "slices" / ("slice-" + std::to_string(from) + ".err")).string();
    ASSERT_EQ(RunShell("cd " + work_.string() + " && " + Binary() + " backfill --data day --from " + std::to_string(from) +
                       " --to " + std::to_string(to) + " --remote-write " + vm.WriteUrl() + " > /dev/null 2> " + log),
              0)
        << ReadFile(log);
  }
  const Samples got = vm.Holding(Count(reference_));
  EXPECT_EQ(FirstDifference(reference_, got), "");
  EXPECT_EQ(Count(got), Count(reference_));
}

// The 400 of a receiver that refuses one series (a series it finds malformed, out of bounds...):
// every request holding it is refused, counted and reported with the series; the others arrive.
TEST_F(BackfillRemoteWriteTest, VictoriaMetricsBehindAReceiverRefusingOneSeriesGetsEveryOtherRequest) {
  fs::create_directories(work_ / "vm400s");
  LocalVictoriaMetrics vm(work_ / "vm400s");
  ASSERT_TRUE(vm.Ready()) << vm.log();
  FaultProxy proxy(work_ / "vm400s", vm.WriteUrl(), "400series", "acmetrace_build_info");
  ASSERT_TRUE(proxy.Ready());
  std::string err;
  ASSERT_EQ(Backfill(proxy.WriteUrl(), "", err), 1) << err;
  // The proxy's own count of what it refused is what the backfill reports as failed.
  const std::string said = proxy.output();
  const size_t last = said.rfind("refused ");
  ASSERT_NE(last, std::string::npos) << said;
  const int64_t refused_requests = NumberBefore(said.substr(last), " requests");
  const int64_t refused_samples = NumberBefore(said.substr(last), " samples");
  EXPECT_EQ(NumberBefore(err, " failed"), refused_samples) << err << said;
  EXPECT_NE(err.find("remote write: the receiver refused " + std::to_string(refused_requests) + " requests (" +
                     std::to_string(refused_samples) + " samples of "),
            std::string::npos)
      << err << said;
  // The receiver's answer names the series (as VictoriaMetrics's and Prometheus's do); the report
  // counts the series of the refused requests and names the first ten.
  EXPECT_NE(err.find("the first: HTTP 400: bad request: refused by the fault proxy: series acmetrace_build_info"),
            std::string::npos)
      << err;
  const int64_t series_refused = NumberBefore(err, " series, not retried");
  EXPECT_GT(series_refused, 10) << err;  // a whole shard's: each request holds every series of its shard
  size_t named = 0;
  for (size_t at = err.find("remote write: refused: "); at != std::string::npos;
       at = err.find("remote write: refused: ", at + 1)) {
    ++named;
  }
  EXPECT_EQ(named, 11u) << err;  // ten series and "... and N more series"
  EXPECT_NE(err.find("remote write: refused: ... and " + std::to_string(series_refused - 10) + " more series"),
            std::string::npos)
      << err;
  EXPECT_EQ(NumberBefore(err, " retried"), 0) << err;
  // The rest delivered, exactly: every series the store holds equals the blocks path's, the refused
  // series is not there, and what is missing is what was refused.
  const Samples got = vm.Holding(Count(reference_) - refused_samples);
  Samples want_of_got;
  for (const auto& [key, points] : got) {
    if (reference_.count(key)) want_of_got[key] = reference_.at(key);
  }
  EXPECT_EQ(FirstDifference(want_of_got, got), "");
  for (const auto& [key, _] : got) EXPECT_EQ(key.rfind("acmetrace_build_info{", 0), std::string::npos) << key;
  EXPECT_EQ(Count(got) + refused_samples, Count(reference_));
  EXPECT_EQ(static_cast<int64_t>(reference_.size() - got.size()), series_refused) << err;
}

// Behind a gateway that wants a bearer token (--bearer-token-file, as Prometheus's
// authorization.credentials_file): with it every sample arrives; with another token every request is
// refused 401, counted as failed, not retried, exit 1, and the token is not echoed.
TEST_F(BackfillRemoteWriteTest, VictoriaMetricsBehindAGatewayWantingABearerTokenGetsItFromTheTokenFile) {
  const fs::path dir = work_ / "vmbearer";
  fs::create_directories(dir);
  LocalVictoriaMetrics vm(dir);
  ASSERT_TRUE(vm.Ready()) << vm.log();
  FaultProxy proxy(dir, vm.WriteUrl(), "bearer", "s3cret-token");
  ASSERT_TRUE(proxy.Ready());
  std::ofstream(dir / "token") << "s3cret-token\n";
  std::ofstream(dir / "wrong") << "not-the-token\n";
  std::string err;
  ASSERT_EQ(Backfill(proxy.WriteUrl(), "--bearer-token-file " + (dir / "wrong").string(), err), 1) << err;
  EXPECT_NE(err.find("HTTP 401: unauthorized: no valid bearer token"), std::string::npos) << err;
  EXPECT_EQ(NumberBefore(err, " failed"), Count(reference_)) << err;
  EXPECT_EQ(NumberBefore(err, " retried"), 0) << err;
  EXPECT_EQ(err.find("not-the-token"), std::string::npos) << err;
  EXPECT_EQ(Count(vm.Export()), 0);
  ASSERT_EQ(Backfill(proxy.WriteUrl(), "--bearer-token-file " + (dir / "token").string(), err), 0) << err;
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  EXPECT_EQ(FirstDifference(reference_, vm.Holding(Count(reference_))), "");
}

// A receiver answering 429 with Retry-After: 2 (seconds): the retry comes after the receiver's
// wait, cut to remote_write.max_backoff_ms (1 s here), not after the 30 ms backoff.
TEST_F(BackfillRemoteWriteTest, VictoriaMetricsBehindAReceiverSayingRetryAfterIsRetriedThenNotBefore) {
  fs::create_directories(work_ / "vmra");
  LocalVictoriaMetrics vm(work_ / "vmra");
  ASSERT_TRUE(vm.Ready()) << vm.log();
  FaultProxy proxy(work_ / "vmra", vm.WriteUrl(), "retryafter", 2);
  ASSERT_TRUE(proxy.Ready());
  std::string err;
  ASSERT_EQ(RunShell("cd " + work_.string() + " && ACMETRACE_REMOTE_WRITE_MAX_BACKOFF_MS=1000 " + Binary() +
                     " backfill --data day " + Window() + " --remote-write " + proxy.WriteUrl() +
                     " > rw.out 2> rw.err"),
            0)
      << ReadFile((work_ / "rw.err").string());
  err = ReadFile((work_ / "rw.err").string());
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  EXPECT_GT(NumberBefore(err, " retried"), 0) << err;
  std::istringstream lines(proxy.output());
  std::string line;
  int gaps = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("retry_gap_ms ", 0) != 0) continue;
    const int64_t gap = std::stoll(line.substr(13));
    EXPECT_GE(gap, 950) << line;   // waited as told, not min_backoff_ms
    EXPECT_LT(gap, 1900) << line;  // but no longer than max_backoff_ms
    ++gaps;
  }
  EXPECT_EQ(gaps, 2) << proxy.output();
  EXPECT_EQ(FirstDifference(reference_, vm.Holding(Count(reference_))), "");
}

// The receiver stopped in the middle of a backfill and started again on the same port and storage,
// as an operator restarts it: the requests it could not take are retried, and every series reads
// back through query_range exactly as from a store that was never restarted.
TEST_F(BackfillRemoteWriteTest, VictoriaMetricsRestartedMidBackfillAnswersQueriesAsAFreshOne) {
  fs::create_directories(work_ / "vmfresh");
  fs::create_directories(work_ / "vmrestart");
  LocalVictoriaMetrics fresh(work_ / "vmfresh");
  LocalVictoriaMetrics vm(work_ / "vmrestart");
  ASSERT_TRUE(fresh.Ready()) << fresh.log();
  ASSERT_TRUE(vm.Ready()) << vm.log();
  std::string err;
  ASSERT_EQ(Backfill(fresh.WriteUrl(), "", err), 0) << err;

  const std::string err_path = (work_ / "vmrestart" / "backfill.err").string();
  const std::unique_ptr<Child> backfill = BackfillInSmallRequests(work_ / "vmrestart", vm.WriteUrl());
  auto rows = [&] {
    const std::string body = HttpGet(vm.port(), "/metrics").body;
    const std::string name = "vm_rows_inserted_total{type=\"promremotewrite\"} ";
    const size_t at = body.find(name);
    return at == std::string::npos ? 0 : std::stoll(body.substr(at + name.size()));
  };
  ASSERT_TRUE(WaitUntil([&] { return rows() > 0; }, 30)) << ReadFile(err_path);
  ASSERT_EQ(vm.Stop(), 0) << vm.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // requests meet a closed port meanwhile
  vm.Start();
  ASSERT_TRUE(vm.Ready()) << vm.log();
  ASSERT_EQ(backfill->Wait(), 0) << ReadFile(err_path);
  err = ReadFile(err_path);
  EXPECT_GT(NumberBefore(err, " retried"), 0) << err;  // the restart was met mid-backfill
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;

  const auto want = fresh.QueryRange();
  const auto got = vm.QueryRange();
  ASSERT_GT(want.size(), 1000u);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [key, points] : want) {
    auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << "missing after the restart: " << key;
      continue;
    }
    EXPECT_EQ(it->second, points) << key;
  }
  // Nothing lost either way: the raw samples are the blocks path's.
  EXPECT_EQ(FirstDifference(reference_, vm.Holding(Count(reference_))), "");
}

// What a live run with --remote-write (run or export, --until-end) put in the store: every sample
// stamped at wall time within [wall_from_ms, now], under its target's job and instance, and each
// series's last value the one --metrics-out (dir/final.prom) holds. err: the run's stderr.
void ExpectTheStoreHoldsWhatMetricsOutHolds(LocalVictoriaMetrics& vm, const fs::path& dir, const std::string& err,
                                             int64_t wall_from_ms) {
  const int64_t wall_to_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  EXPECT_EQ(NumberBefore(err, " pending"), 0) << err;

  // --metrics-out: exposition text without timestamps (a 0 added for the parser).
  std::string final_text;
  {
    std::istringstream lines(ReadFile((dir / "final.prom").string()));
    std::string line;
    while (std::getline(lines, line)) final_text += line.empty() || line[0] == '#' ? line + "\n" : line + " 0\n";
  }
  const Samples final_values = ParseOpenMetrics(final_text);
  // The store, job and instance (the scrape's target labels) set aside: series -> last value.
  // VictoriaMetrics makes the newest samples searchable a moment after it took them: read once
  // every sample the run says it sent is there.
  const int64_t sent = NumberBefore(err, " samples sent");
  ASSERT_GT(sent, 0) << err;
  std::vector<nlohmann::json> rows;
  ASSERT_TRUE(WaitUntil(
      [&] {
        EXPECT_EQ(HttpGet(vm.port(), "/internal/force_flush").status, 200);
        const HttpResponse r = HttpGet(vm.port(), "/api/v1/export?match%5B%5D=" + UrlEncode("{__name__=~\".+\"}") +
                                                      "&end=4102444800");
        rows.clear();
        int64_t n = 0;
        std::istringstream lines(r.body);
        std::string line;
        while (std::getline(lines, line)) {
          if (line.empty()) continue;
          rows.push_back(nlohmann::json::parse(line));
          n += static_cast<int64_t>(rows.back()["timestamps"].size());
        }
        return n == sent;
      },
      30))
      << err;
  std::map<std::string, double> last;
  std::map<std::string, int64_t> scrapes;  // series -> samples
  for (const nlohmann::json& row : rows) {
    std::map<std::string, std::string> labels = Labels(row["metric"]);
    EXPECT_TRUE(labels.count("job") && labels.count("instance")) << row["metric"];
    labels.erase("job");
    labels.erase("instance");
    const std::string key = Key(labels);
    // Only `up` is in every target (set apart by instance).
    if (key.rfind("up{", 0) != 0) {
      EXPECT_EQ(last.count(key), 0u) << "two targets serve " << key;
    }
    int64_t newest = INT64_MIN;
    for (size_t i = 0; i < row["timestamps"].size(); ++i) {
      const int64_t ts = row["timestamps"][i].get<int64_t>();
      EXPECT_GE(ts, wall_from_ms) << key;  // stamped at wall time, during the run
      EXPECT_LE(ts, wall_to_ms) << key;
      if (ts > newest) {
        newest = ts;
        last[key] = row["values"][i].get<double>();
      }
    }
    scrapes[key] = static_cast<int64_t>(row["timestamps"].size());
  }
  int persona = 0, flags = 0;
  // --metrics-out leaves out the closed flags a scraper is still shown (docs/metrics.md), and so
  // does its count of the flags' series.
  const std::string flag_count = "acmetrace_series{metric=\"acmetrace_anomaly_active\",}";
  for (const auto& [key, points] : final_values) {
    ASSERT_EQ(points.size(), 1u);
    if (key == flag_count) continue;
    auto it = last.find(key);
    if (it == last.end()) {
      ADD_FAILURE() << "not sent: " << key;
      continue;
    }
    // VictoriaMetrics keeps 12 significant digits (as in the backfill tests above).
    const double want = points.begin()->second;
    EXPECT_LE(std::fabs(it->second - want), 1e-12 * std::max(1.0, std::fabs(want))) << key << ": " << it->second;
    persona += key.rfind("DCGM_", 0) == 0 ? 1 : 0;
  }
  for (const auto& [key, value] : last) {
    if (key.rfind("acmetrace_anomaly_active{", 0) == 0) {
      ++flags;
      if (!final_values.count(key)) {
        EXPECT_TRUE(value == 0 || value == 1) << key;
      }
      continue;
    }
    if (final_values.count(key)) continue;
    // What only a scrape has: up, the process, the build, the remote write queue's own metrics.
    const bool scrape_only = key.rfind("up{", 0) == 0 || key.rfind("process_", 0) == 0 ||
                             key.rfind("acmetrace_build_info{", 0) == 0 ||
                             key.rfind("acmetrace_remote_storage_", 0) == 0;
    EXPECT_TRUE(scrape_only) << "sent but not in --metrics-out: " << key;
  }
  EXPECT_GT(persona, 100);
  EXPECT_GT(flags, 0);
  EXPECT_GE(scrapes["up{}"], 10);  // the exporter's own target, every 100 ms for seconds
  // The queue's own metrics, scraped with the rest (its sends come after the last scrape).
  EXPECT_EQ(last["acmetrace_remote_storage_shards{url=\"" + vm.WriteUrl() + "\",}"], 4);
}

// `run --until-end --remote-write`: what /metrics serves, scraped every --remote-write-interval of
// wall time as the shipped prometheus.yml scrapes it (the exporter's own target, one per node),
// each sample at its scrape's wall time, and a last scrape at the end: the store's last value of
// every series is the one --metrics-out writes.
TEST_F(BackfillRemoteWriteTest, RunUntilEndByRemoteWriteGivesVictoriaMetricsWhatMetricsOutHolds) {
  const fs::path dir = work_ / "vmlive";
  fs::create_directories(dir);
  LocalVictoriaMetrics vm(dir);
  ASSERT_TRUE(vm.Ready()) << vm.log();
  const int64_t wall_from_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // An hour of the trace at speed 900: four seconds.
  ASSERT_EQ(RunShell("cd " + dir.string() + " && ACMETRACE_REPLAY_FROM=" + std::to_string(kFrom) +
                     " ACMETRACE_REPLAY_TO=" + std::to_string(kFrom + 3600) + " " + Binary() + " run --data " +
                     (work_ / "day").string() +
                     " --speed 900 --listen 127.0.0.1:0 --until-end --remote-write " + vm.WriteUrl() +
                     " --remote-write-interval 100 --metrics-out final.prom > run.out 2> run.err"),
            0)
      << ReadFile((dir / "run.err").string());
  const std::string err = ReadFile((dir / "run.err").string());
  ExpectTheStoreHoldsWhatMetricsOutHolds(vm, dir, err, wall_from_ms);
}

// `export --source stdin --until-end --remote-write`: the processors' windows of the hour, then the
// hour's records paced at speed 900, through export's stdin: the same as run's, from the exporter alone.
TEST_F(BackfillRemoteWriteTest, ExportUntilEndByRemoteWriteGivesVictoriaMetricsWhatMetricsOutHolds) {
  const fs::path dir = work_ / "vmexport";
  fs::create_directories(dir);
  LocalVictoriaMetrics vm(dir);
  ASSERT_TRUE(vm.Ready()) << vm.log();
  const std::string hour = "ACMETRACE_REPLAY_FROM=" + std::to_string(kFrom) + " ACMETRACE_REPLAY_TO=" +
                           std::to_string(kFrom + 3600) + " " + Binary() + " replay --data " + (work_ / "day").string();
  ASSERT_EQ(RunShell("cd " + dir.string() + " && " + hour + " --speed max --sink stdout 2> replay.err | " + Binary() +
                     " process > windows.jsonl 2> process.err"),
            0)
      << ReadFile((dir / "process.err").string());
  const int64_t wall_from_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_EQ(RunShell("cd " + dir.string() + " && { cat windows.jsonl; " + hour + " --speed 900 --sink stdout 2> paced.err; } | " +
                     Binary() + " export --source stdin --listen 127.0.0.1:0 --until-end --remote-write " +
                     vm.WriteUrl() + " --remote-write-interval 100 --metrics-out final.prom > export.out 2> export.err"),
            0)
      << ReadFile((dir / "export.err").string());
  const std::string err = ReadFile((dir / "export.err").string());
  ExpectTheStoreHoldsWhatMetricsOutHolds(vm, dir, err, wall_from_ms);
}

// run without --until-end, stopped by SIGTERM while it serves: the scrapes so far and a last one
// are sent before it exits, nothing left pending.
TEST_F(BackfillRemoteWriteTest, RunStoppedBySigtermFlushesItsRemoteWriteToVictoriaMetrics) {
  const fs::path dir = work_ / "vmliveterm";
  fs::create_directories(dir);
  LocalVictoriaMetrics vm(dir);
  ASSERT_TRUE(vm.Ready()) << vm.log();
  const std::string err_path = (dir / "run.err").string();
  Child run({Binary(), "run", "--data", (work_ / "day").string(), "--speed", "60", "--listen", "127.0.0.1:0",
             "--remote-write", vm.WriteUrl()},
            (dir / "run.out").string(), err_path);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(err_path).find("replaying") != std::string::npos; }, 30));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(run.Signal(SIGTERM), 0) << ReadFile(err_path);
  const std::string err = ReadFile(err_path);
  const int64_t sent = NumberBefore(err, " samples sent");
  EXPECT_GT(sent, 0) << err;
  EXPECT_EQ(NumberBefore(err, " pending"), 0) << err;
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  // The newest samples become searchable a moment after VictoriaMetrics took them.
  int64_t stored = 0;
  WaitUntil([&] { return (stored = Count(vm.Export(0, 4'102'444'800))) == sent; }, 20);
  EXPECT_EQ(stored, sent) << err;
}

// Debian's Prometheus as a remote write receiver on a free port, its storage in dir, with an
// out-of-order window: history is hours to months old, and without the window Prometheus refuses what
// is older than its head (HTTP 400 "out of bounds"). Stopped by the destructor.
class LocalPrometheus {
 public:
  explicit LocalPrometheus(const fs::path& dir) : dir_(dir), port_(FreePort()) {
    std::ofstream(dir_ / "prometheus.yml") << "storage:\n  tsdb:\n    out_of_order_time_window: 3650d\n";
    Start();
  }
  bool Ready() { return WaitUntil([&] { return HttpGet(port_, "/-/ready").status == 200; }, 60); }
  // Stopped (SIGTERM: its WAL and out-of-order log hold what it acknowledged) and started again on
  // the same port and storage.
  int Stop() { return prom_->Signal(SIGTERM); }
  void Start() {
    prom_ = std::make_unique<Child>(
        std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(),
                                 "--storage.tsdb.path=" + (dir_ / "data").string(), "--storage.tsdb.retention.time=100y",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--web.enable-remote-write-receiver"},
        (dir_ / "prom.out").string(), (dir_ / "prom.err").string());
  }
  int port() const { return port_; }
  std::string log() const { return ReadFile((dir_ / "prom.err").string()); }
  std::string WriteUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }
  // What a remote write request it acknowledged holds is searchable at once: nothing to wait for.
  Samples Holding(int64_t /*samples*/) { return Export(); }
  // Every raw sample of the window: a range selector over it, evaluated at its end.
  Samples Export() {
    const int64_t span_s = kTo - kFrom + 120;
    const HttpResponse r = HttpGet(port_, "/api/v1/query?time=" + std::to_string(kTo + 60) + "&query=" +
                                              UrlEncode("{__name__=~\".+\"}[" + std::to_string(span_s) + "s]"));
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
    Samples got;
    const nlohmann::json answer = nlohmann::json::parse(r.body);
    EXPECT_EQ(answer["status"], "success") << r.body.substr(0, 300);
    for (const auto& s : answer["data"]["result"]) {
      auto& points = got[Key(Labels(s["metric"]))];
      for (const auto& p : s["values"]) {
        const double v = std::stod(p[1].get<std::string>());
        if (std::isfinite(v)) points[std::llround(p[0].get<double>() * 1000)] = v;
      }
    }
    return got;
  }
  // On a failure, what Prometheus says it took in (head series, out-of-order and refused samples).
  std::string HeadMetrics() {
    std::istringstream lines(HttpGet(port_, "/metrics").body);
    std::string line, out;
    while (std::getline(lines, line)) {
      if (!line.empty() && line[0] != '#' &&
          (line.find("tsdb_head_series") != std::string::npos || line.find("out_of_order") != std::string::npos ||
           line.find("out_of_bound") != std::string::npos)) {
        out += line + "\n";
      }
    }
    return out;
  }

 private:
  fs::path dir_;
  int port_;
  std::unique_ptr<Child> prom_;
};

TEST_F(BackfillRemoteWriteTest, PrometheusWithAnOutOfOrderWindowHoldsEverySampleOfTheBlocksPath) {
  fs::create_directories(work_ / "prom");
  LocalPrometheus prom(work_ / "prom");
  ASSERT_TRUE(prom.Ready()) << prom.log();
  std::string err;
  ASSERT_EQ(Backfill(prom.WriteUrl(), "", err), 0) << err;
  EXPECT_EQ(FirstDifference(reference_, prom.Export()), "") << err << prom.HeadMetrics();
}

// The fault tests again with Prometheus as the receiver: 429s retried, 400s counted and not retried
// (nothing else lost), and a restart mid-backfill that loses and changes nothing.
TEST_F(BackfillRemoteWriteTest, PrometheusBehindAReceiverAnswering429GetsEverySampleRetried) {
  Expect429sRetried<LocalPrometheus>(work_ / "prom429");
}

TEST_F(BackfillRemoteWriteTest, PrometheusBehindAReceiverAnswering400SomeRequestsRefusalsReportedExit1) {
  Expect400sReportedAndTheRestDelivered<LocalPrometheus>(work_ / "prom400");
}

TEST_F(BackfillRemoteWriteTest, PrometheusRestartedMidBackfillHoldsEverySampleOfTheBlocksPath) {
  fs::create_directories(work_ / "promrestart");
  LocalPrometheus prom(work_ / "promrestart");
  ASSERT_TRUE(prom.Ready()) << prom.log();
  const std::string err_path = (work_ / "promrestart" / "backfill.err").string();
  const std::unique_ptr<Child> backfill = BackfillInSmallRequests(work_ / "promrestart", prom.WriteUrl());
  auto series_in = [&] {  // the backfill's series in its head (it scrapes nothing itself)
    const std::string body = HttpGet(prom.port(), "/metrics").body;
    const std::string name = "\nprometheus_tsdb_head_series ";
    const size_t at = body.find(name);
    return at == std::string::npos ? 0.0 : std::stod(body.substr(at + name.size()));
  };
  ASSERT_TRUE(WaitUntil([&] { return series_in() > 0; }, 30)) << ReadFile(err_path);
  ASSERT_EQ(prom.Stop(), 0) << prom.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // requests meet a closed port meanwhile
  prom.Start();
  ASSERT_TRUE(prom.Ready()) << prom.log();
  ASSERT_EQ(backfill->Wait(), 0) << ReadFile(err_path);
  const std::string err = ReadFile(err_path);
  EXPECT_GT(NumberBefore(err, " retried"), 0) << err;  // the restart was met mid-backfill
  EXPECT_EQ(NumberBefore(err, " failed"), 0) << err;
  EXPECT_EQ(FirstDifference(reference_, prom.Export()), "") << err << prom.HeadMetrics();
}

}  // namespace
