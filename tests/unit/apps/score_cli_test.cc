// acmetrace score as a user runs it, without a Prometheus: flags of acmetrace's own anomalies scored
// against a faults.csv, and the usage errors (exit 2) with their one-line messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_files.h"

namespace acmetrace {
namespace {

// `acmetrace score args`: its exit code, and stdout and stderr together in out.
ShellOutput Score(const std::string& args) {
  return RunShellCapture(std::string(ACMETRACE_BINARY) + " score " + args + " 2>&1");
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr const char* kFaults =
    "cluster,kind,subject,start,end\n"
    "seren,gpu_overheat,10.140.1.10-3,1688173200,1688173800\n"
    "seren,xid_error,10.140.1.11-0,1688180000,1688180300\n";

// Flags: the overheat seen 45 s after its start; a false xid flag on another GPU.
constexpr const char* kAnomalies =
    "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"10.140.1.10-3\",\"state\":\"open\","
    "\"ts_ms\":1688173245000}\n"
    "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"gpu_overheat\",\"subject\":\"10.140.1.10-3\",\"state\":\"close\","
    "\"ts_ms\":1688173800000}\n"
    "{\"v\":1,\"cluster\":\"seren\",\"kind\":\"xid_error\",\"subject\":\"10.140.1.12-5\",\"state\":\"open\","
    "\"ts_ms\":1688180100000}\n";

TEST(ScoreCliTest, ScoresAnomalyFlagsAgainstTheFaults) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string anomalies = WriteFile(dir, "anomalies.jsonl", kAnomalies);
  const ShellOutput run = Score("--faults " + faults + " --anomalies " + anomalies + " --json " + dir + "/s.json --html " +
                        dir + "/s.html");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("flag:gpu_overheat"), std::string::npos) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(dir + "/s.json"));
  ASSERT_EQ(doc["rules"].size(), 2u);
  EXPECT_EQ(doc["rules"][0]["rule"], "flag:gpu_overheat");
  EXPECT_DOUBLE_EQ(doc["rules"][0]["recall"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(doc["rules"][0]["ttd_median_s"].get<double>(), 45.0);
  EXPECT_EQ(doc["rules"][1]["rule"], "flag:xid_error");
  EXPECT_EQ(doc["rules"][1]["false_alerts"], 1);
  EXPECT_DOUBLE_EQ(doc["rules"][1]["recall"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(doc["total"]["recall"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(doc["total"]["precision"].get<double>(), 0.5);
  // Default window: an hour either side of the incidents, from a whole minute.
  EXPECT_EQ(doc["window"]["from"], 1688173200 - 3600);
  EXPECT_EQ(doc["window"]["to"], 1688180300 + 3600);
  EXPECT_NE(ReadAll(dir + "/s.html").find("10.140.1.11-0"), std::string::npos);
}

TEST(ScoreCliTest, UsageErrorsExitTwoWithOneLine) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string rules = WriteFile(dir, "rules.yml",
                                      "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n"
                                      "        for: 1q\n");
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"--faults " + faults, "give --prometheus"},
      {"--faults " + faults + " --prometheus http://127.0.0.1:9090 --rules " + rules, rules + ":6: for: not a duration"},
      {"--faults " + faults + " --prometheus localhost:9090", "--prometheus: \"localhost:9090\": not an http:// or https:// URL"},
      {"--faults " + faults + " --anomalies " + faults + " --sweep-for 1m,x", "--sweep-for: not a duration"},
      {"--faults " + faults + " --anomalies " + faults + " --from yesterday", "--from: not a time"},
      {"--faults " + rules + " --anomalies " + faults, rules + ":1: row:"},
      {"--faults " + faults + " --anomalies " + faults, faults + ":1: "},
  };
  for (const Case& c : cases) {
    const ShellOutput run = Score(c.args);
    EXPECT_EQ(run.exit_code, 2) << c.args << "\n" << run.out;
    EXPECT_NE(run.out.find(c.message), std::string::npos) << c.args << "\n" << run.out;
    EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << run.out;
  }
}

// Usage errors exit 2 with one line that holds `message`.
void ExpectUsageError(const std::string& args, const std::string& message, int exit_code = 2) {
  const ShellOutput run = Score(args);
  EXPECT_EQ(run.exit_code, exit_code) << args << "\n" << run.out;
  EXPECT_NE(run.out.find(message), std::string::npos) << args << "\n" << run.out;
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << args << "\n" << run.out;
}

TEST(ScoreCliTest, ConnectionFlagsAreCheckedBeforeAnyQueryAndNeverEchoASecret) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string prometheus = " --faults " + faults + " --prometheus http://127.0.0.1:9";
  const std::string token = WriteFile(dir, "token", "tok3n-s3cret\nmore\n");
  const std::string auth = WriteFile(dir, "auth", "no-colon-s3cret\n");
  ExpectUsageError(prometheus + " --bearer-token-file " + dir + "/none",
                   "--bearer-token-file: " + dir + "/none: cannot open: No such file or directory");
  ExpectUsageError(prometheus + " --bearer-token-file " + token, "--bearer-token-file: " + token + ": holds a line break");
  ExpectUsageError(prometheus + " --basic-auth-file " + auth, "--basic-auth-file: " + auth + ": expected one line user:password");
  ExpectUsageError(prometheus + " --header 'X-Scope-OrgID team-s3cret'", "--header: no ':'");
  ExpectUsageError(prometheus + " --header 'X-Ok: a' --header 'Bad Name: s3cret'", "is not an HTTP header name");
  ExpectUsageError(prometheus + " --ca-file " + dir + "/none.pem", "--ca-file: " + dir + "/none.pem: cannot open");
  ExpectUsageError(" --faults " + faults + " --anomalies " + faults + " --bearer-token-file " + token,
                   "--bearer-token-file needs --prometheus");
  ExpectUsageError(prometheus + " --grafana 'javascript:alert(1)'", "--grafana: 'javascript:alert(1)': not an http://");
  const std::string good_token = WriteFile(dir, "token1", "tok3n-s3cret\n");
  ExpectUsageError(prometheus + " --bearer-token-file " + good_token + " --header 'Authorization: Basic s3cret'",
                   "give one of --bearer-token-file, --basic-auth-file and --header 'Authorization: ...'");
  // Whatever failed, no secret reached the output.
  for (const std::string& args : {prometheus + " --bearer-token-file " + token, prometheus + " --basic-auth-file " + auth,
                                  prometheus + " --header 'Bad Name: s3cret'",
                                  prometheus + " --bearer-token-file " + good_token + " --timeout-s 1"}) {
    const ShellOutput run = Score(args);
    EXPECT_NE(run.exit_code, 0) << run.out;
    EXPECT_EQ(run.out.find("s3cret"), std::string::npos) << args << "\n" << run.out;
  }
}

TEST(ScoreCliTest, ABaselineShowsWhatChangedSinceAndABadOneIsAUsageError) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string anomalies = WriteFile(dir, "anomalies.jsonl", kAnomalies);
  // The first scorecard saw only the overheat's flags; the second sees the false xid flag too.
  const std::string first_flags = WriteFile(dir, "first.jsonl", std::string(kAnomalies).substr(0, std::string(kAnomalies).rfind("{\"v\"")));
  ShellOutput run = Score("--faults " + faults + " --anomalies " + first_flags + " --json " + dir + "/old.json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  run = Score("--faults " + faults + " --anomalies " + anomalies + " --baseline " + dir + "/old.json --html " + dir +
              "/s.html");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("since " + dir + "/old.json:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("flag:xid_error"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("new: precision 0.00, recall 0.00, 1 false alerts"), std::string::npos) << run.out;
  EXPECT_NE(ReadAll(dir + "/s.html").find("<table id=\"baseline\">"), std::string::npos);
  ExpectUsageError("--faults " + faults + " --anomalies " + anomalies + " --baseline " + faults,
                   "--baseline: " + faults + ": not a score --json document: not a JSON object");
}

TEST(ScoreCliTest, ARuleFileKeyThatIsNoNameIsAUsageErrorNotAnAbort) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string top = WriteFile(dir, "top.yml", "? [a, b]\n: x\n");
  const std::string labels = WriteFile(dir, "labels.yml",
                                       "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n"
                                       "        labels:\n          ? [a, b]\n          : x\n");
  const std::string twice = WriteFile(dir, "twice.yml", "groups:\n  - name: g\n    rules: []\n  - name: g\n");
  const std::string fast = WriteFile(dir, "fast.yml", "groups:\n  - name: g\n    interval: 1ms\n    rules: []\n");
  const std::string prometheus = " --prometheus http://127.0.0.1:9 --faults " + faults + " --rules ";
  ExpectUsageError(prometheus + top, top + ":1: groups: a key must be a plain name");
  ExpectUsageError(prometheus + labels, labels + ":7: labels: a key must be a plain name");
  ExpectUsageError(prometheus + twice, twice + ":4: name: group \"g\" is repeated in the same file");
  ExpectUsageError(prometheus + fast, fast + ":3: interval: 1ms is below the minimum of 1s");
  // backfill reads rule files with the same parser, before any data.
  for (const std::string& file : {top, labels}) {
    const ShellOutput run = RunShellCapture(std::string(ACMETRACE_BINARY) + " backfill --openmetrics " + dir +
                                            "/out.om --rules " + file + " 2>&1");
    EXPECT_EQ(run.exit_code, 2) << run.out;
    EXPECT_NE(run.out.find(file + ":"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("a key must be a plain name"), std::string::npos) << run.out;
    EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << run.out;
  }
}

TEST(ScoreCliTest, EveryNumericFlagIsCheckedForTypeAndRange) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string flags_only = "--faults " + faults + " --anomalies " + WriteFile(dir, "a.jsonl", kAnomalies);
  // --timeout-s: a number of seconds in 0.1-3600 (nan passed CLI11's Range: every comparison is false).
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "-1", "0", "0.05", "3601", "1e308", "abc", "1s", ""}) {
    ExpectUsageError(flags_only + " --timeout-s '" + bad + "'", "--timeout-s: must be a number of seconds in 0.1-3600");
  }
  // --from, --to: times of the trace's years.
  ExpectUsageError(flags_only + " --to 99999999999", "--to: '99999999999' is outside the accepted years 2000-2099");
  ExpectUsageError(flags_only + " --from 2000 --to 2099", "--from: '2000' is outside the accepted years");
  ExpectUsageError(flags_only + " --from -1688169600", "--from: '-1688169600' is outside the accepted years");
  ExpectUsageError(flags_only + " --from nan", "--from: not a time");
  ExpectUsageError(flags_only + " --from 1e308", "--from: not a time");
  ExpectUsageError(flags_only + " --from 1688180000 --to 1688170000", "--to must be after --from");
  // Each rule's evaluations over the window: 2000 to 2099 at a 1s interval is billions of them.
  const std::string rules = WriteFile(dir, "r.yml", "groups:\n  - name: g\n    interval: 1s\n    rules:\n"
                                                    "      - alert: A\n        expr: up\n");
  ExpectUsageError("--faults " + faults + " --prometheus http://127.0.0.1:9 --rules " + rules +
                       " --from 946684800 --to 4102444799",
                   R"(A would be evaluated 3155760000 times at its interval of 1s, more than 1000000)");
  // --sweep-for: durations, a bounded number of them.
  ExpectUsageError(flags_only + " --sweep-for 1m,,5m", "--sweep-for: empty duration");
  ExpectUsageError(flags_only + " --sweep-for -1m", "--sweep-for: not a duration: '-1m'");
  ExpectUsageError(flags_only + " --sweep-for 99999999999999y", "--sweep-for: duration too long: '99999999999999y'");
  std::string many = "0s";
  for (int i = 1; i <= 64; ++i) many += "," + std::to_string(i) + "s";
  ExpectUsageError(flags_only + " --sweep-for " + many, "--sweep-for: more than 64 values");
}

