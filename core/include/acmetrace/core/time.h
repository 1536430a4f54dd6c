// Trace timestamps: parsing "2023-03-01 00:18:22+08:00" or unix seconds, and formatting them back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acmetrace::core {

/// The trace times every reader and the record parser accept: [2000-01-01, 2100-01-01) UTC. The
/// release spans 2023; a time outside is a corrupt cell or field, reported as a bad row or line.
/// Not accepting it matters: stages step through event time (60 s judgements), so one year-9999
/// row would make them spin, and a reader that kept it would skip every later row as going back
/// in time.
inline constexpr int64_t kMinTraceTimeMs = 946'684'800'000;    // 2000-01-01T00:00:00Z
inline constexpr int64_t kMaxTraceTimeMs = 4'102'444'800'000;  // 2100-01-01T00:00:00Z
inline constexpr bool IsTraceTimeMs(int64_t ts_ms) { return ts_ms >= kMinTraceTimeMs && ts_ms < kMaxTraceTimeMs; }
/// The reason a reader gives for a time outside that range.
inline constexpr std::string_view kTraceTimeRangeReason = "outside the accepted years 2000-2099";

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);

/// Parses ISO 8601 with an explicit offset ("2023-03-01 00:18:22+08:00", "...T...Z", optional
/// fractional seconds, offset as +HH:MM or +HHMM) into unix milliseconds. Nothing else is accepted:
/// a time without an offset is ambiguous and is an error.
std::optional<int64_t> ParseIsoTimeMs(std::string_view text);

/// Parses unix seconds ("1688169600", "1688169600.0", "1688169600.25") into unix milliseconds;
/// nullopt beyond +-10^12 s (whose milliseconds would overflow), but no range check otherwise.
std::optional<int64_t> ParseUnixSecondsMs(std::string_view text);

/// Either of the two forms above: what the release's files and our --from/--to accept.
std::optional<int64_t> ParseTimeMs(std::string_view text);

/// Formats unix milliseconds as the release writes times: "2023-03-01 00:18:22+08:00" for an
/// offset of +480 minutes. Milliseconds are dropped (the release has whole seconds).
std::string FormatIsoTime(int64_t ts_ms, int offset_minutes);

/// Appends the same text as FormatIsoTime to out, without allocating (for writers on hot paths).
void AppendIsoTime(std::string& out, int64_t ts_ms, int offset_minutes);

}  // namespace acmetrace::core
