// DcgmPersona: NVIDIA's names and labels, stable UUIDs, units, null samples, host series.
#include "acmetrace/exporters/dcgm_persona.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

namespace acmetrace::exporters {
namespace {

core::UtilSample Sample(const std::string& node, int64_t ts_ms, std::vector<core::GpuMetric> gpu,
                        std::vector<core::HostMetric> host = {}) {
  core::UtilSample s;
  s.cluster = "seren";
  s.node = node;
  s.ts_ms = ts_ms;
  s.gpu = std::move(gpu);
  s.host = std::move(host);
  return s;
}

core::GpuMetric Metric(const char* name, std::vector<double> values) {
  return core::GpuMetric{core::InternName(name), std::move(values)};
}

std::map<std::string, std::string> LabelsOf(const prometheus::ClientMetric& m) {
  std::map<std::string, std::string> out;
  for (const auto& l : m.label) out[l.name] = l.value;
  return out;
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The series of GPU index gpu in a family (exposition order within a family is not defined).
const prometheus::ClientMetric& OfGpu(const prometheus::MetricFamily* family, const std::string& gpu) {
  for (const auto& m : family->metric) {
    if (LabelsOf(m).at("gpu") == gpu) return m;
  }
  ADD_FAILURE() << "no gpu " << gpu << " in " << family->name;
  return family->metric.front();
}

TEST(GpuUuidTest, IsStableAndShapedLikeNvidias) {
  const std::string uuid = GpuUuid("seren", "10.140.1.10", 3);
  // Pinned: the same GPU must keep its UUID across runs, builds and machines.
  EXPECT_EQ(uuid, GpuUuid("seren", "10.140.1.10", 3));
  ASSERT_EQ(uuid.size(), 40u);
  EXPECT_EQ(uuid.substr(0, 4), "GPU-");
  for (size_t dash : {12u, 17u, 22u, 27u}) EXPECT_EQ(uuid[dash], '-') << uuid;
  for (size_t i = 4; i < uuid.size(); ++i) {
    if (uuid[i] == '-') continue;
    EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(uuid[i])) && !std::isupper(static_cast<unsigned char>(uuid[i])))
        << uuid;
  }
  EXPECT_NE(uuid, GpuUuid("seren", "10.140.1.10", 4));
  EXPECT_NE(uuid, GpuUuid("kalos", "10.140.1.10", 3));
  EXPECT_NE(uuid, GpuUuid("seren", "10.140.1.11", 3));
}

TEST(GpuUuidTest, KnownValue) {
  // Pinned: a change here gives every GPU a new UUID and breaks dashboards' and alerts' history.
  EXPECT_EQ(GpuUuid("seren", "10.140.1.10", 0), "GPU-71160050-87cd-786e-edf2-ca7d1786ab20");
}

TEST(DcgmPersonaTest, SeriesHaveDcgmExportersNamesAndLabels) {
  ExportOptions options;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("10.140.1.10", 1000,
                       {Metric("GPU_UTIL", {99, 0}), Metric("SM_ACTIVE", {0.5, 0.0}), Metric("FB_USED", {1024, 0}),
                        Metric("FB_FREE", {80896, 81920}), Metric("XID_ERRORS", {0, 79})}));
  const auto fams = store.Collect();
  const auto* util = Find(fams, "DCGM_FI_DEV_GPU_UTIL");
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(util->type, prometheus::MetricType::Gauge);
  ASSERT_EQ(util->metric.size(), 2u);
  const auto labels = LabelsOf(OfGpu(util, "1"));
  EXPECT_EQ(labels.at("gpu"), "1");
  EXPECT_EQ(labels.at("UUID"), GpuUuid("seren", "10.140.1.10", 1));
  EXPECT_EQ(labels.at("device"), "nvidia1");
  EXPECT_EQ(labels.at("modelName"), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(labels.at("Hostname"), "10.140.1.10");
  EXPECT_EQ(labels.at("cluster"), "seren");
  EXPECT_EQ(OfGpu(util, "0").gauge.value, 99);
  // Profiling metrics stay ratios (dcgm-exporter's unit, and the raw files' too).
  EXPECT_DOUBLE_EQ(OfGpu(Find(fams, "DCGM_FI_PROF_SM_ACTIVE"), "0").gauge.value, 0.5);
  EXPECT_EQ(OfGpu(Find(fams, "DCGM_FI_DEV_FB_FREE"), "1").gauge.value, 81920);
  EXPECT_EQ(OfGpu(Find(fams, "DCGM_FI_DEV_XID_ERRORS"), "1").gauge.value, 79);
  EXPECT_EQ(persona.FamilyOf("GPU_UTIL"), persona.FamilyOf("GPU_UTIL"));
  EXPECT_LT(persona.FamilyOf("NOT_A_METRIC"), 0);
}

TEST(DcgmPersonaTest, LowerCaseHostnameLabelIsASwitch) {
  ExportOptions options;
  options.hostname_label = "hostname";
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("10.140.1.10", 1000, {Metric("GPU_TEMP", {41})}));
  const auto labels = LabelsOf(Find(store.Collect(), "DCGM_FI_DEV_GPU_TEMP")->metric[0]);
  EXPECT_EQ(labels.count("Hostname"), 0u);
  EXPECT_EQ(labels.at("hostname"), "10.140.1.10");
}

