// JSON writer for records: hand-rolled with to_chars because it runs once per replayed record.
#include "acmetrace/core/record_json.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace acmetrace::core {

namespace {

// The longest text WriteJsonNumber writes: to_chars of a double ("-2.2250738585072014e-308").
constexpr size_t kMaxNumberChars = 24;

// The most bytes WriteJsonString writes for s (every byte escaped as \u00XX, and the quotes).
size_t JsonStringBound(std::string_view s) { return 2 + 6 * s.size(); }

bool IsPlainJsonString(std::string_view s) {
  // Eight bytes at a time (a util record has ~15 names to check): a word holds a control
  // character if one of its bytes is below 0x20, a quote or backslash if its XOR with them has a
  // zero byte (the bit hacks "hasless" and "haszero", exact for the word as a whole).
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = kOnes * 0x80;
  auto has_less = [](uint64_t x, uint64_t n) { return ((x - kOnes * n) & ~x & kHigh) != 0; };
  auto plain_word = [&](uint64_t word) {
    return !(has_less(word, 0x20) || has_less(word ^ (kOnes * '"'), 1) || has_less(word ^ (kOnes * '\\'), 1));
  };
  const size_t n = s.size();
  if (n < 8) {  // padded with spaces, which are plain, instead of a loop over the bytes
    uint64_t word = kOnes * ' ';
    if (n > 0) std::memcpy(&word, s.data(), n);
    return plain_word(word);
  }
  for (size_t i = 0; i + 8 < n; i += 8) {
    uint64_t word;
    std::memcpy(&word, s.data() + i, 8);
    if (!plain_word(word)) return false;
  }
  uint64_t last;  // the last eight bytes, overlapping the words above when n is not a multiple of 8
  std::memcpy(&last, s.data() + n - 8, 8);
  return plain_word(last);
}

// s in quotes, escaped; plain: IsPlainJsonString(s), which the caller may know already.
char* WriteJsonString(char* p, std::string_view s, bool plain) {
  static constexpr char kHex[] = "0123456789abcdef";
  *p++ = '"';
  if (plain) {  // names, keys and ids almost never need escaping
    // An empty view may have no data pointer at all (an empty GPU metric name): memcpy must not see it.
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
  } else {
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        *p++ = '\\';
        *p++ = c;
      } else if (u < 0x20) {
        std::memcpy(p, "\\u00", 4);
        p[4] = kHex[u >> 4];
        p[5] = kHex[u & 0xF];
        p += 6;
      } else {
        *p++ = c;
      }
    }
  }
  *p++ = '"';
  return p;
}

char* WriteJsonString(char* p, std::string_view s) { return WriteJsonString(p, s, IsPlainJsonString(s)); }

template <size_t N>
char* WriteLiteral(char* p, const char (&text)[N]) {
  std::memcpy(p, text, N - 1);
  return p + N - 1;
}

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// How many decimal digits v has (1 for 0): log10 from the bit width, corrected by one compare
// instead of a division per digit.
size_t DecimalDigits(uint64_t v) {
  static constexpr uint64_t kPowersOf10[20] = {1ULL,
                                               10ULL,
                                               100ULL,
                                               1000ULL,
                                               10000ULL,
                                               100000ULL,
                                               1000000ULL,
                                               10000000ULL,
                                               100000000ULL,
                                               1000000000ULL,
                                               10000000000ULL,
                                               100000000000ULL,
                                               1000000000000ULL,
                                               10000000000000ULL,
                                               100000000000000ULL,
                                               1000000000000000ULL,
                                               10000000000000000ULL,
                                               100000000000000000ULL,
                                               1000000000000000000ULL,
                                               10000000000000000000ULL};
  const uint64_t odd = v | 1;  // 0 has one digit; an even v and v | 1 are in the same decade
  const size_t t = (static_cast<size_t>(std::bit_width(odd)) * 1233) >> 12;  // 1233 / 4096 ~ log10(2)
  return t + (odd >= kPowersOf10[t] ? 1 : 0);
}

