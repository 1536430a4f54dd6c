// Streaming CSV reader: RFC 4180 quoting, UTF-8 BOM, LF/CRLF/CR line endings, no final newline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// Reads one file row by row through a fixed buffer that only grows to the longest row, so memory
/// does not depend on the file size. Fields are views into the buffer, valid until the next
/// NextRow(). Not thread-safe.
class CsvReader {
 public:
  static constexpr size_t kDefaultChunkBytes = 1 << 20;
  /// Every field NextRow() returns is followed by at least this many readable bytes (of any value),
  /// so a parser may load a short field in one 8-byte word and mask it.
  static constexpr size_t kFieldPadding = 8;

  CsvReader() = default;
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  /// Opens path; a missing or unreadable file is an error naming it.
  Status Open(const std::string& path, size_t chunk_bytes = kDefaultChunkBytes);

  /// Reads the next non-empty row into fields. Returns false at the end of the file or on a read
  /// error (then status() says which). Blank lines are skipped but counted.
  bool NextRow(std::vector<std::string_view>& fields);

  /// The physical line (1-based) on which the last row returned by NextRow() began.
  int64_t line() const { return row_line_; }
  /// Bytes consumed so far (for progress and throughput).
  int64_t bytes_read() const { return bytes_read_; }
  const std::string& path() const { return path_; }
  const Status& status() const { return status_; }

 private:
  bool Fill();  // Moves the unread tail to the front and reads more; false at EOF.
  bool ParseQuotedRow(std::vector<std::string_view>& fields);

  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first unread byte
  size_t end_ = 0;    // one past the last valid byte
  bool eof_ = false;
  bool first_fill_ = true;
  int64_t line_ = 1;  // physical line of buffer_[begin_]
  int64_t row_line_ = 0;
  int64_t bytes_read_ = 0;
  Status status_ = Status::Ok();
};

}  // namespace acmetrace::core
