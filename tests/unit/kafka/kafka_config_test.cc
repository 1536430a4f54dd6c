// kafka.* keys → KafkaSettings → librdkafka properties; pass-through rules and secret redaction.
#include "acmetrace/kafka/kafka_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_sink.h"
#include "acmetrace/kafka/kafka_source.h"

namespace acmetrace::kafka {
namespace {

core::Config DeclaredConfig() {
  core::Config config;
  DeclareKafkaConfig(config);
  return config;
}

std::string ValueOf(const Properties& p, const std::string& name) {
  std::string value = "<unset>";
  for (const auto& [k, v] : p) {
    if (k == name) value = v;  // the last one wins, as in librdkafka
  }
  return value;
}

TEST(KafkaConfigTest, DefaultsMatchSettingsDefaults) {
  const KafkaSettings s = KafkaSettingsFromConfig(DeclaredConfig());
  const KafkaSettings d;
  EXPECT_EQ(s.brokers, d.brokers);
  EXPECT_EQ(s.timestamp, TimestampMode::kReplay);
  EXPECT_FALSE(s.trace_ts_header);  // the trace time is in the value
  EXPECT_EQ(s.trace_ts_header, d.trace_ts_header);
  EXPECT_EQ(s.partitions, d.partitions);
  EXPECT_EQ(s.replication_factor, -1);
  EXPECT_EQ(s.retention_ms, -1);
  EXPECT_EQ(s.compression, d.compression);
  EXPECT_EQ(s.linger_ms, d.linger_ms);
  EXPECT_EQ(s.batch_size_bytes, d.batch_size_bytes);
  EXPECT_EQ(s.batch_num_messages, d.batch_num_messages);
  EXPECT_EQ(s.delivery_timeout_ms, d.delivery_timeout_ms);
  EXPECT_EQ(s.group_id, d.group_id);
  EXPECT_EQ(s.topics, (std::vector<std::string>{"acme.jobs", "acme.util", "acme.power", "acme.metrics", "acme.anomalies"}));
  EXPECT_TRUE(s.properties.empty());
}

TEST(KafkaConfigTest, YamlSetsKeysAndPassThroughList) {
  core::Config config = DeclaredConfig();
  ASSERT_TRUE(config
                  .LoadYamlText("kafka:\n"
                                "  brokers: b1:9092,b2:9092\n"
                                "  timestamp: trace\n"
                                "  trace_ts_header: true\n"
                                "  partitions: 3\n"
                                "  retention_ms: 604800000\n"
                                "  compression: zstd\n"
                                "  properties:\n"
                                "    - security.protocol=SASL_SSL\n"
                                "    - sasl.mechanisms=PLAIN\n"
                                "    - debug=broker,topic\n"
                                "  producer_properties: linger.ms=50\n",
                                "test.yaml")
                  .ok());
  const KafkaSettings s = KafkaSettingsFromConfig(config);
  EXPECT_EQ(s.brokers, "b1:9092,b2:9092");
  EXPECT_EQ(s.timestamp, TimestampMode::kTrace);
  EXPECT_TRUE(s.trace_ts_header);
  EXPECT_EQ(s.partitions, 3);
  EXPECT_EQ(s.retention_ms, 604800000);
  ASSERT_EQ(s.properties.size(), 3u);
  EXPECT_EQ(s.properties[2], (std::pair<std::string, std::string>{"debug", "broker,topic"}));

  core::Result<Properties> p = ProducerProperties(s);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(ValueOf(p.value(), "bootstrap.servers"), "b1:9092,b2:9092");
  EXPECT_EQ(ValueOf(p.value(), "compression.codec"), "zstd");
  EXPECT_EQ(ValueOf(p.value(), "security.protocol"), "SASL_SSL");
  EXPECT_EQ(ValueOf(p.value(), "linger.ms"), "50");  // the pass-through tunes over the typed key
}

TEST(KafkaConfigTest, ProducerGuaranteesAreOn) {
  core::Result<Properties> p = ProducerProperties(KafkaSettings{});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ValueOf(p.value(), "enable.idempotence"), "true");
  EXPECT_EQ(ValueOf(p.value(), "acks"), "all");
  EXPECT_EQ(ValueOf(p.value(), "partitioner"), "murmur2_random");
  EXPECT_EQ(ValueOf(p.value(), "max.in.flight.requests.per.connection"), "1");
  EXPECT_EQ(ValueOf(p.value(), "message.timeout.ms"), "300000");
}

TEST(KafkaConfigTest, ProducerConnectionsShareTheQueueBound) {
  KafkaSettings s;
  EXPECT_EQ(ProducerConnections(ProducerProperties(s).value(), s), 1);  // the default
  s.producer_connections = 2;
  s.queue_max_messages = 100'001;
  const Properties p = ProducerProperties(s).value();
  ASSERT_EQ(ProducerConnections(p, s), 2);
  const Properties each = PerConnectionProperties(p, 2, s);
  EXPECT_EQ(ValueOf(each, "queue.buffering.max.messages"), "50001");  // rounded up: never below the total
  EXPECT_EQ(ValueOf(each, "queue.buffering.max.kbytes"), "131072");
  EXPECT_EQ(ValueOf(PerConnectionProperties(p, 1, s), "queue.buffering.max.messages"), "100001");

  s.producer_connections = 3;
  EXPECT_EQ(ProducerConnections(p, s), 3);
}

TEST(KafkaConfigTest, AnotherPartitionerKeepsOneConnection) {
  // It picks partitions inside each client: records of one partition could go through two of them
  // and overtake each other, or a stream marker.
  KafkaSettings s;
  s.producer_connections = 4;
  s.producer_properties = {{"partitioner", "consistent_random"}};
  const Properties p = ProducerProperties(s).value();
  EXPECT_FALSE(SinkPicksPartitions(p));
  EXPECT_EQ(ProducerConnections(p, s), 1);
  s.producer_properties.push_back({"partitioner", "murmur2_random"});  // the last one counts
  EXPECT_EQ(ProducerConnections(ProducerProperties(s).value(), s), 4);
}

TEST(KafkaConfigTest, AQueueBoundPassedThroughIsPerConnection) {
  KafkaSettings s;
  s.producer_properties = {{"queue.buffering.max.messages", "7000"}};
  const Properties each = PerConnectionProperties(ProducerProperties(s).value(), 2, s);
  EXPECT_EQ(ValueOf(each, "queue.buffering.max.messages"), "7000");  // ValueOf: the last one, which librdkafka applies
}

TEST(KafkaConfigTest, ConsumerStoresOffsetsOnlyAfterProcessing) {
  KafkaSettings s;
  s.group_id = "metrics";
  core::Result<Properties> p = ConsumerProperties(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ValueOf(p.value(), "group.id"), "metrics");
  EXPECT_EQ(ValueOf(p.value(), "enable.auto.offset.store"), "false");
  EXPECT_EQ(ValueOf(p.value(), "enable.auto.commit"), "true");
  EXPECT_EQ(ValueOf(p.value(), "auto.offset.reset"), "earliest");
  EXPECT_EQ(ValueOf(p.value(), "acks"), "<unset>");
}

TEST(KafkaConfigTest, ConsumerPrefetchPerPartitionIsATypedKey) {
  KafkaSettings s;
  EXPECT_EQ(ValueOf(ConsumerProperties(s).value(), "queued.max.messages.kbytes"), "32768");  // 32 MiB: docs/kafka.md
  s.consumer_queue_kbytes = 1024;
  EXPECT_EQ(ValueOf(ConsumerProperties(s).value(), "queued.max.messages.kbytes"), "1024");
  EXPECT_EQ(ValueOf(ProducerProperties(s).value(), "queued.max.messages.kbytes"), "<unset>");
}

TEST(KafkaConfigTest, PassThroughCannotWeakenDeliveryOrBypassTypedKeys) {
  for (const char* bad : {"enable.idempotence=false", "acks=1", "request.required.acks=0", "bootstrap.servers=x:1",
                          "group.id=other"}) {
    KafkaSettings s;
    s.properties = ParsePropertyList(bad, "kafka.properties").value();
    EXPECT_FALSE(ProducerProperties(s).ok()) << bad;
  }
  KafkaSettings s;
  s.consumer_properties = {{"enable.auto.offset.store", "true"}};
  EXPECT_FALSE(ConsumerProperties(s).ok());
  s.consumer_properties = {{"enable.auto.offset.store", "false"}};
  EXPECT_TRUE(ConsumerProperties(s).ok());
  s.producer_properties = {{"acks", "-1"}, {"enable.idempotence", "true"}};
  EXPECT_TRUE(ProducerProperties(s).ok());
}

TEST(KafkaConfigTest, MalformedValuesNameTheKey) {
  auto expect_throw = [](const std::string& key, const std::string& value) {
    core::Config config = DeclaredConfig();
    ASSERT_TRUE(config.Set(key, value).ok());
    try {
      (void)KafkaSettingsFromConfig(config);
      ADD_FAILURE() << key << "=" << value << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_throw("kafka.timestamp", "event");
  expect_throw("kafka.trace_ts_header", "yes please");
  expect_throw("kafka.trace_ts_header", "2");
  expect_throw("kafka.compression", "brotli");
  expect_throw("kafka.partitions", "0");
  expect_throw("kafka.retention_ms", "0");
  expect_throw("kafka.linger_ms", "-5");
  expect_throw("kafka.brokers", "");
  expect_throw("kafka.auto_offset_reset", "middle");
  expect_throw("kafka.properties", "=x");
  expect_throw("kafka.properties_file", "/nonexistent/client.properties");
}

TEST(KafkaConfigTest, ParsePropertyListJoinsCommaContinuations) {
  core::Result<Properties> p = ParsePropertyList(" a=1 , debug=broker,topic,msg ,b = x=y,", "k");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p.value().size(), 3u);
  EXPECT_EQ(p.value()[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(p.value()[1], (std::pair<std::string, std::string>{"debug", "broker,topic,msg"}));
  EXPECT_EQ(p.value()[2], (std::pair<std::string, std::string>{"b", "x=y"}));
  EXPECT_TRUE(ParsePropertyList("", "k").value().empty());
  EXPECT_FALSE(ParsePropertyList("novalue", "k").ok());
}

TEST(KafkaConfigTest, PropertiesFileIsReadAndItsErrorsHideTheLine) {
  core::Result<Properties> p = ParsePropertiesText(
      "# client\n! also a comment\n\nsecurity.protocol = SASL_SSL\r\nsasl.password=p=w,d\n", "client.properties");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p.value().size(), 2u);
  EXPECT_EQ(p.value()[0].second, "SASL_SSL");
  EXPECT_EQ(p.value()[1].second, "p=w,d");
  core::Result<Properties> bad = ParsePropertiesText("a=1\nhunter2\n", "client.properties");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "client.properties:2: expected name=value");

  const std::string path = ::testing::TempDir() + "kafka_config_test.properties";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("sasl.username=alice\nsasl.password=s3cret\n", f);
  std::fclose(f);
  core::Config config = DeclaredConfig();
  ASSERT_TRUE(config.Set("kafka.properties_file", path).ok());
  ASSERT_TRUE(config.Set("kafka.properties", "sasl.username=bob").ok());
  const KafkaSettings s = KafkaSettingsFromConfig(config);
  EXPECT_EQ(ValueOf(s.properties, "sasl.username"), "bob");  // the list overrides the file
  EXPECT_EQ(ValueOf(s.properties, "sasl.password"), "s3cret");
  std::remove(path.c_str());
}

TEST(KafkaSecretsTest, SecretPropertiesAreRecognised) {
  for (const char* name : {"sasl.password", "ssl.key.password", "ssl.keystore.password", "ssl.key.pem",
                           "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config", "SASL.PASSWORD"}) {
    EXPECT_TRUE(IsSecretProperty(name)) << name;
  }
  for (const char* name : {"sasl.username", "security.protocol", "ssl.ca.location", "sasl.mechanisms"}) {
    EXPECT_FALSE(IsSecretProperty(name)) << name;
  }
}

TEST(KafkaSecretsTest, DescribeAndRedactNeverShowSecrets) {
  const Properties p = {{"sasl.username", "alice"}, {"sasl.password", "hunter2"}, {"ssl.key.password", "k3y"}};
  const std::string described = DescribeProperties(p);
  EXPECT_EQ(described, "sasl.username=alice, sasl.password=[redacted], ssl.key.password=[redacted]");
  EXPECT_EQ(RedactSecrets("bad value hunter2 and k3y, hunter2", p),
            "bad value [redacted] and [redacted], [redacted]");
  EXPECT_EQ(RedactSecrets("alice", p), "alice");
}

TEST(KafkaSecretsTest, ClientErrorsDoNotEchoSecrets) {
  KafkaSettings s;
  s.properties = {{"sasl.password", "hunter2"}, {"no.such.password", "hunter2"}};
  core::Result<std::unique_ptr<KafkaAdmin>> admin = KafkaAdmin::Open(s);
  ASSERT_FALSE(admin.ok());
  EXPECT_NE(admin.status().message().find("no.such.password"), std::string::npos) << admin.status().message();
  EXPECT_EQ(admin.status().message().find("hunter2"), std::string::npos) << admin.status().message();

  s.properties = {{"sasl.password", "hunter2"}, {"security.protocol", "carrier-pigeon"}};
  admin = KafkaAdmin::Open(s);
  ASSERT_FALSE(admin.ok());
  EXPECT_NE(admin.status().message().find("security.protocol"), std::string::npos) << admin.status().message();
  EXPECT_EQ(admin.status().message().find("hunter2"), std::string::npos);
}

TEST(KafkaConnectTest, UnreachableBrokerIsAClearErrorAfterTheTimeout) {
  KafkaSettings s;
  s.brokers = "127.0.0.1:1";  // nothing listens on port 1
  s.connect_timeout_ms = 700;
  core::Result<std::unique_ptr<KafkaSink>> sink = KafkaSink::Open(s);
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find("cannot reach Kafka at 127.0.0.1:1 within 700 ms (kafka.connect_timeout_ms)"),
            std::string::npos)
      << sink.status().message();
  core::Result<std::unique_ptr<KafkaSource>> source = KafkaSource::Open(s, {{"acme.jobs"}, false});
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("cannot reach Kafka"), std::string::npos) << source.status().message();
}

}  // namespace
}  // namespace acmetrace::kafka