TEST(DcgmPersonaTest, NullSampleKeepsTheLastValueAndLaterSampleReplacesIt) {
  ExportOptions options;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  const FamilyId util = persona.FamilyOf("GPU_UTIL");
  persona.Apply(Sample("n1", 1000, {Metric("GPU_UTIL", {50, 60})}));
  persona.Apply(Sample("n1", 16000, {Metric("GPU_UTIL", {core::kNoSample, 70})}));
  EXPECT_EQ(store.Get(util, "seren\x1fn1\x1f" "0"), 50);
  EXPECT_EQ(store.Get(util, "seren\x1fn1\x1f" "1"), 70);
}

TEST(DcgmPersonaTest, PercentInputIsScaledToDcgmRatios) {
  ExportOptions options;
  options.input_percent = true;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("n1", 1000, {Metric("SM_ACTIVE", {50}), Metric("GPU_UTIL", {50})},
                       {core::HostMetric{core::InternName("NODE_CPU_UTILIZATION"), 25}}));
  const auto fams = store.Collect();
  EXPECT_DOUBLE_EQ(Find(fams, "DCGM_FI_PROF_SM_ACTIVE")->metric[0].gauge.value, 0.5);
  EXPECT_DOUBLE_EQ(Find(fams, "DCGM_FI_DEV_GPU_UTIL")->metric[0].gauge.value, 50);  // % stays %
  EXPECT_DOUBLE_EQ(Find(fams, "acmetrace_node_cpu_util_ratio")->metric[0].gauge.value, 0.25);
}

TEST(DcgmPersonaTest, HostSeriesPerNode) {
  ExportOptions options;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("n1", 1000, {},
                       {core::HostMetric{core::InternName("NODE_CPU_UTILIZATION"), 0.08},
                        core::HostMetric{core::InternName("NODE_IB_SEND"), 2.0}}));
  const auto fams = store.Collect();
  const auto* cpu = Find(fams, "acmetrace_node_cpu_util_ratio");
  ASSERT_NE(cpu, nullptr);
  EXPECT_DOUBLE_EQ(cpu->metric[0].gauge.value, 0.08);
  EXPECT_EQ(LabelsOf(cpu->metric[0]).at("Hostname"), "n1");
  EXPECT_DOUBLE_EQ(Find(fams, "acmetrace_node_ib_send_bytes_per_second")->metric[0].gauge.value, 2e6);
}

