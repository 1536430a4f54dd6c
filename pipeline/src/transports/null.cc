// The null transport: a sink that counts records and keeps none (replay benchmarks).
#include "acmetrace/pipeline/hops.h"

namespace acmetrace::pipeline {
namespace {

class NullTransport : public Transport {
 public:
  core::Result<std::unique_ptr<core::RecordInput>> Reader(const InputHop&) override {
    return core::Status::Error("the null transport has no input");
  }
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const OutputHop&) override {
    return std::unique_ptr<core::RecordSink>(std::make_unique<core::NullSink>());
  }
};

}  // namespace

extern const TransportKind kNullTransport;
const TransportKind kNullTransport{
    "null", "", "null", "discards records, counting them (replay benchmarks)",
    /*in_one_process=*/false, /*can_seek=*/false, nullptr, &MakeDefaultTransport<NullTransport>};

}  // namespace acmetrace::pipeline
