// stdio transport: one framed JSON line per record.
#include "acmetrace/core/transport.h"

#include <cerrno>
#include <cstring>

#include "acmetrace/core/line_reader.h"
#include "acmetrace/core/record_json.h"

namespace acmetrace::core {

Status StdioSink::Write(const Record& record) {
  AppendFramedLine(buffer_, record);
  if (buffer_.size() >= kBufferBytes) return Flush();
  return Status::Ok();
}

Status StdioSink::Flush() {
  if (!buffer_.empty()) {
    const size_t n = std::fwrite(buffer_.data(), 1, buffer_.size(), out_);
    const bool short_write = n != buffer_.size();
    buffer_.clear();
    if (short_write) return Status::Error(std::string("write to output failed: ") + std::strerror(errno));
  }
  if (std::fflush(out_) != 0) return Status::Error(std::string("write to output failed: ") + std::strerror(errno));
  return Status::Ok();
}

struct StdioInput::Lines {
  explicit Lines(std::FILE* in) : reader(in) {}
  LineReader reader;
};

StdioInput::StdioInput(std::FILE* in, std::string name)
    : partitions_{InputPartition{name, "", name}}, lines_(std::make_unique<Lines>(in)) {}

StdioInput::~StdioInput() = default;

Result<InputItem> StdioInput::Next(int timeout_ms) {
  (void)timeout_ms;  // a read blocks until a line or the end comes
  InputItem item;
  item.partition = 0;
  if (ended_) return item;  // kNothing: the end was said once
  LineReader& lines = lines_->reader;
  std::string_view line;
  for (;;) {
    const LineReader::Result r = lines.Next(line);
    item.line_no = lines.line_no();
    if (r == LineReader::Result::kEnd) {
      if (lines.failed()) return Status::Error("reading " + partitions_[0].name + ": " + std::strerror(errno));
      ended_ = true;
      item.kind = InputItem::Kind::kEnded;
      return item;
    }
    if (r == LineReader::Result::kTooLong) {
      error_ = lines.TooLongReason();
      item.kind = InputItem::Kind::kUnreadable;
      item.error = error_;
      return item;
    }
    if (line.empty()) continue;
    item.kind = InputItem::Kind::kFramed;
    item.line = line;
    return item;
  }
}

}  // namespace acmetrace::core
