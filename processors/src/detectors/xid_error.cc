// xid_error: a GPU's XID_ERRORS register (the last XID code, 0 = none) shows a code. The flag opens on
// the first sample with a code and closes once the register has read 0 for close_for_s. Subject: the GPU.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "detector_kind.h"
#include "gpu_metric_flag.h"

namespace acmetrace::processors::detectors {
namespace {

struct XidErrorSettings {
  int64_t close_for_ms;
  std::vector<double> ignored;  // compared with the register's value, a double
};

// This kind's keys, a KeySpec row each (detector_kind.h): data in one shape in every kind, alike by design.
using S = XidErrorSettings;
constexpr KeySpec<S> kKeys[] = {
    {"close_for_s", "60", "close once XID_ERRORS has read 0 for this many seconds", &Seconds,
     Ms<S>{&S::close_for_ms}},
    // read below, into ignored
    {"ignore_codes", "", "XID codes never flagged, comma-separated (e.g. 13,31,43 to skip application faults)",
     [] { return core::ConfigType::List(core::ConfigType::Int(1, 1'000'000)); }},
};

S ReadSettings(const KindConfig& c) {
  S s = c.Fill(kKeys);
  for (const std::string& code : c.List("ignore_codes")) s.ignored.push_back(std::strtod(code.c_str(), nullptr));
  return s;
}

class XidErrorDetector : public GpuMetricFlagDetector {
 public:
  // An XID is an event: the flag opens at once; closing waits for the register to clear and stay clear.
  explicit XidErrorDetector(const XidErrorSettings& s)
      : GpuMetricFlagDetector("XID_ERRORS", 0, s.close_for_ms), ignored_(s.ignored) {}

  std::string_view kind() const override { return "xid_error"; }

 private:
  Judgement Judge(double code) const override {
    if (std::find(ignored_.begin(), ignored_.end(), code) != ignored_.end()) code = 0;
    return {code != 0, code == 0, code, 0, 0};
  }

  std::vector<double> ignored_;
};

KindFactory Configure(const KindConfig& c) { return FactoryOf<XidErrorDetector>(ReadSettings(c)); }

}  // namespace

extern const DetectorKind kXidErrorKind{"xid_error", &DeclareKeys<kKeys>, &Configure,
    "a GPU's XID_ERRORS register shows a code (subject: the GPU); closes when it has cleared"};

}  // namespace acmetrace::processors::detectors
