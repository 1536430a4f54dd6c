// gpu_overheat: a GPU's temperature stays at or above open_c; the flag closes once it has stayed below
// close_c for a while. Subject: the GPU ("10.140.1.10-3").
#include "detector_kind.h"
#include "gpu_metric_flag.h"

namespace acmetrace::processors::detectors {
namespace {

struct GpuOverheatSettings {
  double open_c, close_c;
  int64_t open_for_ms, close_for_ms;
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = GpuOverheatSettings;
constexpr KeySpec<S> kKeys[] = {
    {"open_c", "85", "open when GPU_TEMP (C) has been at or above this for open_for_s (A100 slowdown starts near 87 C)",
     &Celsius, &S::open_c},
    {"open_for_s", "30", "seconds GPU_TEMP must stay at or above open_c before the flag opens", &Seconds,
     Ms<S>{&S::open_for_ms}},
    {"close_c", "80", "close when GPU_TEMP has been below this for close_for_s (hysteresis: at most open_c)", &Celsius,
     &S::close_c},
    {"close_for_s", "120", "seconds GPU_TEMP must stay below close_c before the flag closes", &Seconds,
     Ms<S>{&S::close_for_ms}},
};

S ReadSettings(const KindConfig& c) {
  const S s = c.Fill(kKeys);
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

extern const DetectorKind kGpuOverheatKind{"gpu_overheat", &DeclareKeys<kKeys>, &Configure,
    "a GPU's GPU_TEMP stays at or above open_c (subject: the GPU, IP-index)"};

}  // namespace acmetrace::processors::detectors
