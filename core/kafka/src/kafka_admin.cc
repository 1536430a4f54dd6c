// Topic creation (CreateTopics) and description (Metadata + DescribeConfigs) over librdkafka's Admin API.
#include "acmetrace/kafka/kafka_admin.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "rdkafka_handles.h"
#include "topic_admin.h"

namespace acmetrace::kafka {
namespace internal {
namespace {

// Partition counts of the topics the cluster has, by name.
core::Result<std::map<std::string, int32_t>> ListTopics(rd_kafka_t* rk, int64_t timeout_ms) {
  const rd_kafka_metadata_t* raw = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, nullptr, &raw, static_cast<int>(timeout_ms));
  MetadataHandle md(raw);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka: listing topics failed: ") + rd_kafka_err2str(err));
  }
  std::map<std::string, int32_t> out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = md->topics[i];
    if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) out[t.topic] = t.partition_cnt;
  }
  return out;
}

core::Result<AdminOptionsHandle> MakeOptions(rd_kafka_t* rk, rd_kafka_admin_op_t op, int64_t timeout_ms) {
  AdminOptionsHandle options(rd_kafka_AdminOptions_new(rk, op));
  char errstr[256];
  if (rd_kafka_AdminOptions_set_request_timeout(options.get(), static_cast<int>(timeout_ms), errstr, sizeof(errstr)) ||
      (op == RD_KAFKA_ADMIN_OP_CREATETOPICS &&
       rd_kafka_AdminOptions_set_operation_timeout(options.get(), static_cast<int>(timeout_ms), errstr,
                                                   sizeof(errstr)))) {
    return core::Status::Error(std::string("kafka admin options: ") + errstr);
  }
  return options;
}

// Waits for the admin result event of the call made on queue.
core::Result<EventHandle> AwaitResult(rd_kafka_queue_t* queue, int64_t timeout_ms, const char* what) {
  // The request timeout bounds the call; the margin lets librdkafka report its own timeout first.
  EventHandle event(rd_kafka_queue_poll(queue, static_cast<int>(timeout_ms + 5'000)));
  if (!event) return core::Status::Error(std::string("kafka: ") + what + ": no answer");
  if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return core::Status::Error(std::string("kafka: ") + what + ": " + rd_kafka_event_error_string(event.get()));
  }
  return event;
}

// Starts an admin request (start, with options for op and a queue of its own) and waits for its result
// event. The event owns the result: the options (copied into the request) and the queue need not outlive it.
core::Result<EventHandle> AdminRequest(rd_kafka_t* rk, rd_kafka_admin_op_t op, int64_t timeout_ms, const char* what,
                                       const std::function<void(const rd_kafka_AdminOptions_t*, rd_kafka_queue_t*)>& start) {
  core::Result<AdminOptionsHandle> options = MakeOptions(rk, op, timeout_ms);
  if (!options.ok()) return options.status();
  QueueHandle queue(rd_kafka_queue_new(rk));
  start(options.value().get(), queue.get());
  return AwaitResult(queue.get(), timeout_ms, what);
}

}  // namespace

core::Result<std::vector<TopicDescription>> EnsureTopics(rd_kafka_t* rk, const std::vector<TopicSpec>& specs,
                                                         int64_t timeout_ms) {
  core::Result<std::map<std::string, int32_t>> existing = ListTopics(rk, timeout_ms);
  if (!existing.ok()) return existing.status();
  std::vector<TopicDescription> out;
  std::vector<NewTopicHandle> owned;
  std::vector<rd_kafka_NewTopic_t*> to_create;
  char errstr[512];
  for (const TopicSpec& spec : specs) {
    TopicDescription d;
    d.name = spec.name;
    if (auto it = existing.value().find(spec.name); it != existing.value().end()) {
      d.partitions = it->second;
      out.push_back(d);
      continue;
    }
    NewTopicHandle nt(rd_kafka_NewTopic_new(spec.name.c_str(), spec.partitions, spec.replication_factor, errstr,
                                            sizeof(errstr)));
    if (!nt) return core::Status::Error("kafka: topic " + spec.name + ": " + errstr);
    const std::string retention = std::to_string(spec.retention_ms);
    if (rd_kafka_NewTopic_set_config(nt.get(), "retention.ms", retention.c_str()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return core::Status::Error("kafka: topic " + spec.name + ": cannot set retention.ms=" + retention);
    }
    to_create.push_back(nt.get());
    owned.push_back(std::move(nt));
    d.created = true;
    d.partitions = spec.partitions;
    d.retention_ms = retention;
    out.push_back(d);
  }
  if (to_create.empty()) return out;

  core::Result<EventHandle> event = AdminRequest(
      rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms, "creating topics",
      [&](const rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
        rd_kafka_CreateTopics(rk, to_create.data(), to_create.size(), options, queue);
      });
  if (!event.ok()) return event.status();
  size_t count = 0;
  const rd_kafka_topic_result_t** results =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event.value().get()), &count);
  for (size_t i = 0; i < count; ++i) {
    const rd_kafka_resp_err_t err = rd_kafka_topic_result_error(results[i]);
    const std::string name = rd_kafka_topic_result_name(results[i]);
    if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
      // Created by someone else since we listed: theirs stands.
      for (TopicDescription& d : out) {
        if (d.name == name) d.created = false;
      }
      continue;
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* why = rd_kafka_topic_result_error_string(results[i]);
      return core::Status::Error("kafka: creating topic " + name + ": " + (why != nullptr ? why : rd_kafka_err2str(err)));
    }
  }
  // A new topic shows in the metadata a moment after CreateTopics returns (the controller propagates
  // it): wait for every one, so a Describe or a produce right after finds it, and so a broker-default
  // partition count is known.
  std::vector<bool> visible(out.size());
  for (size_t i = 0; i < out.size(); ++i) visible[i] = !out[i].created;
  const auto pending = [&visible] { return std::find(visible.begin(), visible.end(), false) != visible.end(); };
  for (int attempt = 0; attempt < 50 && pending(); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    core::Result<std::map<std::string, int32_t>> now = ListTopics(rk, timeout_ms);
    if (!now.ok()) break;
    for (size_t i = 0; i < out.size(); ++i) {
      auto it = now.value().find(out[i].name);
      if (it == now.value().end() || it->second <= 0) continue;
      visible[i] = true;
      if (out[i].partitions < 0) out[i].partitions = it->second;
    }
  }
  return out;
}