TEST(ScoreCliTest, ADirectoryOrEmptyFaultsFileIsAnError) {
  const std::string dir = TestDir();
  const std::string anomalies = WriteFile(dir, "a.jsonl", kAnomalies);
  ExpectUsageError("--faults " + dir + " --anomalies " + anomalies + " --from 1688169600 --to 1688180000",
                   dir + ": a directory, not a faults file");
  const std::string empty = WriteFile(dir, "empty.csv", "");
  ExpectUsageError("--faults " + empty + " --anomalies " + anomalies + " --from 1688169600 --to 1688180000",
                   empty + ": empty, not a faults file");
}

TEST(ScoreCliTest, OutputPathsAreCheckedBeforeAnyQueryAndAFailedWriteSaysWhy) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  // Port 9 answers nothing: were the outputs checked after the queries, the error would be the connection's.
  const std::string args = "--faults " + faults + " --prometheus http://127.0.0.1:9 ";
  ExpectUsageError(args + "--json " + dir, "--json: " + dir + ": cannot write there: a directory", 1);
  ExpectUsageError(args + "--html " + dir + "/no/such/dir/s.html", "cannot write there: No such file or directory", 1);
  ExpectUsageError(args + "--json /sys/acmetrace-score.json", "cannot write there: Permission denied", 1);
  EXPECT_FALSE(std::filesystem::exists(dir + "/no"));
  // A write that fails at the end says why (a full disk).
  const ShellOutput full =
      Score("--faults " + faults + " --anomalies " + WriteFile(dir, "a.jsonl", kAnomalies) + " --json /dev/full");
  EXPECT_EQ(full.exit_code, 1) << full.out;
  EXPECT_NE(full.out.find("--json: /dev/full: cannot write: No space left on device"), std::string::npos) << full.out;
}

TEST(ScoreCliTest, AnomalyRecordsDeliveredTwiceAreCountedOnce) {
  const std::string dir = TestDir();
  const std::string faults = WriteFile(dir, "faults.csv", kFaults);
  const std::string twice = WriteFile(dir, "twice.jsonl", std::string(kAnomalies) + kAnomalies);
  const ShellOutput run = Score("--faults " + faults + " --anomalies " + twice + " --json " + dir + "/s.json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("3 records read again skipped"), std::string::npos) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(dir + "/s.json"));
  EXPECT_EQ(doc["rules"][0]["onsets"], 1);
  EXPECT_EQ(doc["rules"][1]["onsets"], 1);
  EXPECT_DOUBLE_EQ(doc["total"]["precision"].get<double>(), 0.5);
}

}  // namespace
}  // namespace acmetrace
