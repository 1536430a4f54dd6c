// acmetrace backfill --remote-write as a user mistypes it: every usage error is one line naming the
// flag, exit 2, before any data is read or any request sent.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "test_files.h"

namespace acmetrace {
namespace {

ShellOutput Backfill(const std::string& args, const std::string& env) {
  return RunShellCapture(env + std::string(ACMETRACE_BINARY) + " backfill --data /nonexistent " + args + " 2>&1");
}

void ExpectUsage(const std::string& args, const std::string& message, const std::string& env = "") {
  const ShellOutput run = Backfill(args, env);
  EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.out;
  EXPECT_NE(run.out.find(message), std::string::npos) << args << "\n" << run.out;
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << args << "\n" << run.out;
}

TEST(BackfillRemoteWriteCliTest, UsageErrorsAreOneLineAndExit2) {
  const std::string dir = TestDir();
  const std::string url = " --remote-write http://127.0.0.1:9/api/v1/write";
  ExpectUsage(url + " --out " + dir + "/p", "give exactly one of --out PROMDIR");
  ExpectUsage(url + " --openmetrics -", "give exactly one of --out PROMDIR");
  ExpectUsage("--out " + dir + "/p --header 'X-Scope-OrgID: t'", "need --remote-write");
  ExpectUsage(" --remote-write ftp://127.0.0.1/x", "--remote-write: \"ftp://127.0.0.1/x\": not an http:// or https:// URL");
  ExpectUsage(" --remote-write http://user:pw@127.0.0.1:9/x", "user info is not supported");
  ExpectUsage(url + " --header 'no colon'", "--header: ");
  ExpectUsage(url + " --bearer-token-file " + dir + "/missing", "--bearer-token-file: ");
  ExpectUsage(url + " --rules " + WriteFile(dir, "r.yml", "groups: []\n"), "--rules: recording rules and ALERTS are backfilled");
  // backfill's batches are backfill_max_samples_per_send's: a shard's queue must hold one.
  ExpectUsage(url,
              "backfill: remote_write.capacity (100000) must be at least "
              "remote_write.backfill_max_samples_per_send (500000), the samples of one request",
              "ACMETRACE_REMOTE_WRITE_CAPACITY=100000 ");
  ExpectUsage(url, "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND: ",
              "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND=lots ");
  ExpectUsage(url, "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND: ",
              "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND=10000001 ");
  ExpectUsage(url, "ACMETRACE_REMOTE_WRITE_MAX_BYTES_PER_SEND: ", "ACMETRACE_REMOTE_WRITE_MAX_BYTES_PER_SEND=1023 ");
  ExpectUsage(url, "ACMETRACE_REMOTE_WRITE_MAX_BYTES_PER_SEND: ", "ACMETRACE_REMOTE_WRITE_MAX_BYTES_PER_SEND=16MiB ");
}

// run and export --remote-write: the same checks, before any data is read or served.
TEST(BackfillRemoteWriteCliTest, RunAndExportUsageErrorsAreOneLineAndExit2) {
  for (const std::string command : {"run --data /nonexistent", "export --source stdin"}) {
    auto expect = [&](const std::string& args, const std::string& message, const std::string& env = "") {
      const ShellOutput run =
          RunShellCapture(env + std::string(ACMETRACE_BINARY) + " " + command + " " + args + " 2>&1 < /dev/null");
      EXPECT_EQ(run.exit_code, 2) << command << args << "\n" << run.out;
      EXPECT_NE(run.out.find(message), std::string::npos) << command << args << "\n" << run.out;
      EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << command << args << "\n" << run.out;
    };
    expect("--remote-write ftp://127.0.0.1/x", "--remote-write: \"ftp://127.0.0.1/x\": not an http:// or https:// URL");
    expect("--header 'X-Scope-OrgID: t'", "need --remote-write (--header given)");
    expect("--remote-write-interval 100", "need --remote-write (--remote-write-interval given)");
    expect("--remote-write http://127.0.0.1:9/w --remote-write-interval 5", "--remote-write-interval");
    // Live batches are max_samples_per_send's (backfill_max_samples_per_send is not theirs).
    expect("--remote-write http://127.0.0.1:9/w",
           "remote_write.capacity (10) must be at least remote_write.max_samples_per_send (100), the samples of one "
           "request",
           "ACMETRACE_REMOTE_WRITE_CAPACITY=10 ACMETRACE_REMOTE_WRITE_MAX_SAMPLES_PER_SEND=100 ");
  }
}

// backfill of the release fixture by remote write to the discard port, where nothing listens; env:
// VAR=value settings before it.
ShellOutput BackfillToNoReceiver(const std::string& env) {
  return RunShellCapture(env + std::string(ACMETRACE_BINARY) + " backfill --data " + ACMETRACE_FIXTURES +
                         "/release --remote-write http://127.0.0.1:9/api/v1/write 2>&1");
}

// A receiver that never answers (nothing listens on the discard port): the backfill gives up after
// max_attempts, says why in one line, counts every sample it took as failed (none left pending), exit 1.
// Backoff 0 ms: nothing waits.
TEST(BackfillRemoteWriteCliTest, AReceiverThatNeverAnswersFailsWithEverySampleCounted) {
  const ShellOutput run = BackfillToNoReceiver(
      "ACMETRACE_REMOTE_WRITE_MIN_BACKOFF_MS=0 ACMETRACE_REMOTE_WRITE_MAX_BACKOFF_MS=0 "
      "ACMETRACE_REMOTE_WRITE_MAX_ATTEMPTS=3 ");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("remote write: gave up on a request of "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" after 3 attempts: cannot write to http://127.0.0.1:9/api/v1/write: "), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(" 0 samples sent, "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" 0 pending, "), std::string::npos) << run.out;
}

// backfill's requests hold remote_write.backfill_max_samples_per_send samples, not run's
// max_samples_per_send: on one shard, the first request given up on is a full one of 7.
TEST(BackfillRemoteWriteCliTest, BackfillsRequestsHoldBackfillMaxSamplesPerSend) {
  const ShellOutput run = BackfillToNoReceiver(
      "ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND=7 ACMETRACE_REMOTE_WRITE_MAX_SAMPLES_PER_SEND=5 "
      "ACMETRACE_REMOTE_WRITE_SHARDS=1 ACMETRACE_REMOTE_WRITE_MAX_ATTEMPTS=1 ");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("remote write: gave up on a request of 7 samples after 1 attempts: "), std::string::npos)
      << run.out;
}

}  // namespace
}  // namespace acmetrace
