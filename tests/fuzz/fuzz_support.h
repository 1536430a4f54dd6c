// What the file-reading fuzz targets share: a scratch directory per process (in /dev/shm when there
// is one, so the many small writes stay in memory) and writing an input into it under a given name.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace acmetrace::fuzz {

/// A directory of this process's own, removed at exit.
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path d = base / ("acmetrace_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    static const std::string removed = d.string();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removed, ec);
    });
    return d.string();
  }();
  return dir;
}

/// Writes [data, data + size) to ScratchDir()/name (replacing it); returns the path.
inline std::string WriteInput(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

/// Stops the run with a message when a property the target checks does not hold (libFuzzer then
/// saves the input as a crash).
#define ACMETRACE_FUZZ_CHECK(cond)                                                      \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

}  // namespace acmetrace::fuzz
