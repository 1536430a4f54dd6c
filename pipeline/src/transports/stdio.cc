// The stdio transport: framed JSON lines from stdin and to stdout (`replay | process | export`).
#include <cstdio>

#include "acmetrace/pipeline/hops.h"

namespace acmetrace::pipeline {
namespace {

// stdin is read once, to its end: a stage over it always ends there.
class StdioTransport : public Transport {
 public:
  core::Result<std::unique_ptr<core::RecordInput>> Reader(const InputHop&) override {
    return std::unique_ptr<core::RecordInput>(std::make_unique<core::StdioInput>(stdin, "stdin"));
  }
  core::Result<std::unique_ptr<core::RecordSink>> Writer(const OutputHop&) override {
    return std::unique_ptr<core::RecordSink>(std::make_unique<core::StdioSink>(stdout));
  }
  StageOptions EndOfInput(bool) const override { return Transport::EndOfInput(true); }
};

}  // namespace

extern const TransportKind kStdioTransport;
const TransportKind kStdioTransport{
    "stdio", "stdin", "stdout", "framed JSON lines from stdin, to stdout",
    /*in_one_process=*/false, /*can_seek=*/false, nullptr, &MakeDefaultTransport<StdioTransport>};

}  // namespace acmetrace::pipeline
