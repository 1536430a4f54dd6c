// Buffered file output of the generator.
#include "synth/output.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace acmetrace::producers::synth {

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    path_ = std::move(other.path_);
    buffer_ = std::move(other.buffer_);
    used_ = std::exchange(other.used_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    failed_ = std::exchange(other.failed_, false);
  }
  return *this;
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

core::Status OutputFile::Open(const std::string& path, size_t buffer_bytes) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) return core::Status::Error(path + ": cannot create: " + std::strerror(errno));
  // Our own buffer does the batching; stdio's would only add a copy.
  std::setvbuf(file_, nullptr, _IONBF, 0);
  buffer_.resize(buffer_bytes);
  used_ = 0;
  bytes_ = 0;
  failed_ = false;
  return core::Status::Ok();
}

void OutputFile::Flush(size_t need_after) {
  if (used_ > 0 && file_ != nullptr && !failed_) {
    if (std::fwrite(buffer_.data(), 1, used_, file_) != used_) failed_ = true;
  }
  bytes_ += static_cast<int64_t>(used_);
  used_ = 0;
  if (buffer_.size() < need_after) buffer_.resize(need_after);
}

core::Status OutputFile::Close() {
  if (file_ == nullptr) return core::Status::Ok();
  Flush();
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed_ || close_failed) return core::Status::Error(path_ + ": write failed: " + std::strerror(errno));
  return core::Status::Ok();
}

}  // namespace acmetrace::producers::synth