// Decimal digits of v (at most 20), written as std::to_chars writes them: two at a time from a
// table, inline (numbers are most of a util record).
char* WriteUnsigned(char* p, uint64_t v) {
  char* const end = p + DecimalDigits(v);
  char* q = end;
  while (v >= 100) {
    const size_t pair = static_cast<size_t>(v % 100) * 2;
    v /= 100;
    q -= 2;
    q[0] = kDigitPairs[pair];
    q[1] = kDigitPairs[pair + 1];
  }
  if (v >= 10) {
    q[-2] = kDigitPairs[v * 2];
    q[-1] = kDigitPairs[v * 2 + 1];
  } else {
    q[-1] = static_cast<char>('0' + v);
  }
  return end;
}

char* WriteInt(char* p, int64_t value) {
  if (value < 0) {
    *p++ = '-';
    return WriteUnsigned(p, ~static_cast<uint64_t>(value) + 1);
  }
  return WriteUnsigned(p, static_cast<uint64_t>(value));
}

// Writes value as the shortest text that reads back to the same double (std::to_chars), integral
// values without ".0" (queue 10.0 -> 10), NaN and infinities as null; at most kMaxNumberChars.
char* WriteJsonNumber(char* p, double value) {
  const double magnitude = std::fabs(value);
  // Telemetry is written with up to three decimals ("0.548", "67.47") or as integers ("66279"):
  // the digits of m / 1000 when that decimal reads back as the value. Below 1e9 this is what
  // to_chars writes for integers and, from 0.01 on, for the others, in a quarter of the time: an
  // ulp there is under 2e-7, so no other decimal of at most three places reads back as the same
  // double, and fixed notation is the shorter (a unit test checks millions). This test comes
  // first because it is the common case; NaN fails it (comparisons with NaN are false).
  if (magnitude < 1e9) {
    // Signed conversions: one instruction each way (unsigned ones are a branchy sequence on x86-64).
    const int64_t m = static_cast<int64_t>(magnitude * 1000.0 + 0.5);
    if (static_cast<double>(m) / 1000.0 == magnitude) {
      const uint64_t whole = static_cast<uint64_t>(m) / 1000;
      const unsigned fraction = static_cast<unsigned>(static_cast<uint64_t>(m) - whole * 1000);
      if (fraction == 0 || magnitude >= 0.01) {
        if (value < 0) *p++ = '-';  // -0.0 is written 0, as an integral value
        if (whole < 10) {  // percentages, temperatures, ratios: one or two digits, without the loop
          *p++ = static_cast<char>('0' + whole);
        } else if (whole < 100) {
          p[0] = kDigitPairs[whole * 2];
          p[1] = kDigitPairs[whole * 2 + 1];
          p += 2;
        } else {
          p = WriteUnsigned(p, whole);
        }
        if (fraction == 0) return p;
        const unsigned tens = fraction / 10;  // the first two decimals
        p[0] = '.';
        p[1] = kDigitPairs[tens * 2];
        p[2] = kDigitPairs[tens * 2 + 1];
        p[3] = static_cast<char>('0' + (fraction - tens * 10));
        return p + (fraction % 100 == 0 ? 2 : fraction % 10 == 0 ? 3 : 4);
      }
    }
  }
  if (!std::isfinite(value)) return WriteLiteral(p, "null");
  if (value == std::trunc(value) && magnitude < 1e15) return WriteInt(p, static_cast<int64_t>(value));
  return std::to_chars(p, p + kMaxNumberChars, value).ptr;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  const size_t at = out.size();
  const bool plain = IsPlainJsonString(s);
  out.resize(at + (plain ? s.size() + 2 : JsonStringBound(s)));
  char* end = WriteJsonString(out.data() + at, s, plain);
  out.resize(static_cast<size_t>(end - out.data()));
}

void AppendJsonNumber(std::string& out, double value) {
  char buf[kMaxNumberChars];
  out.append(buf, WriteJsonNumber(buf, value));
}

