// large_job_failure: a job of at least min_gpus GPUs ends failed (by default FAILED, NODE_FAIL or
// TIMEOUT, which the release counts as failed): hours of hundreds of GPUs may be lost. Subject: the job
// id; the flag opens at the job's end and closes hold_s later.
#include "detector_kind.h"
#include "job_end_flag.h"

namespace acmetrace::processors::detectors {
namespace {

constexpr KeySpec kKeys[] = {
    {"min_gpus", "256", "a job is large from this many GPUs (the paper's large pretraining jobs)", &Count},
    {"states", "FAILED,NODE_FAIL,TIMEOUT", "final states that count as a failure, comma-separated", &States},
    {"hold_s", "600", "seconds the flag stays open after the job's end", &Seconds},
};

struct LargeJobFailureSettings {
  int64_t min_gpus;
  std::vector<std::string> states;
  int64_t hold_ms;
};

KindFactory Configure(const KindConfig& c) {
  const LargeJobFailureSettings s{c.Int("min_gpus"), c.List("states"), c.Millis("hold_s")};
  return [s]() -> std::unique_ptr<Detector> {
    return std::make_unique<JobEndFlagDetector>(
        "large_job_failure", s.hold_ms,
        [s](const core::JobEvent& job) { return job.gpu_num >= s.min_gpus && StateListed(s.states, job.state); },
        [](const core::JobEvent& job) { return static_cast<double>(job.gpu_num); }, static_cast<double>(s.min_gpus));
  };
}

}  // namespace

extern const DetectorKind kLargeJobFailureKind{
    "large_job_failure", "a job of at least min_gpus GPUs ends failed (subject: the job id); value: its GPUs", kKeys,
    &Configure};

}  // namespace acmetrace::processors::detectors
