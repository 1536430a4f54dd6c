// Fuzzes a processor's state snapshot (StreamProcessor::Restore), the file a processor reads from
// process.state_dir when it takes a cluster over. A damaged or hostile file must be refused or loaded,
// never crash or hang the processor. A snapshot that loads is saved again, and that saved form loads
// and saves to the same bytes (whatever Restore accepts, it keeps whole). What a loaded state then does
// is not fuzzed here: values each within range but inconsistent together (a detector's clock years
// behind the cluster's buffered records) make the first window that closes walk those years step by
// step (docs/processors.md).
//
// The first byte picks the input's form (its value mod 3): 0, the rest is the whole snapshot; 1, the
// rest overwrites a valid snapshot (every detector's state, buffered records, an ended writer) from
// the offset the next two bytes give and the checksum is made to match, so the mutations reach every
// field behind the header; 2, the same overwrite without fixing the checksum: refused unless it
// changed nothing.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/core/record_parse.h"
#include "acmetrace/processors/detector.h"
#include "acmetrace/processors/process_config.h"
#include "acmetrace/processors/stream_processor.h"
#include "fuzz_support.h"

namespace {

using namespace acmetrace;

class NullSink : public core::RecordSink {
 public:
  core::Status Write(const core::Record&) override { return core::Status::Ok(); }
  core::Status Flush() override { return core::Status::Ok(); }
};

processors::DetectorFactory Detectors() {
  return [] {
    core::Config config;
    processors::DeclareDetectorConfig(config);
    return processors::MakeDetectors(config);
  };
}

// Two nodes of telemetry every 15 s for 10 minutes and a failed 256-GPU job, then both partitions'
// end markers, stopped before the last windows close: every part of a snapshot has something in it.
std::string ValidSnapshot() {
  NullSink sink;
  processors::StreamProcessor p(processors::ProcessOptions(), sink, Detectors());
  const int jobs = p.DeclarePartition("acme.jobs/0");
  const int util = p.DeclarePartition("acme.util/0");
  p.Own("seren");
  core::RecordParser parser;
  int64_t offset = 0;
  auto feed = [&](int partition, const std::string& line) {
    core::Record r;
    if (!parser.ParseFramedLine(line, r).ok()) std::abort();
    if (!p.Process(partition, offset++, std::move(r)).ok()) std::abort();
  };
  const int64_t t0 = 1688143200000;
  const std::string job = R"("job_id":"77","user":"u1","type":"Pretrain","node_num":32,"gpu_num":256,"cpu_num":4096)";
  feed(jobs, R"({"topic":"acme.jobs","key":"seren/77","value":{"v":1,"cluster":"seren","event":"submit","ts_ms":)" +
                 std::to_string(t0) + "," + job + "}}");
  feed(jobs, R"({"topic":"acme.jobs","key":"seren/77","value":{"v":1,"cluster":"seren","event":"start","ts_ms":)" +
                 std::to_string(t0 + 5000) + "," + job + "}}");
  for (int64_t t = t0; t <= t0 + 600'000; t += 15'000) {
    for (const char* node : {"10.140.0.131", "10.140.0.132"}) {
      const bool slow = t > t0 + 300'000 && node[11] == '1';
      feed(util, std::string(R"({"topic":"acme.util","key":"seren/)") + node +
                     R"(","value":{"v":1,"cluster":"seren","node":")" + node + R"(","ts_ms":)" + std::to_string(t) +
                     R"(,"gpu":{"FB_USED":[500,500,500,500,500,500,500,500],"GPU_TEMP":[50,51,52,90,50,50,50,50],)"
                     R"("GPU_UTIL":[99,99,99,99,99,99,99,99],"SM_ACTIVE":[0.8,0.8,0.8,)" +
                     (slow ? "0.2" : "0.8") + R"(,0.8,0.8,0.8,0.8],"XID_ERRORS":[0,0,0,0,0,)" +
                     (t == t0 + 450'000 ? "79" : "0") + R"(,0,0]},"host":{"NODE_CPU_UTILIZATION":40}}}})");
    }
  }
  feed(jobs, R"({"topic":"acme.jobs","key":"seren/77","value":{"v":1,"cluster":"seren","event":"end","ts_ms":)" +
                 std::to_string(t0 + 600'000) + "," + job +
                 R"(,"state":"FAILED","duration_s":595,"queue_s":5,"gpu_time":152320}})");
  if (!p.EndMarker(jobs, offset++, "seren").ok() || !p.EndMarker(util, offset++, "seren").ok()) std::abort();
  core::Result<std::string> snapshot = p.Snapshot("seren");
  if (!snapshot.ok()) std::abort();
  return snapshot.value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string valid = ValidSnapshot();
  if (size < 1) return 0;
  std::string snapshot;
  const int form = data[0] % 3;
  if (form == 0) {
    snapshot.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    if (size < 3) return 0;
    const size_t at = (static_cast<size_t>(data[1]) << 8 | data[2]) % valid.size();
    snapshot = valid;
    const size_t n = std::min(size - 3, snapshot.size() - at);
    std::memcpy(snapshot.data() + at, data + 3, n);
    if (form == 1 && snapshot.size() >= 4) {  // the checksum (the last 4 bytes) of what is now there
      const uint32_t crc = static_cast<uint32_t>(
          crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(snapshot.data()), static_cast<uInt>(snapshot.size() - 4)));
      std::memcpy(snapshot.data() + snapshot.size() - 4, &crc, 4);
    }
  }
  NullSink sink;
  processors::StreamProcessor p(processors::ProcessOptions(), sink, Detectors());
  p.DeclarePartition("acme.jobs/0");
  p.DeclarePartition("acme.util/0");
  const bool loaded = p.Restore(snapshot).ok();
  if (form == 2 && snapshot != valid) ACMETRACE_FUZZ_CHECK(!loaded);  // the checksum finds any change
  if (!loaded) {
    ACMETRACE_FUZZ_CHECK(p.owned_count() == 0);  // a refused snapshot leaves nothing half-loaded
    return 0;
  }
  ACMETRACE_FUZZ_CHECK(p.owned_count() == 1);
  const std::string cluster = p.owned().front();
  const core::Result<std::string> taken = p.Snapshot(cluster);
  ACMETRACE_FUZZ_CHECK(taken.ok());
  const std::string& saved = taken.value();
  processors::StreamProcessor again(processors::ProcessOptions(), sink, Detectors());
  again.DeclarePartition("acme.jobs/0");
  again.DeclarePartition("acme.util/0");
  if (const core::Status s = again.Restore(saved); !s.ok()) {
    std::fprintf(stderr, "a saved snapshot does not load: %s\n", s.message().c_str());
    std::abort();
  }
  const core::Result<std::string> resaved = again.Snapshot(cluster);
  ACMETRACE_FUZZ_CHECK(resaved.ok() && resaved.value() == saved);
  return 0;
}
