// The one small interface every stage writes through, and the stdio and null implementations.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "acmetrace/core/record.h"
#include "acmetrace/core/status.h"

namespace acmetrace::core {

/// Where records go. Implementations say whether they are thread-safe.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  /// Takes the record (the sink copies what it keeps: the reference is only valid for the call).
  virtual Status Write(const Record& record) = 0;
  /// Pushes out everything buffered.
  virtual Status Flush() = 0;
};

/// JSON lines with the stdio framing ({"topic":..,"key":..,"value":..}) to a FILE*, buffered in
/// 1 MiB blocks. Not thread-safe.
class StdioSink : public RecordSink {
 public:
  explicit StdioSink(std::FILE* out) : out_(out) { buffer_.reserve(kBufferBytes + 64 * 1024); }
  ~StdioSink() override { (void)Flush(); }
  Status Write(const Record& record) override;
  Status Flush() override;

 private:
  static constexpr size_t kBufferBytes = 1 << 20;
  std::FILE* out_;
  std::string buffer_;
};

/// Discards records and counts them per topic (for benchmarks). Not thread-safe.
class NullSink : public RecordSink {
 public:
  Status Write(const Record& record) override {
    ++per_kind_[record.index()];  // an array, not a map by topic: this sink is the reader benchmarks' baseline
    return Status::Ok();
  }
  Status Flush() override { return Status::Ok(); }
  /// Records written, per topic that had any.
  std::map<std::string_view, int64_t> counts() const {
    std::map<std::string_view, int64_t> counts;
    for (size_t kind = 0; kind < per_kind_.size(); ++kind) {
      if (per_kind_[kind] > 0) counts[kTopicOfKind[kind]] = per_kind_[kind];
    }
    return counts;
  }

 private:
  std::array<int64_t, std::variant_size_v<Record>> per_kind_{};
};

}  // namespace acmetrace::core
