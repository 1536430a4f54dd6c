// KafkaPartitionReader and KafkaGroupMembership: assignment-based reading and ownership by group.
#include "acmetrace/kafka/kafka_partition_reader.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "rdkafka_handles.h"

namespace acmetrace::kafka {
namespace {

// How long Next holds the other partitions back for one that has records but has not delivered its
// next one; longer for its first after an assignment (the start offset is looked up first).
constexpr int64_t kMaxWaitMs = 500;
constexpr int64_t kMaxFirstWaitMs = 5'000;
// How often a partition at its end is asked again for records, and the client for its events.
constexpr int64_t kRecheckMs = 5;

// The consumer's properties with auto-commit off: offsets live in the caller's snapshots, nothing is
// stored or committed here.
core::Result<Properties> UncommittedConsumerProperties(const KafkaSettings& settings) {
  core::Result<Properties> properties = ConsumerProperties(settings);
  if (properties.ok()) properties.value().emplace_back("enable.auto.commit", "false");
  return properties;
}

}  // namespace

// One assigned partition read through its own queue, with the next record held until it is the
// earliest of all.
struct PartitionQueue {
  std::string topic;
  int32_t partition = -1;
  internal::QueueHandle queue;
  internal::MessageHandle head;  // the partition's next record, not handed over yet
  int64_t head_trace_ts = kNoTraceTs;  // its trace time (internal::TraceTimeOfMessage)
  int64_t head_ts = 0;           // what it is ordered by: its trace time, else its Kafka timestamp
  bool at_end = false;           // its end came and nothing since
  int64_t recheck_ms = 0;        // at its end: when to ask again
  bool paused = false;
  bool delivered = false;        // has had a record or its end since the assignment
  int64_t waiting_since = -1;    // steady ms since it has had neither a head nor its end; -1 = not waiting
};

struct KafkaPartitionReader::Impl {
  explicit Impl(std::FILE* log) : state(log) {}
  internal::ClientState state;  // before consumer: it is the consumer's callback opaque
  internal::KafkaHandle consumer;
  std::vector<PartitionQueue> queues;  // the assignment
  internal::MessageHandle current;     // the record handed over last
  FramedRecord record;
  core::RecordParser parser;  // reads the heads' trace times from their values
  std::string end_topic;
  int64_t next_client_poll_ms = 0;

