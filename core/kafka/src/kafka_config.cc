// kafka.* keys: one table (core::Settings) declares them with their KafkaSettings members; mapped
// onto librdkafka properties.
#include "acmetrace/kafka/kafka_config.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "acmetrace/core/number.h"
#include "acmetrace/core/settings.h"

namespace acmetrace::kafka {
namespace {

constexpr std::string_view kRedacted = "[redacted]";
constexpr std::string_view kDefaultTopics = "acme.jobs,acme.util,acme.power,acme.metrics,acme.anomalies";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string ReadWholeFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw std::invalid_argument("kafka.properties_file: cannot read '" + path + "'");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// The pass-through may tune anything, but not switch off the delivery guarantees nor give a second
// source for what a typed key already sets.
core::Status CheckPassThrough(const Properties& properties, bool producer) {
  for (const auto& [name, value] : properties) {
    const std::string where = "kafka pass-through property " + name;
    if (name == "bootstrap.servers" || name == "metadata.broker.list") {
      return core::Status::Error(where + ": set kafka.brokers (or --brokers) instead");
    }
    if (name == "group.id") return core::Status::Error(where + ": set kafka.group_id instead");
    if (producer && name == "enable.idempotence" && value != "true") {
      return core::Status::Error(where + ": must stay true (no duplicates across broker restarts depends on it)");
    }
    if (producer && (name == "acks" || name == "request.required.acks") && value != "all" && value != "-1") {
      return core::Status::Error(where + ": must stay all (no loss across broker restarts depends on it)");
    }
    if (!producer && name == "enable.auto.offset.store" && value != "false") {
      return core::Status::Error(where + ": must stay false (offsets are stored only after a record is processed)");
    }
  }
  return core::Status::Ok();
}

void Append(Properties& out, const Properties& more) { out.insert(out.end(), more.begin(), more.end()); }

// A client's properties: the brokers and our client id, the role's (ours), then kafka.properties and
// the role's pass-through list (checked first; librdkafka takes a name's last value: the user's win).
core::Result<Properties> ClientProperties(const KafkaSettings& s, const Properties& ours, const Properties& role,
                                          bool producer) {
  if (core::Status st = CheckPassThrough(s.properties, producer); !st.ok()) return st;
  if (core::Status st = CheckPassThrough(role, producer); !st.ok()) return st;
  Properties p = {{"bootstrap.servers", s.brokers}, {"client.id", s.client_id}};
  Append(p, ours);
  // A broker restart is an expected event for a long replay: say it once, not per connection.
  p.emplace_back("log.connection.close", "false");
  Append(p, s.properties);
  Append(p, role);
  return p;
}

// librdkafka's timeouts and intervals are int milliseconds.
core::ConfigType Millis(int64_t min) { return core::ConfigType::Int(min, 2'147'483'647); }

// Kafka's rule for topic names: up to 249 of [a-zA-Z0-9._-].
core::ConfigType TopicNameType() {
  return core::ConfigType::Custom(
      "a topic name (up to 249 of a-z A-Z 0-9 . _ -)",
      [](std::string_view v) -> std::optional<std::string> {
        const bool legal = v.size() <= 249 && v != "." && v != ".." && std::all_of(v.begin(), v.end(), [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
                           });
        if (!legal) return "not a Kafka topic name (up to 249 of a-z A-Z 0-9 . _ -): " + core::QuoteConfigValue(v);
        return std::nullopt;
      },
      {"acme metrics", "acme/jobs", "..", std::string(250, 'a')}, {"acme.jobs", "a_b-c.D9", std::string(249, 'a')});
}

core::ConfigType PropertyListType() {
  return core::ConfigType::Custom(
      "librdkafka properties name=value,name=value",
      [](std::string_view v) -> std::optional<std::string> {
        core::Result<Properties> parsed = ParsePropertyList(v, "");
        if (!parsed.ok()) return parsed.status().message().substr(2);  // after the empty origin's ": "
        return std::nullopt;
      },
      {"debug", "=broker"}, {"debug=broker,topic", "security.protocol=SASL_SSL,sasl.mechanism=PLAIN"})
      .OrEmpty();
}

// The kafka.* keys: each once, with the KafkaSettings member it fills (default: the member's).
const core::Settings<KafkaSettings>& KafkaSettingsTable() {
  using core::ConfigType;
  using S = KafkaSettings;
  // The pass-through lists, appended in the table's order: the file first, then kafka.properties.
  auto append_list = [](Properties S::*member) {
    return [member](const core::Config& c, const std::string& key, S& s) {
      core::Result<Properties> parsed = ParsePropertyList(c.GetString(key), key);
      if (!parsed.ok()) throw std::invalid_argument(parsed.status().message());
      Append(s.*member, parsed.value());
    };
  };
  static const core::Settings<S> settings =
      core::Settings<S>("kafka")
          .Text("brokers", &S::brokers, ConfigType::List(ConfigType::String(), 1),
                "bootstrap brokers host:port[,host:port] (librdkafka bootstrap.servers); --brokers")
          .Text("client_id", &S::client_id, ConfigType::NonEmptyString(), "client.id the brokers see in their logs and quotas")
          .Int("connect_timeout_ms", &S::connect_timeout_ms, Millis(1),
               "at start, wait this long for a broker to answer a metadata request, then exit 1")
          .Choice("timestamp", &S::timestamp, {{"replay", TimestampMode::kReplay}, {"trace", TimestampMode::kTrace}},
                  "Kafka record timestamp: replay (wall time when produced; the trace time is in the value) or trace "
                  "(the trace time itself; needs retention_ms -1)")
          .Bool("trace_ts_header", &S::trace_ts_header,
                "also put each record's trace time (its value's ts_ms; a metrics window's end_ms) into a trace_ts_ms "
                "header, for consumers that read headers only; costs the replay about 11 % more client CPU "
                "(docs/kafka.md). Stream markers always carry it")
          .Int("progress_interval_ms", &S::progress_interval_ms, 1, 86'400'000,
               "the replay puts a progress marker into every partition of its topics that got no record in this much "
               "trace time, each time its trace time has moved on this much, so readers know a quiet partition has "
               "nothing earlier to come (docs/kafka.md)")
          .Int("idle_timeout_ms", &S::idle_timeout_ms, 0, 86'400'000,
               "a partition read to its end that brings nothing (no record, no marker) for this long stops holding "
               "the processors' watermark back (0 = never), as Flink's withIdleness (docs/kafka.md)")
          .Int("unmarked_end_timeout_ms", &S::unmarked_end_timeout_ms, 1, 86'400'000,
               "for --until-end: a partition that never carried a stream marker (topics written by other tools) "
               "counts as ended once it has been idle (kafka.idle_timeout_ms) and then this long more; a partition "
               "with markers ends only by its writer's end marker, however long it is quiet or paused (docs/kafka.md)")
          .Bool("create_topics", &S::create_topics, "create the topics below when missing (Admin API)")
          .TextList("topics", &S::topics, ConfigType::List(TopicNameType()), "topics created when missing")
          // The struct's list stays empty: a KafkaSettings made in code creates no topic unless told.
          .ConfigDefault(std::string(kDefaultTopics))
          .Int("partitions", &S::partitions, ConfigType::IntOr(-1, 1, 1'000'000),
               "partitions of created topics (-1 = broker default)")
          .Int("replication_factor", &S::replication_factor, ConfigType::IntOr(-1, 1, 1'000'000),
               "replication factor of created topics (-1 = broker default.replication.factor)")
          .Int("retention_ms", &S::retention_ms, ConfigType::IntOr(-1, 1, std::numeric_limits<int64_t>::max()),
               "retention.ms of created topics: -1 keeps records forever (required with timestamp: trace, whose "
               "2023 timestamps any finite retention deletes at once)")
          .Text("compression", &S::compression, ConfigType::Enum({"none", "gzip", "snappy", "lz4", "zstd"}),
                "producer compression: none, gzip, snappy, lz4 or zstd")
          .Int("linger_ms", &S::linger_ms, 0, 900'000, "producer linger.ms: how long a batch waits to fill")
          .Int("batch_size_bytes", &S::batch_size_bytes, 1, 2'147'483'647, "producer batch.size: bytes per partition batch")
          .Int("batch_num_messages", &S::batch_num_messages, 1, 1'000'000, "producer batch.num.messages: records per batch")
          .Int("queue_max_messages", &S::queue_max_messages, 1, 2'147'483'647,
               "producer queue.buffering.max.messages: records buffered before the replay waits (backpressure)")
          .Int("queue_max_kbytes", &S::queue_max_kbytes, 1, 2'147'483'647,
               "producer queue.buffering.max.kbytes: KiB buffered before the replay waits (backpressure)")
          .Int("delivery_timeout_ms", &S::delivery_timeout_ms, 0, 2'147'483'647,
               "producer message.timeout.ms: a record unacknowledged this long fails the run (exit 1); 0 = never")
          .Int("producer_connections", &S::producer_connections, 1, 16,
               "producer clients, each with its own connection to every broker and one request in flight on it; "
               "a partition always goes through the same one (1 with a partitioner other than murmur2_random)")
          .Text("group_id", &S::group_id, ConfigType::NonEmptyString(), "consumer group of the consuming stages")
          .Text("auto_offset_reset", &S::auto_offset_reset, ConfigType::Enum({"earliest", "latest"}),
                "where a consumer group without committed offsets starts: earliest or latest")
          .Int("commit_interval_ms", &S::commit_interval_ms, Millis(1),
               "consumer auto.commit.interval.ms: how often processed offsets are committed")
          .Int("consumer_queue_kbytes", &S::consumer_queue_kbytes, 1, 2'097'151,
               "consumer queued.max.messages.kbytes: KiB prefetched per assigned partition")
          .Custom("properties_file", "", ConfigType::String(),
                  "file of librdkafka properties (k=v lines, # comments), e.g. security settings and secrets",
                  [](const core::Config& c, const std::string& key, S& s) {
                    const std::string path = c.GetString(key);
                    if (path.empty()) return;
                    core::Result<Properties> file = ParsePropertiesText(ReadWholeFile(path), path);
                    if (!file.ok()) throw std::invalid_argument(file.status().message());
                    Append(s.properties, file.value());
                  })
          .Custom("properties", "", PropertyListType(),
                  "librdkafka properties for producers and consumers, k=v,k=v (e.g. security.protocol=SASL_SSL); "
                  "applied after the keys above and the file",
                  append_list(&S::properties))
          .Custom("producer_properties", "", PropertyListType(), "librdkafka properties for producers only, k=v,k=v",
                  append_list(&S::producer_properties))
          .Custom("consumer_properties", "", PropertyListType(), "librdkafka properties for consumers only, k=v,k=v",
                  append_list(&S::consumer_properties));
  return settings;
}

}  // namespace

void DeclareKafkaConfig(core::Config& config) { KafkaSettingsTable().Declare(config); }

KafkaSettings KafkaSettingsFromConfig(const core::Config& config) { return KafkaSettingsTable().Fill(config); }

core::Result<Properties> ParsePropertyList(std::string_view text, std::string_view origin) {
  Properties out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view part = core::TrimSpaces(text.substr(start, comma - start));
    start = comma + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      // "debug=broker,topic": the list was split at a comma inside a value.
      if (out.empty()) {
        return core::Status::Error(std::string(origin) + ": expected name=value, got '" + std::string(part) + "'");
      }
      out.back().second += ",";
      out.back().second += part;
      continue;
    }
    const std::string_view name = core::TrimSpaces(part.substr(0, eq));
    if (name.empty()) return core::Status::Error(std::string(origin) + ": property without a name before '='");
    out.emplace_back(std::string(name), std::string(core::TrimSpaces(part.substr(eq + 1))));
  }
  return out;
}

core::Result<Properties> ParsePropertiesText(std::string_view text, std::string_view origin) {
  Properties out;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = core::TrimSpaces(line);
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    const size_t eq = line.find('=');
    const std::string_view name = eq == std::string_view::npos ? line : core::TrimSpaces(line.substr(0, eq));
    if (eq == std::string_view::npos || name.empty()) {
      // The line may hold a secret: name only its number.
      return core::Status::Error(std::string(origin) + ":" + std::to_string(line_number) + ": expected name=value");
    }
    out.emplace_back(std::string(name), std::string(core::TrimSpaces(line.substr(eq + 1))));
  }
  return out;
}

bool IsSecretProperty(std::string_view name) {
  const std::string lower = Lower(name);
  return lower.find("password") != std::string::npos || lower.find("secret") != std::string::npos ||
         lower == "ssl.key.pem" || lower == "ssl_key" || lower == "sasl.oauthbearer.config";
}

std::string DescribeProperties(const Properties& properties) {
  std::string out;
  for (const auto& [name, value] : properties) {
    if (!out.empty()) out += ", ";
    out += name;
    out += '=';
    out += IsSecretProperty(name) ? std::string(kRedacted) : value;
  }
  return out;
}

std::string RedactSecrets(std::string text, const Properties& properties) {
  for (const auto& [name, value] : properties) {
    if (!IsSecretProperty(name) || value.empty()) continue;
    for (size_t at = text.find(value); at != std::string::npos; at = text.find(value, at + kRedacted.size())) {
      text.replace(at, value.size(), kRedacted);
    }
  }
  return text;
}

core::Result<Properties> ProducerProperties(const KafkaSettings& s) {
  const Properties ours = {
      {"enable.idempotence", "true"},
      {"acks", "all"},
      // One request in flight per broker: with more, librdkafka 2.0 can lose records. When a
      // partition's first batch from a new producer id fails with a retriable error (NOT_LEADER
      // right after topic creation or a leader change) while the next batch, already in flight,
      // succeeds (the broker accepts any first sequence from an unknown producer), librdkafka
      // takes the failed batch as "implicitly acked" and never resends it
      // (confluent-kafka-go#921; seen here in the broker-restart test and the benchmark).
      {"max.in.flight.requests.per.connection", "1"},
      // Java's partitioner: a Java consumer or Kafka Streams job co-partitions with us by key.
      {"partitioner", "murmur2_random"},
      {"compression.codec", s.compression},
      {"linger.ms", std::to_string(s.linger_ms)},
      {"batch.size", std::to_string(s.batch_size_bytes)},
      {"batch.num.messages", std::to_string(s.batch_num_messages)},
      {"queue.buffering.max.messages", std::to_string(s.queue_max_messages)},
      {"queue.buffering.max.kbytes", std::to_string(s.queue_max_kbytes)},
      {"message.timeout.ms", std::to_string(s.delivery_timeout_ms)},
  };
  return ClientProperties(s, ours, s.producer_properties, /*producer=*/true);
}

bool SinkPicksPartitions(const Properties& producer_properties) {
  std::string_view partitioner;
  for (const auto& [name, value] : producer_properties) {
    if (name == "partitioner") partitioner = value;
  }
  return partitioner == "murmur2_random";
}

int64_t ProducerConnections(const Properties& producer_properties, const KafkaSettings& s) {
  return SinkPicksPartitions(producer_properties) ? s.producer_connections : 1;
}

Properties PerConnectionProperties(Properties p, int64_t connections, const KafkaSettings& s) {
  const auto share = [&](std::string_view property, int64_t total) {
    const auto typed = std::find_if(p.begin(), p.end(), [&](const auto& entry) { return entry.first == property; });
    if (typed != p.end()) typed->second = std::to_string((total + connections - 1) / connections);
  };
  share("queue.buffering.max.messages", s.queue_max_messages);
  share("queue.buffering.max.kbytes", s.queue_max_kbytes);
  return p;
}

core::Result<Properties> ConsumerProperties(const KafkaSettings& s) {
  const Properties ours = {
      {"group.id", s.group_id},
      {"enable.auto.offset.store", "false"},
      {"enable.auto.commit", "true"},
      {"auto.commit.interval.ms", std::to_string(s.commit_interval_ms)},
      {"queued.max.messages.kbytes", std::to_string(s.consumer_queue_kbytes)},
      {"auto.offset.reset", s.auto_offset_reset},
  };
  return ClientProperties(s, ours, s.consumer_properties, /*producer=*/false);
}

std::string_view TimestampModeName(TimestampMode mode) {
  return mode == TimestampMode::kTrace ? "trace" : "replay";
}

}  // namespace acmetrace::kafka
