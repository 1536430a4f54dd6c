// KafkaSink: librdkafka producer with delivery-report accounting and QUEUE_FULL backpressure.
#include "acmetrace/kafka/kafka_sink.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <thread>
#include <set>
#include <string>
#include <utility>

#include "acmetrace/core/log.h"
#include "acmetrace/core/stream_markers.h"
#include "rdkafka_handles.h"
#include "topic_admin.h"

namespace acmetrace::kafka {
namespace {

// Heartbeats of a writer whose trace time stands still (paused) go out this often: well within the
// readers' kafka.idle_timeout_ms (30 s by default).
constexpr int64_t kKeepAliveEveryMs = 5'000;

// The trace_ts_ms header name, nul-terminated for librdkafka.
constexpr const char* kTraceTsHeaderName = "trace_ts_ms";
static_assert(std::string_view(kTraceTsHeaderName) == kTraceTsHeader);
constexpr const char* kMarkerHeaderName = "acmetrace_marker";
static_assert(std::string_view(kMarkerHeaderName) == kMarkerHeader);

// Serve delivery reports every this many records: keeps the report queue short without a poll per record.
constexpr int64_t kPollEvery = 256;
constexpr int kQueueFullWaitMs = 100;

}  // namespace

struct KafkaSink::Impl {
  Impl(std::FILE* log_file, TimestampMode mode) : state(log_file), encoder(mode), log(log_file) {}

  // A topic as the sink writes it: a librdkafka handle per connection.
  struct Topic {
    std::string name;
    std::vector<internal::TopicHandle> handles;  // by connection
  };

  // The index of name in topics_written, its handles opened on first use; nullopt if librdkafka refused.
  std::optional<size_t> TopicFor(std::string_view name) {
    for (size_t t = 0; t < topics_written.size(); ++t) {
      if (topics_written[t].name == name) return t;
    }
    Topic topic{std::string(name), {}};
    for (const internal::KafkaHandle& producer : producers) {
      internal::TopicHandle handle(rd_kafka_topic_new(producer.get(), topic.name.c_str(), nullptr));
      if (!handle) return std::nullopt;
      topic.handles.push_back(std::move(handle));
    }
    topics_written.push_back(std::move(topic));
    return topics_written.size() - 1;
  }

