// stdio transport: one framed JSON line per record.
#include "acmetrace/core/transport.h"

#include <cerrno>
#include <cstring>

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

}  // namespace acmetrace::core
