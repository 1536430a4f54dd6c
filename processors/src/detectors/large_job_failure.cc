// large_job_failure: a job of at least min_gpus GPUs ends failed (by default FAILED, NODE_FAIL or
// TIMEOUT, which the release counts as failed): hours of hundreds of GPUs may be lost. Subject: the job
// id; the flag opens at the job's end and closes hold_s later.
#include "detector_kind.h"
#include "job_end_flag.h"

namespace acmetrace::processors::detectors {
namespace {

constexpr KeySpec kKeys[] = {
    {"min_gpus", "256", "a job is large from this many GPUs (the paper's large pretraining jobs)"},
    {"states", "FAILED,NODE_FAIL,TIMEOUT", "final states that count as a failure, comma-separated"},
    {"hold_s", "600", "seconds the flag stays open after the job's end"},
};

std::unique_ptr<Detector> Make(const KindConfig& c) {
  std::vector<std::string> states = c.List("states");
  const int64_t min_gpus = c.Int("min_gpus");
  return std::make_unique<JobEndFlagDetector>(
      "large_job_failure", c.Millis("hold_s"),
      [states, min_gpus](const core::JobEvent& job) { return job.gpu_num >= min_gpus && StateListed(states, job.state); },
      [](const core::JobEvent& job) { return static_cast<double>(job.gpu_num); }, static_cast<double>(min_gpus));
}

}  // namespace

extern const DetectorKind kLargeJobFailureKind{
    "large_job_failure", "a job of at least min_gpus GPUs ends failed (subject: the job id); value: its GPUs", kKeys,
    &Make};

}  // namespace acmetrace::processors::detectors