TEST(DcgmPersonaTest, TheThirteenGpuSeriesOfAGpuShareOneLabelSet) {
  ExportOptions options;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  std::vector<core::GpuMetric> metrics;
  for (const char* m : {"XID_ERRORS", "GPU_TEMP", "MEMORY_TEMP", "MEM_CLOCK", "MEM_COPY_UTIL", "FB_FREE", "FB_USED",
                        "DRAM_ACTIVE", "POWER_USAGE", "GPU_UTIL", "PIPE_TENSOR_ACTIVE", "SM_ACTIVE", "SM_OCCUPANCY"}) {
    metrics.push_back(Metric(m, {1, 1, 1, 1, 1, 1, 1, 1}));
  }
  persona.Apply(Sample("n1", 1000, metrics));
  // The release's 13 fields and the energy counter integrated from POWER_USAGE.
  EXPECT_EQ(store.total_series(), 14 * 8);
  size_t dcgm_families = 0;
  for (const auto& f : store.Collect()) dcgm_families += f.name.rfind("DCGM_FI_", 0) == 0;
  EXPECT_EQ(dcgm_families, 14u);
}

// Issue #12 point 7: the labels dcgm-exporter sets, in its order (then ours), as the text exposition
// a scraper reads.
TEST(DcgmPersonaTest, PciBusIdAndDriverVersionLabelsAsDcgmExporterWritesThem) {
  ExportOptions options;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("10.140.1.10", 1000, {Metric("GPU_TEMP", {41, 40})}));
  std::string text;
  store.AppendText(text);
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"" + GpuUuid("seren", "10.140.1.10", 1) +
                      "\",pci_bus_id=\"00000000:0F:00.0\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\","
                      "Hostname=\"10.140.1.10\",DCGM_FI_DRIVER_VERSION=\"535.129.03\",cluster=\"seren\"} 40\n"),
            std::string::npos)
      << text;
  options.driver_version = "550.54.15";
  SeriesStore other{StoreOptions{}};
  DcgmPersona configured(options, other);
  configured.Apply(Sample("n1", 1000, {Metric("GPU_TEMP", {41})}));
  EXPECT_EQ(LabelsOf(Find(other.Collect(), "DCGM_FI_DEV_GPU_TEMP")->metric[0]).at("DCGM_FI_DRIVER_VERSION"),
            "550.54.15");
}

TEST(PciBusIdTest, DgxA100BusesInIndexOrderThenDistinct) {
  EXPECT_EQ(PciBusId(0), "00000000:07:00.0");
  EXPECT_EQ(PciBusId(1), "00000000:0F:00.0");
  EXPECT_EQ(PciBusId(4), "00000000:87:00.0");
  EXPECT_EQ(PciBusId(7), "00000000:BD:00.0");
  std::set<std::string> ids;
  for (int i = 0; i < 16; ++i) ids.insert(PciBusId(i));
  EXPECT_EQ(ids.size(), 16u);
}

