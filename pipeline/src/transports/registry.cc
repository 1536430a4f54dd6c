// The one list of transports: each kind is a file of this folder and its line here. The stages'
// source and sink keys take their names from this list, and `acmetrace config` prints the settings
// each declares.
#include "acmetrace/pipeline/hops.h"

namespace acmetrace::pipeline {

extern const TransportKind kInProcessTransport;
extern const TransportKind kStdioTransport;
extern const TransportKind kNullTransport;
extern const TransportKind kKafkaTransport;
extern const TransportKind kFileTransport;

const std::vector<const TransportKind*>& TransportKinds() {
  static const std::vector<const TransportKind*> kinds = {
      &kInProcessTransport, &kStdioTransport, &kNullTransport, &kKafkaTransport, &kFileTransport,
  };
  return kinds;
}

}  // namespace acmetrace::pipeline
