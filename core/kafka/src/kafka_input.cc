// KafkaInput: KafkaPartitionReader's events as RecordInput items, with stream markers and idleness.
#include "acmetrace/kafka/kafka_input.h"

#include <chrono>
#include <utility>

#include "acmetrace/core/time.h"
#include "acmetrace/kafka/kafka_partition_reader.h"
#include "rdkafka_handles.h"

namespace acmetrace::kafka {
namespace {

// A record's key starts with its cluster: "{cluster}/...".
std::string_view ClusterOfKey(std::string_view key) { return key.substr(0, key.find('/')); }

}  // namespace

struct KafkaInput::Impl {
  KafkaInputOptions options;
  std::unique_ptr<KafkaPartitionReader> reader;
  std::vector<PartitionInfo> infos;  // as described at Open
  std::vector<core::InputPartition> partitions;
  // Per partition: read to its end with nothing since (steady ms it got there; -1 = not), and
  // whether its idleness was reported since.
  std::vector<int64_t> caught_up_since;
  std::vector<bool> idle_reported;
  int64_t next_idle_check_ms = 0;
  std::string error;  // the last kUnreadable item's message (its view's storage)

  int IndexOf(std::string_view topic, int32_t partition) const {
    for (size_t i = 0; i < infos.size(); ++i) {
      if (infos[i].partition == partition && infos[i].topic == topic) return static_cast<int>(i);
    }
    return -1;
  }
  void Active(int p) {
    caught_up_since[static_cast<size_t>(p)] = -1;
    idle_reported[static_cast<size_t>(p)] = false;
  }
  // The first partition whose idleness is due, or -1.
  int DueIdle(int64_t now) {
    if (options.idle_timeout_ms <= 0 || now < next_idle_check_ms) return -1;
    next_idle_check_ms = now + 50;
    for (size_t p = 0; p < caught_up_since.size(); ++p) {
      if (caught_up_since[p] >= 0 && !idle_reported[p] && now - caught_up_since[p] >= options.idle_timeout_ms) {
        idle_reported[p] = true;
        return static_cast<int>(p);
      }
    }
    return -1;
  }
};

KafkaInput::KafkaInput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KafkaInput::~KafkaInput() = default;

core::Result<std::unique_ptr<KafkaInput>> KafkaInput::Open(const KafkaSettings& settings, KafkaInputOptions options,
                                                         std::FILE* log) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  core::Result<std::unique_ptr<KafkaPartitionReader>> reader = KafkaPartitionReader::Open(settings, log);
  if (!reader.ok()) return reader.status();
  impl->reader = std::move(reader).value();
  core::Result<std::vector<PartitionInfo>> infos =
      impl->reader->Describe(impl->options.topics, static_cast<int>(std::max<int64_t>(settings.connect_timeout_ms, 10'000)));
  if (!infos.ok()) return infos.status();
  impl->infos = std::move(infos).value();
  for (const PartitionInfo& p : impl->infos) {
    const std::string n = std::to_string(p.partition);
    impl->partitions.push_back(core::InputPartition{p.topic + "/" + n, p.topic, p.topic + "[" + n + "]", p.partition});
  }
  impl->caught_up_since.assign(impl->infos.size(), -1);
  impl->idle_reported.assign(impl->infos.size(), false);
  auto input = std::unique_ptr<KafkaInput>(new KafkaInput(std::move(impl)));
  std::vector<int64_t> starts;
  for (const PartitionInfo& p : input->impl_->infos) {
    starts.push_back(input->impl_->options.start == KafkaInputOptions::Start::kEnd ? p.high : -1);
  }
  if (core::Status s = input->Seek(starts); !s.ok()) return s;
  return input;
}

const std::vector<core::InputPartition>& KafkaInput::partitions() const { return impl_->partitions; }

core::Status KafkaInput::Seek(const std::vector<int64_t>& next_offsets) {
  Impl& s = *impl_;
  std::vector<PartitionStart> starts;
  for (size_t i = 0; i < s.infos.size() && i < next_offsets.size(); ++i) {
    starts.push_back(PartitionStart{s.infos[i].topic, s.infos[i].partition, next_offsets[i]});
    s.Active(static_cast<int>(i));
  }
  return s.reader->Assign(starts);
}

core::Status KafkaInput::Pause(int partition) {
  const PartitionInfo& p = impl_->infos.at(static_cast<size_t>(partition));
  return impl_->reader->Pause(p.topic, p.partition);
}

core::Result<std::vector<int64_t>> KafkaInput::Ends() {
  Impl& s = *impl_;
  core::Result<std::vector<PartitionInfo>> now = s.reader->Describe(s.options.topics);
  if (!now.ok()) return now.status();
  std::vector<int64_t> ends(s.infos.size(), 0);
  for (const PartitionInfo& p : now.value()) {
    if (const int i = s.IndexOf(p.topic, p.partition); i >= 0) ends[static_cast<size_t>(i)] = p.high;
  }
  return ends;
}

core::Result<core::InputItem> KafkaInput::Next(int timeout_ms) {
  Impl& s = *impl_;
  core::InputItem item;
  if (const int idle = s.DueIdle(internal::SteadyNowMs()); idle >= 0) {
    item.kind = core::InputItem::Kind::kIdle;
    item.partition = idle;
    return item;
  }
  core::Result<ReaderEvent> event = s.reader->Next(timeout_ms);
  if (!event.ok()) return event.status();
  const ReaderEvent& e = event.value();
  if (e.kind == ReaderEvent::Kind::kPartitionEnd) {
    item.partition = s.IndexOf(e.topic, e.partition);
    if (item.partition < 0) return item;
    item.kind = core::InputItem::Kind::kCaughtUp;
    item.offset = e.offset;
    int64_t& since = s.caught_up_since[static_cast<size_t>(item.partition)];
    if (since < 0) since = internal::SteadyNowMs();
    return item;
  }
  if (e.kind != ReaderEvent::Kind::kRecord) return item;
  const FramedRecord& r = *e.record;
  item.partition = s.IndexOf(r.topic, r.partition);
  if (item.partition < 0) return core::InputItem{};
  s.Active(item.partition);
  item.offset = r.offset;
  StreamHeaders h = ReadStreamHeaders(r.marker, r.trace_ts_text);
  // A record without the header (kafka.trace_ts_header off): the time its value carries.
  if (h.kind == StreamHeaders::Kind::kRecord && h.trace_ts_ms == kNoTraceTs && core::IsTraceTimeMs(r.trace_ts_ms)) {
    h.trace_ts_ms = r.trace_ts_ms;
  }
  item.ts_ms = h.trace_ts_ms == kNoTraceTs ? core::InputItem::kNoTs : h.trace_ts_ms;
  switch (h.kind) {
    case StreamHeaders::Kind::kRecord:
      item.kind = core::InputItem::Kind::kFramed;
      item.topic = r.topic;
      item.key = r.key;
      item.cluster = ClusterOfKey(r.key);
      item.value = r.value;
      break;
    case StreamHeaders::Kind::kProgress:
      item.kind = core::InputItem::Kind::kProgress;
      item.paused = h.paused;
      break;
    case StreamHeaders::Kind::kEnd:
      item.kind = core::InputItem::Kind::kEnded;
      item.clusters = h.clusters;
      break;
    case StreamHeaders::Kind::kOtherMarker:  // a marker of a later version, skipped (kNothing)
      break;
    case StreamHeaders::Kind::kInvalid:  // an input error, reported where it is (topic[partition]:offset)
      item.kind = core::InputItem::Kind::kUnreadable;
      item.key = r.key;
      item.cluster = ClusterOfKey(r.key);
      item.ts_ms = core::InputItem::kNoTs;
      s.error = std::move(h.error);
      item.error = s.error;
      break;
  }
  return item;
}

}  // namespace acmetrace::kafka
