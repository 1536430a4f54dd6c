// The kafka.* configuration keys and their mapping to librdkafka properties (docs/kafka.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/status.h"

namespace acmetrace::kafka {

/// Declares the kafka.* keys (defaults and help) in config.
void DeclareKafkaConfig(core::Config& config);

/// Which time a produced record carries as its Kafka timestamp.
enum class TimestampMode {
  kReplay,  // wall time when produced (default): broker retention and the future-timestamp check work as usual
  kTrace,   // the record's trace time (2023): needs retention.ms=-1 on the topics, or the broker deletes them
};

/// librdkafka properties in the order they are applied (later wins). Value type.
using Properties = std::vector<std::pair<std::string, std::string>>;

/// Everything the Kafka transport reads from the configuration. Value type.
struct KafkaSettings {
  std::string brokers = "127.0.0.1:9092";
  std::string client_id = "acmetrace";
  int64_t connect_timeout_ms = 10'000;
  TimestampMode timestamp = TimestampMode::kReplay;
  // Records carry their trace time in their value (ts_ms; a metrics window's end_ms); this repeats it
  // in a trace_ts_ms header for consumers that read headers only (docs/kafka.md). Markers always have it.
  bool trace_ts_header = false;

  // Topics the producer creates when missing.
  bool create_topics = true;
  std::vector<std::string> topics;
  int32_t partitions = 6;
  int32_t replication_factor = -1;  // -1 = the broker's default.replication.factor
  int64_t retention_ms = -1;        // -1 = keep forever

  // Producer tuning (bench/kafka_vs_kcat.sh).
  std::string compression = "lz4";
  int64_t linger_ms = 20;
  int64_t batch_size_bytes = 1'000'000;
  int64_t batch_num_messages = 10'000;
  int64_t queue_max_messages = 100'000;
  int64_t queue_max_kbytes = 262'144;
  int64_t delivery_timeout_ms = 300'000;
  // Producer clients, each with its own connection to every broker; a partition always goes through
  // the same one (docs/kafka.md "Connections": more did not help against a broker on this machine).
  int64_t producer_connections = 1;

  // Consumer.
  std::string group_id = "acmetrace";
  std::string auto_offset_reset = "earliest";
  int64_t commit_interval_ms = 1'000;
  // Prefetch per assigned partition (queued.max.messages.kbytes). librdkafka's 64 MiB default held
  // 630 MB over 18 partitions. 8 MiB starved the processors once they read faster than one partition
  // refills (bench/process_throughput.sh --issue14 --days 3: 234k records/s at 8 MiB, 607k at 32 MiB,
  // kcat -C 645k; bench/README.md, fourteenth run).
  int64_t consumer_queue_kbytes = 32'768;

  // Event time across partitions (docs/kafka.md "Stream markers"): an ordered writer (the replay)
  // puts a progress marker into every partition each time its trace time has moved on this much;
  // a reader counts a partition read to its end as idle after this much wall time without news.
  int64_t progress_interval_ms = 60'000;
  int64_t idle_timeout_ms = 30'000;
  int64_t unmarked_end_timeout_ms = 600'000;  // --until-end: a partition without markers, quiet this long, has ended

  // Pass-through librdkafka properties (security.protocol, sasl.*, ssl.*, ...), applied after the
  // properties above: properties_file first, then properties, then the role-specific list.
  Properties properties;
  Properties producer_properties;
  Properties consumer_properties;
  bool operator==(const KafkaSettings&) const = default;
};

/// Reads the kafka.* keys. Start-up boundary: a malformed value throws std::invalid_argument naming
/// the key (the binary turns it into exit 2); an unreadable properties_file is also an error.
KafkaSettings KafkaSettingsFromConfig(const core::Config& config);

/// Parses "k=v,k=v" (a config list; YAML lists arrive comma-joined). A part without '=' continues the
/// previous value, so "debug=broker,topic" stays one property. origin names the key in errors.
core::Result<Properties> ParsePropertyList(std::string_view text, std::string_view origin);

/// Parses a librdkafka/Java-style properties file text: "k=v" lines, '#' or '!' comments, blank
/// lines ignored, spaces around '=' trimmed. origin names the file in errors (with the line).
core::Result<Properties> ParsePropertiesText(std::string_view text, std::string_view origin);

/// True for properties whose value must never be logged (passwords, secrets, private keys).
bool IsSecretProperty(std::string_view name);

/// "k=v, k=v" with every secret value shown as "[redacted]"; for logs and error messages.
std::string DescribeProperties(const Properties& properties);

/// Replaces every occurrence of the secret values of properties in text by "[redacted]" (librdkafka
/// error strings may quote a value).
std::string RedactSecrets(std::string text, const Properties& properties);

/// The producer's librdkafka properties: idempotence on, acks=all, the tuning keys, then the
/// pass-through. A pass-through that would weaken delivery (enable.idempotence, acks) or bypass a
/// typed key (bootstrap.servers) is an error.
core::Result<Properties> ProducerProperties(const KafkaSettings& settings);

/// True when the partitioner of these producer properties is librdkafka's murmur2_random (the last
/// one given counts): the sink then picks a stream record's partition itself, as librdkafka would.
bool SinkPicksPartitions(const Properties& producer_properties);

/// How many producer clients a sink opens with these (ProducerProperties) properties:
/// kafka.producer_connections when SinkPicksPartitions (a partition then always goes through the same
/// client), else 1 (another partitioner chooses inside each client, which only one client keeps in order).
int64_t ProducerConnections(const Properties& producer_properties, const KafkaSettings& settings);

/// The properties of each of connections producer clients: the typed queue bounds
/// (kafka.queue_max_messages, kafka.queue_max_kbytes) bound the whole sink, so each client gets its
/// share, rounded up; a queue property passed through (later in the list) stays as given, per client.
Properties PerConnectionProperties(Properties producer_properties, int64_t connections, const KafkaSettings& settings);

/// The consumer's librdkafka properties: group.id, offsets stored only by the application
/// (enable.auto.offset.store=false) and committed in the background, then the pass-through.
core::Result<Properties> ConsumerProperties(const KafkaSettings& settings);

std::string_view TimestampModeName(TimestampMode mode);

}  // namespace acmetrace::kafka