  // Takes the partition's next message into q.head if there is one (within timeout_ms). A partition
  // end is returned as an event; errors go to the client state.
  std::optional<ReaderEvent> Fill(PartitionQueue& q, int timeout_ms);
  // Hands q's next record over (it becomes current).
  ReaderEvent HandOver(PartitionQueue& q);
};

KafkaPartitionReader::KafkaPartitionReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaPartitionReader::~KafkaPartitionReader() {
  if (impl_ && impl_->consumer) {
    impl_->current.reset();
    impl_->queues.clear();  // held messages and partition queues go before the consumer closes
    rd_kafka_consumer_close(impl_->consumer.get());
  }
}

core::Result<std::unique_ptr<KafkaPartitionReader>> KafkaPartitionReader::Open(const KafkaSettings& settings,
                                                                               std::FILE* log) {
  core::Result<Properties> properties = UncommittedConsumerProperties(settings);
  if (!properties.ok()) return properties.status();
  Properties props = std::move(properties).value();
  props.emplace_back("enable.partition.eof", "true");
  auto impl = std::make_unique<Impl>(log);
  core::Result<internal::KafkaHandle> consumer =
      internal::CreateClient(props, internal::ClientRole::kConsumer, impl->state);
  if (!consumer.ok()) return consumer.status();
  impl->consumer = std::move(consumer).value();
  if (core::Status s = internal::WaitForBroker(impl->consumer.get(), impl->state, settings.brokers,
                                               settings.connect_timeout_ms);
      !s.ok()) {
    return s;
  }
  rd_kafka_poll_set_consumer(impl->consumer.get());
  return std::unique_ptr<KafkaPartitionReader>(new KafkaPartitionReader(std::move(impl)));
}

namespace {

// Errors a topic shows for a moment after it was created or while its leader moves: retried.
bool Transient(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION || err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
         err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
         err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT ||
         err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
}

}  // namespace

core::Result<std::vector<PartitionInfo>> KafkaPartitionReader::Describe(const std::vector<std::string>& topics,
                                                                        int timeout_ms) {
  rd_kafka_t* rk = impl_->consumer.get();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // Retries a transient error until the deadline (a topic just created has no leader for a moment).
  auto retry = [&](rd_kafka_resp_err_t err) {
    if (!Transient(err) || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return true;
  };
  std::vector<PartitionInfo> out;
  for (const std::string& topic : topics) {
    internal::TopicHandle rkt(rd_kafka_topic_new(rk, topic.c_str(), nullptr));
    int partitions = 0;
    std::vector<int32_t> ids;
    for (;;) {
      const rd_kafka_metadata_t* raw = nullptr;
      rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt.get(), &raw, timeout_ms);
      internal::MetadataHandle md(raw);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1) err = md->topics[0].err;
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR && (md->topic_cnt != 1 || md->topics[0].partition_cnt == 0)) {
        err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (retry(err)) continue;
        return core::Status::Error("kafka: topic " + topic + ": " + rd_kafka_err2str(err));
      }
      partitions = md->topics[0].partition_cnt;
      for (int i = 0; i < partitions; ++i) ids.push_back(md->topics[0].partitions[i].id);
      break;
    }
    for (const int32_t id : ids) {
      PartitionInfo info;
      info.topic = topic;
      info.partition = id;
      for (;;) {
        const rd_kafka_resp_err_t err =
            rd_kafka_query_watermark_offsets(rk, topic.c_str(), info.partition, &info.low, &info.high, timeout_ms);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        if (retry(err)) continue;
        return core::Status::Error("kafka: offsets of " + topic + "[" + std::to_string(info.partition) +
                                   "]: " + rd_kafka_err2str(err));
      }
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(), [](const PartitionInfo& a, const PartitionInfo& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
  return out;
}

core::Status KafkaPartitionReader::Assign(const std::vector<PartitionStart>& starts) {
  impl_->current.reset();
  internal::PartitionListHandle list(rd_kafka_topic_partition_list_new(static_cast<int>(starts.size())));
  for (const PartitionStart& s : starts) {
    rd_kafka_topic_partition_list_add(list.get(), s.topic.c_str(), s.partition)->offset =
        s.offset < 0 ? RD_KAFKA_OFFSET_BEGINNING : s.offset;
  }
  impl_->queues.clear();  // held records go: the new assignment says where to read from
  // Each partition's messages stay in its own queue instead of going to the consumer's, which drops
  // them (a forwarding the application set is kept: RD_KAFKA_Q_F_FWD_APP). Set before the assignment
  // starts fetching: set after, the first records of a partition fetched in between went to the
  // consumer's queue and were lost (0 of 9 read once, under load).
  std::vector<PartitionQueue> queues;
  for (const PartitionStart& s : starts) {
    PartitionQueue q;
    q.topic = s.topic;
    q.partition = s.partition;
    q.queue.reset(rd_kafka_queue_get_partition(impl_->consumer.get(), s.topic.c_str(), s.partition));
    if (!q.queue) return core::Status::Error("kafka: no queue for " + s.topic + "[" + std::to_string(s.partition) + "]");
    rd_kafka_queue_forward(q.queue.get(), nullptr);
    queues.push_back(std::move(q));
  }
  const rd_kafka_resp_err_t err = rd_kafka_assign(impl_->consumer.get(), starts.empty() ? nullptr : list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return core::Status::Error(std::string("kafka: assign: ") + rd_kafka_err2str(err));
  impl_->queues = std::move(queues);
  return core::Status::Ok();
}

core::Status KafkaPartitionReader::Pause(const std::string& topic, int32_t partition) {
  internal::PartitionListHandle list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition);
  const rd_kafka_resp_err_t err = rd_kafka_pause_partitions(impl_->consumer.get(), list.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return core::Status::Error(std::string("kafka: pause: ") + rd_kafka_err2str(err));
  for (PartitionQueue& q : impl_->queues) {
    if (q.partition == partition && q.topic == topic) {
      q.paused = true;
      q.head.reset();
    }
  }
  return core::Status::Ok();
}

std::optional<ReaderEvent> KafkaPartitionReader::Impl::Fill(PartitionQueue& q, int timeout_ms) {
  for (;;) {
    internal::MessageHandle m(rd_kafka_consume_queue(q.queue.get(), timeout_ms));
    if (!m) return std::nullopt;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      q.at_end = true;
      q.delivered = true;
      q.recheck_ms = internal::SteadyNowMs() + kRecheckMs;
      q.waiting_since = -1;
      ReaderEvent e;
      e.kind = ReaderEvent::Kind::kPartitionEnd;
      end_topic = q.topic;
      e.topic = end_topic;
      e.partition = q.partition;
      e.offset = m->offset;
      return e;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      state.OnError(consumer.get(), m->err, (q.topic + ": " + rd_kafka_message_errstr(m.get())).c_str());
      continue;
    }
    q.head_trace_ts = internal::TraceTimeOfMessage(m.get(), q.topic, parser);
    q.head_ts = q.head_trace_ts != kNoTraceTs ? q.head_trace_ts : rd_kafka_message_timestamp(m.get(), nullptr);
    q.head = std::move(m);
    q.at_end = false;
    q.delivered = true;
    q.waiting_since = -1;
    return std::nullopt;
  }
}

ReaderEvent KafkaPartitionReader::Impl::HandOver(PartitionQueue& q) {
  rd_kafka_message_t* m = q.head.get();
  record.topic = q.topic;
  record.key = std::string_view(static_cast<const char*>(m->key), m->key != nullptr ? m->key_len : 0);
  record.value = std::string_view(static_cast<const char*>(m->payload), m->payload != nullptr ? m->len : 0);
  record.partition = m->partition;
  record.offset = m->offset;
  record.timestamp_ms = rd_kafka_message_timestamp(m, nullptr);
  record.trace_ts_ms = q.head_trace_ts;
  record.marker = internal::MarkerOf(m);
  record.trace_ts_text = internal::TraceTsTextOf(m);
  current = std::move(q.head);
  ReaderEvent e;
  e.kind = ReaderEvent::Kind::kRecord;
  e.record = &record;
  return e;
}

core::Result<ReaderEvent> KafkaPartitionReader::Next(int timeout_ms) {
  Impl& s = *impl_;
  s.current.reset();
  const int64_t deadline = internal::SteadyNowMs() + timeout_ms;
  for (;;) {
    const int64_t now = internal::SteadyNowMs();
    if (now >= s.next_client_poll_ms) {  // the client's own events (partition messages have their queues)
      s.next_client_poll_ms = now + kRecheckMs;
      internal::MessageHandle m(rd_kafka_consumer_poll(s.consumer.get(), 0));
      if (m && m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        s.state.OnError(s.consumer.get(), m->err, rd_kafka_message_errstr(m.get()));
      } else if (m) {  // a record outside its partition's queue (see Assign): never silently
        const std::string where = std::string(m->rkt != nullptr ? rd_kafka_topic_name(m->rkt) : "?") + "[" +
                                  std::to_string(m->partition) + "]@" + std::to_string(m->offset);
        return core::Status::Error("kafka: a record of " + where + " came outside its partition's queue");
      }
    }
    if (s.state.fatal()) return core::Status::Error("kafka consumer fatal error: " + s.state.fatal_message());
    // Every partition that may have records gets its next one, so the earliest goes first: the
    // input arrives in trace-time order across partitions (as Kafka Streams picks its next record),
    // and an event-time consumer holds back only what is out of order within one partition. A
    // partition that is slow to deliver is waited for at most kMaxWaitMs, then the others go on.
    PartitionQueue* earliest = nullptr;
    PartitionQueue* waiting = nullptr;
    for (PartitionQueue& q : s.queues) {
      if (q.paused) continue;
      if (!q.head && (!q.at_end || now >= q.recheck_ms)) {
        if (q.at_end) q.recheck_ms = now + kRecheckMs;
        if (std::optional<ReaderEvent> end = s.Fill(q, 0)) return *end;
      }
      if (q.head) {
        if (earliest == nullptr || q.head_ts < earliest->head_ts) earliest = &q;
      } else if (!q.at_end) {
        if (q.waiting_since < 0) q.waiting_since = now;
        const int64_t bound = q.delivered ? kMaxWaitMs : kMaxFirstWaitMs;
        if (now - q.waiting_since < bound && waiting == nullptr) waiting = &q;
      }
    }
    if (earliest != nullptr && waiting == nullptr) return s.HandOver(*earliest);
    const int64_t left = deadline - now;
    if (left <= 0) return ReaderEvent{};
    // Wait on the partition held for (or, with nothing anywhere, on the first one) a little.
    PartitionQueue* wait_on = waiting;
    if (wait_on == nullptr) {
      for (PartitionQueue& q : s.queues) {
        if (!q.paused) {
          wait_on = &q;
          break;
        }
      }
    }
    if (wait_on == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 10)));
      continue;
    }
    if (std::optional<ReaderEvent> end = s.Fill(*wait_on, static_cast<int>(std::min<int64_t>(left, 10)))) return *end;
  }
}

