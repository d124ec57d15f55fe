// The long-format exports, records of status, and `compare`, through the real codlctl binary
// on a database written here: what pandas/R, jq and a browser would read.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <tuple>

#include "lib/analysis/compare.h"
#include "lib/store/store.h"
#include "tests/integration/test_util.h"

namespace codl {
namespace {

using testing::Bin;
using testing::RunCommand;
using Json = nlohmann::json;

TrialRecord Trial(const std::string& exp, int index, int rep, const std::string& pairing,
                  double metric, TrialState state = TrialState::kDone) {
  TrialRecord t;
  t.experiment_id = exp;
  t.index = index;
  t.repetition = rep;
  t.baseline = pairing == "baseline";
  t.pairing = pairing;
  t.state = state;
  t.value_s = metric;
  t.wall_s = metric;
  t.phase_medians = {{"compute_s", 0.1}, {"read_s", metric / 10}};
  if (state == TrialState::kFlagged) {
    t.flag_reasons = {{FlagCode::kMissedTarget, "membw reached 80% of its target"},
                      {FlagCode::kDidNotSettle, "membw did not settle"}};
    t.error = JoinFlagReasons(t.flag_reasons);
  }
  if (state == TrialState::kFailed) t.error = "victim exited with 1";
  if (!t.baseline) {
    AntagonistResult a;
    a.name = pairing.substr(0, pairing.find('@'));
    a.injector = "memcpy";
    a.level = 0.5;
    a.cpu_s = 1;
    a.run_s = 2;
    t.antagonists.push_back(a);
  }
  return t;
}

// exp-a: baseline ~1 s, membw@0.5 ~1.5 s (one more trial flagged, one failed), storage@1 (only
// here); exp-b: baseline ~1 s, membw@0.5 ~2 s.
class ExportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("codl-exports");
    db_ = dir_ + "/r.db";
    auto store = store::Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    Write(store->get(), "exp-a", 1.5, true);
    Write(store->get(), "exp-b", 2.0, false);
  }
  void TearDown() override { testing::RemoveTree(dir_); }

  void Write(store::Store* s, const std::string& id, double interfered, bool extra) {
    ExperimentRecord e;
    e.id = id;
    e.name = id + "-name";
    e.seed = 7;
    e.state = ExperimentState::kDone;
    e.total_trials = extra ? 17 : 10;
    ASSERT_TRUE(s->CreateExperiment(e).ok());
    int index = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const double jitter = 0.01 * rep;
      ASSERT_TRUE(s->SaveTrial(Trial(id, index++, rep, "baseline", 1 + jitter)).ok());
      ASSERT_TRUE(s->SaveTrial(Trial(id, index++, rep, "membw@0.5", interfered + jitter)).ok());
    }
    if (!extra) return;
    ASSERT_TRUE(s->SaveTrial(Trial(id, index++, 5, "membw@0.5", 1.9, TrialState::kFlagged)).ok());
    ASSERT_TRUE(s->SaveTrial(Trial(id, index++, 6, "membw@0.5", 0, TrialState::kFailed)).ok());
    for (int rep = 0; rep < 5; ++rep)
      ASSERT_TRUE(s->SaveTrial(Trial(id, index++, rep, "storage@1", 1.2 + 0.01 * rep)).ok());
  }

  testing::CommandResult Codlctl(std::vector<std::string> args) {
    args.insert(args.begin(), Bin("codlctl"));
    return RunCommand(args, 120);
  }

  // Writes `text` to a file and has read_tidy.py read it as pandas/R users would.
  void ExpectReadableCsv(const std::string& text, const std::string& kind, int rows) {
    const std::string path = dir_ + "/" + kind + ".csv";
    testing::WriteFile(path, text);
    auto r = RunCommand({"/usr/bin/python3", testing::SourceDir() + "/tests/codlctl/read_tidy.py",
                         path, kind, std::to_string(rows)});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  std::string dir_, db_;
};

std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

