#include "acmetrace/history/blocks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "acmetrace/history/openmetrics.h"
#include "acmetrace/scoring/range_query.h"
#include "temporary_prometheus.h"

namespace acmetrace::history {
namespace fs = std::filesystem;
namespace {

// Whether the backfill that made this staging directory is gone: its lock can be taken (a live one
// holds it), or, without a lock file (an older version's), no process has the PID in its name.
bool StagingOwnerGone(const fs::path& dir, const std::string& pid_text) {
  const int fd = ::open((dir / "lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    const bool gone = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);  // and the lock with it
    return gone;
  }
  char* end = nullptr;
  const long pid = std::strtol(pid_text.c_str(), &end, 10);
  if (pid_text.empty() || *end != '\0' || pid <= 0 || pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

uint64_t BytesUnder(const fs::path& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) bytes += it->file_size(size_ec);
  }
  return bytes;
}

core::Status WriteAll(std::FILE* file, std::string_view text, const std::string& path) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), file) != text.size()) {
    return core::Status::Error(path + ": " + std::strerror(errno));
  }
  return core::Status::Ok();
}

}  // namespace

core::Status WriteFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return core::Status::Error(path + ": cannot write");
  return core::Status::Ok();
}

namespace {

// A port free on 127.0.0.1 now (the kernel's pick; a race with another program is unlikely).
core::Result<int> FreeLocalPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return core::Status::Error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return core::Status::Error("finding a free port: " + why);
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}


std::string UnixSeconds(int64_t ms) { return std::to_string(ms >= 0 ? ms / 1000 : (ms - 999) / 1000); }

}  // namespace

// --- OpenMetricsFile ---

core::Result<std::unique_ptr<OpenMetricsFile>> OpenMetricsFile::Open(const std::string& path) {
  if (path == "-") return std::unique_ptr<OpenMetricsFile>(new OpenMetricsFile(stdout, "stdout"));
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return core::Status::Error(path + ": " + std::strerror(errno));
  return std::unique_ptr<OpenMetricsFile>(new OpenMetricsFile(file, path));
}

OpenMetricsFile::~OpenMetricsFile() {
  if (file_ != nullptr && file_ != stdout) std::fclose(file_);
}

core::Status OpenMetricsFile::Scrape(int64_t, std::string_view samples) { return WriteAll(file_, samples, path_); }

core::Status OpenMetricsFile::Finish() {
  if (core::Status s = WriteAll(file_, kOpenMetricsEnd, path_); !s.ok()) return s;
  const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
  if (file_ != stdout) {
    if (std::fclose(file_) != 0 && !failed) {
      file_ = nullptr;
      return core::Status::Error(path_ + ": " + std::strerror(errno));
    }
    file_ = nullptr;
  }
  if (failed) return core::Status::Error(path_ + ": write failed");
  return core::Status::Ok();
}

// --- PromtoolBlocks ---

PromtoolBlocks::PromtoolBlocks(BlockOptions options) : options_(std::move(options)) {}

