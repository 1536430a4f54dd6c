// Fast CSV output for the generator: numbers formatted with std::to_chars straight into a large buffer
// that is written in big chunks, because the telemetry files run to gigabytes.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::producers::synth {

/// Writes v as a decimal integer; returns the end.
inline char* WriteInt(char* p, int64_t v) { return std::to_chars(p, p + 24, v).ptr; }

/// Writes v rounded to three decimals without trailing zeros ("0.5", "61.297", "7"), the way pandas
/// and Prometheus exporters print such values. Non-finite values are written as nothing (empty cell).
inline char* WriteDecimal3(char* p, double v) {
  if (!std::isfinite(v)) return p;
  // Round half away from zero without a libm call: this runs hundreds of millions of times.
  const double scaled = v * 1000.0;
  int64_t n = static_cast<int64_t>(scaled + (scaled >= 0 ? 0.5 : -0.5));
  if (n < 0) {
    *p++ = '-';
    n = -n;
  }
  p = WriteInt(p, n / 1000);
  int frac = static_cast<int>(n % 1000);
  if (frac == 0) return p;
  *p++ = '.';
  char digits[3] = {static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10)};
  int len = 3;
  while (digits[len - 1] == '0') --len;
  for (int i = 0; i < len; ++i) *p++ = digits[i];
  return p;
}

/// Writes v with exactly one decimal ("936.0", "12.5"), as the release writes float columns.
inline char* WriteDecimal1(char* p, double v) {
  int64_t n = std::llround(v * 10.0);
  if (n < 0) {
    *p++ = '-';
    n = -n;
  }
  p = WriteInt(p, n / 10);
  *p++ = '.';
  *p++ = static_cast<char>('0' + n % 10);
  return p;
}

/// One output file behind a large buffer. Not thread-safe; movable, not copyable.
class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& other) noexcept { *this = std::move(other); }
  OutputFile& operator=(OutputFile&& other) noexcept;
  ~OutputFile();

  /// Creates (truncates) path; buffer_bytes is the write chunk size.
  core::Status Open(const std::string& path, size_t buffer_bytes = size_t{1} << 20);

  /// A pointer with at least n writable bytes; write, then Commit the end pointer.
  char* Reserve(size_t n) {
    if (buffer_.size() - used_ < n) Flush(n);
    return buffer_.data() + used_;
  }
  void Commit(char* end) { used_ = static_cast<size_t>(end - buffer_.data()); }
  void Append(std::string_view text) {
    char* p = Reserve(text.size());
    text.copy(p, text.size());
    Commit(p + text.size());
  }

  /// Flushes and closes; reports the first write error, if any.
  core::Status Close();

  int64_t bytes() const { return bytes_ + static_cast<int64_t>(used_); }
  const std::string& path() const { return path_; }

 private:
  void Flush(size_t need_after = 0);

  std::FILE* file_ = nullptr;
  std::string path_;
  std::vector<char> buffer_;
  size_t used_ = 0;
  int64_t bytes_ = 0;
  bool failed_ = false;
};

}  // namespace acmetrace::producers::synth