TEST_F(ExportsTest, TrialsAreCsvByDefaultOneRowPerTrial) {
  auto r = Codlctl({"results", "exp-a", "--db", db_, "--trials"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectReadableCsv(r.out, "trials", 17);
  EXPECT_NE(r.out.find("flagged (an antagonist missed its target): membw reached 80%"),
            std::string::npos);
  EXPECT_NE(r.out.find("failed (the victim failed): victim exited with 1"), std::string::npos);
  EXPECT_NE(r.out.find(",1,missed_target;did_not_settle,1,"), std::string::npos)
      << "flagged, its reason codes in order, excluded:\n"
      << r.out;
}

TEST_F(ExportsTest, PhasesAreOneRowPerTrialAndPhase) {
  auto r = Codlctl({"results", "exp-a", "--db", db_, "--phases"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectReadableCsv(r.out, "phases", 17 * 2);
}

TEST_F(ExportsTest, TrialsAsJsonLinesKeepTypes) {
  auto r = Codlctl({"results", "exp-b", "--db", db_, "--trials", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = JsonLines(r.out);
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[1]["role"], "interfered");
  EXPECT_EQ(rows[1]["antagonists"], "membw");
  EXPECT_EQ(rows[1]["intensities"], "0.5");
  EXPECT_DOUBLE_EQ(rows[1]["value"].get<double>(), 2.0);
  EXPECT_EQ(rows[1]["excluded"], false);
  EXPECT_DOUBLE_EQ(rows[1]["antagonist_cores"].get<double>(), 0.5);
}

// Node telemetry (docs/results.md, "Node telemetry"): the victim node's figures in --trials
// (CSV and JSON), the pairing's medians in the summary's JSON, and a table in the report.
TEST_F(ExportsTest, NodeTelemetryInTrialsSummaryAndReport) {
  {
    auto store = store::Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    ExperimentRecord e;
    e.id = "exp-t";
    e.name = "telemetry";
    e.state = ExperimentState::kDone;
    e.total_trials = 6;
    ASSERT_TRUE((*store)->CreateExperiment(e).ok());
    for (int i = 0; i < 6; ++i) {
      TrialRecord t = Trial("exp-t", i, i / 2, i % 2 ? "storage@1" : "baseline", 1 + 0.01 * i);
      NodeTelemetry n;
      n.node = "node-a";
      n.window_s = 2;
      n.psi_cpu_some = 0.1;
      n.psi_io_some = i % 2 ? 0.5 : 0.0;
      n.disks = {{"vda", 0, i % 2 ? 200000000 : 2000000, 0, 10}};
      n.nics = {{"lo", 100, 100}, {"eth0", 1000, 0}};
      n.mem_available_min_bytes = 1ll << 30;
      n.membw_note = "memory bandwidth: unavailable (no uncore PMU in this VM)";
      t.node_telemetry = {n};
      ASSERT_TRUE((*store)->SaveTrial(t).ok());
    }
  }
  auto csv = Codlctl({"results", "exp-t", "--db", db_, "--trials"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  ExpectReadableCsv(csv.out, "trials", 6);
  auto r = Codlctl({"results", "exp-t", "--db", db_, "--trials", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = JsonLines(r.out);
  ASSERT_EQ(rows.size(), 6u);
  const Json& t = rows[1];
  EXPECT_EQ(t["telemetry_node"], "node-a");
  EXPECT_DOUBLE_EQ(t["telemetry_window_s"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(t["psi_io_some"].get<double>(), 0.5);
  EXPECT_TRUE(t["psi_memory_some"].is_null()) << "not measured is null, never 0";
  EXPECT_EQ(t["disk_write_bytes"], 200000000);
  EXPECT_EQ(t["net_rx_bytes"], 1100);
  EXPECT_EQ(t["net_tx_bytes"], 100);
  EXPECT_TRUE(t["membw_bytes"].is_null());
  EXPECT_EQ(t["membw_note"], "memory bandwidth: unavailable (no uncore PMU in this VM)");
  EXPECT_TRUE(t["mem_available_end_bytes"].is_null());
  const Json disks = Json::parse(t["disks"].get<std::string>());
  EXPECT_EQ(disks["vda"]["write_bytes"], 200000000);
  EXPECT_EQ(Json::parse(t["nics"].get<std::string>())["lo"]["rx_bytes"], 100);

  auto summary = Codlctl({"results", "exp-t", "--db", db_, "-o", "json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  bool seen = false;
  const Json results = Json::parse(summary.out);
  for (const Json& p : results["pairings"]) {
    if (p["pairing"] != "storage@1") continue;
    seen = true;
    ASSERT_TRUE(p.contains("telemetry")) << p.dump();
    EXPECT_EQ(p["telemetry"]["n"], 3);
    EXPECT_DOUBLE_EQ(p["telemetry"]["disk_write_bytes_per_s"].get<double>(), 1e8);
    EXPECT_DOUBLE_EQ(p["telemetry"]["psi_io_some"].get<double>(), 0.5);
    EXPECT_TRUE(p["telemetry"]["membw_bytes_per_s"].is_null());
  }
  EXPECT_TRUE(seen) << summary.out;

  const std::string html = dir_ + "/telemetry.html";
  auto report = Codlctl({"report", "exp-t", "--db", db_, "--output", html});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string page = testing::ReadFile(html);
  EXPECT_NE(page.find("<section id=\"telemetry\">"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"num\">50.0%</td>"), std::string::npos) << "PSI io of storage@1";
  EXPECT_NE(page.find("no uncore PMU in this VM"), std::string::npos);
}

// GPU telemetry (docs/results.md, "Node telemetry"): the victim node's GPUs in --trials, per GPU
// medians in the summary's JSON, a GPU table in the report; a node without NVML has its reason
// and no figures, never zeros.
TEST_F(ExportsTest, GpuTelemetryInTrialsSummaryAndReport) {
  {
    auto store = store::Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    ExperimentRecord e;
    e.id = "exp-g";
    e.name = "gpu telemetry";
    e.state = ExperimentState::kDone;
    e.total_trials = 4;
    ASSERT_TRUE((*store)->CreateExperiment(e).ok());
    for (int i = 0; i < 4; ++i) {
      TrialRecord t = Trial("exp-g", i, i / 2, i % 2 ? "h2d@1" : "baseline", 1 + 0.01 * i);
      NodeTelemetry n;
      n.node = "gpu-node";
      n.window_s = 2;
      n.gpu_note = "NVML, driver 550.54.15";
      for (int g = 0; g < 2; ++g) {
        GpuTelemetry gpu;
        gpu.index = g;
        gpu.name = "NVIDIA H100 80GB HBM3";
        gpu.samples = 10;
        gpu.util_mean = g == 0 ? 80 : 0;
        gpu.util_max = g == 0 ? 100 : 0;
        gpu.mem_used_max_bytes = (g + 1) * (1ll << 30);
        gpu.pcie_tx_bytes = 1e6;
        gpu.pcie_rx_bytes = i % 2 ? 4e10 : 2e6;  // NVLink: NaN (a PCIe card)
        gpu.sm_clock_min_mhz = 1500 + 100 * g;
        gpu.clock_reasons = g == 0 && i % 2 ? 0x24 : 0x1;
        n.gpus.push_back(gpu);
      }
      t.node_telemetry = {n};
      ASSERT_TRUE((*store)->SaveTrial(t).ok());
    }
    e.id = "exp-nogpu";
    e.total_trials = 1;
    ASSERT_TRUE((*store)->CreateExperiment(e).ok());
    TrialRecord t = Trial("exp-nogpu", 0, 0, "baseline", 1);
    NodeTelemetry n;
    n.node = "cpu-node";
    n.window_s = 1;
    n.gpu_note = "gpu: unavailable (libnvidia-ml.so.1 not found: no NVIDIA driver on this node)";
    t.node_telemetry = {n};
    ASSERT_TRUE((*store)->SaveTrial(t).ok());
  }
  auto csv = Codlctl({"results", "exp-g", "--db", db_, "--trials"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  ExpectReadableCsv(csv.out, "trials", 4);
  auto r = Codlctl({"results", "exp-g", "--db", db_, "--trials", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = JsonLines(r.out);
  ASSERT_EQ(rows.size(), 4u);
  const Json& t = rows[1];
  EXPECT_EQ(t["gpu_note"], "NVML, driver 550.54.15");
  EXPECT_EQ(t["gpu_count"], 2);
  EXPECT_DOUBLE_EQ(t["gpu_util_mean"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(t["gpu_util_max"].get<double>(), 100);
  EXPECT_EQ(t["gpu_mem_used_max_bytes"], 2ll << 30);
  EXPECT_DOUBLE_EQ(t["gpu_pcie_rx_bytes"].get<double>(), 8e10);
  EXPECT_DOUBLE_EQ(t["gpu_pcie_tx_bytes"].get<double>(), 2e6);
  EXPECT_TRUE(t["gpu_nvlink_tx_bytes"].is_null()) << "not counted is null, never 0";
  EXPECT_DOUBLE_EQ(t["gpu_sm_clock_min_mhz"].get<double>(), 1500);
  EXPECT_EQ(t["gpu_clock_reasons"], "gpu_idle|sw_power_cap|sw_thermal");
  const Json gpus = Json::parse(t["gpus"].get<std::string>());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0]["clock_reasons"], "sw_power_cap|sw_thermal");
  EXPECT_TRUE(gpus[1]["nvlink_rx_bytes"].is_null());

  auto none = Codlctl({"results", "exp-nogpu", "--db", db_, "--trials", "-o", "json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  const Json n = JsonLines(none.out).at(0);
  EXPECT_EQ(n["gpu_note"],
            "gpu: unavailable (libnvidia-ml.so.1 not found: no NVIDIA driver on this node)");
  EXPECT_EQ(n["gpu_count"], 0);
  EXPECT_TRUE(n["gpu_util_max"].is_null());
  EXPECT_TRUE(n["gpu_pcie_rx_bytes"].is_null());
  EXPECT_TRUE(n["gpu_clock_reasons"].is_null());
  EXPECT_EQ(n["gpus"], "[]");

  auto summary = Codlctl({"results", "exp-g", "--db", db_, "-o", "json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  bool seen = false;
  const Json results = Json::parse(summary.out);
  for (const Json& p : results["pairings"]) {
    if (p["pairing"] != "h2d@1") continue;
    seen = true;
    const Json& tm = p["telemetry"];
    EXPECT_EQ(tm["gpu_note"], "NVML, driver 550.54.15");
    ASSERT_EQ(tm["gpus"].size(), 2u) << tm.dump();
    EXPECT_EQ(tm["gpus"][0]["n"], 2);
    EXPECT_DOUBLE_EQ(tm["gpus"][0]["pcie_rx_bytes_per_s"].get<double>(), 2e10);
    EXPECT_DOUBLE_EQ(tm["gpus"][0]["util_mean"].get<double>(), 80);
    EXPECT_TRUE(tm["gpus"][0]["nvlink_tx_bytes_per_s"].is_null());
    EXPECT_EQ(tm["gpus"][0]["clock_reasons"], "sw_power_cap|sw_thermal");
    EXPECT_EQ(tm["gpus"][1]["clock_reasons"], "gpu_idle");
  }
  EXPECT_TRUE(seen) << summary.out;

  const std::string html = dir_ + "/gpu.html";
  auto report = Codlctl({"report", "exp-g", "--db", db_, "--output", html});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string page = testing::ReadFile(html);
  EXPECT_NE(page.find("<table class=\"telemetry gpu\">"), std::string::npos);
  EXPECT_NE(page.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(page.find("sw_power_cap|sw_thermal"), std::string::npos);
  EXPECT_NE(page.find("0.5 / 20000.0"), std::string::npos) << "PCIe tx / rx MB/s of h2d@1";

  const std::string cpu_html = dir_ + "/nogpu.html";
  auto cpu_report = Codlctl({"report", "exp-nogpu", "--db", db_, "--output", cpu_html});
  ASSERT_EQ(cpu_report.exit_code, 0) << cpu_report.err;
  EXPECT_EQ(testing::ReadFile(cpu_html).find("telemetry gpu"), std::string::npos);
}

TEST_F(ExportsTest, ResultsJsonCarriesProvenance) {
  auto r = Codlctl({"results", "exp-a", "--db", db_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_TRUE(j.contains("provenance"));
  EXPECT_EQ(j["seed"], 7);
}

TEST_F(ExportsTest, StatusRecordsAsJsonAndCsv) {
  auto json = Codlctl({"status", "--db", db_, "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto rows = JsonLines(json.out);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) EXPECT_EQ(row["state"], "done");
  auto csv = Codlctl({"status", "exp-a", "--db", db_, "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("experiment_id,name,state,completed_trials,total_trials", 0), 0u);
  EXPECT_NE(csv.out.find("\nexp-a,exp-a-name,done,17,17,1,"), std::string::npos) << csv.out;
}

TEST_F(ExportsTest, CompareMatchesPairingsAndRatiosTheirSlowdowns) {
  auto r = Codlctl({"compare", "exp-a", "exp-b", "--db", db_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out);
  ASSERT_EQ(j["pairings"].size(), 2u);
  const auto& membw = j["pairings"][0];
  EXPECT_EQ(membw["pairing"], "membw@0.5");
  EXPECT_TRUE(membw["matched"].get<bool>());
  const auto& ratio = membw["ratios"][0];
  EXPECT_NEAR(ratio["ratio"].get<double>(), 2.0 / 1.5, 0.02);
  EXPECT_LE(ratio["ci_low"].get<double>(), ratio["ratio"].get<double>());
  EXPECT_GE(ratio["ci_high"].get<double>(), ratio["ratio"].get<double>());
  ASSERT_EQ(j["unmatched"].size(), 1u);
  EXPECT_EQ(j["unmatched"][0]["pairing"], "storage@1");
  EXPECT_EQ(j["unmatched"][0]["experiment_id"], "exp-a");
}

TEST_F(ExportsTest, CompareTableCsvAndReport) {
  const std::string html = dir_ + "/compare.html";
  auto table = Codlctl({"compare", "exp-a", "exp-b", "--db", db_, "--report", html});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("#2/#1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("storage@1 (only in #1)"), std::string::npos) << table.out;
  const std::string page = testing::ReadFile(html);
  EXPECT_NE(page.find("<section id=\"compare\">"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  auto csv = Codlctl({"compare", "exp-a", "exp-b", "--db", db_, "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("pairing,matched,n_1,slowdown_1,ci_low_1,ci_high_1,n_2,", 0), 0u);
  EXPECT_NE(csv.out.find("ratio_ci_high_2"), std::string::npos);
}

TEST_F(ExportsTest, CompareNeedsTwoExperiments) {
  auto r = Codlctl({"compare", "exp-a", "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
}

// codlctl predict --victim-profile P --neighbour N on a database written here: P's victim
// (victim-a) slows 1 + 0.4 x under memcpy at level x; N (job-b as the victim) leaves memcpy at
// max 0.75 of its peak (pressure 0.25); M ran victim-a beside job-b as a workload antagonist
// and measured 1.0x. So the prediction is 1.1x, 10 % above the measured pair.
class ProfilePredictCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("codl-profile-predict");
    db_ = dir_ + "/r.db";
    auto store = store::Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    store::Store* s = store->get();
    const std::vector<double> spread = {1.0, 1.01, 0.99, 1.02, 0.98};
    const std::vector<double> fractions = {0.7, 0.75, 0.8, 0.75, 0.75};
    Create(s, "prof-p",
           "victim:\n  command: [victim-a, --steps, \"10\"]\nantagonists:\n"
           "  - name: membw\n    injector: memcpy\n    levels: [0.5, 1]\n");
    Create(s, "nb-n",
           "victim:\n  command: [job-b]\nantagonists:\n"
           "  - name: bw\n    injector: memcpy\n    levels: [max]\n");
    Create(s, "pair-m",
           "victim:\n  command: [victim-a, --steps, \"10\"]\nantagonists:\n"
           "  - name: job2\n    workload:\n      command: [job-b]\n");
    int index = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const double f = spread[rep];
      Save(s, "prof-p", index, rep, "baseline", 1.0 * f, {});
      Save(s, "prof-p", index, rep, "membw@0.5", 1.2 * f, {Injector("membw", 50, 0)});
      Save(s, "prof-p", index, rep, "membw@1", 1.4 * f, {Injector("membw", 90, 0)});
      Save(s, "nb-n", index, rep, "baseline", 2.0 * f, {});
      Save(s, "nb-n", index, rep, "bw@max", 2.5 * f, {Injector("bw", 100 * fractions[rep], 100)});
      Save(s, "pair-m", index, rep, "baseline", 1.0 * f, {});
      AntagonistResult w;
      w.name = "job2";
      w.injector = "workload";
      w.achieved_rate = 0.02;
      w.unit = "s/step";
      Save(s, "pair-m", index, rep, "job2@run", 1.0 * f, {w});
    }
  }
  void TearDown() override { testing::RemoveTree(dir_); }

  static AntagonistResult Injector(const std::string& name, double achieved, double peak) {
    AntagonistResult a;
    a.name = name;
    a.injector = "memcpy";
    a.level = 1;
    a.achieved_rate = achieved;
    a.peak_rate = peak;
    a.unit = "bytes/s";
    return a;
  }
  static void Create(store::Store* s, const std::string& id, const std::string& body) {
    ExperimentRecord e;
    e.id = id;
    e.name = id + "-name";
    e.seed = 7;
    e.state = ExperimentState::kDone;
    e.yaml = "name: " + id + "\n" + body + "pairings: singles\n";
    ASSERT_TRUE(s->CreateExperiment(e).ok());
  }
  static void Save(store::Store* s, const std::string& id, int& index, int rep,
                   const std::string& pairing, double metric, std::vector<AntagonistResult> a) {
    TrialRecord t;
    t.experiment_id = id;
    t.index = index++;
    t.repetition = rep;
    t.baseline = pairing == "baseline";
    t.pairing = pairing;
    t.state = TrialState::kDone;
    t.value_s = metric;
    t.wall_s = metric;
    t.antagonists = std::move(a);
    ASSERT_TRUE(s->SaveTrial(t).ok());
  }
  testing::CommandResult Codlctl(std::vector<std::string> args) {
    args.insert(args.begin(), Bin("codlctl"));
    return RunCommand(args, 120);
  }
  std::string dir_, db_;
};

TEST_F(ProfilePredictCliTest, PredictsFromTheProfilesAndComparesWithTheMeasuredPair) {
  auto r = Codlctl(
      {"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--db", db_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["resources"].size(), 1u) << r.out;
  EXPECT_EQ(j["resources"][0]["injector"], "memcpy");
  EXPECT_NEAR(j["resources"][0]["pressure"].get<double>(), 0.25, 1e-9);
  EXPECT_NEAR(j["predicted"].get<double>(), 1.1, 1e-9);
  ASSERT_EQ(j["measured"].size(), 1u) << r.out;
  EXPECT_EQ(j["measured"][0]["experiment_id"], "pair-m");
  EXPECT_NEAR(j["measured"][0]["measured"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(j["measured"][0]["error"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(j["mape"].get<double>(), 10, 1e-6);

  r = Codlctl({"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--db", db_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("predicted slowdown: 1.100x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MAPE 10.0% over 1 measured pair"), std::string::npos) << r.out;

  // The neighbour's pressure is in its results too.
  r = Codlctl({"results", "nb-n", "--db", db_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json res = Json::parse(r.out);
  ASSERT_EQ(res["pressure"].size(), 1u) << r.out;
  EXPECT_EQ(res["pressure"][0]["workload"], "victim");
  EXPECT_NEAR(res["pressure"][0]["pressure"].get<double>(), 0.25, 1e-9);
  EXPECT_EQ(res["pressure"][0]["n"], 5);
}

TEST_F(ProfilePredictCliTest, BadIdsAndExperimentsWithoutPressureAreClearErrors) {
  auto r = Codlctl({"predict", "--victim-profile", "nope", "--neighbour", "nb-n", "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--victim-profile nope"), std::string::npos) << r.err;
  // prof-p recorded no calibrated peak: no pressure.
  r = Codlctl({"predict", "--victim-profile", "nb-n", "--neighbour", "prof-p", "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("neighbour prof-p: no pressure"), std::string::npos) << r.err;
  r = Codlctl({"predict", "--victim-profile", "prof-p", "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("must be given together"), std::string::npos) << r.err;
}

// The neighbour job as a workload usually runs with other arguments than as N's victim (until
// stopped rather than for a fixed count of steps): --measured names the pair's experiment.
TEST_F(ProfilePredictCliTest, MeasuredNamesThePairWhoseWorkloadCommandDiffers) {
  {
    auto store = store::Store::OpenExisting(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    Create(store->get(), "pair-long",
           "victim:\n  command: [victim-a, --steps, \"10\"]\nantagonists:\n"
           "  - name: job2\n    workload:\n      command: [job-b, --steps, \"1000000\"]\n");
    int index = 0;
    for (int rep = 0; rep < 5; ++rep) {
      Save(store->get(), "pair-long", index, rep, "baseline", 1.0, {});
      AntagonistResult w;
      w.name = "job2";
      w.injector = "workload";
      w.achieved_rate = 0.02;
      w.unit = "s/step";
      Save(store->get(), "pair-long", index, rep, "job2@run", 1.2, {w});
    }
  }
  auto r = Codlctl({"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--measured",
                    "pair-long", "--db", db_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  ASSERT_EQ(j["measured"].size(), 1u) << r.out;  // only the one named, not pair-m
  EXPECT_EQ(j["measured"][0]["experiment_id"], "pair-long");
  EXPECT_NEAR(j["measured"][0]["measured"].get<double>(), 1.2, 1e-9);
  EXPECT_NEAR(j["mape"].get<double>(), 100 * (1.2 - 1.1) / 1.2, 1e-6);
  // Both, repeated: two measured pairs, one MAPE over them.
  r = Codlctl({"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--measured",
               "pair-long", "--measured", "pair-m", "--db", db_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = Json::parse(r.out);
  EXPECT_EQ(j["measured"].size(), 2u) << r.out;
  EXPECT_EQ(j["n_compared"], 2);

  r = Codlctl({"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--measured", "nb-n",
               "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measured nb-n: its victim command is not the victim profile's"),
            std::string::npos)
      << r.err;
  r = Codlctl({"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--measured",
               "prof-p", "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measured prof-p: it has no workload antagonist"), std::string::npos)
      << r.err;
  r = Codlctl({"predict", "--victim-profile", "prof-p", "--neighbour", "nb-n", "--measured", "nope",
               "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measured nope"), std::string::npos) << r.err;
  r = Codlctl({"predict", "latest", "--measured", "pair-m", "--db", db_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measured goes with --victim-profile and --neighbour"), std::string::npos)
      << r.err;
}

// compare shows the other direction of a pairing with a workload antagonist: its own slowdown
// beside the victim in each experiment and the pair's combined throughput (issue 28: both
// directions in results, --trials, JSON, the report and compare).
TEST_F(ProfilePredictCliTest, CompareShowsBothDirectionsOfAWorkloadPair) {
  {
    auto store = store::Store::OpenExisting(db_);
    ASSERT_TRUE(store.ok()) << store.error();
    // In pair-1 job2 runs 0.02 s/step beside the victim, 1.5x its 0.01 s alone... (spread
    // keeps the bootstrap honest); in pair-2 1.2x. The victim: 1.3x and 1.1x.
    const std::vector<double> spread = {1.0, 1.01, 0.99, 1.02, 0.98};
    for (const auto& [id, own, victim] : std::vector<std::tuple<std::string, double, double>>{
             {"pair-1", 1.5, 1.3}, {"pair-2", 1.2, 1.1}}) {
      Create(store->get(), id,
             "victim:\n  command: [victim-a]\nantagonists:\n"
             "  - name: job2\n    workload:\n      command: [job-b]\n");
      int index = 0;
      for (int rep = 0; rep < 5; ++rep) {
        const double f = spread[rep];
        Save(store->get(), id, index, rep, "baseline", 1.0 * f, {});
        AntagonistResult w;
        w.name = "job2";
        w.injector = "workload";
        w.unit = "s/step";
        w.achieved_rate = 0.01 * own * f;
        Save(store->get(), id, index, rep, "job2@run", victim * f, {w});
        TrialRecord solo;
        solo.experiment_id = id;
        solo.index = index++;
        solo.repetition = rep;
        solo.solo = true;
        solo.pairing = "job2@solo";
        solo.state = TrialState::kDone;
        w.achieved_rate = 0.01 * f;
        solo.antagonists = {w};
        ASSERT_TRUE(store->get()->SaveTrial(solo).ok());
      }
    }
  }
  auto r = Codlctl({"compare", "pair-1", "pair-2", "--db", db_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["pairings"].size(), 1u) << r.out;
  const auto& p = j["pairings"][0];
  EXPECT_EQ(p["pairing"], "job2@run");
  ASSERT_EQ(p["experiments"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& n = p["experiments"][i]["neighbours"];
    ASSERT_EQ(n.size(), 1u) << r.out;
    EXPECT_EQ(n[0]["name"], "job2");
    EXPECT_EQ(n[0]["n_solo"], 5);
    EXPECT_NEAR(n[0]["slowdown"].get<double>(), i == 0 ? 1.5 : 1.2, 1e-6) << r.out;
    EXPECT_NEAR(n[0]["combined_throughput"].get<double>(),
                i == 0 ? 1 / 1.3 + 1 / 1.5 : 1 / 1.1 + 1 / 1.2, 1e-3)
        << r.out;
  }
  auto table = Codlctl({"compare", "pair-1", "pair-2", "--db", db_});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("job2@run: job2 beside the victim #1 1.50x"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("#2 1.20x"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("combined throughput #1 1.44, #2 1.74"), std::string::npos) << table.out;
  auto csv = Codlctl({"compare", "pair-1", "pair-2", "--db", db_, "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find("neighbour_slowdown_1,combined_throughput_1,neighbour_slowdown_2,"
                         "combined_throughput_2"),
            std::string::npos)
      << csv.out;
}

TEST(SlowdownRatioCI, SameDataGivesARatioAroundOneAndIsReproducible) {
  const std::vector<double> base = {1.0, 1.02, 0.98, 1.01, 0.99};
  const std::vector<double> hit = {1.5, 1.53, 1.47, 1.52, 1.49};
  experiment::BootstrapOptions opt;
  opt.resamples = 2000;
  opt.seed = 3;
  auto a = experiment::BootstrapSlowdownRatioCI(hit, base, hit, base, false, opt);
  auto b = experiment::BootstrapSlowdownRatioCI(hit, base, hit, base, false, opt);
  EXPECT_LT(a.low, 1.0);
  EXPECT_GT(a.high, 1.0);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  std::vector<double> worse;
  for (double x : hit) worse.push_back(2 * x - 1);  // twice the extra time
  auto c = experiment::BootstrapSlowdownRatioCI(hit, base, worse, base, false, opt);
  EXPECT_GT(c.low, 1.2);  // (2.0 / 1.0) / (1.5 / 1.0) = 1.33
  EXPECT_TRUE(
      std::isnan(experiment::BootstrapSlowdownRatioCI({}, base, hit, base, false, opt).low));
}

}  // namespace
}  // namespace codl
