// gpu_overheat: a GPU's temperature stays at or above open_c; the flag closes once it has stayed below
// close_c for a while. Subject: the GPU ("10.140.1.10-3").
#include "detector_kind.h"
#include "gpu_metric_flag.h"

namespace acmetrace::processors::detectors {
namespace {

// This kind's settings, a row each in the registry's KeySpec shape: alike in shape by design.
constexpr KeySpec kKeys[] = {
    {"open_c", "85", "open when GPU_TEMP (C) has been at or above this for open_for_s (A100 slowdown starts near 87 C)",
     &Celsius},
    {"open_for_s", "30", "seconds GPU_TEMP must stay at or above open_c before the flag opens", &Seconds},
    {"close_c", "80", "close when GPU_TEMP has been below this for close_for_s (hysteresis: at most open_c)", &Celsius},
    {"close_for_s", "120", "seconds GPU_TEMP must stay below close_c before the flag closes", &Seconds},
};

struct GpuOverheatSettings {
  double open_c, close_c;
  int64_t open_for_ms, close_for_ms;
};

GpuOverheatSettings ReadSettings(const KindConfig& c) {
  GpuOverheatSettings s{c.Double("open_c"), c.Double("close_c"), c.Millis("open_for_s"), c.Millis("close_for_s")};
  if (s.close_c > s.open_c) c.Fail("close_c", "must be at most open_c (" + c.Text("open_c") + ")");
  return s;
}

class GpuOverheatDetector : public GpuMetricFlagDetector {
 public:
  explicit GpuOverheatDetector(const GpuOverheatSettings& s)
      : GpuMetricFlagDetector("GPU_TEMP", s.open_for_ms, s.close_for_ms), open_c_(s.open_c), close_c_(s.close_c) {}

  std::string_view kind() const override { return "gpu_overheat"; }

 private:
  Judgement Judge(double t) const override { return {t >= open_c_, t < close_c_, t, open_c_, close_c_}; }

  const double open_c_, close_c_;
};

KindFactory Configure(const KindConfig& c) { return FactoryOf<GpuOverheatDetector>(ReadSettings(c)); }

}  // namespace

extern const DetectorKind kGpuOverheatKind{
    "gpu_overheat", "a GPU's GPU_TEMP stays at or above open_c (subject: the GPU, IP-index)", kKeys, &Configure};

}  // namespace acmetrace::processors::detectors
