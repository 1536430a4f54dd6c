// The body of a remote write 1.0 request: a protobuf WriteRequest, snappy block-compressed.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::remote_write {

/// One label of a series. Value type.
struct Label {
  std::string name;
  std::string value;
  bool operator==(const Label&) const = default;
};

/// One sample. Value type.
struct Sample {
  int64_t ts_ms = 0;
  double value = 0;
};

/// A series and some of its samples, times rising. Value type.
struct TimeSeries {
  std::vector<Label> labels;  // __name__ first, then sorted by name (as Prometheus sends them)
  std::vector<Sample> samples;
};

/// The headers every remote write 1.0 request carries besides authentication.
inline constexpr const char* kRemoteWriteHeaders[] = {
    "Content-Encoding: snappy",
    "Content-Type: application/x-protobuf",
    "X-Prometheus-Remote-Write-Version: 0.1.0",
};

/// The bytes of v as a protobuf varint (1 to 10).
constexpr size_t VarintBytes(uint64_t v) { return v < 0x80 ? 1 : (static_cast<size_t>(std::bit_width(v)) + 6) / 7; }

/// The bytes a sample takes in a request: its TimeSeries.samples field, tag and length included
/// (proto3 leaves out a +0.0 value and a 0 time).
constexpr size_t EncodedSampleBytes(const Sample& s) {
  return 2 + (std::bit_cast<uint64_t>(s.value) != 0 ? 9 : 0) +
         (s.ts_ms != 0 ? 1 + VarintBytes(static_cast<uint64_t>(s.ts_ms)) : 0);
}
/// The most a sample takes (a value and a negative time: a 10-byte varint); today's times in ms
/// take 18. What the queue's byte bound counts per sample.
inline constexpr int64_t kMaxEncodedSampleBytes = 22;
static_assert(EncodedSampleBytes({-1, 1.0}) == kMaxEncodedSampleBytes);

/// A series's labels as the bytes of a protobuf TimeSeries's label fields (EncodeLabels): a queue
/// encodes them once per series, not once per request.
std::string EncodeLabels(const std::vector<Label>& labels);

/// A series as a request carries it: its labels as EncodeLabels made them and count samples, all
/// owned elsewhere and alive until encoded (what the queue sends without copying). Value type.
struct EncodedSeries {
  std::string_view labels;
  const Sample* samples = nullptr;
  size_t count = 0;
};

/// The request body of these series: WriteRequest serialized, then snappy block format.
std::string EncodeWriteRequest(const std::vector<TimeSeries>& series);
std::string EncodeWriteRequest(const std::vector<EncodedSeries>& series);

/// The largest uncompressed body DecodeWriteRequest accepts.
inline constexpr size_t kMaxUncompressedBytes = size_t{64} << 20;

/// The series of a request body (a receiver's view: tests and the fake receivers of the tests). An
/// error if the bytes are not snappy or not a WriteRequest.
core::Result<std::vector<TimeSeries>> DecodeWriteRequest(std::string_view body);

}  // namespace acmetrace::remote_write
