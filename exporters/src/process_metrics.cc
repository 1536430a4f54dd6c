// process_* from /proc (parsed by small pure functions, so tests feed them text) and build info.
#include "acmetrace/exporters/process_metrics.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "acmetrace/core/number.h"

namespace acmetrace::exporters {
namespace {

std::string ReadWhole(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void AppendFamily(std::string& out, const char* name, const char* help, const char* type, double value) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  out += name;
  out += ' ';
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, r.ptr);
  out += '\n';
}

// Build-time strings may hold anything; label values escape \ " and newline.
void AppendLabel(std::string& out, const char* name, std::string_view value, bool first) {
  if (!first) out += ',';
  out += name;
  out += "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
}

}  // namespace

core::Status ParseProcStat(std::string_view stat_text, int64_t ticks_per_second, int64_t page_size,
                           double boot_time_seconds, ProcessStats& out) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields count from the
  // last ')'. Field 3 (state) is the first after it; utime is field 14, stime 15, starttime 22,
  // vsize 23, rss 24 (proc(5)).
  const size_t close = stat_text.rfind(')');
  if (close == std::string_view::npos) return core::Status::Error("/proc stat: no ')' after the command name");
  std::vector<std::string_view> fields;
  std::string_view rest = stat_text.substr(close + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  auto field = [&](int number, const char* name, int64_t& v) -> core::Status {
    const size_t index = static_cast<size_t>(number - 3);
    std::optional<int64_t> parsed = index < fields.size() ? core::ParseInteger(fields[index]) : std::nullopt;
    if (!parsed) return core::Status::Error(std::string("/proc stat: field ") + name + " missing or not a number");
    v = *parsed;
    return core::Status::Ok();
  };
  int64_t utime = 0, stime = 0, starttime = 0, vsize = 0, rss = 0;
  for (core::Status s : {field(14, "utime", utime), field(15, "stime", stime), field(22, "starttime", starttime),
                         field(23, "vsize", vsize), field(24, "rss", rss)}) {
    if (!s.ok()) return s;
  }
  if (ticks_per_second <= 0) return core::Status::Error("/proc stat: clock ticks per second must be > 0");
  const double ticks = static_cast<double>(ticks_per_second);
  out.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  out.start_time_seconds = boot_time_seconds + static_cast<double>(starttime) / ticks;
  out.virtual_bytes = static_cast<double>(vsize);
  out.resident_bytes = static_cast<double>(rss) * static_cast<double>(page_size);
  return core::Status::Ok();
}

core::Result<int64_t> ParseMaxOpenFiles(std::string_view limits_text) {
  // "Max open files            1024                 1048576              files"
  constexpr std::string_view kLine = "Max open files";
  const size_t at = limits_text.find(kLine);
  if (at == std::string_view::npos) return core::Status::Error("/proc limits: no 'Max open files' line");
  std::string_view rest = limits_text.substr(at + kLine.size());
  const size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return core::Status::Error("/proc limits: 'Max open files' has no value");
  rest.remove_prefix(start);
  const std::string_view soft = rest.substr(0, rest.find_first_of(" \n"));
  if (soft == "unlimited") return int64_t{0};
  std::optional<int64_t> v = core::ParseInteger(soft);
  if (!v) return core::Status::Error("/proc limits: 'Max open files' is not a number: '" + std::string(soft) + "'");
  return *v;
}

core::Result<double> ParseBootTime(std::string_view proc_stat_text) {
  size_t at = 0;
  while (at < proc_stat_text.size()) {
    const size_t end = std::min(proc_stat_text.find('\n', at), proc_stat_text.size());
    const std::string_view line = proc_stat_text.substr(at, end - at);
    if (line.starts_with("btime ")) {
      std::optional<int64_t> v = core::ParseInteger(line.substr(6));
      if (!v) return core::Status::Error("/proc/stat: btime is not a number");
      return static_cast<double>(*v);
    }
    at = end + 1;
  }
  return core::Status::Error("/proc/stat: no btime line");
}

core::Result<ProcessStats> ReadProcessStats(const std::string& proc_dir, const std::string& proc_stat) {
  bool ok = false;
  const std::string stat_text = ReadWhole(proc_dir + "/stat", ok);
  if (!ok) return core::Status::Error(proc_dir + "/stat: cannot read");
  const std::string boot_text = ReadWhole(proc_stat, ok);
  if (!ok) return core::Status::Error(proc_stat + ": cannot read");
  core::Result<double> boot = ParseBootTime(boot_text);
  if (!boot.ok()) return boot.status();
  ProcessStats stats;
  core::Status s = ParseProcStat(stat_text, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE), boot.value(), stats);
  if (!s.ok()) return s;
  const std::string limits_text = ReadWhole(proc_dir + "/limits", ok);
  if (!ok) return core::Status::Error(proc_dir + "/limits: cannot read");
  core::Result<int64_t> max_fds = ParseMaxOpenFiles(limits_text);
  if (!max_fds.ok()) return max_fds.status();
  stats.max_fds = max_fds.value();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(proc_dir + "/fd", ec), end; !ec && it != end; it.increment(ec)) {
    ++stats.open_fds;
  }
  if (ec) return core::Status::Error(proc_dir + "/fd: " + ec.message());
  return stats;
}

void AppendProcessMetrics(std::string& out, const ProcessStats& stats) {
  AppendFamily(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
               stats.cpu_seconds);
  AppendFamily(out, "process_max_fds", "Maximum number of open file descriptors.", "gauge",
               static_cast<double>(stats.max_fds));
  AppendFamily(out, "process_open_fds", "Number of open file descriptors.", "gauge",
               static_cast<double>(stats.open_fds));
  AppendFamily(out, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge",
               stats.resident_bytes);
  AppendFamily(out, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge",
               stats.start_time_seconds);
  AppendFamily(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", stats.virtual_bytes);
}

namespace {
// Set once by main() before any thread starts (SetBuildRevision); read-only afterwards.
BuildInfo build_info{ACMETRACE_VERSION, "unknown", ACMETRACE_COMPILER};
}  // namespace

void SetBuildRevision(std::string_view revision) {
  if (!revision.empty()) build_info.revision = revision;
}

const BuildInfo& GetBuildInfo() { return build_info; }

void AppendBuildInfo(std::string& out) {
  const BuildInfo& info = GetBuildInfo();
  out += "# HELP acmetrace_build_info the build: version, git revision and compiler (value always 1)\n";
  out += "# TYPE acmetrace_build_info gauge\nacmetrace_build_info{";
  AppendLabel(out, "version", info.version, true);
  AppendLabel(out, "revision", info.revision, false);
  AppendLabel(out, "compiler", info.compiler, false);
  out += "} 1\n";
}

}  // namespace acmetrace::exporters
