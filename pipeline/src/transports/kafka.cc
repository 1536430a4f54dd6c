// The Kafka transport: topics of a broker cluster, partitioned by cluster; stream markers in
// message headers; process instances of one consumer group share the clusters (GroupOwnership).
#include <algorithm>

#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_input.h"
#include "acmetrace/kafka/kafka_sink.h"
#include "acmetrace/pipeline/group_ownership.h"
#include "acmetrace/pipeline/hops.h"

namespace acmetrace::pipeline {
namespace {

// Readers read every partition of their topics by assignment (no group: offsets are the stage's),
// with kafka.idle_timeout_ms; writers are KafkaSinks of a declared stream (end markers; progress
// markers every kafka.progress_interval_ms of trace time for an ordered writer).
class KafkaTransport : public Transport {
 public:
  KafkaTransport(kafka::KafkaSettings settings, std::FILE* log) : settings_(std::move(settings)), log_(log) {}

  core::Result<std::unique_ptr<core::RecordInput>> Reader(const InputHop& hop) override {
    if (hop.create_topics) {
      std::vector<kafka::TopicSpec> specs;
      for (const kafka::TopicSpec& spec : kafka::TopicSpecsFromSettings(settings_)) {
        if (std::count(hop.topics.begin(), hop.topics.end(), spec.name) > 0) specs.push_back(spec);
      }
      if (core::Status s = Ensure(specs); !s.ok()) return s;
    }
    kafka::KafkaInputOptions options;
    options.topics = hop.topics;
    options.start = hop.start == InputHop::Start::kEnd ? kafka::KafkaInputOptions::Start::kEnd
                                                       : kafka::KafkaInputOptions::Start::kBeginning;
    options.idle_timeout_ms = settings_.idle_timeout_ms;
    core::Result<std::unique_ptr<kafka::KafkaInput>> input = kafka::KafkaInput::Open(settings_, options, log_);
    if (!input.ok()) return input.status();
    return std::unique_ptr<core::RecordInput>(std::move(input).value());
  }

  // KafkaSink::Open creates the missing kafka.topics.
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const OutputHop& hop) override {
    core::Result<std::unique_ptr<kafka::KafkaSink>> sink = kafka::KafkaSink::Open(settings_, log_);
    if (!sink.ok()) return sink.status();
    if (core::Status s = sink.value()->DeclareStream(hop.topics, hop.ordered ? settings_.progress_interval_ms : 0);
        !s.ok()) {
      return s;
    }
    return std::unique_ptr<core::RecordSink>(std::move(sink).value());
  }

  core::Result<std::unique_ptr<ClusterOwnership>> Ownership(const InputHop& hop, const processors::ProcessOptions& options,
                                                            core::RecordSink& sink,
                                                            std::function<void(const std::string&)> log) override {
    // The last of a process stage's hops (run's and process's wiring make it last): the admin
    // client is not needed any more.
    if (hop.ownership == InputHop::Ownership::kAll) {
      admin_.reset();
      return Transport::Ownership(hop, options, sink, std::move(log));
    }
    if (hop.create_topics) {
      // One partition per cluster: the group's assignment of it says who owns the cluster.
      const kafka::TopicSpec spec{options.ownership_topic, static_cast<int32_t>(options.clusters.size()),
                                  settings_.replication_factor, -1};
      const core::Status s = Ensure({spec});
      admin_.reset();
      if (!s.ok()) return s;
    }
    admin_.reset();
    return std::unique_ptr<ClusterOwnership>(std::make_unique<GroupOwnership>(options, settings_, sink, std::move(log)));
  }

  StageOptions EndOfInput(bool until_end) const override {
    StageOptions options = Transport::EndOfInput(until_end);
    options.unmarked_end_after_ms = settings_.unmarked_end_timeout_ms;
    return options;
  }
  // Its reads and writes time out by themselves.

 private:
  // One admin client for every hop a transport makes (a client is threads and a connection).
  core::Status Ensure(const std::vector<kafka::TopicSpec>& specs) {
    if (!settings_.create_topics || specs.empty()) return core::Status::Ok();
    if (!admin_) {
      core::Result<std::unique_ptr<kafka::KafkaAdmin>> admin = kafka::KafkaAdmin::Open(settings_, log_);
      if (!admin.ok()) return admin.status();
      admin_ = std::move(admin).value();
    }
    core::Result<std::vector<kafka::TopicDescription>> ensured = admin_->EnsureTopics(specs);
    if (!ensured.ok()) return ensured.status();
    return core::Status::Ok();
  }
  kafka::KafkaSettings settings_;
  std::FILE* log_;
  std::unique_ptr<kafka::KafkaAdmin> admin_;
};

core::Result<std::unique_ptr<Transport>> Make(const core::Config& config, std::FILE* log) {
  return std::unique_ptr<Transport>(std::make_unique<KafkaTransport>(kafka::KafkaSettingsFromConfig(config), log));
}

}  // namespace

extern const TransportKind kKafkaTransport;
const TransportKind kKafkaTransport{"kafka", "kafka", "kafka",
                                    "topics of a Kafka cluster (kafka.*); process instances of a consumer group share the clusters",
                                    /*in_one_process=*/true, /*can_seek=*/true, &kafka::DeclareKafkaConfig, &Make};

}  // namespace acmetrace::pipeline
