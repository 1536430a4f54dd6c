// How an anomaly kind registers itself: its id, the rule in one line, its config keys (name, default,
// help, type, and the member of its settings struct each fills) and how its settings become a factory.
// registry.cc lists every kind once; each kind's file defines its entry.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "acmetrace/core/config.h"
#include "acmetrace/processors/detector.h"

namespace acmetrace::processors::detectors {

/// A key in seconds held in milliseconds by member (keys named *_s).
template <class S>
struct Ms {
  int64_t S::*member;
};
/// The member of a kind's settings S a key fills: in ms, an integer or a number; nothing
/// (std::monostate) for a key the kind reads itself (lists, and keys whose member differs in form).
template <class S>
using KeyTarget = std::variant<std::monostate, Ms<S>, int64_t S::*, double S::*>;

/// One config key of a kind: declared as detect.<kind>.<name> with the type type() makes, and read
/// into target. One typed declaration per setting. Literal type.
template <class S>
struct KeySpec {
  std::string_view name;
  std::string_view default_value;
  std::string_view help;
  core::ConfigType (*type)();
  KeyTarget<S> target{};
};

// The types detector keys share (KeySpec::type).
/// Seconds >= 0: how long a condition must hold, a hold time, a history length.
inline core::ConfigType Seconds() { return core::ConfigType::Seconds(0); }
/// Seconds > 0: time constants and windows, which divide.
inline core::ConfigType PositiveSeconds() { return core::ConfigType::PositiveSeconds(); }
/// Seconds >= 1: the step between two judgements (a smaller one would judge the same second again).
inline core::ConfigType StepSeconds() { return core::ConfigType::Seconds(1); }
/// A share or fraction in [0, 1].
inline core::ConfigType Share() { return core::ConfigType::Double(0, 1); }
/// A multiple of a baseline, > 0.
inline core::ConfigType Ratio() { return core::ConfigType::Double(0, 1e9, core::ConfigType::Bound::kOpen); }
/// A number >= 0 (a score, a rate, MiB, percent of utilization).
inline core::ConfigType NonNegative() { return core::ConfigType::Double(0, 1e15); }
/// A percentage in [0, 100] (of utilization).
inline core::ConfigType Percent() { return core::ConfigType::Double(0, 100); }
/// A temperature in C.
inline core::ConfigType Celsius() { return core::ConfigType::Double(-273.15, 1000); }
/// A count of GPUs or peers >= 1.
inline core::ConfigType Count() { return core::ConfigType::Int(1, 100'000'000); }
/// Slurm final states, comma-separated, at least one.
inline core::ConfigType States() { return core::ConfigType::List(core::ConfigType::NonEmptyString(), 1); }

/// Reads a kind's keys (detect.<kind>.<name>) from the run's config, each checked against its declared
/// type first, so a wrong value is std::invalid_argument naming where it came from (start-up only).
/// Value type.
class KindConfig {
 public:
  KindConfig(const core::Config& config, std::string_view kind) : config_(config), prefix_("detect.") {
    prefix_.append(kind);
    prefix_ += '.';
  }
  double Double(std::string_view name) const { return config_.GetDouble(Checked(name)); }
  int64_t Int(std::string_view name) const { return config_.GetInt(Checked(name)); }
  /// Seconds as milliseconds (keys named *_s).
  int64_t Millis(std::string_view name) const { return std::llround(Double(name) * 1000.0); }
  bool Bool(std::string_view name) const { return config_.GetBool(Checked(name)); }
  std::vector<std::string> List(std::string_view name) const { return config_.GetList(Checked(name)); }
  /// The value as written, for messages.
  std::string Text(std::string_view name) const { return config_.GetString(Key(name)); }
  /// Settings S from a kind's table: each key into its target (a kind reads the keys without one).
  template <class S, size_t N>
  S Fill(const KeySpec<S> (&keys)[N]) const {
    S s{};
    for (const KeySpec<S>& key : keys) {
      if (const auto* ms = std::get_if<Ms<S>>(&key.target)) s.*(ms->member) = Millis(key.name);
      if (const auto* integer = std::get_if<int64_t S::*>(&key.target)) s.**integer = Int(key.name);
      if (const auto* number = std::get_if<double S::*>(&key.target)) s.**number = Double(key.name);
    }
    return s;
  }
  /// A check across keys failed: std::invalid_argument "WHERE: reason" for key name.
  [[noreturn]] void Fail(std::string_view name, const std::string& reason) const {
    throw std::invalid_argument(config_.Where(Key(name)) + ": " + reason);
  }

 private:
  std::string Key(std::string_view name) const { return prefix_ + std::string(name); }
  std::string Checked(std::string_view name) const {
    std::string key = Key(name);
    config_.RequireValid(key);
    return key;
  }
  const core::Config& config_;
  std::string prefix_;
};

/// A DetectorKind's declare: the keys of table keys, as detect.<id>.<name>.
template <const auto& keys>
void DeclareKeys(core::Config& config, std::string_view id) {
  for (const auto& key : keys) {
    std::string name = "detect.";
    name.append(id).append(1, '.').append(key.name);
    config.Declare(name, std::string(key.default_value), std::string(key.help), key.type());
  }
}

/// Makes one detector of a kind with the settings read at start-up. Never throws (but bad_alloc).
using KindFactory = std::function<std::unique_ptr<Detector>()>;

/// A kind's factory over settings read once: each call makes a fresh Detector(settings).
template <typename DetectorType, typename Settings>
KindFactory FactoryOf(Settings settings) {
  return [settings = std::move(settings)]() -> std::unique_ptr<Detector> {
    return std::make_unique<DetectorType>(settings);
  };
}

/// A kind's entry in the registry. Literal type: defined with constant initialization in its file.
struct DetectorKind {
  std::string_view id;  // the published kind: "gpu_overheat", ...
  /// Declares the kind's keys (DeclareKeys over its table) as detect.<id>.*, in the table's order.
  void (*declare)(core::Config& config, std::string_view id);
  /// Reads and checks the kind's settings (start-up: throws std::invalid_argument naming the key) and
  /// returns the factory of its detectors.
  KindFactory (*configure)(const KindConfig& config);
  std::string_view rule;  // one line: what opens and closes a flag
};

extern const DetectorKind kGpuOverheatKind;
extern const DetectorKind kXidErrorKind;
extern const DetectorKind kTelemetryGapKind;
extern const DetectorKind kGpuStragglerKind;
extern const DetectorKind kUtilDropKind;
extern const DetectorKind kFailureBurstKind;
extern const DetectorKind kQueueBacklogKind;
extern const DetectorKind kLargeJobFailureKind;
extern const DetectorKind kNodeFailureKind;

}  // namespace acmetrace::processors::detectors
