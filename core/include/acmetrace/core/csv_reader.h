// Streaming CSV reader: RFC 4180 quoting, UTF-8 BOM, LF/CRLF/CR line endings, no final newline.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// Reads one file row by row through a fixed buffer that only grows to the longest row, so memory
/// does not depend on the file size. Fields are views into the buffer, valid until the next
/// NextRow(). Hostile input is bounded: a row longer than max_row_bytes, one with more than
/// kMaxFields fields, and a quoted field left open for more than kMaxQuotedLines lines (an
/// unbalanced quote) are skipped, each reported once through the error sink, and reading goes on
/// at the next line. Not thread-safe.
class CsvReader {
 public:
  static constexpr size_t kDefaultChunkBytes = 1 << 20;
  /// Every field NextRow() returns is followed by at least this many readable bytes (of any value),
  /// so a parser may load a short field in one 8-byte word and mask it.
  static constexpr size_t kFieldPadding = 8;
  /// A row's longest text (its line breaks excluded), by default: the release's widest rows are
  /// about 20 KB; LineReader bounds a feed line the same.
  static constexpr size_t kDefaultMaxRowBytes = size_t{64} << 20;
  /// Most fields in one row (and columns in a header): the widest release file has about 2,500
  /// columns, and each field costs its reader a view and a column slot.
  static constexpr size_t kMaxFields = 65536;
  /// Most line breaks inside one quoted field. The release has none; a quote still open after this
  /// many is unbalanced, and its row is skipped instead of swallowing the rest of the file.
  static constexpr int64_t kMaxQuotedLines = 16;

  /// Receives each skipped row: its line, a field name for the message ("row") and the reason.
  using ErrorSink = std::function<void(int64_t line, std::string_view field, std::string_view reason)>;

  CsvReader() = default;
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  /// Opens path; a missing or unreadable file, or a directory, is an error naming it.
  Status Open(const std::string& path, size_t chunk_bytes = kDefaultChunkBytes);
  /// Where skipped rows are reported (readers pass them on to InputErrors); without a sink they
  /// are only counted (rows_skipped()).
  void set_error_sink(ErrorSink sink) { error_sink_ = std::move(sink); }
  /// Lowers or raises the row length limit (tests use a small one).
  void set_max_row_bytes(size_t bytes) { max_row_bytes_ = bytes; }
  int64_t rows_skipped() const { return rows_skipped_; }

  /// Reads the next non-empty row into fields. Returns false at the end of the file or on a read
  /// error (then status() says which). Blank lines are skipped but counted.
  bool NextRow(std::vector<std::string_view>& fields);
  /// The same, calling on_field(std::string_view) for each field in order instead of filling a
  /// vector: for a caller that handles each field once (the wide utilization files' cells).
  template <typename OnField>
  bool ForEachField(OnField&& on_field);

  /// The physical line (1-based) on which the last row returned by NextRow() began.
  int64_t line() const { return row_line_; }
  /// Bytes consumed so far (for progress and throughput).
  int64_t bytes_read() const { return bytes_read_; }
  const std::string& path() const { return path_; }
  const Status& status() const { return status_; }

 private:
  // The next row: one without quotes as its text without the line break, for the caller to split;
  // one with quotes split and unescaped into quoted_fields_.
  // kSkipped: a row was skipped and reported; look again.
  enum class Row { kEnd, kPlain, kQuoted, kSkipped };
  Row FindRow(std::string_view& text);
  bool Fill();  // Moves the unread tail to the front and reads more; false at EOF.
  Row ParseQuotedRow(std::vector<std::string_view>& fields);
  // Reports reason for the row starting at begin_ and drops its first physical line (all of it
  // when its end is not read yet: skipping_ then drops up to the next line break).
  void SkipFirstLine(std::string_view reason);
  void Skipped(int64_t line, std::string_view reason);

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
  std::vector<std::string_view> quoted_fields_;
  Status status_ = Status::Ok();
  size_t max_row_bytes_ = kDefaultMaxRowBytes;
  bool skipping_ = false;  // dropping the rest of an over-long line, reported already
  int64_t rows_skipped_ = 0;
  ErrorSink error_sink_;
};

namespace internal {
// Calls on_field for each comma-separated field of [begin, end). Cells of the wide utilization
// files are ~6 bytes, so a memchr call per cell costs more than the search: this finds the commas
// of 16 bytes at once.
template <typename OnField>
inline void SplitUnquoted(const char* begin, const char* end, OnField& on_field) {
  const char* field = begin;
  const char* p = begin;
#ifdef __SSE2__
  const __m128i comma = _mm_set1_epi8(',');
  for (; end - p >= 16; p += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, comma)));
    for (; mask != 0; mask &= mask - 1) {
      const char* at = p + __builtin_ctz(mask);
      on_field(std::string_view(field, static_cast<size_t>(at - field)));
      field = at + 1;
    }
  }
#endif
  for (; p != end; ++p) {
    if (*p == ',') {
      on_field(std::string_view(field, static_cast<size_t>(p - field)));
      field = p + 1;
    }
  }
  on_field(std::string_view(field, static_cast<size_t>(end - field)));
}
}  // namespace internal

template <typename OnField>
bool CsvReader::ForEachField(OnField&& on_field) {
  std::string_view text;
  for (;;) {
    switch (FindRow(text)) {
      case Row::kEnd:
        return false;
      case Row::kSkipped:
        continue;
      case Row::kQuoted:
        for (std::string_view field : quoted_fields_) on_field(field);
        return true;
      case Row::kPlain:
        internal::SplitUnquoted(text.data(), text.data() + text.size(), on_field);
        return true;
    }
  }
}

}  // namespace acmetrace::core
