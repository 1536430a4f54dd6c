#include "acmetrace/remote_write/write_request.h"

#include <snappy.h>

#include <algorithm>
#include <bit>

#include "prompb.pb.h"

namespace acmetrace::remote_write {

namespace {

// The wire format by hand (the messages are four fields deep and never change): building a
// libprotobuf message per request copied every label and made a message of every sample, and a
// series's labels, the same bytes in every request, were encoded again each time. The decoder below
// is libprotobuf's, so the tests read what this writes as every receiver does.
constexpr char kTagTimeSeries = 0x0a;  // WriteRequest.timeseries = 1, length-delimited
constexpr char kTagLabel = 0x0a;       // TimeSeries.labels = 1
constexpr char kTagSample = 0x12;      // TimeSeries.samples = 2
constexpr char kTagName = 0x0a;        // Label.name = 1
constexpr char kTagValue = 0x12;       // Label.value = 2
constexpr char kTagDouble = 0x09;      // Sample.value = 1, 64-bit
constexpr char kTagTimestamp = 0x10;   // Sample.timestamp = 2, varint

char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

void AppendVarint(std::string& out, uint64_t v) {
  char buf[10];
  out.append(buf, PutVarint(buf, v));
}

void AppendField(std::string& out, char tag, std::string_view bytes) {
  out += tag;
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

// A Sample field; proto3 leaves out fields at their default (+0.0, 0), as libprotobuf does
// (EncodedSampleBytes counts them so).
char* PutSample(char* p, const Sample& s, size_t field_bytes) {
  *p++ = kTagSample;
  *p++ = static_cast<char>(field_bytes - 2);  // the body: at most 20
  if (const uint64_t bits = std::bit_cast<uint64_t>(s.value); bits != 0) {
    *p++ = kTagDouble;
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(bits >> (8 * i));  // little-endian
  }
  if (s.ts_ms != 0) {
    *p++ = kTagTimestamp;
    p = PutVarint(p, static_cast<uint64_t>(s.ts_ms));
  }
  return p;
}

std::string Encode(const std::vector<EncodedSeries>& series) {
  std::vector<size_t> bodies(series.size());  // each TimeSeries's length
  size_t total = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    size_t body = series[i].labels.size();
    for (size_t k = 0; k < series[i].count; ++k) body += EncodedSampleBytes(series[i].samples[k]);
    bodies[i] = body;
    total += 1 + VarintBytes(body) + body;
  }
  std::string raw(total, '\0');
  char* p = raw.data();
  for (size_t i = 0; i < series.size(); ++i) {
    const EncodedSeries& s = series[i];
    *p++ = kTagTimeSeries;
    p = PutVarint(p, bodies[i]);
    p = std::copy(s.labels.begin(), s.labels.end(), p);
    for (size_t k = 0; k < s.count; ++k) p = PutSample(p, s.samples[k], EncodedSampleBytes(s.samples[k]));
  }
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

}  // namespace

std::string EncodeLabels(const std::vector<Label>& labels) {
  std::string out;
  std::string label;
  for (const Label& l : labels) {
    label.clear();
    AppendField(label, kTagName, l.name);
    AppendField(label, kTagValue, l.value);
    AppendField(out, kTagLabel, label);
  }
  return out;
}

std::string EncodeWriteRequest(const std::vector<TimeSeries>& series) {
  std::vector<std::string> labels;
  labels.reserve(series.size());
  std::vector<EncodedSeries> parts;
  parts.reserve(series.size());
  for (const TimeSeries& s : series) {
    labels.push_back(EncodeLabels(s.labels));
    parts.push_back({labels.back(), s.samples.data(), s.samples.size()});
  }
  return Encode(parts);
}

std::string EncodeWriteRequest(const std::vector<EncodedSeries>& series) { return Encode(series); }

core::Result<std::vector<TimeSeries>> DecodeWriteRequest(std::string_view body) {
  size_t raw_size = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &raw_size)) {
    return core::Status::Error("remote write body: not snappy block format");
  }
  // A hostile length field must not make us allocate gigabytes (Prometheus's own limit is 32 MB).
  if (raw_size > kMaxUncompressedBytes) {
    return core::Status::Error("remote write body: uncompressed size " + std::to_string(raw_size) + " over the limit");
  }
  std::string raw;
  if (!snappy::Uncompress(body.data(), body.size(), &raw)) {
    return core::Status::Error("remote write body: not snappy block format");
  }
  prometheus::WriteRequest request;
  if (!request.ParseFromString(raw)) return core::Status::Error("remote write body: not a protobuf WriteRequest");
  std::vector<TimeSeries> series;
  series.reserve(static_cast<size_t>(request.timeseries_size()));
  for (const prometheus::TimeSeries& in : request.timeseries()) {
    TimeSeries s;
    for (const prometheus::Label& l : in.labels()) s.labels.push_back({l.name(), l.value()});
    for (const prometheus::Sample& p : in.samples()) s.samples.push_back({p.timestamp(), p.value()});
    series.push_back(std::move(s));
  }
  return series;
}

}  // namespace acmetrace::remote_write
