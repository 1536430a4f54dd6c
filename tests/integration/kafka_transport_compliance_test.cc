// The transport compliance suite (tests/unit/pipeline/transport_compliance.h) over the Kafka
// transport: a broker of the suite's own (other tests write the same topics on the shared one),
// three partitions per topic.
#include "pipeline/transport_compliance.h"

#include <memory>

#include "kafka_test_support.h"

namespace acmetrace::pipeline::testing {
namespace {

const std::string& Brokers() {
  static const std::unique_ptr<kafka::testing::OwnBroker> broker = std::make_unique<kafka::testing::OwnBroker>();
  return broker->bootstrap();
}

INSTANTIATE_TEST_SUITE_P(Kafka, TransportComplianceTest,
                         ::testing::Values(TransportCase{"kafka",
                                                         [](core::Config& config) {
                                                           ASSERT_FALSE(Brokers().empty()) << "no broker (scripts/kafka-local)";
                                                           ASSERT_TRUE(config.Set("kafka.brokers", Brokers()).ok());
                                                           ASSERT_TRUE(config.Set("kafka.partitions", "3").ok());
                                                           ASSERT_TRUE(config.Set("kafka.linger_ms", "5").ok());
                                                         }}),
                         CaseName);

}  // namespace
}  // namespace acmetrace::pipeline::testing
