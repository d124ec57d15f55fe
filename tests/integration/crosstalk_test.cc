// `codlctl crosstalk` end to end (embedded controller + agent, real processes, real io_uring
// I/O and TCP over loopback): each antagonist alone over an idle window; the matrix holds its
// footprint with its own resource marked, the independent counters agree with what io_uring
// and net report achieving, --show prints the stored matrix as table / JSON / CSV, the report
// has its section, --plan runs nothing and bad flags are named.
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

class CrosstalkTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-crosstalk"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string Db() const { return dir_ + "/codl-results.db"; }
  std::string dir_;
};

const nlohmann::json* XtRowOf(const nlohmann::json& j, const std::string& injector) {
  for (const auto& row : j["rows"]) {
    if (row["injector"] == injector) return &row;
  }
  return nullptr;
}

TEST_F(CrosstalkTest, FootprintsOwnResourcesAndIndependentCounters) {
  // FILE's settle, calibration and injector options carry over; its victim does not.
  WriteFile(dir_ + "/quick.yaml",
            "name: quick\nvictim: {command: [codl-victim, run]}\nsettle: 0.5s\n"
            "calibration: {duration: 1s}\nantagonists:\n"
            "  - {name: t, injector: net, levels: [0.25], options: {connections: 1}}\n");
  auto r = RunCommand(
      {Bin("codlctl"), "crosstalk", dir_ + "/quick.yaml", "--injectors", "cpu,io_uring,net",
       "--levels", "0.5", "--repetitions", "2", "--window", "2s", "--scratch-root", dir_, "--db",
       Db(), "-o", "json", "--report", dir_ + "/report.html"},
      400, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  auto yaml = RunCommand({Bin("codlctl"), "results", "latest", "--db", Db(), "-o", "json"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const auto results_json = nlohmann::json::parse(yaml.out);
  EXPECT_EQ(results_json["name"], "quick-crosstalk");
  EXPECT_EQ(results_json["crosstalk"]["rows"], j["rows"]);
  const std::string stored = results_json["yaml"];
  EXPECT_NE(stored.find("connections: 1"), std::string::npos) << stored;
  EXPECT_NE(stored.find("settle: 0.5s"), std::string::npos) << stored;
  EXPECT_EQ(stored.find("codl-victim"), std::string::npos) << stored;
  EXPECT_EQ(j["baseline_n"], 2);
  ASSERT_EQ(j["rows"].size(), 3u) << r.out;

  const auto* cpu = XtRowOf(j, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE((*cpu)["resources"]["cpu_cores"]["own"].get<bool>());
  EXPECT_GT((*cpu)["resources"]["cpu_cores"]["value"].get<double>(), 0.1) << cpu->dump();
  EXPECT_TRUE((*cpu)["counter_check"].is_null());

  // io_uring's bytes are in the disks' counters, net's in lo's: the two counts agree.
  const auto* disk = XtRowOf(j, "io_uring");
  ASSERT_NE(disk, nullptr);
  EXPECT_TRUE((*disk)["resources"]["disk_bytes_per_s"]["own"].get<bool>());
  EXPECT_GT((*disk)["resources"]["disk_bytes_per_s"]["value"].get<double>(), 0) << disk->dump();
  ASSERT_TRUE((*disk)["counter_check"]["relative_error"].is_number()) << disk->dump();
  EXPECT_LT(std::abs((*disk)["counter_check"]["relative_error"].get<double>()), 0.5)
      << disk->dump();
  const auto* net = XtRowOf(j, "net");
  ASSERT_NE(net, nullptr);
  EXPECT_TRUE((*net)["resources"]["net_max_bytes_per_s"]["own"].get<bool>());
  ASSERT_TRUE((*net)["counter_check"]["relative_error"].is_number()) << net->dump();
  EXPECT_LT(std::abs((*net)["counter_check"]["relative_error"].get<double>()), 0.5) << net->dump();
  // Memory bandwidth: a figure, or the reason there is none — never a zero.
  const auto& membw = (*cpu)["resources"]["membw_bytes_per_s"]["value"];
  EXPECT_TRUE(membw.is_null() || membw.get<double>() != 0);
  if (membw.is_null()) {
    EXPECT_NE(j["membw_note"].get<std::string>(), "");
  }

  // --show: the stored matrix again, as table, JSON and CSV.
  auto table = RunCommand({Bin("codlctl"), "crosstalk", "--show", "latest", "--db", Db()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("cross-talk: each antagonist alone"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("independent counters"), std::string::npos) << table.out;
  auto json =
      RunCommand({Bin("codlctl"), "crosstalk", "--show", "latest", "--db", Db(), "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["rows"], j["rows"]);
  auto csv =
      RunCommand({Bin("codlctl"), "crosstalk", "--show", "latest", "--db", Db(), "-o", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("pairing,antagonist,injector,intensity,resource,unit,value", 0), 0u)
      << csv.out;
  // `results` shows the matrix, not the idle window's "slowdown".
  auto results = RunCommand({Bin("codlctl"), "results", "latest", "--db", Db()});
  ASSERT_EQ(results.exit_code, 0) << results.err;
  EXPECT_NE(results.out.find("cross-talk:"), std::string::npos) << results.out;
  EXPECT_EQ(results.out.find("slowdown [CI]"), std::string::npos) << results.out;

  const std::string html = ReadFile(dir_ + "/report.html");
  EXPECT_NE(html.find("<section id=\"crosstalk\">"), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"heatmap\">"), std::string::npos);
}

TEST_F(CrosstalkTest, PlanRunsNothingAndBadFlagsAreNamed) {
  auto plan = RunCommand(
      {Bin("codlctl"), "crosstalk", "--injectors", "cpu,memcpy", "--plan", "--db", Db()});
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  EXPECT_NE(plan.out.find("cross-talk of: cpu, memcpy"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("15 trials"), std::string::npos) << plan.out;  // (1 + 2 x 2) x 3
  struct stat st {};
  EXPECT_NE(stat(Db().c_str(), &st), 0);  // nothing ran, nothing stored

  const struct {
    std::vector<std::string> flags;
    std::string message;
  } kBad[] = {
      {{"--window", "0.5s"}, "codlctl crosstalk: --window '0.5s' is out of range 1s … 1h"},
      {{"--levels", "2"}, "codlctl crosstalk: --levels: '2' is not a level in (0, 1] or max"},
      {{"--repetitions", "0"}, "codlctl crosstalk: --repetitions 0 is out of range 1 … 1000"},
      {{"--injectors", "nosuch"}, "codlctl crosstalk: --injectors: "},
  };
  for (const auto& bad : kBad) {
    std::vector<std::string> argv = {Bin("codlctl"), "crosstalk", "--db", Db()};
    argv.insert(argv.end(), bad.flags.begin(), bad.flags.end());
    auto r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << bad.message;
    EXPECT_EQ(r.err.rfind(bad.message, 0), 0u) << r.err;
  }
  // A stored experiment that is not a cross-talk one is refused by --show.
  auto none = RunCommand({Bin("codlctl"), "crosstalk", "--show", "latest", "--db", Db()});
  EXPECT_NE(none.exit_code, 0);
}

}  // namespace
}  // namespace codl::testing
