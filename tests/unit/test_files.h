// What the unit tests share for files: a fresh directory per test, writing a file, and capturing
// what code prints to a FILE*.
#pragma once

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace acmetrace {

namespace internal {
/// Removes the directories TestDir made once this process's tests have run, unless one of them
/// failed (its files are then left to look at). One per test binary, registered before main.
class TestDirCleanup : public testing::Environment {
 public:
  static TestDirCleanup& Instance() {
    static TestDirCleanup* const cleanup =
        static_cast<TestDirCleanup*>(testing::AddGlobalTestEnvironment(new TestDirCleanup));
    return *cleanup;
  }
  void Add(const std::filesystem::path& dir) { dirs_.push_back(dir); }
  void TearDown() override {
    if (testing::UnitTest::GetInstance()->Failed()) return;
    for (const std::filesystem::path& dir : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }

 private:
  std::vector<std::filesystem::path> dirs_;
};
// Registered at start-up: gtest tears down only the environments it knew before the tests ran.
inline TestDirCleanup& test_dir_cleanup = TestDirCleanup::Instance();
}  // namespace internal

/// A fresh empty directory named after the running test (and the process: ctest runs tests in
/// parallel); removed after the tests if they all passed.
inline std::string TestDir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';  // parameterized tests
  }
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / ("acmetrace_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  internal::test_dir_cleanup.Add(dir);
  return dir.string();
}

/// A fresh empty directory, prefix_name_pid under the test temp dir, removed with its contents when
/// the object goes (for data a whole suite shares; TestDir is one test's).
class ScratchDir {
 public:
  ScratchDir(const std::string& prefix, const std::string& name)
      : path_(std::filesystem::path(testing::TempDir()) / (prefix + "_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string str() const { return path_.string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// What a shell command wrote on stdout, and its exit code (-1: killed by a signal).
struct ShellOutput {
  int exit_code;
  std::string out;
};

/// Runs command through /bin/sh (popen) and reads its stdout to the end; redirect stderr in command.
inline ShellOutput RunShellCapture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return ShellOutput{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// Writes content (bytes as given) to dir/name, creating subdirectories; returns the path.
inline std::string WriteFile(const std::string& dir, const std::string& name, const std::string& content) {
  const std::filesystem::path path = std::filesystem::path(dir) / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
  return path.string();
}

/// A FILE* whose output the test reads back (open_memstream).
class Captured {
 public:
  Captured() : file_(open_memstream(&data_, &size_)) {}
  ~Captured() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(data_);
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }
  /// text() with each log line's prefix ("2023-07-01T12:00:00.000Z WARN  input: ", core/log.h) removed:
  /// what the code under test said, for tests of the message rather than of the log format.
  std::string messages() {
    const std::string all = text();
    std::string out;
    size_t start = 0;
    while (start < all.size()) {
      size_t end = all.find('\n', start);
      end = end == std::string::npos ? all.size() : end + 1;
      std::string_view line(all.data() + start, end - start);
      const bool stamped = line.size() > 31 && line[4] == '-' && line[10] == 'T' && line[23] == 'Z' && line[24] == ' ';
      const size_t stage_end = stamped ? line.find(": ", 31) : std::string_view::npos;
      out += stage_end == std::string_view::npos ? line : line.substr(stage_end + 2);
      start = end;
    }
    return out;
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

}  // namespace acmetrace
