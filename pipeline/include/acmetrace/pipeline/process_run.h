// The loops of `acmetrace process`, from stdin or Kafka into a StreamProcessor (whose sink writes
// acme.metrics and acme.anomalies). The binary parses the flags; these run the stage.
#pragma once

#include <atomic>
#include <cstdint>

#include "acmetrace/core/input_errors.h"
#include "acmetrace/core/transport.h"
#include "acmetrace/kafka/kafka_config.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"

namespace acmetrace::pipeline {

/// Framed JSON lines from stdin to their end; every window is closed at the end. Exit code (0, 1).
int RunProcessStdin(processors::StreamProcessor& processor, core::RecordSink& sink, core::InputErrors& errors,
                    const std::atomic<bool>& stop);

/// Every partition of the input topics, the clusters owned through the consumer group, state and
/// offsets in snapshots (committed to the group after each save); until stop, or with until_end
/// until the input present at start is consumed. Exit code (0, 1).
int RunProcessKafka(processors::StreamProcessor& processor, core::RecordSink& sink, core::InputErrors& errors,
                    const processors::ProcessOptions& options, const kafka::KafkaSettings& settings, bool until_end,
                    const std::atomic<bool>& stop);

/// The one-line summary on stderr: records, late, input errors, windows and transitions, records/s.
void PrintProcessSummary(const processors::ProcessStats& stats, const core::InputErrors& errors, int64_t wall_ms);

}  // namespace acmetrace::pipeline
