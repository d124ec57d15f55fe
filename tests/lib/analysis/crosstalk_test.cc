// Cross-talk (lib/analysis/crosstalk.h): from trials whose node telemetry is known by
// construction, the matrix holds each antagonist's footprint over the idle baseline, marks its
// own resource and flags an off-target one over its threshold, and checks the achieved rate
// against the independent counter with the right error; the telemetry confounds of an
// ordinary experiment fire where they apply and only there.
#include "lib/analysis/crosstalk.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

constexpr double kXtWindow = 2.0;
constexpr int64_t kXtGiB = 1024LL * 1024 * 1024;
constexpr int64_t kXtMiB = 1024LL * 1024;

// A node's telemetry over kXtWindow: `disk` bytes read, `net` bytes each way on lo, the
// lowest MemAvailable `mem_min`, PSI cpu some `psi_cpu`.
NodeTelemetry XtTelemetry(double disk, double net, int64_t mem_min, double psi_cpu) {
  NodeTelemetry n;
  n.node = "vm";
  n.window_s = kXtWindow;
  n.psi_cpu_some = psi_cpu;
  n.psi_io_some = 0.01;
  n.psi_memory_some = 0;
  n.disks.push_back({"vda", static_cast<int64_t>(disk), 0, 10, 0});
  n.nics.push_back({"lo", static_cast<int64_t>(net), static_cast<int64_t>(net)});
  n.mem_available_start_bytes = n.mem_available_min_bytes = mem_min;
  n.membw_note = "memory bandwidth: unavailable (no uncore PMU in this VM)";
  return n;
}

TrialRecord XtTrial(int index, const std::string& pairing, const std::string& injector,
                    double achieved, double cores, NodeTelemetry tel) {
  TrialRecord t;
  t.index = index;
  t.pairing = pairing;
  t.baseline = pairing == "baseline";
  t.state = TrialState::kDone;
  t.value_s = t.wall_s = kXtWindow;
  t.victim_cpu_s = 0.001;
  if (!t.baseline) {
    AntagonistResult a;
    a.name = pairing.substr(0, pairing.find('@'));
    a.injector = injector;
    a.level = 0.5;
    a.achieved_rate = achieved;
    a.target_rate = achieved;
    a.unit = "bytes/s";
    a.cpu_s = cores * 10;
    a.run_s = 10;
    t.antagonists.push_back(a);
  }
  t.node_telemetry.push_back(std::move(tel));
  return t;
}

ExperimentResults XtResults() {
  ExperimentRecord e;
  e.id = "x1";
  e.name = "xt";
  e.yaml =
      "name: xt\ncrosstalk: {window: 2s}\nantagonists:\n"
      "  - {name: disk, injector: io_uring, levels: [0.5]}\n"
      "  - {name: tcp, injector: net, levels: [0.5]}\n"
      "  - {name: membw, injector: memcpy, levels: [0.5]}\n"
      "  - {name: cache, injector: llc, levels: [0.5]}\n";
  const double idle_disk = 10e6 * kXtWindow;  // 10 MB/s of someone else's I/O
  const double idle_net = 1e6 * kXtWindow;
  std::vector<TrialRecord> trials;
  int i = 0;
  for (int rep = 0; rep < 3; ++rep) {
    trials.push_back(
        XtTrial(i++, "baseline", "", 0, 0, XtTelemetry(idle_disk, idle_net, 10 * kXtGiB, 0.02)));
    // io_uring reports 100 MB/s; the disk counted 99 MB/s more than idle: error -1 %.
    trials.push_back(XtTrial(
        i++, "disk@0.5", "io_uring", 100e6, 0.1,
        XtTelemetry(idle_disk + 99e6 * kXtWindow, idle_net, 10 * kXtGiB - 16 * kXtMiB, 0.03)));
    // net reports 500 MB/s; lo counted 500 MB/s more each way: error 0. It used 0.6 cores and
    // held 300 MiB: both off-target.
    trials.push_back(XtTrial(
        i++, "tcp@0.5", "net", 500e6, 0.6,
        XtTelemetry(idle_disk, idle_net + 500e6 * kXtWindow, 10 * kXtGiB - 300 * kXtMiB, 0.05)));
    trials.push_back(XtTrial(i++, "membw@0.5", "memcpy", 2e9, 0.2,
                             XtTelemetry(idle_disk, idle_net, 10 * kXtGiB, 0.04)));
    // llc missed its target in every window (flagged): its footprint still counts, at what it
    // achieved.
    TrialRecord llc = XtTrial(i++, "cache@0.5", "llc", 1e6, 0.4,
                              XtTelemetry(idle_disk, idle_net, 10 * kXtGiB, 0.30));
    llc.state = TrialState::kFlagged;
    trials.push_back(llc);
  }
  return Summarize(e, trials);
}

