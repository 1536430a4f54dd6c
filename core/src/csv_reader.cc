// Streaming CSV reader. The fast path splits an unquoted row with memchr; rows holding a quote
// take a slower path that unescapes in place (the unescaped text is never longer than the raw).
#include "acmetrace/core/csv_reader.h"

#include <fcntl.h>
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
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a row longer than the buffer
  for (;;) {
    ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
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
  fields.clear();
  if (!status_.ok()) return false;
  for (;;) {
    if (begin_ == end_ && !Fill()) return false;  // end of file or read error
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', stop - start));
    if (nl == nullptr && !eof_) {
      if (!Fill() && !status_.ok()) return false;
      continue;  // rescan with more data, or at EOF take the unterminated last line
    }
    const char* line_end = nl != nullptr ? nl : stop;
    // A lone CR also ends a line (mixed endings); a quote before the line ends needs the slow path.
    const char* cr = static_cast<const char*>(std::memchr(start, '\r', line_end - start));
    const char* content_end = cr != nullptr ? cr : line_end;
    if (std::memchr(start, '"', content_end - start) != nullptr) {
      if (ParseQuotedRow(fields)) return true;
      return false;
    }
    size_t consumed;
    if (cr != nullptr) {
      if (cr + 1 == stop && !eof_) {  // the LF of a CRLF may be in the next read
        if (!Fill() && !status_.ok()) return false;
        continue;
      }
      consumed = (cr - start) + ((cr + 1 < stop && cr[1] == '\n') ? 2 : 1);
    } else {
      consumed = (line_end - start) + (nl != nullptr ? 1 : 0);
    }
    row_line_ = line_;
    ++line_;
    begin_ += consumed;
    if (content_end == start) continue;  // blank line
    const char* p = start;
    for (;;) {
      const char* comma = static_cast<const char*>(std::memchr(p, ',', content_end - p));
      if (comma == nullptr) {
        fields.emplace_back(p, content_end - p);
        break;
      }
      fields.emplace_back(p, comma - p);
      p = comma + 1;
    }
    return true;
  }
}

bool CsvReader::ParseQuotedRow(std::vector<std::string_view>& fields) {
  // First find where the row ends (a line break outside quotes), reading more as needed and
  // without touching the bytes; then split and unescape in place.
  size_t scan = begin_;
  bool in_quotes = false;
  bool at_field_start = true;
  int64_t lines = 0;
  size_t row_end = 0;    // first byte of the line break ending the row
  size_t next_row = 0;   // first byte after it
  for (;;) {
    if (scan >= end_) {
      const size_t offset = scan - begin_;
      if (!Fill()) {
        if (!status_.ok()) return false;
        row_end = next_row = end_;  // last row, no final newline (an open quote ends here)
        break;
      }
      scan = begin_ + offset;
      continue;
    }
    const char c = buffer_[scan];
    if (in_quotes) {
      if (c == '"') {
        if (scan + 1 >= end_ && !eof_) {  // "" or closing quote? need the next byte
          const size_t offset = scan - begin_;
          if (Fill()) scan = begin_ + offset;
          continue;
        }
        if (scan + 1 < end_ && buffer_[scan + 1] == '"') {
          scan += 2;
          continue;
        }
        in_quotes = false;
      } else if (c == '\n' || (c == '\r' && !(scan + 1 < end_ && buffer_[scan + 1] == '\n'))) {
        ++lines;
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
      if (scan + 1 >= end_ && !eof_) {
        const size_t offset = scan - begin_;
        if (Fill()) scan = begin_ + offset;
        continue;
      }
      row_end = scan;
      next_row = (scan + 1 < end_ && buffer_[scan + 1] == '\n') ? scan + 2 : scan + 1;
      break;
    }
    at_field_start = (c == ',');
    ++scan;
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
      fields.emplace_back(base + field_start, write - field_start);
    } else {
      while (pos < row_end && base[pos] != ',') ++pos;
      fields.emplace_back(base + field_start, pos - field_start);
    }
    if (pos >= row_end) break;
    ++pos;  // the comma
  }
  row_line_ = line_;
  line_ += lines + 1;
  begin_ = next_row;
  return true;
}

}  // namespace acmetrace::core
