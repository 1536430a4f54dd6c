// KafkaSink: librdkafka producer with delivery-report accounting and QUEUE_FULL backpressure.
#include "acmetrace/kafka/kafka_sink.h"

#include <algorithm>
#include <string>
#include <utility>

#include "acmetrace/core/log.h"
#include "rdkafka_handles.h"
#include "topic_admin.h"

namespace acmetrace::kafka {
namespace {

// The trace_ts_ms header name, nul-terminated for librdkafka.
constexpr const char* kTraceTsHeaderName = "trace_ts_ms";
static_assert(std::string_view(kTraceTsHeaderName) == kTraceTsHeader);

// Serve delivery reports every this many records: keeps the report queue short without a poll per record.
constexpr int64_t kPollEvery = 256;
constexpr int kQueueFullWaitMs = 100;

}  // namespace

struct KafkaSink::Impl {
  Impl(std::FILE* log_file, TimestampMode mode) : state(log_file), encoder(mode), log(log_file) {}

  rd_kafka_topic_t* TopicFor(std::string_view name) {
    for (auto& [topic, handle] : topic_handles) {
      if (topic == name) return handle.get();
    }
    const std::string owned(name);
    internal::TopicHandle handle(rd_kafka_topic_new(producer.get(), owned.c_str(), nullptr));
    if (!handle) return nullptr;
    topic_handles.emplace_back(owned, std::move(handle));
    return topic_handles.back().second.get();
  }

  // Why the sink must stop: a fatal producer error or a record the broker never acknowledged.
  core::Status Health() const {
    if (state.fatal()) return core::Status::Error("kafka producer fatal error: " + state.fatal_message());
    if (const int64_t failed = state.failed.load(std::memory_order_relaxed); failed > 0) {
      return core::Status::Error("kafka: " + std::to_string(failed) + " record(s) not delivered, first: " +
                                 state.first_delivery_error());
    }
    return core::Status::Ok();
  }

  // Members in destruction order, reversed: the callbacks' state outlives the client, topic handles die first.
  internal::ClientState state;
  internal::KafkaHandle producer;
  std::vector<std::pair<std::string, internal::TopicHandle>> topic_handles;
  MessageEncoder encoder;
  std::vector<TopicDescription> topics;
  std::FILE* log;
  int64_t produced = 0;
  int64_t queue_full_waits = 0;
  int64_t delivery_timeout_ms = 0;
};

KafkaSink::KafkaSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaSink::~KafkaSink() {
  rd_kafka_t* rk = impl_->producer.get();
  if (rk == nullptr) return;
  const int64_t budget_ms = impl_->delivery_timeout_ms > 0 ? impl_->delivery_timeout_ms : 30'000;
  if (!impl_->state.fatal() && rd_kafka_outq_len(rk) > 0) rd_kafka_flush(rk, static_cast<int>(budget_ms));
  if (rd_kafka_outq_len(rk) > 0) {
    core::LogTo(impl_->log, core::LogLevel::kError, "kafka",
                "closing with " + std::to_string(rd_kafka_outq_len(rk)) + " record(s) and requests undelivered");
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 0);
  }
}