core::Result<std::unique_ptr<PromtoolBlocks>> PromtoolBlocks::Open(BlockOptions options) {
  const std::optional<std::string> promtool = FindExecutable(options.promtool);
  if (!promtool) {
    return core::Status::Error("promtool not found ('" + options.promtool +
                               "'): install Prometheus's tools (Debian: apt-get install prometheus) or name it "
                               "with --promtool");
  }
  options.promtool = *promtool;
  if (options.chunk_ms <= 0 || options.max_chunk_bytes <= 0 || options.promtool_runs <= 0) {
    return core::Status::Error("bad chunk size or promtool runs");
  }
  std::error_code ec;
  fs::path out(options.out_dir);
  while (out.has_filename() == false && out.has_parent_path() && out != out.parent_path()) out = out.parent_path();
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) return core::Status::Error(options.out_dir + ": exists and is not a directory");
    if (!fs::is_empty(out, ec)) {
      return core::Status::Error(options.out_dir +
                                 ": not empty; backfill writes a new TSDB: give an empty or new directory (blocks "
                                 "added to a running Prometheus's directory need care: see docs/monitoring.md)");
    }
  }
  // Next to PROMDIR, so that the blocks move in by rename (same filesystem), and hidden.
  const fs::path absolute = fs::absolute(out, ec);
  const fs::path staging =
      absolute.parent_path() / ("." + absolute.filename().string() + ".backfill-" + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directories(staging / "chunks", ec);
  if (!ec) fs::create_directories(staging / "blocks", ec);
  if (ec) return core::Status::Error(staging.string() + ": " + ec.message());
  auto blocks = std::unique_ptr<PromtoolBlocks>(new PromtoolBlocks(std::move(options)));
  blocks->staging_ = staging.string();
  blocks->lock_fd_ = ::open((staging / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (blocks->lock_fd_ < 0 || ::flock(blocks->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return core::Status::Error((staging / "lock").string() + ": " + std::strerror(errno));
  }
  // What killed backfills into the same PROMDIR left (gigabytes of blocks and chunks, hidden).
  const std::string prefix = "." + absolute.filename().string() + ".backfill-";
  fs::directory_iterator it(absolute.parent_path(), ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code entry_ec;
    if (name.rfind(prefix, 0) != 0 || it->path() == staging || !it->is_directory(entry_ec)) continue;
    if (!StagingOwnerGone(it->path(), name.substr(prefix.size()))) continue;
    const uint64_t bytes = BytesUnder(it->path());
    if (fs::remove_all(it->path(), entry_ec); !entry_ec) {
      blocks->removed_stale_.push_back(it->path().string() + " (" + std::to_string(bytes >> 20) + " MB)");
    }
  }
  return blocks;
}

PromtoolBlocks::~PromtoolBlocks() {
  if (chunk_ != nullptr) std::fclose(chunk_);
  running_.clear();  // stops the promtool runs still going (a failed or stopped backfill)
  if (!committed_) {
    // A failed or stopped backfill leaves no work files and PROMDIR as it was.
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

core::Status PromtoolBlocks::Scrape(int64_t ts_ms, std::string_view samples) {
  if (chunk_ != nullptr && (ts_ms >= chunk_end_ms_ || chunk_bytes_ >= options_.max_chunk_bytes)) {
    if (core::Status s = CutChunk(); !s.ok()) return s;
  }
  if (chunk_ == nullptr) {
    chunk_path_ = chunk_dir() + "/chunk-" + std::to_string(chunks_) + ".om";
    chunk_ = std::fopen(chunk_path_.c_str(), "wb");
    if (chunk_ == nullptr) return core::Status::Error(chunk_path_ + ": " + std::strerror(errno));
    const int64_t range = options_.chunk_ms;
    const int64_t start = (ts_ms >= 0 ? ts_ms / range : (ts_ms - range + 1) / range) * range;
    chunk_end_ms_ = start + range;
    chunk_bytes_ = 0;
  }
  chunk_bytes_ += static_cast<int64_t>(samples.size());
  text_bytes_ += static_cast<int64_t>(samples.size());
  return WriteAll(chunk_, samples, chunk_path_);
}

core::Status PromtoolBlocks::WaitForOldestRun() {
  if (running_.empty()) return core::Status::Ok();
  Run& run = running_.front();
  core::Status s = run.promtool.Wait();
  promtool_cpu_s_ += run.promtool.cpu_s();
  promtool_max_rss_ = std::max(promtool_max_rss_, run.promtool.max_rss_bytes());
  const std::string chunk = run.chunk;
  const std::string log = run.promtool.log_path();
  running_.pop_front();
  if (options_.stop != nullptr && options_.stop->requested()) return core::Status::Error("stopped");
  if (!s.ok()) return core::Status::Error("promtool on chunk " + fs::path(chunk).filename().string() + ": " + s.message());
  std::error_code ec;
  fs::remove(chunk, ec);
  fs::remove(log, ec);
  return core::Status::Ok();
}

core::Status PromtoolBlocks::CutChunk() {
  if (chunk_ == nullptr) return core::Status::Ok();
  core::Status s = WriteAll(chunk_, kOpenMetricsEnd, chunk_path_);
  if (std::fclose(chunk_) != 0 && s.ok()) s = core::Status::Error(chunk_path_ + ": " + std::strerror(errno));
  chunk_ = nullptr;
  if (!s.ok()) return s;
  ++chunks_;
  // A run that failed already is known before more work is handed out.
  while (!running_.empty() && !running_.front().promtool.Running()) {
    if (core::Status w = WaitForOldestRun(); !w.ok()) return w;
  }
  while (static_cast<int>(running_.size()) >= options_.promtool_runs) {
    if (core::Status w = WaitForOldestRun(); !w.ok()) return w;
  }
  core::Result<Subprocess> started =
      Subprocess::Start({options_.promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", chunk_path_,
                         blocks_dir()},
                        chunk_path_ + ".log", "", options_.stop);
  if (!started.ok()) return started.status();
  running_.push_back(Run{std::move(started).value(), chunk_path_});
  return core::Status::Ok();
}

core::Status PromtoolBlocks::Finish() {
  if (core::Status s = CutChunk(); !s.ok()) return s;
  while (!running_.empty()) {
    if (core::Status s = WaitForOldestRun(); !s.ok()) return s;
  }
  std::error_code ec;
  fs::remove_all(chunk_dir(), ec);
  return core::Status::Ok();
}

core::Status PromtoolBlocks::Commit() {
  // One rename: PROMDIR is absent, or empty (rename replaces an empty directory), until the blocks
  // are all there at once.
  if (::rename(blocks_dir().c_str(), options_.out_dir.c_str()) != 0) {
    return core::Status::Error("moving the blocks to " + options_.out_dir + ": " + std::strerror(errno));
  }
  committed_ = true;
  std::error_code ec;
  fs::remove_all(staging_, ec);
  return core::Status::Ok();
}

core::Status CheckRuleFiles(const std::string& promtool, const std::vector<scoring::RuleFileText>& rules,
                            const std::string& work_dir, StopRequest* stop) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) return core::Status::Error(work_dir + ": " + ec.message());
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string path = work_dir + "/check-" + std::to_string(i) + ".yml";
    if (core::Status s = WriteFile(path, rules[i].text); !s.ok()) return s;
    core::Result<Subprocess> tool =
        Subprocess::Start({promtool, "check", "rules", path}, path + ".log", "", stop);
    if (!tool.ok()) return tool.status();
    core::Status checked = tool.value().Wait();
    fs::remove(path, ec);
    fs::remove(path + ".log", ec);
    if (!checked.ok()) {
      // promtool names the copy it was given: the user knows the file by its own name.
      std::string why = checked.message();
      for (size_t at; (at = why.find(path)) != std::string::npos;) why.replace(at, path.size(), rules[i].name);
      return core::Status::Error(rules[i].name + ": promtool check rules: " + why);
    }
  }
  return core::Status::Ok();
}

core::Result<int64_t> FreeDiskBytes(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return core::Status::Error(path + ": " + std::strerror(errno));
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

// --- rules ---

core::Result<int> CountRecordingRules(const scoring::RuleFileText& file) {
  scoring::RuleSet rules;
  if (core::Status s = scoring::LoadRuleText(file, rules); !s.ok()) return s;
  return static_cast<int>(rules.records.size());
}

// How far before a slice its rules read: the longest range selector ("[1h]", "[30m:1m]") or offset
// the rule files name (alerting rules included: over, never under), plus Prometheus's 5 min lookback
// for instant vectors. A scan of the text, not a PromQL parse: a bracket that is no duration is skipped.
int64_t RuleLookbackMs(const std::vector<scoring::RuleFileText>& files) {
  int64_t longest = 0;
  auto consider = [&](std::string_view text) {
    if (core::Result<int64_t> ms = scoring::ParseDurationMs(text); ms.ok()) longest = std::max(longest, ms.value());
  };
  for (const scoring::RuleFileText& file : files) {
    const std::string& t = file.text;
    for (size_t open = t.find('['); open != std::string::npos; open = t.find('[', open + 1)) {
      const size_t close = t.find_first_of("]\n", open + 1);
      if (close == std::string::npos || t[close] != ']') continue;
      std::string_view inside(t.data() + open + 1, close - open - 1);
      consider(inside.substr(0, inside.find(':')));
    }
    for (size_t at = t.find("offset"); at != std::string::npos; at = t.find("offset", at + 6)) {
      size_t p = at + 6;
      while (p < t.size() && t[p] == ' ') ++p;
      size_t q = p;
      while (q < t.size() && std::isalnum(static_cast<unsigned char>(t[q]))) ++q;
      if (q > p) consider(std::string_view(t.data() + p, q - p));
    }
  }
  return longest + 5 * 60'000;
}

std::vector<WindowSlice> SliceWindow(int64_t from_ms, int64_t to_ms, int64_t slice_ms, int64_t eval_interval_ms) {
  slice_ms = std::max<int64_t>(slice_ms, 60'000);
  std::vector<WindowSlice> slices;
  for (int64_t from = from_ms, to = 0; from <= to_ms; from = to + 1) {
    to = std::min(to_ms, from + slice_ms - 1);
    if (to_ms - to <= std::max<int64_t>(eval_interval_ms, 1000)) to = to_ms;
    slices.push_back({from, to});
  }
  return slices;
}

core::Status MoveBlocks(const fs::path& from_dir, const fs::path& blocks_dir) {
  // A Prometheus started on blocks_dir loads them with the trace's.
  std::error_code ec;
  for (const fs::directory_entry& block : fs::directory_iterator(from_dir, ec)) {
    fs::rename(block.path(), blocks_dir / block.path().filename(), ec);
    if (ec) return core::Status::Error("moving " + block.path().string() + ": " + ec.message());
  }
  if (ec) return core::Status::Error(from_dir.string() + ": " + ec.message());
  return core::Status::Ok();
}

core::Result<int> LinkBlocksOfSpan(const std::vector<BlockSpan>& blocks, int64_t from_ms, int64_t to_ms,
                                   const fs::path& storage) {
  std::error_code ec;
  fs::remove_all(storage, ec);
  fs::create_directories(storage, ec);
  if (ec) return core::Status::Error(storage.string() + ": " + ec.message());
  int linked = 0;
  for (const BlockSpan& b : blocks) {
    if (b.max_ms <= from_ms || b.min_ms > to_ms) continue;
    fs::copy(b.dir, storage / b.dir.filename(), fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
    if (ec) return core::Status::Error("linking " + b.dir.string() + ": " + ec.message());
    ++linked;
  }
  return linked;
}

// A temporary prometheus serving storage on a free 127.0.0.1 port, ready to answer, or why not.
core::Result<RulePrograms> FindRulePrograms(const std::string& promtool, const std::string& prometheus,
                                            std::string_view purpose) {
  const std::optional<std::string> promtool_path = FindExecutable(promtool);
  if (!promtool_path) return core::Status::Error("promtool not found ('" + promtool + "')");
  const std::optional<std::string> prometheus_path = FindExecutable(prometheus);
  if (!prometheus_path) {
    return core::Status::Error("prometheus not found ('" + prometheus + "'): " + std::string(purpose) +
                               " through a temporary Prometheus (Debian: apt-get install prometheus)");
  }
  return RulePrograms{*promtool_path, *prometheus_path};
}

core::Result<Subprocess> StartReadyPrometheus(const std::string& prometheus, const std::string& config,
                                              const fs::path& storage, const std::string& retention,
                                              const std::string& log, StopRequest* stop, int& port_out) {
  core::Result<int> port = FreeLocalPort();
  if (!port.ok()) return port.status();
  const std::string address = "127.0.0.1:" + std::to_string(port.value());
  core::Result<Subprocess> server =
      Subprocess::Start({prometheus, "--config.file=" + config, "--storage.tsdb.path=" + storage.string(),
                         "--storage.tsdb.retention.time=" + retention, "--web.listen-address=" + address,
                         // The blocks are read, not kept: compacting them would be wasted work.
                         "--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h",
                         "--log.level=warn"},
                        log, "", stop);
  if (!server.ok()) return server.status();
  Subprocess& prom = server.value();
  core::Result<std::unique_ptr<scoring::PrometheusClient>> client =
      scoring::PrometheusClient::Create("http://" + address, 2'000);
  if (!client.ok()) return client.status();
  auto ready = [&] {
    int http_status = 0;
    std::string body;
    return client.value()->Get("/-/ready", http_status, body).ok() && http_status == 200;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!ready()) {
    if (stop != nullptr && stop->requested()) return core::Status::Error("stopped");
    if (!prom.Running()) {
      core::Status s = prom.Wait();
      return core::Status::Error("the temporary prometheus for the rules stopped: " + s.message());
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return core::Status::Error("the temporary prometheus on " + address +
                                 " was not ready after 120 s: " + MeaningfulLogLine(prom.log_path()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  port_out = port.value();
  return server;
}

core::Result<std::vector<BlockSpan>> ListBlocks(const fs::path& dir) {
  std::vector<BlockSpan> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const fs::path meta = e.path() / "meta.json";
    // Its own error code: an entry without meta.json (the rules' work directory) is no error.
    std::error_code not_a_block;
    if (!fs::is_regular_file(meta, not_a_block)) continue;
    std::ifstream in(meta);
    std::stringstream text;
    text << in.rdbuf();
    const std::string m = text.str();
    auto field = [&](const char* name) -> std::optional<int64_t> {
      const size_t at = m.find(name);
      if (at == std::string::npos) return std::nullopt;
      const size_t colon = m.find(':', at);
      if (colon == std::string::npos) return std::nullopt;
      return std::strtoll(m.c_str() + colon + 1, nullptr, 10);
    };
    const std::optional<int64_t> lo = field("\"minTime\""), hi = field("\"maxTime\"");
    if (!lo || !hi) return core::Status::Error(meta.string() + ": no minTime or maxTime");
    out.push_back(BlockSpan{e.path(), *lo, *hi});
  }
  if (ec) return core::Status::Error(dir.string() + ": " + ec.message());
  return out;
}

core::Result<int> BackfillRecordingRules(const RuleBackfillOptions& options) {
  std::vector<scoring::RuleFileText> recording;
  int rules = 0;
  for (const scoring::RuleFileText& file : options.rules) {
    core::Result<int> n = CountRecordingRules(file);
    if (!n.ok()) return n.status();
    if (n.value() > 0) {
      recording.push_back(file);
      rules += n.value();
    }
  }
  if (rules == 0) return 0;
  core::Result<RulePrograms> programs =
      FindRulePrograms(options.promtool, options.prometheus, "recording rules are backfilled");
  if (!programs.ok()) return programs.status();
  const std::string& promtool = programs.value().promtool;
  const std::string& prometheus = programs.value().prometheus;
  const fs::path work = fs::absolute(options.work_dir);  // absolute: promtool runs in it
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work / "blocks", ec);
  if (ec) return core::Status::Error(work.string() + ": " + ec.message());
  // promtool runs in work and is given the files' names only: Prometheus evaluates a group at an
  // offset within its interval that hashes the file's path, so the samples do not depend on where
  // PROMDIR is (the same data gives the same blocks anywhere).
  std::vector<std::string> rule_paths;
  for (size_t i = 0; i < recording.size(); ++i) {
    const std::string name = "rules-" + std::to_string(i) + ".yml";
    if (core::Status s = WriteFile((work / name).string(), recording[i].text); !s.ok()) return s;
    rule_paths.push_back(name);
  }
  const std::string config = (work / "prometheus.yml").string();
  if (core::Status s = WriteFile(config, "# acmetrace backfill: serves the blocks to promtool; scrapes nothing\n"
                                         "global:\n  evaluation_interval: 1h\n");
      !s.ok()) {
    return s;
  }
  core::Result<std::vector<BlockSpan>> blocks = ListBlocks(options.blocks_dir);
  if (!blocks.ok()) return blocks.status();
  const int64_t lookback = RuleLookbackMs(recording);
  // Long enough that no block a slice reads is old enough to delete.
  const std::string retention = RetentionFor(options.from_ms - lookback, options.to_ms);
  const std::vector<WindowSlice> slices =
      SliceWindow(options.from_ms, options.to_ms, options.slice_ms, options.eval_interval_ms);
  const fs::path storage = work / "serving";
  for (size_t slice = 0; slice < slices.size(); ++slice) {
    const auto [from, to] = slices[slice];
    if (options.stop != nullptr && options.stop->requested()) return core::Status::Error("stopped");
    if (options.on_slice) options.on_slice(static_cast<int>(slice + 1), static_cast<int>(slices.size()), from);
    core::Result<int> linked = LinkBlocksOfSpan(blocks.value(), from - lookback, to, storage);
    if (!linked.ok()) return linked.status();
    if (linked.value() == 0) continue;  // no data the rules could read
    int port = 0;
    core::Result<Subprocess> server = StartReadyPrometheus(prometheus, config, storage, retention,
                                                           (work / "prometheus.log").string(), options.stop, port);
    if (!server.ok()) return server.status();
    std::vector<std::string> argv = {promtool,
                                     "tsdb",
                                     "create-blocks-from",
                                     "rules",
                                     "--quiet",
                                     "--start=" + UnixSeconds(from),
                                     // The last scrape's second included; a middle slice ends before the next one.
                                     "--end=" + UnixSeconds(to == options.to_ms ? to + 999 : to),
                                     "--url=http://127.0.0.1:" + std::to_string(port),
                                     "--output-dir=" + (work / "blocks").string(),
                                     "--eval-interval=" + std::to_string(std::max<int64_t>(1, options.eval_interval_ms / 1000)) + "s"};
    argv.insert(argv.end(), rule_paths.begin(), rule_paths.end());
    core::Result<Subprocess> tool =
        Subprocess::Start(argv, (work / "promtool.log").string(), work.string(), options.stop);
    if (!tool.ok()) return tool.status();
    core::Status ran = tool.value().Wait();
    server.value().Terminate();
    if (options.stop != nullptr && options.stop->requested()) return core::Status::Error("stopped");
    if (!ran.ok()) return core::Status::Error("recording rules: " + ran.message());
  }
  if (core::Status s = MoveBlocks(work / "blocks", options.blocks_dir); !s.ok()) return s;
  fs::remove_all(work, ec);
  return rules;
}

std::string RetentionFor(int64_t first_ms, int64_t last_ms) {
  const int64_t day = 86'400'000;
  const int64_t span = std::max<int64_t>(0, last_ms - first_ms);
  return std::to_string(span / day + 2) + "d";
}

}  // namespace acmetrace::history
