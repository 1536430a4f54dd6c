// A previous scorecard (`score --json` output) to compare with: `score --baseline OLD.json`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acmetrace/core/status.h"

namespace acmetrace::scoring {

/// The largest baseline read: a --json document of a long window with its firing lists.
inline constexpr int64_t kMaxBaselineBytes = int64_t{256} << 20;

/// One rule (or the total) of a previous scorecard. Value type.
struct BaselineRule {
  std::string rule;
  std::string source = "rule";
  int64_t onsets = 0;
  int64_t false_alerts = 0;
  int64_t caught = 0;
  int64_t total_incidents = 0;
  std::optional<double> precision;
  std::optional<double> recall;
};

/// A previous scorecard: its rules in its order and its total. Value type.
struct Baseline {
  std::string file;
  std::vector<BaselineRule> rules;
  std::optional<BaselineRule> total;
};

/// Parses a `score --json` document (simdjson: nesting and size bounded). Fields other than those of
/// BaselineRule are skipped. Errors read "--baseline: FILE: not a score --json document: WHY".
core::Result<Baseline> ParseBaseline(std::string_view json, const std::string& file);

/// Reads and parses FILE: a regular file of at most kMaxBaselineBytes.
core::Result<Baseline> LoadBaseline(const std::string& path);

}  // namespace acmetrace::scoring
