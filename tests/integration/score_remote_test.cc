// acmetrace score against servers the way teams run them: https with a self-signed certificate
// (made by openssl here), credentials enforced by the server, a tenant header, and a recording
// rule's series present on the server (no false "missing" warning). Two components, one suite each:
// Debian's Prometheus with a --web.config.file (label prometheus) and Debian's VictoriaMetrics with
// the scene pushed through its import API (label victoria-metrics).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <sstream>

#include "score_test_support.h"

namespace acmetrace::score_test {
namespace {

// The scene's rules plus a recording rule whose series the server holds (recorded by hand here, as
// backfill would) and one whose series it lacks.
const char* RemoteRules() {
  return R"(groups:
  - name: scene-records
    rules:
      - record: scene:gpu_temp:max
        expr: max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)
      - record: scene:never:recorded
        expr: vector(1)
  - name: scene
    rules:
      - alert: GpuHot
        expr: max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP) >= 85
        for: 2m
      - alert: GpuHotRecorded
        expr: scene:gpu_temp:max >= 85
        for: 2m
      - alert: OnMissingRecord
        expr: scene:never:recorded > 0
)";
}

// The scene's GPU temperature and the recorded series: 90 C over [01:00, 01:12) (the overheat), 88 C
// over [02:30, 02:35) (a spike nobody injected), else 60; 15 s samples over four hours. `ms`: the
// Prometheus text format's millisecond timestamps (VictoriaMetrics' import) instead of OpenMetrics'
// seconds.
std::string TemperatureSamples(bool ms) {
  std::string out;
  for (const char* name : {"DCGM_FI_DEV_GPU_TEMP", "scene:gpu_temp:max"}) {
    if (!ms) out += std::string("# TYPE ") + name + " gauge\n";
    for (int64_t t = kT0; t < kT0 + kHours * 3600; t += 15) {
      const int64_t s = t - kT0;
      const int value = s >= 3600 && s < 4320 ? 90 : s >= 9000 && s < 9300 ? 88 : 60;
      out += std::string(name) + "{cluster=\"seren\",Hostname=\"n1\",gpu=\"3\"} " + std::to_string(value) + " " +
             (ms ? std::to_string(t * 1000) : std::to_string(t)) + "\n";
    }
  }
  return out;
}

// A self-signed certificate for 127.0.0.1 (its own CA, as a team's internal one would be).
std::string MakeCertificate(const std::string& dir) {
  fs::create_directories(dir);
  const CommandRun run = RunCommand(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " + dir + "/key.pem -out " + dir + "/cert.pem");
  return run.exit_code == 0 ? "" : "openssl: " + run.output;
}

constexpr const char* kUser = "scorer";
constexpr const char* kPassword = "score-pass";
// bcrypt of kPassword (cost 4): what Prometheus's web config holds instead of the password.
constexpr const char* kPasswordBcrypt = "$2b$04$J787uHqgQk0FC3n068RZnOnEzg6tD20p9gMDyLfkAapnyCSCBR1r6";

nlohmann::json Rule(const nlohmann::json& doc, const std::string& name) {
  for (const nlohmann::json& r : doc["rules"]) {
    if (r["rule"] == name) return r;
  }
  ADD_FAILURE() << "no rule " << name;
  return nlohmann::json::object();
}

// What both servers must give: the same scores, and no warning for the recording rule they hold.
void ExpectTheSceneScored(const CommandRun& run, const std::string& json_path) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(json_path));
  for (const char* name : {"GpuHot", "GpuHotRecorded"}) {
    const nlohmann::json rule = Rule(doc, name);
    EXPECT_EQ(rule["onsets"], 2) << name;
    EXPECT_EQ(rule["false_alerts"], 1) << name;
    EXPECT_EQ(rule["caught"], 1) << name;
  }
  EXPECT_EQ(run.output.find("uses scene:gpu_temp:max"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("OnMissingRecord uses scene:never:recorded, a recording rule with no series on the server"),
            std::string::npos)
      << run.output;
}

class ScoreRemoteTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/" + testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    ASSERT_EQ(MakeCertificate(dir_ + "/tls"), "");
    std::ofstream(dir_ + "/faults.csv") << SceneFaults();
    std::ofstream(dir_ + "/rules.yml") << RemoteRules();
    std::ofstream(dir_ + "/auth") << kUser << ":" << kPassword << "\n";
    std::ofstream(dir_ + "/wrong-auth") << kUser << ":not-the-password\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `acmetrace score` over https against url, with args.
  CommandRun Score(const std::string& url, const std::string& args) {
    return RunCommand(std::string(ACMETRACE_BINARY) + " score --prometheus " + url + " --ca-file " + dir_ +
                      "/tls/cert.pem --faults " + dir_ + "/faults.csv --rules " + dir_ +
                      "/rules.yml --from 2023-07-01T00:00:00Z --to 2023-07-01T04:00:00Z " + args);
  }

  std::string dir_;
};

TEST_F(ScoreRemoteTest, PrometheusOverHttpsWithBasicAuthEnforcedByItsWebConfig) {
  const std::string web = "tls_server_config:\n  cert_file: " + dir_ + "/tls/cert.pem\n  key_file: " + dir_ +
                          "/tls/key.pem\nbasic_auth_users:\n  " + kUser + ": " + kPasswordBcrypt + "\n";
  std::string om = TemperatureSamples(false) + "# EOF\n";
  LocalPrometheus prometheus(dir_ + "/prometheus", om, web,
                             "curl -sf -o /dev/null --cacert " + dir_ + "/tls/cert.pem -u " + kUser + ":" + kPassword +
                                 " https://127.0.0.1:PORT/-/ready");
  ASSERT_EQ(prometheus.error(), "");
  const std::string url = "https://127.0.0.1:" + std::to_string(prometheus.port());

  ExpectTheSceneScored(Score(url, "--basic-auth-file " + dir_ + "/auth --json " + dir_ + "/score.json --html " + dir_ +
                                      "/score.html"),
                       dir_ + "/score.json");
  // The page's links lead to this server's graph page, over https.
  EXPECT_NE(ReadAll(dir_ + "/score.html").find("href=\"" + url + "/graph?g0.expr="), std::string::npos);

  // Refused by the server: said with the flags to look at, exit 1, the password nowhere.
  CommandRun refused = Score(url, "--basic-auth-file " + dir_ + "/wrong-auth");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("answered HTTP 401 (unauthorized: check --bearer-token-file, --basic-auth-file"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("not-the-password"), std::string::npos);
  // A certificate nobody vouched for is refused: no --ca-file, the system's CAs do not know it.
  refused = RunCommand(std::string(ACMETRACE_BINARY) + " score --prometheus " + url + " --basic-auth-file " + dir_ +
                       "/auth --faults " + dir_ + "/faults.csv --rules " + dir_ + "/rules.yml");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("cannot query Prometheus at " + url + ": SSL certificate problem"), std::string::npos)
      << refused.output;
}

// Debian's VictoriaMetrics, https with basic auth, stopped by the destructor; the samples pushed
// through /api/v1/import/prometheus.
class LocalVictoriaMetrics {
 public:
  LocalVictoriaMetrics(const std::string& dir, const std::string& tls_dir)
      : dir_((fs::create_directories(dir), dir)),
        tls_dir_(tls_dir),
        port_(FreePort()),
        // No result cache: a query made while the import is still being indexed must not be kept.
        vm_({"/usr/bin/victoria-metrics", "-storageDataPath=" + dir + "/data",
             "-httpListenAddr=127.0.0.1:" + std::to_string(port_), "-retentionPeriod=100y", "-tls",
             "-tlsCertFile=" + tls_dir + "/cert.pem", "-tlsKeyFile=" + tls_dir + "/key.pem",
             std::string("-httpAuth.username=") + kUser, std::string("-httpAuth.password=") + kPassword,
             "-search.disableCache"},
            dir + "/vm.log", dir + "/vm.log") {
    if (!acmetrace::test::WaitUntil([&] { return !vm_.Running() || Curl("/health", "").exit_code == 0; }, 60) ||
        !vm_.Running()) {
      error_ = "victoria-metrics did not become ready: " + ReadAll(dir + "/vm.log");
    }
  }

  // Pushes Prometheus text-format samples (millisecond timestamps) and waits until a query sees them.
  std::string Import(const std::string& samples) {
    std::ofstream(dir_ + "/import.txt") << samples;
    const CommandRun pushed = Curl("/api/v1/import/prometheus", "--data-binary @" + dir_ + "/import.txt");
    if (pushed.exit_code != 0) return "import: " + pushed.output;
    const std::string probe = "/api/v1/query?query=count(scene:gpu_temp:max)&time=" + std::to_string(kT0 + 3600);
    const bool seen = acmetrace::test::WaitUntil(
        [&] {
          const CommandRun got = Curl(probe, "");
          return got.exit_code == 0 && got.output.find("\"value\"") != std::string::npos;
        },
        60);
    return seen ? "" : "the imported samples never became visible: " + ReadAll(dir_ + "/vm.log");
  }