// ---------------------------------------------------------------------------------------------

struct KafkaGroupMembership::Impl {
  explicit Impl(std::FILE* log) : state(log) {}
  internal::ClientState state;  // before consumer: the callbacks reach it through the opaque (this)
  internal::KafkaHandle consumer;
  PartitionsCallback on_assigned;
  PartitionsCallback on_revoked;
  std::vector<int32_t> assignment;
  bool assigned_once = false;
  bool closed = false;

  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    static_cast<Impl*>(opaque)->state.OnError(rk, err, reason);
  }
  static void OnLog(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
    static_cast<Impl*>(rd_kafka_opaque(rk))->state.OnLog(level, facility, message);
  }
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions,
                          void* opaque) {
    Impl* self = static_cast<Impl*>(opaque);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      std::vector<int32_t> ids;
      for (int i = 0; i < partitions->cnt; ++i) ids.push_back(partitions->elems[i].partition);
      std::sort(ids.begin(), ids.end());
      // Take the partitions first: the callback may take long (loading state) and the
      // assignment is what the group already decided.
      rd_kafka_assign(rk, partitions);
      self->assignment = ids;
      self->assigned_once = true;
      if (self->on_assigned) self->on_assigned(ids);
    } else {
      // Revoked (or an error): give everything back, after the owner has saved its state.
      if (self->on_revoked && !self->assignment.empty()) self->on_revoked(self->assignment);
      self->assignment.clear();
      rd_kafka_assign(rk, nullptr);
    }
  }
};

