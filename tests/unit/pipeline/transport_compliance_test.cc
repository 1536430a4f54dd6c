// The transport compliance suite (transport_compliance.h) over every registered transport that
// needs no server: the in-process queues and the file transport. Kafka's instance is an
// integration test (tests/integration/kafka_transport_compliance_test.cc).
#include "transport_compliance.h"

#include <filesystem>

#include "test_files.h"

namespace acmetrace::pipeline::testing {
namespace {

std::vector<TransportCase> Cases() {
  std::vector<TransportCase> cases;
  for (const TransportKind* kind : TransportKinds()) {
    if (!kind->in_one_process || kind->name == "kafka") continue;  // kafka: with its broker, label kafka
    cases.push_back(TransportCase{std::string(kind->name), [](core::Config& config) {
                                    // A fresh directory per test, three files per topic.
                                    const std::string dir = acmetrace::TestDir();
                                    ASSERT_TRUE(config.Set("file.dir", dir).ok());
                                    ASSERT_TRUE(config.Set("file.partitions", "3").ok());
                                  }});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Registered, TransportComplianceTest, ::testing::ValuesIn(Cases()), CaseName);

TEST(TransportRegistryTest, EveryTransportThatHopsInOneProcessIsUnderTheSuite) {
  // The suite runs over the registry, so a new transport is under it by being listed; Kafka's
  // instance is the integration one.
  std::vector<std::string> covered;
  for (const TransportCase& c : Cases()) covered.push_back(c.kind);
  EXPECT_NE(std::find(covered.begin(), covered.end(), "in-process"), covered.end());
  EXPECT_NE(std::find(covered.begin(), covered.end(), "file"), covered.end());
}

// The stages' source and sink keys take exactly the registered names: every transport that writes
// is a replay sink, every one that reads a process source, and nothing else is.
TEST(TransportRegistryTest, SourceAndSinkKeysTakeTheRegisteredNames) {
  for (const TransportKind* kind : TransportKinds()) {
    core::Config config;
    DeclareAllConfig(config);
    if (!kind->writes_as.empty()) {
      ASSERT_TRUE(config.Set("replay.sink", std::string(kind->writes_as)).ok());
      EXPECT_TRUE(config.Validate().empty()) << kind->name;
    }
    if (!kind->reads_as.empty()) {
      ASSERT_TRUE(config.Set("process.source", std::string(kind->reads_as)).ok());
      EXPECT_TRUE(config.Validate().empty()) << kind->name;
    }
  }
  core::Config config;
  DeclareAllConfig(config);
  ASSERT_TRUE(config.Set("replay.sink", "carrier-pigeon").ok());
  const std::vector<std::string> errors = config.Validate();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors.front().rfind("replay.sink: expected stdout, null, kafka", 0), 0u) << errors.front();
}

}  // namespace
}  // namespace acmetrace::pipeline::testing
