// JSON encoding of records and the stdio framing {"topic":...,"key":...,"value":{...}}.
#pragma once

#include <string>

#include "acmetrace/core/record.h"

namespace acmetrace::core {

/// Appends the record's JSON value (design.md "Records"), without a newline.
void AppendRecordJson(std::string& out, const Record& record);

/// Appends one stdio line: {"topic":"acme.jobs","key":"seren/5778432","value":{...}}\n
void AppendFramedLine(std::string& out, const Record& record);

/// Appends s as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string& out, std::string_view s);

/// Appends a number as the shortest text that reads back to the same double; NaN becomes null.
void AppendJsonNumber(std::string& out, double value);

}  // namespace acmetrace::core