KafkaGroupMembership::KafkaGroupMembership(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaGroupMembership::~KafkaGroupMembership() { (void)Close(); }

core::Result<std::unique_ptr<KafkaGroupMembership>> KafkaGroupMembership::Open(
    const KafkaSettings& settings, const std::string& topic, PartitionsCallback on_assigned,
    PartitionsCallback on_revoked, std::FILE* log) {
  core::Result<Properties> properties = UncommittedConsumerProperties(settings);
  if (!properties.ok()) return properties.status();
  Properties props = std::move(properties).value();
  // Eager rebalancing: all revocations finish before any assignment (see the class comment).
  props.emplace_back("partition.assignment.strategy", "range");
  auto impl = std::make_unique<Impl>(log);
  impl->on_assigned = std::move(on_assigned);
  impl->on_revoked = std::move(on_revoked);

  internal::ConfHandle conf(rd_kafka_conf_new());
  char errstr[512];
  for (const auto& [name, value] : props) {
    if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      const std::string shown = IsSecretProperty(name) ? "[redacted]" : "'" + value + "'";
      return core::Status::Error("kafka property " + name + "=" + shown + ": " + RedactSecrets(errstr, props));
    }
  }
  rd_kafka_conf_set_opaque(conf.get(), impl.get());
  rd_kafka_conf_set_error_cb(conf.get(), Impl::OnError);
  rd_kafka_conf_set_log_cb(conf.get(), Impl::OnLog);
  rd_kafka_conf_set_rebalance_cb(conf.get(), Impl::OnRebalance);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr, sizeof(errstr));
  if (rk == nullptr) return core::Status::Error("kafka client: " + RedactSecrets(errstr, props));
  (void)conf.release();
  impl->consumer.reset(rk);
  if (core::Status s = internal::WaitForBroker(rk, impl->state, settings.brokers, settings.connect_timeout_ms);
      !s.ok()) {
    impl->closed = true;
    return s;
  }
  rd_kafka_poll_set_consumer(rk);
  internal::PartitionListHandle topics(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(topics.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka consumer: subscribe failed: ") + rd_kafka_err2str(err));
  }
  return std::unique_ptr<KafkaGroupMembership>(new KafkaGroupMembership(std::move(impl)));
}