TEST(EnergyIntegratorTest, TrapezoidsInMillijoulesSkippingGapsAndOldSamples) {
  EnergyIntegrator e(/*max_gap_ms=*/300'000);
  EXPECT_EQ(e.Add(0, 300), 0);
  EXPECT_DOUBLE_EQ(e.Add(15'000, 300), 300.0 * 15'000);               // 300 W for 15 s = 4.5 kJ
  EXPECT_DOUBLE_EQ(e.Add(30'000, 400), 4.5e6 + 350.0 * 15'000);       // the mean of the two samples
  EXPECT_DOUBLE_EQ(e.Add(20'000, 1000), 9.75e6);                      // behind: already counted
  EXPECT_DOUBLE_EQ(e.Add(30'000 + 600'000, 400), 9.75e6);             // a 10 min gap: unobserved, adds nothing
  EXPECT_DOUBLE_EQ(e.Add(30'000 + 615'000, 200), 9.75e6 + 300.0 * 15'000);
}

TEST(DcgmPersonaTest, TotalEnergyIsACounterIntegratedFromPowerPerGpu) {
  ExportOptions options;
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("n1", 0, {Metric("POWER_USAGE", {300, 100})}));
  persona.Apply(Sample("n1", 15'000, {Metric("POWER_USAGE", {300, core::kNoSample})}));
  persona.Apply(Sample("n1", 30'000, {Metric("POWER_USAGE", {400, 100})}));
  const auto fams = store.Collect();
  const auto* energy = Find(fams, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  ASSERT_NE(energy, nullptr);
  EXPECT_EQ(energy->type, prometheus::MetricType::Counter);
  EXPECT_EQ(energy->help, "Total energy consumption since boot (in mJ).");
  EXPECT_DOUBLE_EQ(OfGpu(energy, "0").counter.value, 300.0 * 15'000 + 350.0 * 15'000);
  EXPECT_DOUBLE_EQ(OfGpu(energy, "1").counter.value, 100.0 * 30'000);  // across the null sample
  EXPECT_EQ(LabelsOf(OfGpu(energy, "1")).at("pci_bus_id"), "00000000:0F:00.0");
  std::string text;
  store.AppendText(text);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos) << text;
}

TEST(DcgmPersonaTest, GrEngineActiveIsOptInAndDerivedFromGpuUtil) {
  ExportOptions options;
  {
    SeriesStore store{StoreOptions{}};
    DcgmPersona persona(options, store);
    persona.Apply(Sample("n1", 0, {Metric("GPU_UTIL", {99, 0})}));
    EXPECT_EQ(Find(store.Collect(), "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), nullptr);  // off by default
  }
  options.gr_engine_active = true;
  options.input_percent = true;  // GPU_UTIL is percent whatever process.units says
  SeriesStore store{StoreOptions{}};
  DcgmPersona persona(options, store);
  persona.Apply(Sample("n1", 0, {Metric("GPU_UTIL", {99, 0})}));
  persona.Apply(Sample("n1", 15'000, {Metric("GPU_UTIL", {core::kNoSample, 42})}));
  const auto fams = store.Collect();
  const auto* gr = Find(fams, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  ASSERT_NE(gr, nullptr);
  EXPECT_EQ(gr->type, prometheus::MetricType::Gauge);
  EXPECT_DOUBLE_EQ(OfGpu(gr, "0").gauge.value, 0.99);
  EXPECT_DOUBLE_EQ(OfGpu(gr, "1").gauge.value, 0.42);
  EXPECT_EQ(LabelsOf(OfGpu(gr, "0")).at("Hostname"), "n1");
}

}  // namespace
}  // namespace acmetrace::exporters

namespace acmetrace::exporters {
namespace {

// The persona caches each node's series pointers; erasures (expiry, removal) must never leave it
// writing through a pointer to a series that is gone.
TEST(DcgmPersonaTest, CachedSeriesStayCorrectAcrossExpiryAndRemoval) {
  ExportOptions options;
  SeriesStore store{StoreOptions{60'000, 600'000, 100'000}};
  DcgmPersona persona(options, store);
  const FamilyId util = persona.FamilyOf("GPU_UTIL");
  auto apply = [&](const std::string& node, int64_t ts, double v) {
    persona.Apply(Sample(node, ts, {Metric("GPU_UTIL", {v})}));
    store.AdvanceClock("seren", ts);
  };
  apply("n1", 0, 1);
  apply("n2", 0, 2);
  for (int64_t t = 15'000; t <= 120'000; t += 15'000) apply("n1", t, static_cast<double>(t));
  EXPECT_TRUE(std::isnan(store.Get(util, "seren\x1fn2\x1f" "0")));  // expired
  apply("n2", 135'000, 22);                                          // comes back: a new series
  EXPECT_EQ(store.Get(util, "seren\x1fn2\x1f" "0"), 22);
  apply("n1", 135'000, 11);
  EXPECT_EQ(store.Get(util, "seren\x1fn1\x1f" "0"), 11);
  ASSERT_TRUE(store.Remove(util, "seren\x1fn1\x1f" "0"));
  apply("n1", 150'000, 12);
  EXPECT_EQ(store.Get(util, "seren\x1fn1\x1f" "0"), 12);
  EXPECT_EQ(store.counts(util).series, 2);
}

}  // namespace
}  // namespace acmetrace::exporters
