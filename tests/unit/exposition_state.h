// What two runs of the pipeline are compared by: the exposition's sample lines, sorted, without what
// describes the running processes rather than the data.
#pragma once

#include <algorithm>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace acmetrace::test {

/// The exposition's sample lines, sorted (series order within a family is not part of the format),
/// without the replay's progress gauges, records counted per stage (each process counts only its
/// own stages) and the series count of families only a replaying process has.
inline std::vector<std::string> ExpositionState(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("acmetrace_replay_", 0) == 0 || line.rfind("acmetrace_records_total", 0) == 0 ||
        line.rfind("acmetrace_series{metric=\"acmetrace_replay_", 0) == 0 ||
        line.rfind("acmetrace_series{metric=\"acmetrace_records_total\"}", 0) == 0 || line.rfind("process_", 0) == 0) {
      continue;
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// Lines in one state and not the other (ten of each at most), for a failure message.
inline std::string StateDifference(const std::vector<std::string>& expected, const std::vector<std::string>& got) {
  std::vector<std::string> only_expected, only_got;
  std::set_difference(expected.begin(), expected.end(), got.begin(), got.end(), std::back_inserter(only_expected));
  std::set_difference(got.begin(), got.end(), expected.begin(), expected.end(), std::back_inserter(only_got));
  std::string out;
  for (size_t i = 0; i < only_expected.size() && i < 10; ++i) out += "\n  expected: " + only_expected[i];
  for (size_t i = 0; i < only_got.size() && i < 10; ++i) out += "\n  got:      " + only_got[i];
  return out;
}

}  // namespace acmetrace::test