const CrosstalkRow* XtRow(const CrosstalkMatrix& m, const std::string& pairing) {
  for (const auto& r : m.rows) {
    if (r.pairing == pairing) return &r;
  }
  return nullptr;
}

size_t XtColumn(const std::string& key) {
  const auto& all = CrosstalkResources();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].key == key) return i;
  }
  ADD_FAILURE() << "no column " << key;
  return 0;
}

TEST(CrosstalkTest, FootprintsOverTheIdleBaselineOwnMarkedOffTargetFlagged) {
  const ExperimentResults r = XtResults();
  ASSERT_TRUE(r.crosstalk);
  const CrosstalkMatrix& m = r.crosstalk_matrix;
  EXPECT_EQ(m.baseline_n, 3);
  EXPECT_DOUBLE_EQ(m.window_s, kXtWindow);
  ASSERT_EQ(m.rows.size(), 4u);

  const CrosstalkRow* disk = XtRow(m, "disk@0.5");
  ASSERT_NE(disk, nullptr);
  const CrosstalkCell& d = disk->cells[XtColumn("disk_bytes_per_s")];
  EXPECT_NEAR(d.value, 99e6, 1);
  EXPECT_TRUE(d.own);
  EXPECT_FALSE(d.large);
  EXPECT_NEAR(disk->cells[XtColumn("mem_held_bytes")].value, 16.0 * kXtMiB, 1);
  EXPECT_FALSE(disk->cells[XtColumn("mem_held_bytes")].large);  // under 256 MiB
  EXPECT_TRUE(disk->off_target.empty());

  const CrosstalkRow* tcp = XtRow(m, "tcp@0.5");
  ASSERT_NE(tcp, nullptr);
  EXPECT_TRUE(tcp->cells[XtColumn("net_max_bytes_per_s")].own);
  EXPECT_NEAR(tcp->cells[XtColumn("net_max_bytes_per_s")].value, 500e6, 1);
  EXPECT_NEAR(tcp->cells[XtColumn("cpu_cores")].value, 0.6, 1e-9);
  EXPECT_TRUE(tcp->cells[XtColumn("cpu_cores")].large);
  EXPECT_TRUE(tcp->cells[XtColumn("mem_held_bytes")].large);
  EXPECT_FALSE(tcp->cells[XtColumn("disk_bytes_per_s")].large);  // +0
  ASSERT_EQ(tcp->off_target.size(), 2u);
  EXPECT_EQ(tcp->off_target[0],
            "tcp@0.5 (net): CPU 0.60 cores (threshold 0.25 cores), besides the network");
  EXPECT_EQ(tcp->off_target[1],
            "tcp@0.5 (net): memory held +300 MiB (threshold 256 MiB), besides the network");

  // The node has no memory-bandwidth counter: NaN, never a zero, and the reason is carried.
  const CrosstalkRow* membw = XtRow(m, "membw@0.5");
  ASSERT_NE(membw, nullptr);
  EXPECT_TRUE(std::isnan(membw->cells[XtColumn("membw_bytes_per_s")].value));
  EXPECT_TRUE(membw->cells[XtColumn("membw_bytes_per_s")].own);
  EXPECT_NE(m.membw_note.find("no uncore PMU"), std::string::npos);
  const CrosstalkRow* cache = XtRow(m, "cache@0.5");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->n, 3);
  EXPECT_EQ(cache->n_below_target, 3);
  EXPECT_NEAR(cache->cells[XtColumn("psi_cpu_some")].value, 0.28, 1e-9);
  EXPECT_TRUE(cache->cells[XtColumn("psi_cpu_some")].large);
  EXPECT_FALSE(cache->has_check);  // no counter for cache lines
  // No victim: the idle window's CPU share is no confound.
  for (const auto& p : r.pairings) EXPECT_TRUE(p.confounds.empty()) << p.pairing;
}

TEST(CrosstalkTest, IndependentCountersGiveTheRelativeError) {
  const CrosstalkMatrix m = XtResults().crosstalk_matrix;
  const CrosstalkRow* disk = XtRow(m, "disk@0.5");
  ASSERT_TRUE(disk->has_check);
  EXPECT_NEAR(disk->check.relative_error, -0.01, 1e-9);
  EXPECT_EQ(disk->check.counter, "diskstats read+write (every disk)");
  const CrosstalkRow* tcp = XtRow(m, "tcp@0.5");
  ASSERT_TRUE(tcp->has_check);
  EXPECT_NEAR(tcp->check.relative_error, 0, 1e-9);  // lo counts each byte both ways: max, not sum
  const CrosstalkRow* membw = XtRow(m, "membw@0.5");
  ASSERT_TRUE(membw->has_check);
  EXPECT_TRUE(std::isnan(membw->check.relative_error));
  EXPECT_EQ(membw->check.note,
            "no independent counter on this node: memory bandwidth: unavailable (no uncore PMU "
            "in this VM)");
}

