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
  // A failed save leaves no half-written .tmp behind (a full disk, a read-only directory).
  auto fail = [&tmp](int fd, const std::string& what) {
    const std::string err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return core::Status::Error(what + err);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(-1, tmp + ": cannot write state snapshot: ");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(fd, tmp + ": cannot write state snapshot: ");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail(fd, tmp + ": cannot write state snapshot: ");
  if (::close(fd) != 0) return fail(-1, tmp + ": cannot write state snapshot: ");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(-1, path + ": cannot replace state snapshot: ");
  return core::Status::Ok();
}

core::Result<std::optional<std::string>> FileStateStore::Load(const std::string& cluster) const {
  const std::string path = PathOf(cluster);
  // O_NONBLOCK: a FIFO in its place must not block the open; it is refused below as not a file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return core::Status::Error(path + ": cannot read state snapshot: " + std::strerror(errno));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return core::Status::Error(path + ": cannot read state snapshot: " + std::strerror(errno));
  // A symlink to /dev/zero was read whole (until memory ran out), a FIFO blocked for ever.
  if (!S_ISREG(st.st_mode)) return core::Status::Error(path + ": not a regular file: refused as a state snapshot");
  if (st.st_size > static_cast<off_t>(kMaxSnapshotBytes)) {
    return core::Status::Error(path + ": " + std::to_string(st.st_size) + " bytes, more than a state snapshot may have (" +
                               std::to_string(kMaxSnapshotBytes) + ")");
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return core::Status::Error(path + ": cannot read state snapshot: " + std::strerror(errno));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > kMaxSnapshotBytes) {  // grown while read
      return core::Status::Error(path + ": more than " + std::to_string(kMaxSnapshotBytes) +
                                 " bytes: refused as a state snapshot");
    }
  }
  return std::optional<std::string>(std::move(bytes));
}

}  // namespace acmetrace::processors
