// What the score report (report.cc) and the notification report (notifications.cc) write alike about
// the incidents: the counts per kind and the head of each incident's entry.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "acmetrace/scoring/incidents.h"
#include "acmetrace/scoring/matcher.h"

namespace acmetrace::scoring {

/// {kind: {caught_name: caught, "total": total}} ("caught" in the score, "notified" in notifications).
inline nlohmann::ordered_json ByKindJson(const std::map<std::string, KindCount>& by_kind, std::string_view caught_name) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [kind, count] : by_kind) out[kind] = {{caught_name, count.caught}, {"total", count.total}};
  return out;
}

/// An incident's entry up to its subject; the report appends its own fields.
inline nlohmann::ordered_json IncidentEntryJson(const Incident& i) {
  return {{"cluster", i.cluster}, {"kind", i.kind}, {"subject", i.subject}};
}

}  // namespace acmetrace::scoring