  const std::string& error() const { return error_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  // Every sample it holds (after a flush), or -1 if it cannot be asked.
  int64_t CountSamples() const {
    if (Curl("/internal/force_flush", "").exit_code != 0) return -1;
    const CommandRun exported = Curl("/api/v1/export?match%5B%5D=%7B__name__%3D~%22.%2B%22%7D", "");
    if (exported.exit_code != 0) return -1;
    int64_t n = 0;
    std::istringstream lines(exported.output);
    std::string line;
    while (std::getline(lines, line)) {
      if (!line.empty()) n += static_cast<int64_t>(nlohmann::json::parse(line)["timestamps"].size());
    }
    return n;
  }

 private:
  CommandRun Curl(const std::string& path, const std::string& args) const {
    return RunCommand("curl -sf --cacert " + tls_dir_ + "/cert.pem -u " + kUser + ":" + kPassword + " " + args +
                      " '" + url() + path + "'");
  }

  std::string dir_;
  std::string tls_dir_;
  int port_;
  acmetrace::test::Child vm_;
  std::string error_;
};

TEST_F(ScoreRemoteTest, VictoriaMetricsOverHttpsWithBasicAuthAndATenantHeader) {
  LocalVictoriaMetrics vm(dir_ + "/vm", dir_ + "/tls");
  ASSERT_EQ(vm.error(), "");
  ASSERT_EQ(vm.Import(TemperatureSamples(true)), "");
  // The tenant header a VictoriaMetrics cluster or Mimir routes on (a single node ignores it).
  ExpectTheSceneScored(Score(vm.url(), "--basic-auth-file " + dir_ + "/auth --header 'X-Scope-OrgID: team-a' --json " +
                                           dir_ + "/score.json"),
                       dir_ + "/score.json");
  const CommandRun refused = Score(vm.url(), "--basic-auth-file " + dir_ + "/wrong-auth");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("answered HTTP 401"), std::string::npos) << refused.output;
  EXPECT_EQ(refused.output.find("not-the-password"), std::string::npos);
}

// backfill --remote-write into the same kind of VictoriaMetrics: https with its own CA, basic auth
// from a file and a tenant header (a wrong password: every request refused 401, nothing retried,
// exit 1, the password not echoed).
TEST_F(ScoreRemoteTest, VictoriaMetricsTakesARemoteWriteBackfillOverHttpsWithBasicAuth) {
  LocalVictoriaMetrics vm(dir_ + "/vm", dir_ + "/tls");
  ASSERT_EQ(vm.error(), "");
  const CommandRun synth =
      RunCommand(std::string(ACMETRACE_BINARY) + " synth --out " + dir_ + "/day --days 1 --scale 0.005 --clusters seren");
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  const std::string backfill = std::string(ACMETRACE_BINARY) + " backfill --data " + dir_ +
                               "/day --from 2023-07-01T00:00:00Z --to 2023-07-01T00:10:00Z --remote-write " + vm.url() +
                               "/api/v1/write --ca-file " + dir_ + "/tls/cert.pem --header 'X-Scope-OrgID: team-a' ";
  const CommandRun refused = RunCommand(backfill + "--basic-auth-file " + dir_ + "/wrong-auth");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("HTTP 401"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find(" 0 retried"), std::string::npos) << refused.output;
  EXPECT_EQ(refused.output.find("not-the-password"), std::string::npos);
  const CommandRun sent = RunCommand(backfill + "--basic-auth-file " + dir_ + "/auth");
  ASSERT_EQ(sent.exit_code, 0) << sent.output;
  const size_t at = sent.output.find(" samples sent, 0 failed");
  ASSERT_NE(at, std::string::npos) << sent.output;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(sent.output[begin - 1]))) --begin;
  const int64_t samples = std::stoll(sent.output.substr(begin, at - begin));
  EXPECT_GT(samples, 1000) << sent.output;
  EXPECT_EQ(vm.CountSamples(), samples);
}

}  // namespace
}  // namespace acmetrace::score_test
