// Lines of a stream read in large chunks: the stdin inputs of `process` and `export`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace acmetrace::core {

/// Splits a stream into lines, reading it 1 MiB at a time. Memory stays bounded on bad input: a
/// line longer than max_line_bytes is skipped whole and reported once (kTooLong). Not thread-safe.
class LineReader {
 public:
  enum class Result { kLine, kTooLong, kEnd };

  explicit LineReader(std::FILE* in, size_t max_line_bytes = size_t{64} << 20) : in_(in), max_(max_line_bytes) {}

  /// The next line, without its '\n' (the last line may lack one), valid until the next call; or
  /// kTooLong for a line over the limit (its number is line_no()); or kEnd at the end or on a read
  /// error (see failed()).
  Result Next(std::string_view& line);
  /// The number of the line Next returned last (1 = the first).
  int64_t line_no() const { return line_no_; }
  /// What to report for a kTooLong line: "line longer than 64 MiB: skipped" (the limit in bytes if
  /// it is not whole MiB).
  std::string TooLongReason() const;
  bool failed() const { return std::ferror(in_) != 0; }

 private:
  std::FILE* in_;
  size_t max_;
  std::string buffer_;
  size_t start_ = 0;       // where the next line starts in buffer_
  int64_t line_no_ = 0;
  bool skipping_ = false;  // inside a line over the limit, already reported
  bool eof_ = false;
};

}  // namespace acmetrace::core
