// Trace timestamps: hand-written parsing because std::chrono::parse is missing from GCC 12 and
// this runs once per job row and per utilization row.
#include "acmetrace/core/time.h"

#include <charconv>

namespace acmetrace::core {
namespace {

bool ParseDigits(std::string_view text, size_t pos, size_t count, int64_t& out) {
  if (pos + count > text.size()) return false;
  int64_t value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  out = value;
  return true;
}

int64_t DaysInMonth(int64_t year, int64_t month) {
  static constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return 0;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

void CivilFromDays(int64_t z, int64_t& year, unsigned& month, unsigned& day) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  day = doy - (153 * mp + 2) / 5 + 1;
  month = mp < 10 ? mp + 3 : mp - 9;
  year = static_cast<int64_t>(yoe) + era * 400 + (month <= 2);
}

void AppendPadded(std::string& out, int64_t value, int width) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  for (int pad = width - static_cast<int>(end - buf); pad > 0; --pad) out.push_back('0');
  out.append(buf, end);
}

}  // namespace

int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int64_t> ParseIsoTimeMs(std::string_view text) {
  // YYYY-MM-DD[ T]HH:MM:SS[.fff][Z|+HH:MM|+HHMM]
  int64_t year, month, day, hour, minute, second;
  if (text.size() < 20) return std::nullopt;
  if (!ParseDigits(text, 0, 4, year) || text[4] != '-' || !ParseDigits(text, 5, 2, month) ||
      text[7] != '-' || !ParseDigits(text, 8, 2, day) || (text[10] != ' ' && text[10] != 'T') ||
      !ParseDigits(text, 11, 2, hour) || text[13] != ':' || !ParseDigits(text, 14, 2, minute) ||
      text[16] != ':' || !ParseDigits(text, 17, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) || hour > 23 || minute > 59 ||
      second > 60) {
    return std::nullopt;  // "2023-02-30" would otherwise silently become March 2
  }
  size_t pos = 19;
  int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100;
    size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }
  if (pos >= text.size()) return std::nullopt;  // no offset: ambiguous
  int64_t offset_minutes = 0;
  if (text[pos] == 'Z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    const int64_t sign = text[pos] == '-' ? -1 : 1;
    int64_t off_h, off_m;
    if (!ParseDigits(text, pos + 1, 2, off_h)) return std::nullopt;
    pos += 3;
    if (pos < text.size() && text[pos] == ':') ++pos;
    if (!ParseDigits(text, pos, 2, off_m)) return std::nullopt;
    pos += 2;
    if (off_h > 23 || off_m > 59) return std::nullopt;
    offset_minutes = sign * (off_h * 60 + off_m);
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

std::optional<int64_t> ParseUnixSecondsMs(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const bool negative = text.front() == '-';  // "-0.5": the sign is not in the integer part
  int64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(begin, end, seconds);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  // Far beyond any trace time, and seconds * 1000 must not overflow.
  if (seconds > 1'000'000'000'000 || seconds < -1'000'000'000'000) return std::nullopt;
  int64_t millis = 0;
  if (ptr != end) {
    if (*ptr != '.') return std::nullopt;
    ++ptr;
    int64_t scale = 100;
    for (; ptr != end; ++ptr) {
      if (*ptr < '0' || *ptr > '9') return std::nullopt;
      millis += (*ptr - '0') * scale;
      scale /= 10;
    }
  }
  return seconds * 1000 + (negative ? -millis : millis);
}

std::optional<int64_t> ParseTimeMs(std::string_view text) {
  if (text.size() >= 20 && text[4] == '-') return ParseIsoTimeMs(text);
  return ParseUnixSecondsMs(text);
}

void AppendIsoTime(std::string& out, int64_t ts_ms, int offset_minutes) {
  int64_t seconds = (ts_ms >= 0 ? ts_ms : ts_ms - 999) / 1000 + int64_t{offset_minutes} * 60;
  int64_t days = (seconds >= 0 ? seconds : seconds - 86399) / 86400;
  int64_t rem = seconds - days * 86400;
  int64_t year;
  unsigned month, day;
  CivilFromDays(days, year, month, day);
  AppendPadded(out, year, 4);
  out.push_back('-');
  AppendPadded(out, month, 2);
  out.push_back('-');
  AppendPadded(out, day, 2);
  out.push_back(' ');
  AppendPadded(out, rem / 3600, 2);
  out.push_back(':');
  AppendPadded(out, rem / 60 % 60, 2);
  out.push_back(':');
  AppendPadded(out, rem % 60, 2);
  out.push_back(offset_minutes < 0 ? '-' : '+');
  const int abs_offset = offset_minutes < 0 ? -offset_minutes : offset_minutes;
  AppendPadded(out, abs_offset / 60, 2);
  out.push_back(':');
  AppendPadded(out, abs_offset % 60, 2);
}

std::string FormatIsoTime(int64_t ts_ms, int offset_minutes) {
  std::string out;
  AppendIsoTime(out, ts_ms, offset_minutes);
  return out;
}

}  // namespace acmetrace::core
