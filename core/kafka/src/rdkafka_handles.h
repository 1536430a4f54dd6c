// RAII owners of librdkafka handles, the state its callbacks write into, and client start-up helpers.
// Private to acmetrace::kafka: no public header exposes librdkafka.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "acmetrace/core/record_parse.h"
#include "acmetrace/core/status.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/kafka/kafka_message.h"

namespace acmetrace::kafka::internal {

struct RdkafkaDeleter {
  void operator()(rd_kafka_t* p) const { rd_kafka_destroy(p); }
  void operator()(rd_kafka_conf_t* p) const { rd_kafka_conf_destroy(p); }
  void operator()(rd_kafka_topic_t* p) const { rd_kafka_topic_destroy(p); }
  void operator()(rd_kafka_topic_partition_list_t* p) const { rd_kafka_topic_partition_list_destroy(p); }
  void operator()(rd_kafka_message_t* p) const { rd_kafka_message_destroy(p); }
  void operator()(rd_kafka_queue_t* p) const { rd_kafka_queue_destroy(p); }
  void operator()(rd_kafka_event_t* p) const { rd_kafka_event_destroy(p); }
  void operator()(rd_kafka_AdminOptions_t* p) const { rd_kafka_AdminOptions_destroy(p); }
  void operator()(rd_kafka_NewTopic_t* p) const { rd_kafka_NewTopic_destroy(p); }
  void operator()(rd_kafka_ConfigResource_t* p) const { rd_kafka_ConfigResource_destroy(p); }
  void operator()(const rd_kafka_metadata_t* p) const { rd_kafka_metadata_destroy(p); }
};

using KafkaHandle = std::unique_ptr<rd_kafka_t, RdkafkaDeleter>;
using ConfHandle = std::unique_ptr<rd_kafka_conf_t, RdkafkaDeleter>;
using TopicHandle = std::unique_ptr<rd_kafka_topic_t, RdkafkaDeleter>;
using PartitionListHandle = std::unique_ptr<rd_kafka_topic_partition_list_t, RdkafkaDeleter>;
using MessageHandle = std::unique_ptr<rd_kafka_message_t, RdkafkaDeleter>;
using QueueHandle = std::unique_ptr<rd_kafka_queue_t, RdkafkaDeleter>;
using EventHandle = std::unique_ptr<rd_kafka_event_t, RdkafkaDeleter>;
using AdminOptionsHandle = std::unique_ptr<rd_kafka_AdminOptions_t, RdkafkaDeleter>;
using NewTopicHandle = std::unique_ptr<rd_kafka_NewTopic_t, RdkafkaDeleter>;
using ConfigResourceHandle = std::unique_ptr<rd_kafka_ConfigResource_t, RdkafkaDeleter>;
using MetadataHandle = std::unique_ptr<const rd_kafka_metadata_t, RdkafkaDeleter>;

/// What librdkafka's callbacks report: errors and logs (printed once per distinct text every 10 s),
/// the fatal error, delivery counts. It is the handle's opaque, so it must outlive the rd_kafka_t:
/// owners declare it before their KafkaHandle member. Thread-safe (log_cb runs on librdkafka's
/// threads; error and delivery callbacks on the thread that polls).
class ClientState {
 public:
  explicit ClientState(std::FILE* log) : log_(log) {}

  /// While quiet, errors are remembered (last_error) but not printed: used while waiting for a broker.
  void set_quiet(bool quiet) { quiet_ = quiet; }
  /// With librdkafka's `debug` property set, every log line is printed (not only warnings and errors).
  void set_verbose(bool verbose) { verbose_ = verbose; }
  void OnError(rd_kafka_t* rk, int err, const char* reason);
  void OnLog(int level, const char* facility, const char* message);
  void OnDelivery(const rd_kafka_message_t* message);

  bool fatal() const { return fatal_.load(std::memory_order_relaxed); }
  std::string fatal_message() const;
  std::string last_error() const;
  std::string first_delivery_error() const;

  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> failed{0};

 private:
  void Print(const std::string& line);

  std::FILE* log_;
  std::atomic<bool> quiet_{false};
  std::atomic<bool> verbose_{false};
  std::atomic<bool> fatal_{false};
  mutable std::mutex mutex_;
  std::string fatal_message_;
  std::string last_error_;
  std::string first_delivery_error_;
  std::string last_printed_;
  int64_t last_printed_ms_ = 0;
  int64_t suppressed_ = 0;
};

enum class ClientRole { kProducer, kConsumer, kAdmin };

/// Creates a client from properties, with state as the callbacks' opaque (producers also get the
/// delivery-report callback). Errors name the property; secret values are redacted.
core::Result<KafkaHandle> CreateClient(const Properties& properties, ClientRole role, ClientState& state);

/// Waits until a broker answers a metadata request, up to timeout_ms; the error names the brokers,
/// the config key and the last connection error. Serves the main queue's callbacks while it waits,
/// so call it before rd_kafka_poll_set_consumer.
/// Milliseconds of the steady clock (for the clients' timeouts and waits).
int64_t SteadyNowMs();

/// The message's trace_ts_ms header: kNoTraceTs if absent, kInvalidTraceTs if not a whole number in
/// the trace years.
int64_t TraceTsOf(rd_kafka_message_t* m);
/// A message's trace time: its trace_ts_ms header (TraceTsOf) if it has one, else, for a record (a
/// value) of a record topic, the time its value carries (core::RecordParser::TraceTimeOf),
/// kInvalidTraceTs if it carries none (it will not parse either); else kNoTraceTs.
int64_t TraceTimeOfMessage(rd_kafka_message_t* m, std::string_view topic, core::RecordParser& parser);
/// The text of the message's trace_ts_ms header, empty if absent. Valid while the message is.
std::string_view TraceTsTextOf(rd_kafka_message_t* m);
/// The message's stream marker (kafka_message.h): its acmetrace_marker header if it has neither key
/// nor value, else empty. Valid while the message is.
std::string_view MarkerOf(rd_kafka_message_t* m);

core::Status WaitForBroker(rd_kafka_t* rk, ClientState& state, const std::string& brokers, int64_t timeout_ms);

}  // namespace acmetrace::kafka::internal
