// Admin API calls on any librdkafka client handle (the sink reuses its producer for them).
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acmetrace/core/status.h"
#include "acmetrace/kafka/kafka_admin.h"

namespace acmetrace::kafka::internal {

core::Result<std::vector<TopicDescription>> EnsureTopics(rd_kafka_t* rk, const std::vector<TopicSpec>& specs,
                                                         int64_t timeout_ms);
core::Result<TopicDescription> DescribeTopic(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms);

}  // namespace acmetrace::kafka::internal
