// The log line format and the process-wide logger behind it.
#include "acmetrace/core/log.h"

#include <atomic>
#include <cstdarg>
#include <ctime>
#include <mutex>

#include "acmetrace/core/clock.h"
#include "acmetrace/core/record_json.h"

namespace acmetrace::core {
namespace {

struct LoggerState {
  std::mutex mutex;  // one fwrite per line under it: threads never interleave their lines
  std::FILE* out = stderr;
  std::function<int64_t()> now;
};

LoggerState& State() {
  static LoggerState state;
  return state;
}

// Read on every call without the mutex: a level check must cost nothing on hot paths.
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};

void AppendUtcTime(std::string& out, int64_t unix_ms) {
  int64_t seconds = unix_ms / 1000;
  int64_t millis = unix_ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  out += buf;
}

// Text lines stay one line: control characters and backslashes are written as C escapes.
void AppendEscapedText(std::string& out, std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", u);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
}

}  // namespace

std::optional<LogLevel> ParseLogLevel(std::string_view text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn" || text == "warning") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  return std::nullopt;
}

std::optional<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return std::nullopt;
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

std::string FormatLogLine(LogFormat format, int64_t unix_ms, LogLevel level, std::string_view stage,
                          std::string_view message) {
  std::string line;
  line.reserve(message.size() + stage.size() + 64);
  if (format == LogFormat::kJson) {
    line += "{\"ts\":\"";
    AppendUtcTime(line, unix_ms);
    line += "\",\"level\":\"";
    line += LogLevelName(level);
    line += "\",\"stage\":";
    AppendJsonString(line, stage);
    line += ",\"msg\":";
    AppendJsonString(line, message);
    line += "}\n";
    return line;
  }
  AppendUtcTime(line, unix_ms);
  line.push_back(' ');
  switch (level) {  // fixed width, upper case: levels line up and stand out when read by eye
    case LogLevel::kDebug: line += "DEBUG"; break;
    case LogLevel::kInfo: line += "INFO "; break;
    case LogLevel::kWarn: line += "WARN "; break;
    case LogLevel::kError: line += "ERROR"; break;
  }
  line.push_back(' ');
  AppendEscapedText(line, stage);
  line += ": ";
  AppendEscapedText(line, message);
  line.push_back('\n');
  return line;
}

void ConfigureLogging(LogFormat format, LogLevel level) {
  g_format.store(static_cast<int>(format), std::memory_order_relaxed);
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogFormat CurrentLogFormat() { return static_cast<LogFormat>(g_format.load(std::memory_order_relaxed)); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void SetLogOutput(std::FILE* out) {
  LoggerState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.out = out;
}

void SetLogClock(std::function<int64_t()> now_unix_ms) {
  LoggerState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.now = std::move(now_unix_ms);
}

void LogTo(std::FILE* out, LogLevel level, std::string_view stage, std::string_view message) {
  if (out == nullptr || !LogEnabled(level)) return;
  LoggerState& s = State();
  std::lock_guard<std::mutex> lock(s.mutex);
  const int64_t now = s.now ? s.now() : SystemNowMs();
  const std::string line = FormatLogLine(CurrentLogFormat(), now, level, stage, message);
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

void Log(LogLevel level, std::string_view stage, std::string_view message) {
  if (!LogEnabled(level)) return;
  std::FILE* out;
  {
    LoggerState& s = State();
    std::lock_guard<std::mutex> lock(s.mutex);
    out = s.out;
  }
  LogTo(out, level, stage, message);
}

void Logf(LogLevel level, std::string_view stage, const char* format, ...) {
  if (!LogEnabled(level)) return;
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  char small[512];
  const int n = std::vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  std::string message;
  if (n >= 0 && static_cast<size_t>(n) < sizeof(small)) {
    message.assign(small, static_cast<size_t>(n));
  } else if (n >= 0) {
    message.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(message.data(), message.size(), format, copy);
    message.resize(static_cast<size_t>(n));
  }
  va_end(copy);
  Log(level, stage, message);
}

}  // namespace acmetrace::core
