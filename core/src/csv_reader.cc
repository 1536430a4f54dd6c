// Streaming CSV reader. The fast path finds the row's end with memchr and splits an unquoted row
// 16 bytes at a time (SSE2, internal::SplitUnquoted in the header); rows holding a quote take a
// slower path that unescapes in place (the unescaped text is never longer than the raw).
#include "acmetrace/core/csv_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace acmetrace::core {

CsvReader::~CsvReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status CsvReader::Open(const std::string& path, size_t chunk_bytes) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::Error(path + ": cannot open: " + std::strerror(errno));
  // open() takes a directory, and read() then fails: say what it is up front.
  if (struct stat st; ::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    return Status::Error(path + ": is a directory, not a file");
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  buffer_.resize(chunk_bytes < 64 ? 64 : chunk_bytes);
  return Status::Ok();
}

bool CsvReader::Fill() {
  if (eof_ || fd_ < 0) return false;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  // The last kFieldPadding bytes are never filled: every field has that many readable bytes after it.
  if (end_ + kFieldPadding >= buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a row longer than the buffer
  for (;;) {
    ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - kFieldPadding - end_);
    if (n < 0) {
      if (errno == EINTR) continue;
      status_ = Status::Error(path_ + ": read error: " + std::strerror(errno));
      eof_ = true;
      return false;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    bytes_read_ += n;
    end_ += static_cast<size_t>(n);
    break;
  }
  if (first_fill_) {
    first_fill_ = false;
    if (end_ - begin_ >= 3 && std::memcmp(buffer_.data() + begin_, "\xEF\xBB\xBF", 3) == 0) begin_ += 3;
  }
  return true;
}

bool CsvReader::NextRow(std::vector<std::string_view>& fields) {
  for (;;) {
    fields.clear();
    size_t count = 0;
    const bool more = ForEachField([&fields, &count](std::string_view field) {
      if (++count <= kMaxFields) fields.push_back(field);
    });
    if (!more || count <= kMaxFields) return more;
    fields.clear();
    Skipped(row_line_, "has more than " + std::to_string(kMaxFields) + " fields; row skipped");
  }
}

void CsvReader::Skipped(int64_t line, std::string_view reason) {
  ++rows_skipped_;
  if (error_sink_) error_sink_(line, "row", reason);
}

void CsvReader::SkipFirstLine(std::string_view reason) {
  row_line_ = line_;
  Skipped(line_, reason);
  const char* start = buffer_.data() + begin_;
  const char* stop = buffer_.data() + end_;
  const char* nl = static_cast<const char*>(std::memchr(start, '\n', stop - start));
  const char* cr = static_cast<const char*>(std::memchr(start, '\r', (nl != nullptr ? nl : stop) - start));
  const char* brk = cr != nullptr ? cr : nl;
  if (brk == nullptr || (brk == cr && brk + 1 == stop && !eof_)) {
    // The line goes on past what is read (or its CR's LF may): drop it as it comes.
    begin_ = brk == nullptr ? end_ : begin_ + static_cast<size_t>(brk - start);
    skipping_ = true;
    return;
  }
  begin_ += static_cast<size_t>(brk - start) + (brk == cr && brk + 1 < stop && brk[1] == '\n' ? 2 : 1);
  ++line_;
}

CsvReader::Row CsvReader::FindRow(std::string_view& text) {
  if (!status_.ok()) return Row::kEnd;
  for (;;) {
    if (begin_ == end_ && !Fill()) return Row::kEnd;  // end of file or read error
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', stop - start));
    const char* line_end = nl != nullptr ? nl : stop;
    if (skipping_) {  // the rest of an over-long line, reported already: up to its line break
      const char* cr_end = static_cast<const char*>(std::memchr(start, '\r', line_end - start));
      const char* brk = cr_end != nullptr ? cr_end : nl;
      if (brk == nullptr) {
        begin_ = end_;
        continue;
      }
      begin_ += static_cast<size_t>(brk - start);
      if (brk == cr_end && brk + 1 == stop && !eof_) {  // keep the CR: its LF may come next
        if (!Fill() && !status_.ok()) return Row::kEnd;
        continue;
      }
      begin_ += (brk == cr_end && brk + 1 < stop && brk[1] == '\n') ? 2 : 1;
      skipping_ = false;
      ++line_;
      continue;
    }
    // A lone CR also ends a line (mixed endings), so a CR-only file is read row by row too rather
    // than growing the buffer to the whole file looking for an LF.
    const char* cr = static_cast<const char*>(std::memchr(start, '\r', line_end - start));
    if (!eof_ && ((nl == nullptr && cr == nullptr) || (cr != nullptr && cr + 1 == stop))) {
      // No line break yet, or a CR whose LF may be in the next read: rescan with more data, or
      // at EOF take the unterminated last line. A line already over the limit is not read whole.
      // The text so far, without a CR that may be the line's end (found by the fuzzer: a row of
      // exactly the limit ending in CRLF across a refill was skipped).
      if (static_cast<size_t>((cr != nullptr ? cr : stop) - start) > max_row_bytes_) {
        SkipFirstLine("longer than " + std::to_string(max_row_bytes_) + " bytes; row skipped");
        return Row::kSkipped;
      }
      if (!Fill() && !status_.ok()) return Row::kEnd;
      continue;
    }
    const char* content_end = cr != nullptr ? cr : line_end;
    // A quote before the line ends needs the slow path.
    if (std::memchr(start, '"', content_end - start) != nullptr) {
      quoted_fields_.clear();
      return ParseQuotedRow(quoted_fields_);
    }
    if (static_cast<size_t>(content_end - start) > max_row_bytes_) {  // read whole in one Fill
      SkipFirstLine("longer than " + std::to_string(max_row_bytes_) + " bytes; row skipped");
      return Row::kSkipped;
    }
    size_t consumed;
    if (cr != nullptr) {
      consumed = (cr - start) + ((cr + 1 < stop && cr[1] == '\n') ? 2 : 1);
    } else {
      consumed = (line_end - start) + (nl != nullptr ? 1 : 0);
    }
    row_line_ = line_;
    ++line_;
    begin_ += consumed;
    if (content_end == start) continue;  // blank line
    text = std::string_view(start, static_cast<size_t>(content_end - start));
    return Row::kPlain;
  }
}

CsvReader::Row CsvReader::ParseQuotedRow(std::vector<std::string_view>& fields) {
  // First find where the row ends (a line break outside quotes), reading more as needed and
  // without touching the bytes; then split and unescape in place.
  size_t scan = begin_;
  bool in_quotes = false;
  bool at_field_start = true;
  int64_t lines = 0;
  size_t row_end = 0;    // first byte of the line break ending the row
  size_t next_row = 0;   // first byte after it
  // Reads more input keeping scan on the same byte (Fill moves the unread tail to the front even
  // when it then finds the end of the file); false on a read error.
  auto refill = [&]() {
    const size_t offset = scan - begin_;
    Fill();
    scan = begin_ + offset;
    return status_.ok();
  };
  for (;;) {
    if (scan - begin_ > max_row_bytes_) {
      SkipFirstLine("longer than " + std::to_string(max_row_bytes_) + " bytes; row skipped");
      return Row::kSkipped;
    }
    if (scan >= end_) {
      if (eof_) {
        if (in_quotes) break;  // unbalanced: reported below
        row_end = next_row = end_;  // last row, no final newline
        break;
      }
      if (!refill()) return Row::kEnd;
      continue;
    }
    const char c = buffer_[scan];
    // A quote in quotes ("" or closing?) and a CR (CRLF or lone CR?) depend on the next byte.
    if (((c == '"' && in_quotes) || c == '\r') && scan + 1 >= end_ && !eof_) {
      if (!refill()) return Row::kEnd;
      continue;
    }
    if (in_quotes) {
      if (c == '"') {
        if (scan + 1 < end_ && buffer_[scan + 1] == '"') {
          scan += 2;
          continue;
        }
        in_quotes = false;
      } else if (c == '\n' || (c == '\r' && !(scan + 1 < end_ && buffer_[scan + 1] == '\n'))) {
        if (++lines > kMaxQuotedLines) break;  // unbalanced: reported below
      }
      ++scan;
      continue;
    }
    if (c == '"' && at_field_start) {
      in_quotes = true;
      at_field_start = false;
      ++scan;
      continue;
    }
    if (c == '\n') {
      row_end = scan;
      next_row = scan + 1;
      break;
    }
    if (c == '\r') {
      row_end = scan;
      next_row = (scan + 1 < end_ && buffer_[scan + 1] == '\n') ? scan + 2 : scan + 1;
      break;
    }
    at_field_start = (c == ',');
    ++scan;
  }

  if (in_quotes) {
    // An unbalanced quote: only the row's first line is dropped, the lines after it are read.
    SkipFirstLine("unbalanced quote: a quoted field not closed within " + std::to_string(kMaxQuotedLines) +
                  " lines or by the end of the file; row skipped");
    return Row::kSkipped;
  }
  char* base = buffer_.data();
  size_t pos = begin_;
  for (;;) {
    const size_t field_start = pos;
    if (pos < row_end && base[pos] == '"') {
      size_t write = pos;
      ++pos;
      while (pos < row_end) {
        if (base[pos] == '"') {
          if (pos + 1 < row_end && base[pos + 1] == '"') {
            base[write++] = '"';
            pos += 2;
            continue;
          }
          ++pos;
          break;
        }
        base[write++] = base[pos++];
      }
      // Text between a closing quote and the separator is dropped (lenient, as pandas is).
      while (pos < row_end && base[pos] != ',') ++pos;
      // Past kMaxFields the row is skipped by NextRow; one more field tells it so.
      if (fields.size() <= kMaxFields) fields.emplace_back(base + field_start, write - field_start);
    } else {
      while (pos < row_end && base[pos] != ',') ++pos;
      if (fields.size() <= kMaxFields) fields.emplace_back(base + field_start, pos - field_start);
    }
    if (pos >= row_end) break;
    ++pos;  // the comma
  }
  row_line_ = line_;
  line_ += lines + 1;
  begin_ = next_row;
  return Row::kQuoted;
}

}  // namespace acmetrace::core
