// acmetrace score against a real Prometheus (Debian's 2.42): a TSDB built with promtool from
// hand-written OpenMetrics (score_test_support.h's scene), the binary run as a user would, and the
// JSON checked against firing times worked out by hand from the samples.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "score_test_support.h"

namespace acmetrace::score_test {
namespace {

class ScorePrometheusTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::TempDir() + "/score_prometheus_" + std::to_string(::getpid()));
    fs::remove_all(*dir_);
    prometheus_ = new LocalPrometheus(*dir_ + "/prometheus", SceneOpenMetrics());
    std::ofstream(*dir_ + "/faults.csv") << SceneFaults();
    std::ofstream(*dir_ + "/rules.yml") << SceneRules();
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(prometheus_->error(), ""); }

  static CommandRun Score(const std::string& args) {
    return RunCommand(std::string(ACMETRACE_BINARY) + " score --prometheus " + prometheus_->url() + " --faults " +
                      *dir_ + "/faults.csv --from 2023-07-01T00:00:00Z --to 2023-07-01T04:00:00Z " + args);
  }

  static nlohmann::json Rule(const nlohmann::json& doc, const std::string& name) {
    for (const nlohmann::json& r : doc["rules"]) {
      if (r["rule"] == name) return r;
    }
    ADD_FAILURE() << "no rule " << name;
    return nlohmann::json::object();
  }

  static std::string* dir_;
  static LocalPrometheus* prometheus_;
};

std::string* ScorePrometheusTest::dir_ = nullptr;
LocalPrometheus* ScorePrometheusTest::prometheus_ = nullptr;