// Walks the result's typed array as EnsureTopics does: librdkafka gives each request's result its own
// types, so the walks stay two.
core::Result<TopicDescription> DescribeTopic(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms) {
  core::Result<std::map<std::string, int32_t>> existing = ListTopics(rk, timeout_ms);
  if (!existing.ok()) return existing.status();
  auto it = existing.value().find(topic);
  if (it == existing.value().end()) return core::Status::Error("kafka: topic " + topic + " does not exist");
  TopicDescription d;
  d.name = topic;
  d.partitions = it->second;

  ConfigResourceHandle resource(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str()));
  rd_kafka_ConfigResource_t* resources[] = {resource.get()};
  core::Result<EventHandle> event = AdminRequest(
      rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms, "describing topic configs",
      [&](const rd_kafka_AdminOptions_t* options, rd_kafka_queue_t* queue) {
        rd_kafka_DescribeConfigs(rk, resources, 1, options, queue);
      });
  if (!event.ok()) return event.status();
  size_t count = 0;
  const rd_kafka_ConfigResource_t** described =
      rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(event.value().get()), &count);
  for (size_t i = 0; i < count; ++i) {
    if (rd_kafka_ConfigResource_error(described[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return core::Status::Error("kafka: describing " + topic + ": " +
                                 rd_kafka_ConfigResource_error_string(described[i]));
    }
    size_t n = 0;
    const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(described[i], &n);
    for (size_t j = 0; j < n; ++j) {
      if (std::string_view(rd_kafka_ConfigEntry_name(entries[j])) == "retention.ms") {
        const char* value = rd_kafka_ConfigEntry_value(entries[j]);
        d.retention_ms = value != nullptr ? value : "";
      }
    }
  }
  return d;
}

}  // namespace internal

std::vector<TopicSpec> TopicSpecsFromSettings(const KafkaSettings& settings) {
  std::vector<TopicSpec> specs;
  for (const std::string& name : settings.topics) {
    specs.push_back(TopicSpec{name, settings.partitions, settings.replication_factor, settings.retention_ms});
  }
  return specs;
}

struct KafkaAdmin::Impl {
  explicit Impl(std::FILE* log) : state(log) {}
  internal::ClientState state;  // before client: it is the client's callback opaque
  internal::KafkaHandle client;
  int64_t timeout_ms = 10'000;
};

KafkaAdmin::KafkaAdmin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KafkaAdmin::~KafkaAdmin() = default;

core::Result<std::unique_ptr<KafkaAdmin>> KafkaAdmin::Open(const KafkaSettings& settings, std::FILE* log) {
  auto impl = std::make_unique<Impl>(log);
  // The admin client needs only the connection and security settings; producer properties are harmless.
  core::Result<Properties> properties = ProducerProperties(settings);
  if (!properties.ok()) return properties.status();
  core::Result<internal::KafkaHandle> client =
      internal::CreateClient(properties.value(), internal::ClientRole::kAdmin, impl->state);
  if (!client.ok()) return client.status();
  impl->client = std::move(client).value();
  impl->timeout_ms = std::max<int64_t>(settings.connect_timeout_ms, 10'000);
  if (core::Status s = internal::WaitForBroker(impl->client.get(), impl->state, settings.brokers,
                                               settings.connect_timeout_ms);
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<KafkaAdmin>(new KafkaAdmin(std::move(impl)));
}

core::Result<std::vector<TopicDescription>> KafkaAdmin::EnsureTopics(const std::vector<TopicSpec>& specs) {
  return internal::EnsureTopics(impl_->client.get(), specs, impl_->timeout_ms);
}

core::Result<TopicDescription> KafkaAdmin::Describe(const std::string& topic) {
  return internal::DescribeTopic(impl_->client.get(), topic, impl_->timeout_ms);
}

}  // namespace acmetrace::kafka
