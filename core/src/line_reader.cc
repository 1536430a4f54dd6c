// LineReader: one buffer, refilled in chunks; lines are views into it.
#include "acmetrace/core/line_reader.h"

namespace acmetrace::core {

namespace {
constexpr size_t kChunkBytes = size_t{1} << 20;
}  // namespace

std::string LineReader::TooLongReason() const {
  const std::string limit = max_ % (size_t{1} << 20) == 0 ? std::to_string(max_ >> 20) + " MiB"
                                                           : std::to_string(max_) + " bytes";
  return "line longer than " + limit + ": skipped";
}

LineReader::Result LineReader::Next(std::string_view& line) {
  for (;;) {
    const size_t nl = buffer_.find('\n', start_);
    if (nl != std::string::npos) {
      line = std::string_view(buffer_).substr(start_, nl - start_);
      start_ = nl + 1;
      if (skipping_) {  // the end of the over-long line, reported already
        skipping_ = false;
        continue;
      }
      ++line_no_;
      return Result::kLine;
    }
    buffer_.erase(0, start_);
    start_ = 0;
    if (buffer_.size() > max_) {
      buffer_.clear();
      if (!skipping_) {
        skipping_ = true;
        ++line_no_;
        return Result::kTooLong;
      }
    }
    if (eof_) {
      if (buffer_.empty() || skipping_) return Result::kEnd;
      line = buffer_;  // the last line, without a final newline
      start_ = buffer_.size();
      ++line_no_;
      return Result::kLine;
    }
    const size_t old = buffer_.size();
    buffer_.resize(old + kChunkBytes);
    const size_t n = std::fread(buffer_.data() + old, 1, kChunkBytes, in_);
    buffer_.resize(old + n);
    if (n == 0) eof_ = true;
  }
}

}  // namespace acmetrace::core
