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

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

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

// A Sample's body; proto3 leaves out fields at their default (+0.0, 0), as libprotobuf does.
size_t SampleSize(const Sample& s) {
  return (std::bit_cast<uint64_t>(s.value) != 0 ? 9 : 0) +
         (s.ts_ms != 0 ? 1 + VarintSize(static_cast<uint64_t>(s.ts_ms)) : 0);
}

char* PutSample(char* p, const Sample& s, size_t size) {
  *p++ = kTagSample;
  *p++ = static_cast<char>(size);  // at most 20
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

struct Part {
  std::string_view labels;
  const std::vector<Sample>* samples;
  size_t body = 0;  // the TimeSeries's length
};

std::string Encode(std::vector<Part>& parts) {
  size_t total = 0;
  for (Part& part : parts) {
    part.body = part.labels.size();
    for (const Sample& s : *part.samples) part.body += 2 + SampleSize(s);
    total += 1 + VarintSize(part.body) + part.body;
  }
  std::string raw(total, '\0');
  char* p = raw.data();
  for (const Part& part : parts) {
    *p++ = kTagTimeSeries;
    p = PutVarint(p, part.body);
    p = std::copy(part.labels.begin(), part.labels.end(), p);
    for (const Sample& s : *part.samples) p = PutSample(p, s, SampleSize(s));
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
  std::vector<Part> parts;
  parts.reserve(series.size());
  for (const TimeSeries& s : series) {
    labels.push_back(EncodeLabels(s.labels));
    parts.push_back({labels.back(), &s.samples});
  }
  return Encode(parts);
}

std::string EncodeWriteRequest(const std::vector<SeriesSamples>& series) {
  std::vector<std::string> owned;  // the labels not encoded by the caller
  owned.reserve(series.size());
  std::vector<Part> parts;
  parts.reserve(series.size());
  for (const SeriesSamples& s : series) {
    std::string_view labels;
    if (s.encoded_labels != nullptr) {
      labels = *s.encoded_labels;
    } else {
      owned.push_back(EncodeLabels(*s.labels));
      labels = owned.back();
    }
    parts.push_back({labels, &s.samples});
  }
  return Encode(parts);
}

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