core::Result<std::unique_ptr<KafkaSink>> KafkaSink::Open(const KafkaSettings& settings, std::FILE* log) {
  core::Result<Properties> properties = ProducerProperties(settings);
  if (!properties.ok()) return properties.status();
  auto impl = std::make_unique<Impl>(log, settings.timestamp);
  impl->delivery_timeout_ms = settings.delivery_timeout_ms;
  core::Result<internal::KafkaHandle> producer =
      internal::CreateClient(properties.value(), internal::ClientRole::kProducer, impl->state);
  if (!producer.ok()) return producer.status();
  impl->producer = std::move(producer).value();
  if (core::Status s =
          internal::WaitForBroker(impl->producer.get(), impl->state, settings.brokers, settings.connect_timeout_ms);
      !s.ok()) {
    return s;
  }
  if (settings.timestamp == TimestampMode::kTrace && settings.retention_ms != -1) {
    core::LogTo(log, core::LogLevel::kWarn, "kafka",
                "kafka.timestamp is trace and kafka.retention_ms is " + std::to_string(settings.retention_ms) +
                    ": the broker deletes records older than that at its next retention check (use retention_ms -1)");
  }
  if (settings.create_topics) {
    core::Result<std::vector<TopicDescription>> topics = internal::EnsureTopics(
        impl->producer.get(), TopicSpecsFromSettings(settings), std::max<int64_t>(settings.connect_timeout_ms, 10'000));
    if (!topics.ok()) return topics.status();
    impl->topics = std::move(topics).value();
    for (const TopicDescription& t : impl->topics) {
      if (t.created) {
        core::LogTo(log, core::LogLevel::kInfo, "kafka",
                    "created topic " + t.name + " (" + std::to_string(t.partitions) +
                        " partitions, retention.ms=" + t.retention_ms + ")");
      } else if (settings.partitions > 0 && t.partitions != settings.partitions) {
        core::LogTo(log, core::LogLevel::kInfo, "kafka",
                    "topic " + t.name + " exists with " + std::to_string(t.partitions) + " partitions (kafka.partitions=" +
                        std::to_string(settings.partitions) + " applies to new topics only)");
      }
    }
  }
  return std::unique_ptr<KafkaSink>(new KafkaSink(std::move(impl)));
}

core::Status KafkaSink::Write(const core::Record& record) { return Produce(impl_->encoder.Encode(record)); }

core::Status KafkaSink::Produce(const OutgoingMessage& message) {
  Impl& s = *impl_;
  if (core::Status health = s.Health(); !health.ok()) return health;
  rd_kafka_t* rk = s.producer.get();
  rd_kafka_topic_t* rkt = s.TopicFor(message.topic);
  if (rkt == nullptr) {
    return core::Status::Error("kafka: topic " + std::string(message.topic) + ": " +
                               rd_kafka_err2str(rd_kafka_last_error()));
  }
  char ts_buf[24];
  const std::string_view trace_ts =
      message.trace_ts_ms == kNoTraceTs ? std::string_view() : FormatTraceTs(message.trace_ts_ms, ts_buf);
  for (;;) {
    rd_kafka_resp_err_t err;
    if (trace_ts.empty()) {
      err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_KEY(message.key.data(), message.key.size()),
                              RD_KAFKA_V_VALUE(const_cast<char*>(message.value.data()), message.value.size()),
                              RD_KAFKA_V_TIMESTAMP(message.timestamp_ms), RD_KAFKA_V_END);
    } else {
      err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_KEY(message.key.data(), message.key.size()),
                              RD_KAFKA_V_VALUE(const_cast<char*>(message.value.data()), message.value.size()),
                              RD_KAFKA_V_TIMESTAMP(message.timestamp_ms),
                              RD_KAFKA_V_HEADER(kTraceTsHeaderName, trace_ts.data(), static_cast<ssize_t>(trace_ts.size())),
                              RD_KAFKA_V_END);
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
      // Raised before its error callback was served: ask for the cause directly.
      char reason[512];
      const rd_kafka_resp_err_t cause = rd_kafka_fatal_error(rk, reason, sizeof(reason));
      return core::Status::Error(std::string("kafka producer fatal error: ") + rd_kafka_err2name(cause) + ": " + reason);
    }
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      if (core::Status health = s.Health(); !health.ok()) return health;
      return core::Status::Error("kafka: cannot produce to " + std::string(message.topic) + ": " + rd_kafka_err2str(err));
    }
    // Backpressure: wait for deliveries to make room, never drop. Bounded: a broker that stays away
    // makes the queued records fail after kafka.delivery_timeout_ms, which Health reports.
    ++s.queue_full_waits;
    rd_kafka_poll(rk, kQueueFullWaitMs);
    if (core::Status health = s.Health(); !health.ok()) return health;
  }
  if (++s.produced % kPollEvery == 0) rd_kafka_poll(rk, 0);
  return core::Status::Ok();
}

core::Status KafkaSink::Flush() {
  Impl& s = *impl_;
  rd_kafka_t* rk = s.producer.get();
  // librdkafka guarantees every record a delivery report within message.timeout.ms, so this ends.
  while (rd_kafka_outq_len(rk) > 0) {
    if (s.state.fatal()) break;
    rd_kafka_flush(rk, 500);
  }
  if (core::Status health = s.Health(); !health.ok()) return health;
  const int64_t reported = s.state.delivered.load() + s.state.failed.load();
  if (reported != s.produced) {
    return core::Status::Error("kafka: " + std::to_string(s.produced) + " records produced but " +
                               std::to_string(reported) + " delivery reports");
  }
  return core::Status::Ok();
}

DeliveryCounts KafkaSink::counts() const {
  DeliveryCounts c;
  c.produced = impl_->produced;
  c.delivered = impl_->state.delivered.load();
  c.failed = impl_->state.failed.load();
  c.queue_full_waits = impl_->queue_full_waits;
  return c;
}

const std::vector<TopicDescription>& KafkaSink::topics() const { return impl_->topics; }

void KafkaSink::TriggerFatalErrorForTesting(const std::string& reason) {
  rd_kafka_test_fatal_error(impl_->producer.get(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, reason.c_str());
}

}  // namespace acmetrace::kafka
