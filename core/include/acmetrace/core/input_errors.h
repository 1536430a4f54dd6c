// Where readers report malformed input: one line each on stderr ("FILE:LINE: FIELD: reason"),
// counted per cluster and kind; with strict mode the first one stops the run.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace acmetrace::core {

/// At most this many bytes of an offending value are echoed in a message: a hostile 8 MiB cell
/// must not become 8 MiB of stderr.
inline constexpr size_t kMaxEchoedValueBytes = 64;

/// value in single quotes for an error message, on one line: its first kMaxEchoedValueBytes bytes
/// then "..." and its size when longer, control characters as \n, \r, \t or \xHH.
std::string QuotedValue(std::string_view value);

/// Collects input errors of a run. Thread-safe.
class InputErrors {
 public:
  /// out may be nullptr to count without printing (tests); max_printed bounds the stderr lines
  /// (the count stays exact; the last line says how many were not printed).
  explicit InputErrors(std::FILE* out = stderr, bool strict = false, int64_t max_printed = 1000)
      : out_(out), strict_(strict), max_printed_(max_printed) {}

  /// Reports one malformed row or field. cluster and kind label the counter
  /// (acmetrace_input_errors_total{cluster,kind}); kind is e.g. "job_trace", "utilization".
  /// An empty field leaves its slot out ("FILE:LINE: reason"): a whole line has no field.
  void Report(std::string_view cluster, std::string_view kind, std::string_view file, int64_t line,
              std::string_view field, std::string_view reason);

  /// A problem with a whole file (missing, unreadable, bad header): counts like a row.
  void ReportFile(std::string_view cluster, std::string_view kind, std::string_view file,
                  std::string_view reason);

  int64_t total() const;
  std::map<std::pair<std::string, std::string>, int64_t> counts() const;
  /// True once an error was reported in strict mode: the run must stop and exit 1.
  bool must_stop() const;
  /// The first error reported, for a final message.
  std::string first() const;
  /// Prints "N more input errors not shown" if lines were suppressed.
  void Finish();

 private:
  void Count(std::string_view cluster, std::string_view kind, const std::string& line);

  std::FILE* out_;
  bool strict_;
  int64_t max_printed_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> counts_;
  int64_t total_ = 0;
  std::string first_;
  std::atomic<bool> must_stop_{false};  // read once per replayed record: no lock
};

}  // namespace acmetrace::core