TEST(CrosstalkTest, TableJsonCsvAndTheResultsViewsCarryIt) {
  const ExperimentResults r = XtResults();
  const std::string table = FormatCrosstalkTable(r.crosstalk_matrix);
  EXPECT_NE(table.find("+99.0*"), std::string::npos) << table;
  EXPECT_NE(table.find("0.60!"), std::string::npos) << table;
  EXPECT_NE(table.find("error -1.0%"), std::string::npos) << table;
  EXPECT_EQ(FormatTable(r).find("slowdown [CI]"), std::string::npos);  // no victim, no slowdown
  EXPECT_NE(FormatTable(r).find("cross-talk: each antagonist alone"), std::string::npos);

  const auto j = nlohmann::json::parse(FormatCrosstalkJson(r.crosstalk_matrix));
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["resources"].size(), CrosstalkResources().size());
  const auto results_json = nlohmann::json::parse(FormatJson(r));
  EXPECT_EQ(results_json["crosstalk"]["rows"].size(), 4u);
  EXPECT_NE(table.find("cache@0.5: below its target in 3 of 3 windows"), std::string::npos)
      << table;
  bool seen = false;
  for (const auto& row : j["rows"]) {
    if (row["pairing"] != "membw@0.5") continue;
    seen = true;
    EXPECT_TRUE(row["resources"]["membw_bytes_per_s"]["value"].is_null());
    EXPECT_TRUE(row["counter_check"]["relative_error"].is_null());
  }
  EXPECT_TRUE(seen);

  const std::string csv = FormatCrosstalkCsv(r.crosstalk_matrix);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'),
            static_cast<long>(1 + 4 * CrosstalkResources().size()));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "pairing,antagonist,injector,intensity,resource,unit,value,own,large,threshold");
}