namespace {

void AppendInt(std::string& out, int64_t value) {
  char buf[24];
  out.append(buf, WriteInt(buf, value));
}

void AppendHeader(std::string& out, std::string_view cluster) {
  out += "{\"v\":1,\"cluster\":";
  AppendJsonString(out, cluster);
}

void AppendJob(std::string& out, const JobEvent& e) {
  AppendHeader(out, e.cluster);
  out += ",\"event\":\"";
  out += JobEventKindName(e.event);
  out += "\",\"ts_ms\":";
  AppendInt(out, e.ts_ms);
  out += ",\"job_id\":";
  AppendJsonString(out, e.job_id);
  out += ",\"user\":";
  AppendJsonString(out, e.user);
  out += ",\"type\":";
  AppendJsonString(out, e.type);
  out += ",\"node_num\":";
  AppendInt(out, e.node_num);
  out += ",\"gpu_num\":";
  AppendInt(out, e.gpu_num);
  out += ",\"cpu_num\":";
  AppendInt(out, e.cpu_num);
  if (e.event == JobEventKind::kEnd) {
    out += ",\"state\":";
    AppendJsonString(out, e.state);
    out += ",\"duration_s\":";
    AppendJsonNumber(out, e.duration_s);
  }
  if (e.event != JobEventKind::kSubmit) {
    out += ",\"queue_s\":";
    AppendJsonNumber(out, e.queue_s);
  }
  if (e.event == JobEventKind::kEnd) {
    out += ",\"gpu_time\":";
    AppendJsonNumber(out, e.gpu_time);
  }
  out.push_back('}');
}

// {"name":number,...} of items; entry(item) gives the item's (name, value).
template <typename Items, typename Entry>
void AppendNumberObject(std::string& out, const Items& items, Entry entry) {
  out.push_back('{');
  bool first = true;
  for (const auto& item : items) {
    const auto [name, value] = entry(item);
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, name);
    out.push_back(':');
    AppendJsonNumber(out, value);
  }
  out.push_back('}');
}

template <typename Pair>
std::pair<std::string_view, double> AsEntry(const Pair& p) {
  return {p.first, p.second};
}

// IsPlainJsonString of a name from InternName, remembered by its address: an interned name never
// changes nor goes away, so the same address and size mean the same bytes (a util record repeats
// the same ~15 metric names). Direct-mapped, per thread; a collision only costs a new check.
bool IsPlainInternedName(std::string_view name) {
  struct Slot {
    const char* data = nullptr;
    size_t size = 0;
  };
  thread_local Slot plain_names[64];
  Slot& slot = plain_names[(reinterpret_cast<uintptr_t>(name.data()) >> 3) & 63];
  if (slot.data == name.data() && slot.size == name.size() && name.data() != nullptr) return true;
  if (!IsPlainJsonString(name)) return false;
  slot = Slot{name.data(), name.size()};
  return true;
}

// A util record is most of a replay's bytes (about 120 numbers): it is written through a pointer
// into a scratch buffer sized for the worst case, then appended at once, rather than a
// std::string append per piece.
void AppendUtil(std::string& out, const UtilSample& s) {
  size_t bound = 96 + JsonStringBound(s.cluster) + JsonStringBound(s.node);
  for (const GpuMetric& m : s.gpu) bound += JsonStringBound(m.name) + 4 + m.values.size() * (kMaxNumberChars + 1);
  for (const HostMetric& m : s.host) bound += JsonStringBound(m.name) + 2 + kMaxNumberChars;
  thread_local std::vector<char> scratch;
  if (scratch.size() < bound) scratch.resize(std::max(bound, 2 * scratch.size()));
  char* const begin = scratch.data();
  char* p = WriteLiteral(begin, "{\"v\":1,\"cluster\":");
  p = WriteJsonString(p, s.cluster);
  p = WriteLiteral(p, ",\"node\":");
  p = WriteJsonString(p, s.node);
  p = WriteLiteral(p, ",\"ts_ms\":");
  p = WriteInt(p, s.ts_ms);
  p = WriteLiteral(p, ",\"gpu\":{");
  for (size_t i = 0; i < s.gpu.size(); ++i) {
    const GpuMetric& m = s.gpu[i];
    if (i > 0) *p++ = ',';
    p = WriteJsonString(p, m.name, IsPlainInternedName(m.name));
    p = WriteLiteral(p, ":[");
    for (size_t v = 0; v < m.values.size(); ++v) {
      if (v > 0) *p++ = ',';
      p = WriteJsonNumber(p, m.values[v]);
    }
    *p++ = ']';
  }
  p = WriteLiteral(p, "},\"host\":{");
  for (size_t i = 0; i < s.host.size(); ++i) {
    if (i > 0) *p++ = ',';
    p = WriteJsonString(p, s.host[i].name, IsPlainInternedName(s.host[i].name));
    *p++ = ':';
    p = WriteJsonNumber(p, s.host[i].value);
  }
  p = WriteLiteral(p, "}}");
  out.append(begin, p);
}

