#include "acmetrace/remote_write/write_request.h"

#include <google/protobuf/arena.h>
#include <snappy.h>

#include "prompb.pb.h"

namespace acmetrace::remote_write {

namespace {

const std::vector<Label>& LabelsOf(const TimeSeries& s) { return s.labels; }
const std::vector<Label>& LabelsOf(const SeriesSamples& s) { return *s.labels; }

template <typename Series>
std::string Encode(const std::vector<Series>& series) {
  // One arena for the request: a Sample is a message of its own, and thousands of small heap
  // allocations per request were most of the encoder's time.
  google::protobuf::Arena arena;
  prometheus::WriteRequest& request = *google::protobuf::Arena::CreateMessage<prometheus::WriteRequest>(&arena);
  request.mutable_timeseries()->Reserve(static_cast<int>(series.size()));
  for (const Series& s : series) {
    prometheus::TimeSeries* out = request.add_timeseries();
    const std::vector<Label>& labels = LabelsOf(s);
    out->mutable_labels()->Reserve(static_cast<int>(labels.size()));
    for (const Label& label : labels) {
      prometheus::Label* l = out->add_labels();
      l->set_name(label.name);
      l->set_value(label.value);
    }
    out->mutable_samples()->Reserve(static_cast<int>(s.samples.size()));
    for (const Sample& sample : s.samples) {
      prometheus::Sample* p = out->add_samples();
      p->set_value(sample.value);
      p->set_timestamp(sample.ts_ms);
    }
  }
  std::string raw;
  request.SerializeToString(&raw);
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

}  // namespace

std::string EncodeWriteRequest(const std::vector<TimeSeries>& series) { return Encode(series); }
std::string EncodeWriteRequest(const std::vector<SeriesSamples>& series) { return Encode(series); }

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