core::Status KafkaGroupMembership::Poll(int timeout_ms) {
  Impl& s = *impl_;
  if (s.closed) return core::Status::Ok();
  internal::MessageHandle m(rd_kafka_consumer_poll(s.consumer.get(), timeout_ms));
  if (s.state.fatal()) return core::Status::Error("kafka consumer fatal error: " + s.state.fatal_message());
  // The ownership topic carries no records; errors such as a topic not yet known are transient.
  return core::Status::Ok();
}

bool KafkaGroupMembership::assigned_once() const { return impl_->assigned_once; }

const std::vector<int32_t>& KafkaGroupMembership::assignment() const { return impl_->assignment; }

core::Status KafkaGroupMembership::Commit(const std::vector<PartitionStart>& offsets) {
  Impl& s = *impl_;
  if (s.closed) return core::Status::Error("kafka consumer: commit after leaving the group");
  if (offsets.empty()) return core::Status::Ok();
  internal::PartitionListHandle list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
  for (const PartitionStart& o : offsets) {
    if (o.offset < 0) return core::Status::Error("kafka consumer: commit of a negative offset for " + o.topic);
    rd_kafka_topic_partition_list_add(list.get(), o.topic.c_str(), o.partition)->offset = o.offset;
  }
  const rd_kafka_resp_err_t err = rd_kafka_commit(s.consumer.get(), list.get(), /*async=*/0);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka consumer: offset commit failed: ") + rd_kafka_err2str(err));
  }
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return core::Status::Error(std::string("kafka consumer: offset commit of ") + p.topic + "[" +
                                 std::to_string(p.partition) + "] failed: " + rd_kafka_err2str(p.err));
    }
  }
  return core::Status::Ok();
}

core::Status KafkaGroupMembership::Close() {
  Impl& s = *impl_;
  if (s.closed || !s.consumer) return core::Status::Ok();
  s.closed = true;
  const rd_kafka_resp_err_t err = rd_kafka_consumer_close(s.consumer.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka consumer: close failed: ") + rd_kafka_err2str(err));
  }
  return core::Status::Ok();
}

}  // namespace acmetrace::kafka
