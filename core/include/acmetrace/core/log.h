// One format for every line acmetrace prints on stderr: a timestamp, a level, the stage that speaks
// and the message, as text or as one JSON object a line (--log-format, --log-level).
//
// How to log (every stage, every subcommand):
//
//   #include "acmetrace/core/log.h"
//   core::LogInfo("replay", "control endpoint on http://" + address + "/status");
//   core::Logf(core::LogLevel::kWarn, "export", "%lld series dropped", static_cast<long long>(n));
//   core::LogError("process", status.message());   // the failure a command exits 1 on
//
// The stage is the subcommand or component speaking ("replay", "process", "export", "run", "synth",
// "summary", "kafka", "input" for malformed input rows, "acmetrace" for the binary itself). A
// message is one sentence without a trailing newline; newlines and control characters in it are
// escaped, so one call is always one line. Lines below the level (--log-level) are dropped before
// they are formatted. The apps set the format and level once, from the global flags, before any
// subcommand runs (ConfigureLogging); library code only calls Log*.
//
// Text:  2023-07-01T00:00:00.123Z INFO replay: 1234 records in 2.00 s
// JSON:  {"ts":"2023-07-01T00:00:00.123Z","level":"info","stage":"replay","msg":"1234 records in 2.00 s"}
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace acmetrace::core {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kText, kJson };

/// "debug", "info", "warn" (or "warning"), "error"; nullopt otherwise.
std::optional<LogLevel> ParseLogLevel(std::string_view text);
/// "text" or "json"; nullopt otherwise.
std::optional<LogFormat> ParseLogFormat(std::string_view text);
/// "debug", "info", "warn", "error".
std::string_view LogLevelName(LogLevel level);

/// One log line (with its final newline) for the given wall time in unix ms. Pure: tests use it.
std::string FormatLogLine(LogFormat format, int64_t unix_ms, LogLevel level, std::string_view stage,
                          std::string_view message);

/// Process-wide settings (default: text, info, stderr, the system clock). Thread-safe; set them
/// before the stages start.
void ConfigureLogging(LogFormat format, LogLevel level);
LogFormat CurrentLogFormat();
/// True if a line of this level would be written (skip building an expensive message otherwise).
bool LogEnabled(LogLevel level);
/// Where Log* write (stderr unless a test redirects it).
void SetLogOutput(std::FILE* out);
/// The wall clock stamped on each line, in unix ms (tests pin it; nullptr = the system clock).
void SetLogClock(std::function<int64_t()> now_unix_ms);

/// Writes one line to the log output if level is enabled. Thread-safe: lines never interleave.
void Log(LogLevel level, std::string_view stage, std::string_view message);
/// The same to another stream (a component given its own FILE*, e.g. InputErrors); no-op if out is
/// nullptr.
void LogTo(std::FILE* out, LogLevel level, std::string_view stage, std::string_view message);
/// printf-style Log.
void Logf(LogLevel level, std::string_view stage, const char* format, ...) __attribute__((format(printf, 3, 4)));

inline void LogDebug(std::string_view stage, std::string_view message) { Log(LogLevel::kDebug, stage, message); }
inline void LogInfo(std::string_view stage, std::string_view message) { Log(LogLevel::kInfo, stage, message); }
inline void LogWarn(std::string_view stage, std::string_view message) { Log(LogLevel::kWarn, stage, message); }
inline void LogError(std::string_view stage, std::string_view message) { Log(LogLevel::kError, stage, message); }

}  // namespace acmetrace::core
