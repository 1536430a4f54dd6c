// node_failure: a job ends NODE_FAIL (Slurm: a node it ran on failed). The job trace carries no node
// placement, so the subject is the job id; the flag opens at the job's end and closes hold_s later.
#include "detector_kind.h"
#include "job_end_flag.h"

namespace acmetrace::processors::detectors {
namespace {

struct NodeFailureSettings {
  std::vector<std::string> states;
  int64_t hold_ms;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = NodeFailureSettings;
constexpr KeySpec<S> kKeys[] = {
    // read in Configure, into states
    {"states", "NODE_FAIL", "final job states that mean a node failed under the job, comma-separated", &States},
    {"hold_s", "600", "seconds the flag stays open after the job's end", &Seconds, Ms<S>{&S::hold_ms}},
};

KindFactory Configure(const KindConfig& c) {
  S s = c.Fill(kKeys);
  s.states = c.List("states");
  return [s]() -> std::unique_ptr<Detector> {
    return std::make_unique<JobEndFlagDetector>(
        "node_failure", s.hold_ms, [states = s.states](const core::JobEvent& job) { return StateListed(states, job.state); },
        [](const core::JobEvent& job) { return static_cast<double>(job.node_num); }, core::kNoSample);
  };
}

}  // namespace

extern const DetectorKind kNodeFailureKind{"node_failure", &DeclareKeys<kKeys>, &Configure,
    "a job ends NODE_FAIL (subject: the job id; the trace has no node placement); value: its nodes"};

}  // namespace acmetrace::processors::detectors