// On a GPU node (NVML telemetry in every window) the GPU columns appear: cuda_memcpy's PCIe
// bytes are its own resource; an mps co-tenant's utilization its own; a CPU hog that kept a GPU
// busy is flagged. Without any GPU figure the table leaves the columns out and says why.
TEST(CrosstalkTest, GpuColumnsFromNvmlAndLeftOutWithoutThem) {
  ExperimentRecord e;
  e.id = "x2";
  e.name = "xt-gpu";
  e.yaml =
      "name: xt-gpu\ncrosstalk: {window: 2s}\nantagonists:\n"
      "  - {name: h2d, injector: cuda_memcpy, levels: [0.5]}\n"
      "  - {name: hog, injector: cpu, levels: [0.5]}\n";
  auto gpu = [](double util, double pcie_bytes, int64_t mem) {
    NodeTelemetry n = XtTelemetry(0, 0, 10 * kXtGiB, 0.02);
    n.gpu_note.clear();
    GpuTelemetry g;
    g.index = 0;
    g.name = "NVIDIA H100";
    g.util_mean = util;
    g.mem_used_max_bytes = mem;
    g.pcie_tx_bytes = 0;
    g.pcie_rx_bytes = pcie_bytes;
    n.gpus.push_back(g);
    return n;
  };
  std::vector<TrialRecord> trials;
  int i = 0;
  for (int rep = 0; rep < 3; ++rep) {
    trials.push_back(XtTrial(i++, "baseline", "", 0, 0, gpu(0, 1e6 * kXtWindow, kXtGiB)));
    trials.push_back(
        XtTrial(i++, "h2d@0.5", "cuda_memcpy", 10e9, 0.1, gpu(5, 10e9 * kXtWindow, 2 * kXtGiB)));
    trials.push_back(XtTrial(i++, "hog@0.5", "cpu", 1, 1.0, gpu(40, 1e6 * kXtWindow, kXtGiB)));
  }
  const ExperimentResults r = Summarize(e, trials);
  const CrosstalkMatrix& m = r.crosstalk_matrix;
  const CrosstalkRow* h2d = XtRow(m, "h2d@0.5");
  ASSERT_NE(h2d, nullptr);
  const CrosstalkCell& pcie = h2d->cells[XtColumn("pcie_bytes_per_s")];
  EXPECT_NEAR(pcie.value, 10e9 - 1e6, 1);
  EXPECT_TRUE(pcie.own);
  EXPECT_TRUE(h2d->cells[XtColumn("gpu_mem_bytes")].own);
  EXPECT_NEAR(h2d->cells[XtColumn("gpu_mem_bytes")].value, kXtGiB, 1);
  const CrosstalkRow* hog = XtRow(m, "hog@0.5");
  ASSERT_NE(hog, nullptr);
  const CrosstalkCell& util = hog->cells[XtColumn("gpu_util")];
  EXPECT_NEAR(util.value, 0.40, 1e-9);
  EXPECT_TRUE(util.large);
  const std::string table = FormatCrosstalkTable(m);
  EXPECT_NE(table.find("pcie MB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("+9999.0*"), std::string::npos) << table;
  EXPECT_NE(table.find("+0.40!"), std::string::npos) << table;
  EXPECT_EQ(table.find("gpu: no GPU figures"), std::string::npos) << table;

  // The CPU-only matrix: no GPU column, the reason said; JSON keeps every key (null values).
  const ExperimentResults cpu = XtResults();
  const std::string cpu_table = FormatCrosstalkTable(cpu.crosstalk_matrix);
  EXPECT_EQ(cpu_table.find("pcie MB/s"), std::string::npos) << cpu_table;
  EXPECT_NE(cpu_table.find("gpu: no GPU figures (no window counted a GPU): the gpu util"),
            std::string::npos)
      << cpu_table;
  // A node without NVML: the agent's reason, said once.
  CrosstalkMatrix no_nvml = cpu.crosstalk_matrix;
  no_nvml.gpu_note =
      "gpu: unavailable (libnvidia-ml.so.1 not found: no NVIDIA driver on this node)";
  EXPECT_NE(FormatCrosstalkTable(no_nvml).find(
                "\ngpu: unavailable (libnvidia-ml.so.1 not found: no NVIDIA driver on this node): "
                "the gpu util, gpu mem, pcie and nvlink columns are left out\n"),
            std::string::npos)
      << FormatCrosstalkTable(no_nvml);
  const auto j = nlohmann::json::parse(FormatCrosstalkJson(cpu.crosstalk_matrix));
  EXPECT_TRUE(j["rows"][0]["resources"]["pcie_bytes_per_s"]["value"].is_null());
}

PairingSummary XtPairing(const std::string& injector, double disk, double psi_cpu) {
  PairingSummary p;
  p.pairing = injector + "@0.5";
  AntagonistSummary a;
  a.name = "a";
  a.injector = injector;
  p.antagonists.push_back(a);
  p.telemetry.n = 3;
  p.telemetry.disk_read_bytes_per_s = disk;
  p.telemetry.disk_write_bytes_per_s = 0;
  p.telemetry.psi_cpu_some = psi_cpu;
  return p;
}

TEST(CrosstalkTest, TelemetryConfoundsFireWhereTheyApplyAndOnlyThere) {
  PairingSummary base = XtPairing("memcpy", 10e6, 0.02);
  base.baseline = true;
  base.antagonists.clear();
  // Disk I/O from a non-storage antagonist: +10 MB/s over a 10 MB/s baseline.
  auto c = TelemetryConfounds(XtPairing("memcpy", 20e6, 0.02), base);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0],
            "a (memcpy) brought the node's disk I/O from 10.0 to 20.0 MB/s with no storage "
            "antagonist: part of this slowdown may be storage contention");
  // Under max(1 MB/s, a quarter of the baseline's): the victim's own I/O varies that much.
  EXPECT_TRUE(TelemetryConfounds(XtPairing("memcpy", 12e6, 0.02), base).empty());
  // A storage antagonist's disk I/O is its own resource.
  EXPECT_TRUE(TelemetryConfounds(XtPairing("io_uring", 200e6, 0.02), base).empty());
  // PSI cpu some up by 0.10 or more without a cpu antagonist.
  c = TelemetryConfounds(XtPairing("llc", 10e6, 0.30), base);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].find("a (llc) raised PSI cpu some from 0.02 to 0.30"), std::string::npos);
  EXPECT_TRUE(TelemetryConfounds(XtPairing("cpu", 10e6, 0.90), base).empty());
  // Already named by the CPU-share rule: not twice.
  PairingSummary named = XtPairing("llc", 10e6, 0.30);
  named.confounds.push_back(
      "a (llc) used 0.50 CPU cores ...: part of this slowdown may be CPU "
      "contention");
  EXPECT_TRUE(TelemetryConfounds(named, base).empty());
  // A workload's footprint is its own; no telemetry, no confound.
  EXPECT_TRUE(TelemetryConfounds(XtPairing(kWorkloadInjector, 90e6, 0.9), base).empty());
  PairingSummary none = XtPairing("memcpy", 90e6, 0.9);
  none.telemetry.n = 0;
  EXPECT_TRUE(TelemetryConfounds(none, base).empty());
}

}  // namespace
}  // namespace codl::experiment