TEST_F(ScorePrometheusTest, ScoresEachRuleAsPrometheusWouldHaveFiredIt) {
  const std::string json = *dir_ + "/score.json";
  const CommandRun run = Score("--rules " + *dir_ + "/rules.yml --json " + json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(json));

  // GpuHot (for: 2m): 90 C from 01:00, firing at 01:02, the overheat caught 120 s after its start;
  // the 88 C spike at 02:30 fires at 02:32 and detects nothing.
  const nlohmann::json hot = Rule(doc, "GpuHot");
  EXPECT_EQ(hot["onsets"], 2);
  EXPECT_EQ(hot["false_alerts"], 1);
  EXPECT_DOUBLE_EQ(hot["precision"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(hot["recall"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(hot["ttd_median_s"].get<double>(), 120.0);
  ASSERT_EQ(hot["firing"].size(), 2u);
  EXPECT_EQ(hot["firing"][0]["start"], kT0 + 62 * 60);
  EXPECT_EQ(hot["firing"][0]["end"], kT0 + 72 * 60);
  EXPECT_EQ(hot["firing"][0]["labels"]["Hostname"], "n1");
  EXPECT_EQ(hot["firing"][1]["start"], kT0 + 152 * 60);

  // The flag's alert: kind gpu_overheat only, on time.
  const nlohmann::json overheat = Rule(doc, "Overheat");
  EXPECT_EQ(overheat["onsets"], 1);
  EXPECT_DOUBLE_EQ(overheat["recall"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(overheat["precision"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(overheat["ttd_median_s"].get<double>(), 0.0);
  EXPECT_EQ(overheat["incidents"].size(), 1u);

  // The three behaviours: never fires, always on, flapping.
  const nlohmann::json never = Rule(doc, "Never");
  EXPECT_EQ(never["onsets"], 0);
  EXPECT_DOUBLE_EQ(never["recall"].get<double>(), 0.0);
  EXPECT_TRUE(never["precision"].is_null());
  const nlohmann::json always = Rule(doc, "AlwaysOn");
  EXPECT_EQ(always["onsets"], 1);
  EXPECT_DOUBLE_EQ(always["recall"].get<double>(), 0.0);
  // Flapping: an onset every 4 minutes from 00:00 to 03:56 (60: at 04:00 the last sample, 03:59:45, is
  // off); those in [00:58, 01:20] (6) and [02:58, 03:15] (4) detect an incident.
  const nlohmann::json flapping = Rule(doc, "Flapping");
  EXPECT_EQ(flapping["onsets"], 60);
  EXPECT_DOUBLE_EQ(flapping["precision"].get<double>(), 10.0 / 60.0);
  EXPECT_DOUBLE_EQ(flapping["recall"].get<double>(), 1.0);
  // keep_firing_for 5m bridges the 2-minute gaps: one spell, open at the end, from 00:00.
  const nlohmann::json kept = Rule(doc, "FlappingKept");
  EXPECT_EQ(kept["onsets"], 1);
  EXPECT_EQ(kept["firing"][0]["open"], true);
  EXPECT_DOUBLE_EQ(kept["recall"].get<double>(), 0.0);

  // Every second for four hours is 14,401 points: more than one request may ask; the onset is exact.
  const nlohmann::json every_second = Rule(doc, "OverheatEverySecond");
  EXPECT_DOUBLE_EQ(every_second["interval_s"].get<double>(), 1.0);
  ASSERT_EQ(every_second["firing"].size(), 1u);
  EXPECT_EQ(every_second["firing"][0]["start"], kT0 + 3600);
  EXPECT_EQ(every_second["firing"][0]["end"], kT0 + 4200);

  // The set: both incidents caught (the XID only by Flapping), each at its earliest.
  EXPECT_DOUBLE_EQ(doc["total"]["recall"].get<double>(), 1.0);
  EXPECT_EQ(doc["total"]["onsets"], 2 + 1 + 0 + 1 + 60 + 1 + 1);
  EXPECT_DOUBLE_EQ(doc["total"]["incidents"][0]["ttd_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(doc["total"]["incidents"][1]["ttd_s"].get<double>(), 0.0);
}

TEST_F(ScorePrometheusTest, SweepsForValues) {
  const std::string json = *dir_ + "/sweep.json";
  const CommandRun run = Score("--rules " + *dir_ + "/rules.yml --sweep-for 0s,3m --json " + json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(json));
  ASSERT_EQ(doc["sweep"].size(), 7u * 2);
  EXPECT_EQ(doc["sweep"][0]["rule"], "GpuHot");
  EXPECT_DOUBLE_EQ(doc["sweep"][0]["for_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(doc["sweep"][0]["ttd_median_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(doc["sweep"][1]["for_s"].get<double>(), 180.0);
  EXPECT_DOUBLE_EQ(doc["sweep"][1]["ttd_median_s"].get<double>(), 180.0);
  // Flapping at for: 3m never holds long enough.
  EXPECT_EQ(doc["sweep"][8]["rule"], "Flapping");
  EXPECT_EQ(doc["sweep"][9]["onsets"], 0);
}

TEST_F(ScorePrometheusTest, ShippedRulesRunByDefault) {
  const CommandRun run = Score("--json " + *dir_ + "/shipped.json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(*dir_ + "/shipped.json"));
  EXPECT_EQ(doc["rules"].size(), 21u);
  // The shipped anomaly rule on acmetrace_anomaly_active catches the overheat on time.
  const nlohmann::json overheat = Rule(doc, "AcmetraceGpuOverheat");
  EXPECT_DOUBLE_EQ(overheat["recall"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(overheat["ttd_median_s"].get<double>(), 0.0);
  // DcgmGpuTemperatureHigh (>= 85 for 1m) sees the overheat on its Hostname and gpu labels.
  const nlohmann::json dcgm = Rule(doc, "DcgmGpuTemperatureHigh");
  EXPECT_EQ(dcgm["onsets"], 2);
  EXPECT_DOUBLE_EQ(dcgm["ttd_median_s"].get<double>(), 60.0);
  // Its XID rules use a recording rule this TSDB lacks: said, not hidden.
  EXPECT_NE(run.output.find("uses dcgm:gpu_xid_code:count, a recording rule"), std::string::npos) << run.output;
}

TEST_F(ScorePrometheusTest, AnErrorFromPrometheusNamesTheRule) {
  const std::string rules = *dir_ + "/bad_promql.yml";
  std::ofstream(rules) << "groups:\n  - name: g\n    rules:\n      - alert: Broken\n        expr: rate(up[\n";
  const CommandRun run = Score("--rules " + rules);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find(rules + ":4: Broken: Prometheus at " + prometheus_->url() + " (HTTP 400): "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("bad_data"), std::string::npos) << run.output;
}

TEST(ScoreUnreachableTest, APrometheusThatIsNotThereIsAFailureNotAHang) {
  const std::string dir = testing::TempDir() + "/score_unreachable_" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::ofstream(dir + "/faults.csv") << SceneFaults();
  const std::string url = "http://127.0.0.1:" + std::to_string(FreePort());
  const CommandRun run = RunCommand(std::string(ACMETRACE_BINARY) + " score --prometheus " + url + " --faults " + dir +
                                    "/faults.csv");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("cannot query Prometheus at " + url + ": Failed to connect to 127.0.0.1 port"),
            std::string::npos)
      << run.output;
  fs::remove_all(dir);
}

TEST(ScoreUnreachableTest, AServerThatNeverAnswersTimesOut) {
  // A socket that listens (the kernel completes the connection) but is never read.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string dir = testing::TempDir() + "/score_silent_" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::ofstream(dir + "/faults.csv") << SceneFaults();
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const auto start = std::chrono::steady_clock::now();
  const CommandRun run = RunCommand(std::string(ACMETRACE_BINARY) + " score --timeout-s 0.5 --prometheus " + url +
                                    " --faults " + dir + "/faults.csv");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("cannot query Prometheus at " + url + ": Operation timed out after "), std::string::npos)
      << run.output;
  EXPECT_LT(seconds, 10.0);  // one request's timeout, not a hang
  fs::remove_all(dir);
}

}  // namespace
}  // namespace acmetrace::score_test