  // The connection that writes partition: always the same one, so a partition's records and markers
  // keep their order (one request in flight per connection). A partition left to librdkafka
  // (RD_KAFKA_PARTITION_UA) goes through the first, as everything does when records are not
  // partitioned here.
  size_t ConnectionOf(int32_t partition) const {
    if (partition == RD_KAFKA_PARTITION_UA) return 0;
    return static_cast<size_t>(partition) % producers.size();
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

  // Members in destruction order, reversed: the callbacks' state outlives the clients (their
  // delivery reports and errors all count there), topic handles die first.
  internal::ClientState state;
  // kafka.producer_connections clients, each with its own connection to every broker: with one
  // request in flight per connection (kafka_config.cc), more connections overlap the requests for
  // different partitions.
  std::vector<internal::KafkaHandle> producers;
  std::vector<Topic> topics_written;
  MessageEncoder encoder;
  std::vector<TopicDescription> topics;
  std::FILE* log;
  int64_t produced = 0;
  int64_t queue_full_waits = 0;
  int64_t delivery_timeout_ms = 0;
  int64_t connect_timeout_ms = 10'000;

  // The declared stream (DeclareStream): every partition of its topics gets the end markers, and the
  // progress markers that ProgressMarkers finds needed.
  std::vector<std::pair<size_t, int32_t>> stream_partitions;  // topics_written index, partition count
  core::ProgressMarkers progress{{}, 0};
  // The stream's records go to the partition librdkafka's murmur2_random would pick, chosen here so
  // that a partition that got a record is known and needs no progress marker. Off when another
  // partitioner is configured: those records are left to librdkafka (and every partition gets markers).
  bool partition_here = false;
  std::minstd_rand keyless_partitions;  // a stream's keyless records, with more than one connection
  std::set<std::string, std::less<>> clusters;  // written so far (named by the end marker)
  std::string last_cluster;  // the last record's cluster, known to be in clusters

  core::Status ProduceMarker(size_t topic, int32_t partition, std::string_view marker, int64_t trace_ts);
  core::Status ProduceMessage(size_t topic, int32_t partition, std::string_view key, std::string_view value,
                              int64_t timestamp_ms, std::string_view trace_ts, std::string_view marker);
  // Serves the delivery reports (and errors) of every connection, waiting up to wait_ms on the first.
  void Poll(int wait_ms, size_t first = 0) {
    rd_kafka_poll(producers[first].get(), wait_ms);
    for (size_t c = 0; c < producers.size(); ++c) {
      if (c != first) rd_kafka_poll(producers[c].get(), 0);
    }
  }

  int64_t last_trace_ts = kNoTraceTs;
  int64_t markers = 0;
  int64_t last_heartbeat_wall_ms = kNoTraceTs;  // steady clock
  int64_t last_heartbeat_trace_ms = kNoTraceTs;
  bool last_heartbeat_paused = false;
  bool trace_ts_header = false;  // kafka.trace_ts_header: records carry their trace time in a header too
  int64_t trace_ts_of_text = kNoTraceTs;  // trace_ts_text is this time's header value
  char trace_ts_buf[24] = {};
  std::string_view trace_ts_text;
};

KafkaSink::KafkaSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaSink::~KafkaSink() {
  const int64_t budget_ms = impl_->delivery_timeout_ms > 0 ? impl_->delivery_timeout_ms : 30'000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
  for (const internal::KafkaHandle& producer : impl_->producers) {
    rd_kafka_t* rk = producer.get();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!impl_->state.fatal() && rd_kafka_outq_len(rk) > 0) rd_kafka_flush(rk, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (rd_kafka_outq_len(rk) > 0) {
      core::LogTo(impl_->log, core::LogLevel::kError, "kafka",
                  "closing with " + std::to_string(rd_kafka_outq_len(rk)) + " record(s) and requests undelivered");
      rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_poll(rk, 0);
    }
  }
}

core::Result<std::unique_ptr<KafkaSink>> KafkaSink::Open(const KafkaSettings& settings, std::FILE* log) {
  core::Result<Properties> properties = ProducerProperties(settings);
  if (!properties.ok()) return properties.status();
  auto impl = std::make_unique<Impl>(log, settings.timestamp);
  impl->delivery_timeout_ms = settings.delivery_timeout_ms;
  impl->trace_ts_header = settings.trace_ts_header;
  impl->connect_timeout_ms = std::max<int64_t>(settings.connect_timeout_ms, 10'000);
  const int64_t connections = ProducerConnections(properties.value(), settings);
  impl->partition_here = SinkPicksPartitions(properties.value());
  const Properties per_connection = PerConnectionProperties(std::move(properties).value(), connections, settings);
  for (int64_t c = 0; c < connections; ++c) {
    core::Result<internal::KafkaHandle> producer =
        internal::CreateClient(per_connection, internal::ClientRole::kProducer, impl->state);
    if (!producer.ok()) return producer.status();
    impl->producers.push_back(std::move(producer).value());
    if (core::Status s = internal::WaitForBroker(impl->producers.back().get(), impl->state, settings.brokers,
                                                 settings.connect_timeout_ms);
        !s.ok()) {
      return s;
    }
  }
  if (settings.timestamp == TimestampMode::kTrace && settings.retention_ms != -1) {
    core::LogTo(log, core::LogLevel::kWarn, "kafka",
                "kafka.timestamp is trace and kafka.retention_ms is " + std::to_string(settings.retention_ms) +
                    ": the broker deletes records older than that at its next retention check (use retention_ms -1)");
  }
  if (settings.create_topics) {
    core::Result<std::vector<TopicDescription>> topics = internal::EnsureTopics(
        impl->producers.front().get(), TopicSpecsFromSettings(settings), std::max<int64_t>(settings.connect_timeout_ms, 10'000));
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

core::Status KafkaSink::Write(const core::Record& record) {
  Impl& s = *impl_;
  if (!s.stream_partitions.empty()) {
    const std::string_view cluster = std::visit([](const auto& r) -> std::string_view { return r.cluster; }, record);
    if (cluster != s.last_cluster) {
      if (s.clusters.find(cluster) == s.clusters.end()) s.clusters.emplace(cluster);
      s.last_cluster = cluster;
    }
  }
  return Produce(s.encoder.Encode(record));
}

core::Status KafkaSink::Produce(const OutgoingMessage& message) {
  Impl& s = *impl_;
  if (core::Status health = s.Health(); !health.ok()) return health;
  const std::optional<size_t> topic = s.TopicFor(message.topic);
  if (!topic) {
    return core::Status::Error("kafka: topic " + std::string(message.topic) + ": " +
                               rd_kafka_err2str(rd_kafka_last_error()));
  }
  if (message.trace_ts_ms != kNoTraceTs) {
    s.last_trace_ts = std::max(s.last_trace_ts, message.trace_ts_ms);
    if (s.progress.DueBefore(message.trace_ts_ms)) {
      core::Status st = s.progress.Round([&](size_t topic, int32_t partition) {
        return s.ProduceMarker(s.stream_partitions[topic].first, partition, kProgressMarker, message.trace_ts_ms);
      });
      if (!st.ok()) return st;
    }
  }
  int32_t partition = RD_KAFKA_PARTITION_UA;
  // Keyless messages stay with librdkafka (its murmur2_random picks a random available partition then,
  // which only its partitioner callback may ask about), unless the stream's partitions are spread
  // over connections: then the partition is picked here, at random, to go through its connection.
  if (s.partition_here && (!message.key.empty() || s.producers.size() > 1)) {
    for (size_t t = 0; t < s.stream_partitions.size(); ++t) {
      const auto& [stream_topic, partitions] = s.stream_partitions[t];
      if (stream_topic != *topic) continue;
      if (message.key.empty()) {
        partition = static_cast<int32_t>(s.keyless_partitions() % static_cast<uint32_t>(partitions));
      } else {  // as librdkafka's murmur2_random would for this key
        partition = rd_kafka_msg_partitioner_murmur2_random(s.topics_written[*topic].handles.front().get(),
                                                            message.key.data(), message.key.size(), partitions,
                                                            nullptr, nullptr);
      }
      s.progress.Wrote(t, partition, message.trace_ts_ms);
      break;
    }
  }
  // The trace time is in the value; the header repeats it only when asked (kafka.trace_ts_header): it
  // costs a header list per message, librdkafka's allocations and its share of the batch.
  if (!s.trace_ts_header) {
    return s.ProduceMessage(*topic, partition, message.key, message.value, message.timestamp_ms, {}, {});
  }
  // The replay writes runs of records of one trace time (a node per record): formatted once per run.
  if (message.trace_ts_ms != s.trace_ts_of_text) {
    s.trace_ts_of_text = message.trace_ts_ms;
    s.trace_ts_text = message.trace_ts_ms == kNoTraceTs ? std::string_view()
                                                         : FormatTraceTs(message.trace_ts_ms, s.trace_ts_buf);
  }
  return s.ProduceMessage(*topic, partition, message.key, message.value, message.timestamp_ms, s.trace_ts_text, {});
}

core::Status KafkaSink::Impl::ProduceMarker(size_t topic, int32_t partition, std::string_view marker,
                                            int64_t trace_ts) {
  char ts_buf[24];
  const std::string_view ts = trace_ts == kNoTraceTs ? std::string_view() : FormatTraceTs(trace_ts, ts_buf);
  ++markers;
  return ProduceMessage(topic, partition, {}, {}, 0, ts, marker);
}

core::Status KafkaSink::Impl::ProduceMessage(size_t topic, int32_t partition, std::string_view key,
                                             std::string_view value, int64_t timestamp_ms, std::string_view trace_ts,
                                             std::string_view marker) {
  const size_t connection = ConnectionOf(partition);
  rd_kafka_t* rk = producers[connection].get();
  rd_kafka_topic_t* rkt = topics_written[topic].handles[connection].get();
  for (;;) {
    rd_kafka_headers_t* headers = nullptr;
    if (!trace_ts.empty() || !marker.empty()) {
      headers = rd_kafka_headers_new(!trace_ts.empty() && !marker.empty() ? 2 : 1);
      if (!trace_ts.empty()) {
        rd_kafka_header_add(headers, kTraceTsHeaderName, -1, trace_ts.data(), static_cast<ssize_t>(trace_ts.size()));
      }
      if (!marker.empty()) {
        rd_kafka_header_add(headers, kMarkerHeaderName, -1, marker.data(), static_cast<ssize_t>(marker.size()));
      }
    }
    // A marker has neither key nor value (NULL, not empty): consumers that read values skip it.
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(marker.empty() ? key.data() : nullptr, key.size()),
        RD_KAFKA_V_VALUE(marker.empty() ? const_cast<char*>(value.data()) : nullptr, value.size()),
        RD_KAFKA_V_TIMESTAMP(timestamp_ms), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (headers != nullptr) rd_kafka_headers_destroy(headers);  // not taken on failure
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
      // Raised before its error callback was served: ask for the cause directly.
      char reason[512];
      const rd_kafka_resp_err_t cause = rd_kafka_fatal_error(rk, reason, sizeof(reason));
      return core::Status::Error(std::string("kafka producer fatal error: ") + rd_kafka_err2name(cause) + ": " + reason);
    }
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      if (core::Status health = Health(); !health.ok()) return health;
      return core::Status::Error("kafka: cannot produce to " + std::string(rd_kafka_topic_name(rkt)) + ": " +
                                 rd_kafka_err2str(err));
    }
    // Backpressure: wait for deliveries to make room, never drop. Bounded: a broker that stays away
    // makes the queued records fail after kafka.delivery_timeout_ms, which Health reports.
    ++queue_full_waits;
    Poll(kQueueFullWaitMs, connection);
    if (core::Status health = Health(); !health.ok()) return health;
  }
  if (++produced % kPollEvery == 0) Poll(0);
  return core::Status::Ok();
}

core::Status KafkaSink::DeclareStream(const std::vector<std::string>& topics, int64_t progress_every_ms) {
  Impl& s = *impl_;
  s.stream_partitions.clear();
  for (const std::string& topic : topics) {
    const std::optional<size_t> t = s.TopicFor(topic);
    if (!t) return core::Status::Error("kafka: topic " + topic + ": " + rd_kafka_err2str(rd_kafka_last_error()));
    rd_kafka_topic_t* rkt = s.topics_written[*t].handles.front().get();
    // Its partition count from the metadata; a topic another client has just created may take a
    // moment to show (every stage may create the topics when they start together).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(s.connect_timeout_ms);
    int32_t partitions = 0;
    for (;;) {
      const rd_kafka_metadata_t* raw = nullptr;
      const rd_kafka_resp_err_t err =
          rd_kafka_metadata(s.producers.front().get(), 0, rkt, &raw, static_cast<int>(std::min<int64_t>(s.connect_timeout_ms, 5'000)));
      internal::MetadataHandle md(raw);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        partitions = md->topics[0].partition_cnt;
      }
      if (partitions > 0) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        return core::Status::Error("kafka: topic " + topic + " does not exist (kafka.create_topics, or create it)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    s.stream_partitions.emplace_back(*t, partitions);
  }
  std::vector<int32_t> counts;
  for (const auto& [topic, partitions] : s.stream_partitions) counts.push_back(partitions);
  s.progress = core::ProgressMarkers(std::move(counts), progress_every_ms);
  return core::Status::Ok();
}

core::Status KafkaSink::Prepare(int64_t first_trace_ts_ms) {
  Impl& s = *impl_;
  if (s.stream_partitions.empty() || !s.progress.enabled() || first_trace_ts_ms == kNoTraceTs) return core::Status::Ok();
  // Nothing was written yet: the round goes into every partition, and says no more than the first
  // record will (nothing earlier is to come).
  if (core::Status st = s.progress.Round([&](size_t topic, int32_t partition) {
        return s.ProduceMarker(s.stream_partitions[topic].first, partition, kProgressMarker, first_trace_ts_ms);
      });
      !st.ok()) {
    return st;
  }
  return Flush();
}

core::Status KafkaSink::Heartbeat(int64_t trace_ts_ms, bool paused) {
  Impl& s = *impl_;
  if (s.stream_partitions.empty() || !s.progress.enabled() || trace_ts_ms == kNoTraceTs) return core::Status::Ok();
  if (core::Status health = s.Health(); !health.ok()) return health;
  // A round when the trace time has moved on by the progress interval (as rounds before records
  // are), else often enough that no reader's kafka.idle_timeout_ms passes without one.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  if (s.last_heartbeat_wall_ms != kNoTraceTs && now_ms - s.last_heartbeat_wall_ms < kKeepAliveEveryMs &&
      trace_ts_ms - s.last_heartbeat_trace_ms < s.progress.every_ms() && paused == s.last_heartbeat_paused) {
    return core::Status::Ok();
  }
  s.last_heartbeat_wall_ms = now_ms;
  s.last_heartbeat_trace_ms = trace_ts_ms;
  s.last_heartbeat_paused = paused;
  const std::string_view marker = paused ? kPausedProgressMarker : kProgressMarker;
  for (const auto& [topic, partitions] : s.stream_partitions) {
    for (int32_t p = 0; p < partitions; ++p) {
      if (core::Status st = s.ProduceMarker(topic, p, marker, trace_ts_ms); !st.ok()) return st;
    }
  }
  return Send();
}

core::Status KafkaSink::End(const std::vector<std::string>& clusters) {
  Impl& s = *impl_;
  if (core::Status st = Flush(); !st.ok()) return st;
  if (s.stream_partitions.empty()) return core::Status::Ok();
  const std::string marker =
      core::EndMarkerText(clusters.empty() ? std::vector<std::string>(s.clusters.begin(), s.clusters.end()) : clusters);
  for (const auto& [topic, partitions] : s.stream_partitions) {
    for (int32_t p = 0; p < partitions; ++p) {
      if (core::Status st = s.ProduceMarker(topic, p, marker, s.last_trace_ts); !st.ok()) return st;
    }
  }
  return Flush();
}

core::Status KafkaSink::Send() {
  // Long enough for the broker threads to wake up and take the batches (rd_kafka_flush raises
  // "flushing" only while it runs); short beside the 50 ms a paced record may be late.
  // Per connection, one after the other: the records of the later ones wait that much longer.
  constexpr int kSendBudgetMs = 5;
  for (const internal::KafkaHandle& producer : impl_->producers) {
    rd_kafka_t* rk = producer.get();
    if (!impl_->state.fatal() && rd_kafka_outq_len(rk) > 0) (void)rd_kafka_flush(rk, kSendBudgetMs);
  }
  return impl_->Health();
}

core::Status KafkaSink::Flush() {
  Impl& s = *impl_;
  // librdkafka guarantees every record a delivery report within message.timeout.ms, so this ends.
  for (const internal::KafkaHandle& producer : s.producers) {
    rd_kafka_t* rk = producer.get();
    while (rd_kafka_outq_len(rk) > 0) {
      if (s.state.fatal()) break;
      rd_kafka_flush(rk, 500);
    }
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
  c.markers = impl_->markers;
  c.delivered = impl_->state.delivered.load();
  c.failed = impl_->state.failed.load();
  c.queue_full_waits = impl_->queue_full_waits;
  return c;
}

std::string KafkaSink::Report() const {
  const DeliveryCounts c = counts();
  return "kafka: " + std::to_string(c.produced - c.markers) + " records produced (and " + std::to_string(c.markers) +
         " stream markers), " + std::to_string(c.delivered + c.failed) + " delivery reports (" +
         std::to_string(c.delivered) + " delivered, " + std::to_string(c.failed) + " failed), " +
         std::to_string(c.queue_full_waits) + " queue-full waits";
}

const std::vector<TopicDescription>& KafkaSink::topics() const { return impl_->topics; }

void KafkaSink::TriggerFatalErrorForTesting(const std::string& reason) {
  rd_kafka_test_fatal_error(impl_->producers.front().get(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, reason.c_str());
}

}  // namespace acmetrace::kafka
