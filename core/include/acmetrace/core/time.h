// Trace timestamps: parsing "2023-03-01 00:18:22+08:00" or unix seconds, and formatting them back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acmetrace::core {

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);

/// Parses ISO 8601 with an explicit offset ("2023-03-01 00:18:22+08:00", "...T...Z", optional
/// fractional seconds, offset as +HH:MM or +HHMM) into unix milliseconds. Nothing else is accepted:
/// a time without an offset is ambiguous and is an error.
std::optional<int64_t> ParseIsoTimeMs(std::string_view text);

/// Parses unix seconds ("1688169600", "1688169600.0", "1688169600.25") into unix milliseconds.
std::optional<int64_t> ParseUnixSecondsMs(std::string_view text);

/// Either of the two forms above: what the release's files and our --from/--to accept.
std::optional<int64_t> ParseTimeMs(std::string_view text);

/// Formats unix milliseconds as the release writes times: "2023-03-01 00:18:22+08:00" for an
/// offset of +480 minutes. Milliseconds are dropped (the release has whole seconds).
std::string FormatIsoTime(int64_t ts_ms, int offset_minutes);

/// Appends the same text as FormatIsoTime to out, without allocating (for writers on hot paths).
void AppendIsoTime(std::string& out, int64_t ts_ms, int offset_minutes);

}  // namespace acmetrace::core