// Each kind's writer names its own fields in their order (record_parse.cc reads them): alike in JSON's
// shape, not in logic.
void AppendPower(std::string& out, const PowerSample& p) {
  AppendHeader(out, p.cluster);
  out += ",\"model\":";
  AppendJsonString(out, p.model);
  out += ",\"ts_ms\":";
  AppendInt(out, p.ts_ms);
  out += ",\"fields\":";
  AppendNumberObject(out, p.fields, AsEntry<std::pair<std::string_view, double>>);
  out.push_back('}');
}

void AppendMetrics(std::string& out, const MetricsWindow& m) {
  AppendHeader(out, m.cluster);
  out += ",\"window_s\":";
  AppendInt(out, m.window_s);
  out += ",\"start_ms\":";
  AppendInt(out, m.start_ms);
  out += ",\"end_ms\":";
  AppendInt(out, m.end_ms);
  out += ",\"metrics\":";
  AppendNumberObject(out, m.metrics, AsEntry<std::pair<std::string, double>>);
  out.push_back('}');
}

void AppendAnomaly(std::string& out, const AnomalyEvent& a) {
  AppendHeader(out, a.cluster);
  out += ",\"kind\":";
  AppendJsonString(out, a.kind);
  out += ",\"subject\":";
  AppendJsonString(out, a.subject);
  out += a.open ? ",\"state\":\"open\"" : ",\"state\":\"close\"";
  out += ",\"ts_ms\":";
  AppendInt(out, a.ts_ms);
  out += ",\"value\":";
  AppendJsonNumber(out, a.value);
  out += ",\"threshold\":";
  AppendJsonNumber(out, a.threshold);
  out.push_back('}');
}

}  // namespace

void AppendRecordJson(std::string& out, const Record& record) {
  std::visit(
      [&out](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, JobEvent>) {
          AppendJob(out, r);
        } else if constexpr (std::is_same_v<T, UtilSample>) {
          AppendUtil(out, r);
        } else if constexpr (std::is_same_v<T, PowerSample>) {
          AppendPower(out, r);
        } else if constexpr (std::is_same_v<T, MetricsWindow>) {
          AppendMetrics(out, r);
        } else {
          AppendAnomaly(out, r);
        }
      },
      record);
}

void AppendFramedLine(std::string& out, const Record& record) {
  out += "{\"topic\":\"";
  out += TopicOf(record);
  out += "\",\"key\":\"";
  const size_t key_start = out.size();
  AppendKey(out, record);
  // Keys are cluster/job_id or cluster/node: escape in the rare case they need it.
  if (!IsPlainJsonString(std::string_view(out).substr(key_start))) {
    std::string key = out.substr(key_start);
    out.resize(key_start - 1);
    AppendJsonString(out, key);
  } else {
    out.push_back('"');
  }
  out += ",\"value\":";
  AppendRecordJson(out, record);
  out += "}\n";
}

}  // namespace acmetrace::core
