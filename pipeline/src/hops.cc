// InProcessTransport and KafkaTransport.
#include "acmetrace/pipeline/hops.h"

#include <algorithm>

#include "acmetrace/kafka/kafka_admin.h"
#include "acmetrace/kafka/kafka_input.h"
#include "acmetrace/kafka/kafka_sink.h"

namespace acmetrace::pipeline {
namespace {

// Writes each record into the queues of the readers of its topic; End closes it on each.
class QueueFanOut : public core::RecordSink {
 public:
  void Add(core::InProcessQueue& queue, std::vector<std::string> topics) {
    queue.AddWriter();
    outputs_.push_back({&queue, std::move(topics)});
  }
  core::Status Write(const core::Record& record) override {
    const std::string_view topic = core::TopicOf(record);
    for (const Output& out : outputs_) {
      if (std::find(out.topics.begin(), out.topics.end(), topic) == out.topics.end()) continue;
      if (core::Status s = out.queue->Write(record); !s.ok()) return s;
    }
    return core::Status::Ok();
  }
  core::Status Flush() override { return core::Status::Ok(); }
  core::Status Heartbeat(int64_t trace_ts_ms, bool paused) override {
    for (const Output& out : outputs_) {
      if (core::Status s = out.queue->Heartbeat(trace_ts_ms, paused); !s.ok()) return s;
    }
    return core::Status::Ok();
  }
  core::Status End(const std::vector<std::string>& clusters) override {
    for (const Output& out : outputs_) (void)out.queue->End(clusters);
    outputs_.clear();
    return core::Status::Ok();
  }
  ~QueueFanOut() override { (void)End({}); }  // a writer that failed still lets its readers end

 private:
  struct Output {
    core::InProcessQueue* queue;
    std::vector<std::string> topics;
  };
  std::vector<Output> outputs_;
};

}  // namespace

const std::vector<std::string>& ProcessInputTopics() {
  static const std::vector<std::string> topics = {std::string(core::kTopicJobs), std::string(core::kTopicUtil),
                                                  std::string(core::kTopicPower)};
  return topics;
}

const std::vector<std::string>& ExportInputTopics() {
  static const std::vector<std::string> topics = {std::string(core::kTopicUtil), std::string(core::kTopicMetrics),
                                                  std::string(core::kTopicAnomalies)};
  return topics;
}

core::Result<std::unique_ptr<core::RecordInput>> InProcessTransport::Reader(const std::vector<std::string>& topics) {
  // No writer yet: the queue ends once the writers made later have all ended.
  queues_.push_back({topics, std::make_unique<core::InProcessQueue>(capacity_, 0)});
  return std::unique_ptr<core::RecordInput>(std::make_unique<core::QueueInput>(*queues_.back().queue, "in-process"));
}

core::Result<std::unique_ptr<core::RecordSink>> InProcessTransport::Writer(const std::vector<std::string>& topics,
                                                                           bool) {
  auto out = std::make_unique<QueueFanOut>();
  for (Queue& q : queues_) {
    std::vector<std::string> shared;
    for (const std::string& t : topics) {
      if (std::find(q.topics.begin(), q.topics.end(), t) != q.topics.end()) shared.push_back(t);
    }
    if (!shared.empty()) out->Add(*q.queue, std::move(shared));
  }
  return std::unique_ptr<core::RecordSink>(std::move(out));
}

void InProcessTransport::Cancel() {
  for (Queue& q : queues_) q.queue->Cancel();
}

core::Status KafkaTransport::EnsureTopics() {
  if (topics_ensured_ || !settings_.create_topics) return core::Status::Ok();
  core::Result<std::unique_ptr<kafka::KafkaAdmin>> admin = kafka::KafkaAdmin::Open(settings_, log_);
  if (!admin.ok()) return admin.status();
  core::Result<std::vector<kafka::TopicDescription>> ensured =
      admin.value()->EnsureTopics(kafka::TopicSpecsFromSettings(settings_));
  if (!ensured.ok()) return ensured.status();
  topics_ensured_ = true;
  return core::Status::Ok();
}

core::Result<std::unique_ptr<core::RecordInput>> KafkaTransport::Reader(const std::vector<std::string>& topics) {
  if (core::Status s = EnsureTopics(); !s.ok()) return s;
  kafka::KafkaInputOptions options;
  options.topics = topics;
  options.start = kafka::KafkaInputOptions::Start::kEnd;
  options.idle_timeout_ms = settings_.idle_timeout_ms;
  core::Result<std::unique_ptr<kafka::KafkaInput>> input = kafka::KafkaInput::Open(settings_, options, log_);
  if (!input.ok()) return input.status();
  return std::unique_ptr<core::RecordInput>(std::move(input).value());
}

core::Result<std::unique_ptr<core::RecordSink>> KafkaTransport::Writer(const std::vector<std::string>& topics,
                                                                       bool ordered) {
  core::Result<std::unique_ptr<kafka::KafkaSink>> sink = kafka::KafkaSink::Open(settings_, log_);
  if (!sink.ok()) return sink.status();
  if (core::Status s = sink.value()->DeclareStream(topics, ordered ? settings_.progress_interval_ms : 0); !s.ok()) {
    return s;
  }
  return std::unique_ptr<core::RecordSink>(std::move(sink).value());
}

}  // namespace acmetrace::pipeline
