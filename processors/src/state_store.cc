// FileStateStore: atomic snapshot files.
#include "acmetrace/processors/state_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace acmetrace::processors {

std::string FileStateStore::PathOf(const std::string& cluster) const {
  return dir_ + "/" + group_ + "." + cluster + ".state";
}

core::Status FileStateStore::Open() {
  std::string path;
  for (size_t i = 0; i <= dir_.size(); ++i) {
    if (i == dir_.size() || (dir_[i] == '/' && i > 0)) {
      path = dir_.substr(0, i);
      if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        return core::Status::Error(path + ": cannot create state directory: " + std::strerror(errno));
      }
    }
  }
  return core::Status::Ok();
}

core::Status FileStateStore::Save(const std::string& cluster, const std::string& bytes) {
  const std::string path = PathOf(cluster);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return core::Status::Error(tmp + ": cannot write state snapshot: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      return core::Status::Error(tmp + ": cannot write state snapshot: " + err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    return core::Status::Error(tmp + ": cannot write state snapshot: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return core::Status::Error(path + ": cannot replace state snapshot: " + std::strerror(errno));
  }
  return core::Status::Ok();
}

core::Result<std::optional<std::string>> FileStateStore::Load(const std::string& cluster) const {
  const std::string path = PathOf(cluster);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (errno == ENOENT) return std::optional<std::string>();
    return core::Status::Error(path + ": cannot read state snapshot: " + std::strerror(errno));
  }
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return core::Status::Error(path + ": cannot read state snapshot");
  return std::optional<std::string>(std::move(bytes));
}

}  // namespace acmetrace::processors
