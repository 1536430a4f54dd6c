// The in-process transport: bounded queues between the stages of one process (`acmetrace run`'s
// default), one per reader; backpressure, no loss.
#include <algorithm>

#include "acmetrace/core/in_process_queue.h"
#include "acmetrace/pipeline/hops.h"
#include "acmetrace/pipeline/run_config.h"

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
    for (const Output& out : outputs_) (void)out.queue->End(clusters);  // closing a queue cannot fail
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

// A reader's queue ends once every writer made after it has ended. A queue has no positions: a
// reader starts at the beginning of what is written after it was made (both Starts alike).
class InProcessTransport : public Transport {
 public:
  explicit InProcessTransport(size_t queue_capacity) : capacity_(queue_capacity) {}

  core::Result<std::unique_ptr<core::RecordInput>> Reader(const InputHop& hop) override {
    queues_.push_back({hop.topics, std::make_unique<core::InProcessQueue>(capacity_, 0)});
    return std::unique_ptr<core::RecordInput>(std::make_unique<core::QueueInput>(*queues_.back().queue, "in-process"));
  }
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const OutputHop& hop) override {
    auto out = std::make_unique<QueueFanOut>();
    for (Queue& q : queues_) {
      std::vector<std::string> shared;
      for (const std::string& t : hop.topics) {
        if (std::find(q.topics.begin(), q.topics.end(), t) != q.topics.end()) shared.push_back(t);
      }
      if (!shared.empty()) out->Add(*q.queue, std::move(shared));
    }
    return std::unique_ptr<core::RecordSink>(std::move(out));
  }
  void Cancel() override {
    for (Queue& q : queues_) q.queue->Cancel();
  }

 private:
  struct Queue {
    std::vector<std::string> topics;
    std::unique_ptr<core::InProcessQueue> queue;
  };
  size_t capacity_;
  std::vector<Queue> queues_;
};

core::Result<std::unique_ptr<Transport>> Make(const core::Config& config, std::FILE*) {
  return std::unique_ptr<Transport>(
      std::make_unique<InProcessTransport>(static_cast<size_t>(RunSettingsFromConfig(config).queue_capacity)));
}

}  // namespace

extern const TransportKind kInProcessTransport;
const TransportKind kInProcessTransport{
    "in-process", "", "", "bounded queues between the stages of one process (run.queue_capacity records each)",
    /*in_one_process=*/true, /*can_seek=*/false, nullptr, &Make};

}  // namespace acmetrace::pipeline
