// Number parsing for CSV cells: fast_float for doubles, exact integers, empty = no sample.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace acmetrace::core {

/// Parses a whole cell as a double (leading/trailing spaces allowed). nullopt if it is not one.
std::optional<double> ParseDouble(std::string_view text);

/// Parses a whole cell as an integer; "8.0" is accepted as 8, "8.5" is not.
std::optional<int64_t> ParseInteger(std::string_view text);

/// Parses a whole JSON number (RFC 8259 grammar: no '+', no leading zeros, no spaces), correctly
/// rounded. nullopt if it is not one or is too large for a double.
std::optional<double> ParseJsonNumber(std::string_view text);
/// The JSON number at the start of [p, end) into out: the first character after it, or nullptr if
/// none is there (then out is unchanged).
const char* ParseJsonNumberPrefix(const char* p, const char* end, double& out);
/// Trims ASCII spaces and tabs.
std::string_view TrimSpaces(std::string_view text);

}  // namespace acmetrace::core
