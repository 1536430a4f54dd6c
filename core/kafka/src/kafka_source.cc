// KafkaSource: a librdkafka consumer-group member storing offsets only after processing.
#include "acmetrace/kafka/kafka_source.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "rdkafka_handles.h"

namespace acmetrace::kafka {
struct KafkaSource::Impl {
  explicit Impl(std::FILE* log) : state(log) {}

  // True when every partition assigned to us has reported its end since its last record.
  bool AllAssignedAtEnd() {
    rd_kafka_topic_partition_list_t* raw = nullptr;
    if (rd_kafka_assignment(consumer.get(), &raw) != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
    internal::PartitionListHandle assigned(raw);
    if (assigned->cnt == 0) return false;
    for (int i = 0; i < assigned->cnt; ++i) {
      if (eof.count({assigned->elems[i].topic, assigned->elems[i].partition}) == 0) return false;
    }
    return true;
  }

  internal::ClientState state;  // before consumer: it is the consumer's callback opaque
  internal::KafkaHandle consumer;
  internal::MessageHandle current;  // owns the bytes record points into
  FramedRecord record;
  core::RecordParser parser;  // reads a record's trace time from its value
  std::set<std::pair<std::string, int32_t>> eof;
  bool stop_at_end = false;
  bool at_end = false;
  bool closed = false;
  int64_t records = 0;
};

KafkaSource::KafkaSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaSource::~KafkaSource() { (void)Close(); }

core::Result<std::unique_ptr<KafkaSource>> KafkaSource::Open(const KafkaSettings& settings,
                                                             KafkaSourceOptions options, std::FILE* log) {
  if (options.topics.empty()) return core::Status::Error("kafka consumer: no topics to read");
  core::Result<Properties> properties = ConsumerProperties(settings);
  if (!properties.ok()) return properties.status();
  Properties props = std::move(properties).value();
  if (options.stop_at_end) props.emplace_back("enable.partition.eof", "true");
  auto impl = std::make_unique<Impl>(log);
  impl->stop_at_end = options.stop_at_end;
  core::Result<internal::KafkaHandle> consumer =
      internal::CreateClient(props, internal::ClientRole::kConsumer, impl->state);
  if (!consumer.ok()) return consumer.status();
  impl->consumer = std::move(consumer).value();
  rd_kafka_t* rk = impl->consumer.get();
  if (core::Status s = internal::WaitForBroker(rk, impl->state, settings.brokers, settings.connect_timeout_ms);
      !s.ok()) {
    impl->closed = true;  // never joined: nothing to leave
    return s;
  }
  rd_kafka_poll_set_consumer(rk);
  internal::PartitionListHandle topics(rd_kafka_topic_partition_list_new(static_cast<int>(options.topics.size())));
  for (const std::string& t : options.topics) rd_kafka_topic_partition_list_add(topics.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka consumer: subscribe failed: ") + rd_kafka_err2str(err));
  }
  return std::unique_ptr<KafkaSource>(new KafkaSource(std::move(impl)));
}

core::Result<const FramedRecord*> KafkaSource::Next(int timeout_ms) {
  Impl& s = *impl_;
  s.current.reset();
  if (s.at_end || s.closed) return static_cast<const FramedRecord*>(nullptr);
  const int64_t deadline = internal::SteadyNowMs() + timeout_ms;
  for (;;) {
    const int64_t left = std::max<int64_t>(deadline - internal::SteadyNowMs(), 0);
    internal::MessageHandle m(rd_kafka_consumer_poll(s.consumer.get(), static_cast<int>(left)));
    if (s.state.fatal()) return core::Status::Error("kafka consumer fatal error: " + s.state.fatal_message());
    if (!m) {
      if (left == 0) return static_cast<const FramedRecord*>(nullptr);
      continue;
    }
    const char* topic = m->rkt != nullptr ? rd_kafka_topic_name(m->rkt) : "";
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      s.eof.emplace(topic, m->partition);
      if (s.AllAssignedAtEnd()) {
        s.at_end = true;
        return static_cast<const FramedRecord*>(nullptr);
      }
      continue;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Not fatal (e.g. a subscribed topic that does not exist yet): say so and keep consuming.
      s.state.OnError(s.consumer.get(), m->err, (std::string(topic) + ": " + rd_kafka_message_errstr(m.get())).c_str());
      continue;
    }
    if (s.stop_at_end) s.eof.erase({topic, m->partition});
    FramedRecord& r = s.record;
    r.topic = topic;
    r.key = std::string_view(static_cast<const char*>(m->key), m->key != nullptr ? m->key_len : 0);
    r.value = std::string_view(static_cast<const char*>(m->payload), m->payload != nullptr ? m->len : 0);
    r.partition = m->partition;
    r.offset = m->offset;
    r.timestamp_ms = rd_kafka_message_timestamp(m.get(), nullptr);
    r.trace_ts_ms = internal::TraceTimeOfMessage(m.get(), r.topic, s.parser);
    r.marker = internal::MarkerOf(m.get());
    r.trace_ts_text = internal::TraceTsTextOf(m.get());
    s.current = std::move(m);
    ++s.records;
    return static_cast<const FramedRecord*>(&r);
  }
}

core::Status KafkaSource::MarkProcessed(const FramedRecord& record) {
  internal::PartitionListHandle list(rd_kafka_topic_partition_list_new(1));
  const std::string topic(record.topic);
  rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), record.partition)->offset = record.offset + 1;
  rd_kafka_resp_err_t err = rd_kafka_offsets_store(impl_->consumer.get(), list.get());
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) err = list->elems[0].err;
  // __STATE: the partition was revoked meanwhile; its new owner reads the record again (at-least-once).
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__STATE) return core::Status::Ok();
  return core::Status::Error("kafka consumer: storing offset of " + topic + "[" + std::to_string(record.partition) +
                             "]@" + std::to_string(record.offset) + ": " + rd_kafka_err2str(err));
}

bool KafkaSource::at_end() const { return impl_->at_end; }

int64_t KafkaSource::records() const { return impl_->records; }

core::Status KafkaSource::Commit() {
  const rd_kafka_resp_err_t err = rd_kafka_commit(impl_->consumer.get(), nullptr, 0);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET) return core::Status::Ok();
  return core::Status::Error(std::string("kafka consumer: commit failed: ") + rd_kafka_err2str(err));
}

core::Status KafkaSource::Close() {
  Impl& s = *impl_;
  if (s.closed || !s.consumer) return core::Status::Ok();
  s.closed = true;
  s.current.reset();
  // With enable.auto.commit, closing commits the stored (processed) offsets before leaving the group.
  const rd_kafka_resp_err_t err = rd_kafka_consumer_close(s.consumer.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka consumer: close failed: ") + rd_kafka_err2str(err));
  }
  return core::Status::Ok();
}

}  // namespace acmetrace::kafka
