// What a user sees while an experiment runs and after it, with real processes: `codlctl watch
// -o json|csv` against a live codl-controller + codl-agent (codl-victim's dataset generation
// shown as its own phase), `codlctl run --log-format json` (stderr one JSON object per line),
// and a custom victim's phases kept in the order it reported them through the store, the
// result tables and the figures.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

using nlohmann::json;

// One RFC 4180 record (quoted fields may hold commas and doubled quotes; no newlines here).
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote: " << line;
  return fields;
}

// docs/results.md, "Status and watch records".
const std::vector<std::string> kWatchColumns = {"ts_unix_ms",
                                                "experiment_id",
                                                "name",
                                                "state",
                                                "completed_trials",
                                                "total_trials",
                                                "failed_trials",
                                                "current_pairing",
                                                "eta_s",
                                                "victim_step",
                                                "victim_step_time_s",
                                                "created_unix_ms",
                                                "finished_unix_ms",
                                                "error",
                                                "precision",
                                                "stop_reason",
                                                "waiting_for",
                                                "message",
                                                "dataset_generated",
                                                "dataset_total",
                                                "event",
                                                "submitter"};

constexpr int kSamples = 400;

// codl-victim on a dataset it has to generate first (a folder that does not exist yet). `dir`
// is writable by anyone: an agent started as root runs victims as nobody.
std::string DatasetExperiment(const std::string& dir) {
  return "name: feedback\n"
         "victim:\n"
         "  command: [" +
         Bin("codl-victim") + ", run, --dir, " + dir + "/data, --samples, '" +
         std::to_string(kSamples) +
         "', --sample-size, 4KiB, --batch-size, '4', --steps, '4', --warmup-steps, '1', "
         "--gemm-dim, '32', --decode-work, '0', --threads, '1']\n"
         "  progress: {format: jsonl, field: step_time_s}\n"
         "  timeout: 120s\n"
         "antagonists:\n"
         "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, levels: "
         "[0.5]}\n"
         "repetitions: 1\n"
         "order: {seed: 3}\n"
         "settle: 1s\n"
         "calibration: {duration: 1s}\n"
         "lease: 5s\n";
}

class FeedbackTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("codl-feedback"); }
  void TearDown() override {
    if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir_);
  }
  std::string Log(const std::string& name) {
    return "==== " + name + "\n" + ReadFile(dir_ + "/" + name);
  }
  std::string dir_;
};

TEST_F(FeedbackTest, WatchJsonAndCsvFollowALiveExperimentWithItsDatasetPhase) {
  const std::string address = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  Process controller({Bin("codl-controller"), "--listen", address, "--db", dir_ + "/c.db",
                      "--heartbeat-interval", "200ms", "--insecure"},
                     dir_ + "/controller.log");
  Process agent({Bin("codl-agent"), "--controller", address, "--id", "a", "--listen", "127.0.0.1:0",
                 "--scratch-root", dir_, "--state-dir", dir_ + "/state", "--insecure"},
                dir_ + "/agent.log");
  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("codlctl"), "--controller", address});
    return RunCommand(args, 60);
  };
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto r = ctl({"agents", "--json"});
        return r.exit_code == 0 && r.out.find("\"alive\":true") != std::string::npos;
      },
      30))
      << Log("controller.log") << Log("agent.log");
  namespace fs = std::filesystem;
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  fs::create_directory(dir_ + "/victim");
  fs::permissions(dir_ + "/victim", fs::perms::all);
  WriteFile(dir_ + "/exp.yaml", DatasetExperiment(dir_ + "/victim"));
  auto sub = ctl({"submit", dir_ + "/exp.yaml"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = Lines(sub.out).at(0);
  // Both watchers join while the controller calibrates, before the victim's first run.
  Process json_watch({Bin("codlctl"), "--controller", address, "watch", id, "-o", "json"},
                     dir_ + "/watch.json");
  Process csv_watch({Bin("codlctl"), "--controller", address, "watch", id, "-o", "csv"},
                    dir_ + "/watch.csv");
  // The streams end by themselves when the experiment does, with exit status 0 for "done".
  EXPECT_EQ(json_watch.Wait(240), 0) << Log("watch.json") << Log("controller.log");
  EXPECT_EQ(csv_watch.Wait(60), 0) << Log("watch.csv");

  // -o json: every line a JSON object with the documented fields, in their order.
  const auto json_lines = Lines(ReadFile(dir_ + "/watch.json"));
  ASSERT_GE(json_lines.size(), 3u);
  std::vector<json> records;
  for (const auto& line : json_lines) {
    const json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not a JSON object: " << line;
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()),
              std::set<std::string>(kWatchColumns.begin(), kWatchColumns.end()))
        << line;
    EXPECT_EQ(j["experiment_id"], id);
    EXPECT_TRUE(j["ts_unix_ms"].is_number()) << line;
    records.push_back(j);
  }
  const json& last = records.back();
  EXPECT_EQ(last["state"], "done") << last;
  EXPECT_EQ(last["event"], "experiment") << last;
  EXPECT_EQ(last["completed_trials"], last["total_trials"]) << last;
  EXPECT_EQ(last["total_trials"], 2) << last;
  // The dataset phase: its start and end are messages carrying the progress fields.
  int dataset_records = 0;
  bool generated_all = false;
  for (const json& r : records) {
    if (r["dataset_total"].is_null()) {
      EXPECT_TRUE(r["dataset_generated"].is_null()) << r;
      continue;
    }
    ++dataset_records;
    EXPECT_EQ(r["dataset_total"], kSamples) << r;
    EXPECT_LE(r["dataset_generated"].get<int>(), kSamples) << r;
    generated_all =
        generated_all ||
        (r["dataset_generated"] == kSamples && r["event"] == "dataset" &&
         r["message"] == "dataset: the victim generated " + std::to_string(kSamples) + " samples");
  }
  EXPECT_GE(dataset_records, 1) << ReadFile(dir_ + "/watch.json");
  EXPECT_TRUE(generated_all) << ReadFile(dir_ + "/watch.json");

  // -o csv: one header, then rows as wide as it, ending done.
  const auto csv_lines = Lines(ReadFile(dir_ + "/watch.csv"));
  ASSERT_GE(csv_lines.size(), 2u);
  EXPECT_EQ(CsvFields(csv_lines[0]), kWatchColumns);
  bool csv_dataset = false;
  for (size_t i = 1; i < csv_lines.size(); ++i) {
    const auto f = CsvFields(csv_lines[i]);
    ASSERT_EQ(f.size(), kWatchColumns.size()) << csv_lines[i];
    EXPECT_NE(f[0], "ts_unix_ms") << "a second header at line " << i + 1;
    EXPECT_GT(std::stoll(f[0]), 0) << csv_lines[i];
    EXPECT_EQ(f[1], id);
    EXPECT_GE(std::stoi(f[4]), 0) << csv_lines[i];  // completed_trials
    csv_dataset = csv_dataset || f[18] == std::to_string(kSamples);
  }
  EXPECT_EQ(CsvFields(csv_lines.back())[3], "done");
  EXPECT_TRUE(csv_dataset) << ReadFile(dir_ + "/watch.csv");
}

// A victim whose phases are neither codl-victim's nor in name order.
constexpr const char* kCustomVictim =
    R"(for i in 1 2 3 4; do echo "{\"step\": $i, \"step_time_s\": 0.03, \"phases\": {\"zeta_s\": 0.01, \"alpha_s\": 0.01, \"compute_s\": 0.005, \"mid_s\": 0.01}}"; sleep 0.02; done)";

std::string CustomVictimExperiment() {
  return std::string("name: phase-order\n") +
         "victim:\n"
         "  command: [sh, -c, '" +
         kCustomVictim +
         "']\n"
         "  progress: {format: jsonl, field: step_time_s}\n"
         "  timeout: 60s\n"
         // A low absolute rate: the interfered trial must be measured (not flagged for a missed
         // target on a busy machine) for its phases to reach the tables and the figure.
         "antagonists:\n"
         "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, rates: "
         "[20MiB/s]}\n"
         "repetitions: 2\n"
         "min_antagonist_samples: 0\n"  // the victim runs ~0.1 s: too short to judge otherwise
         "warmup_trials: 0\n"
         "order: {seed: 3}\n"
         "settle: 1s\n"
         "calibration: {duration: 1s}\n"
         "lease: 5s\n";
}

// compute_s is codl-victim's pipeline name: first; the others as the victim listed them.
const std::vector<std::string> kPhaseOrder = {"compute_s", "zeta_s", "alpha_s", "mid_s"};

TEST_F(FeedbackTest, RunLogFormatJsonAndTheVictimsPhaseOrderThroughTheStore) {
  WriteFile(dir_ + "/exp.yaml", CustomVictimExperiment());
  const std::string db = dir_ + "/r.db";
  auto run = RunCommand({Bin("codlctl"), "run", dir_ + "/exp.yaml", "--db", db, "--log-format",
                         "json", "--log-level", "info", "-o", "json", "--scratch-root", dir_},
                        240, dir_);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // stderr: the embedded daemons' logs, run's notes and progress, all JSON log lines.
  const auto err_lines = Lines(run.err);
  ASSERT_FALSE(err_lines.empty());
  std::set<std::string> levels;
  bool progress = false, daemon_log = false;
  for (const auto& line : err_lines) {
    const json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "stderr line is not JSON: " << line;
    for (const char* k : {"ts", "level", "msg", "component"}) {
      EXPECT_TRUE(j.contains(k) && j[k].is_string()) << k << " in " << line;
    }
    EXPECT_EQ(j.value("component", ""), "codlctl") << line;
    levels.insert(j.value("level", ""));
    const std::string msg = j.value("msg", "");
    progress = progress || msg.rfind("[4/4] trial 4/4", 0) == 0;
    daemon_log = daemon_log || msg.find("victim sh finished") != std::string::npos;
  }
  EXPECT_TRUE(progress) << run.err;
  EXPECT_TRUE(daemon_log) << "no log line of the embedded agent\n" << run.err;
  EXPECT_TRUE(levels.count("info")) << run.err;
  // stdout: the results alone.
  const json results = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(results.is_object()) << run.out;

  // The order the victim reported, read back from the database by every view of phases.
  auto phases_csv =
      RunCommand({Bin("codlctl"), "results", "latest", "--db", db, "--phases", "-o", "csv"});
  ASSERT_EQ(phases_csv.exit_code, 0) << phases_csv.err;
  const auto rows = Lines(phases_csv.out);
  ASSERT_FALSE(rows.empty());
  const auto header = CsvFields(rows[0]);
  const size_t phase_col = std::find(header.begin(), header.end(), "phase") - header.begin();
  const size_t index_col = std::find(header.begin(), header.end(), "trial") - header.begin();
  ASSERT_LT(phase_col, header.size()) << rows[0];
  std::map<std::string, std::vector<std::string>> per_trial;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto f = CsvFields(rows[i]);
    per_trial[index_col < f.size() ? f[index_col] : ""].push_back(f.at(phase_col));
  }
  ASSERT_EQ(per_trial.size(), 4u) << phases_csv.out;  // flagged trials have their phases too
  for (const auto& [trial, phases] : per_trial) EXPECT_EQ(phases, kPhaseOrder) << trial;

  auto summary = RunCommand({Bin("codlctl"), "results", "latest", "--db", db, "-o", "json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  const json j = json::parse(summary.out);
  bool interfered_measured = false;
  for (const auto& p : j["pairings"]) {
    // A pairing whose trials were all flagged (a missed target on a busy machine) has none.
    if (p["n"] == 0) continue;
    interfered_measured = interfered_measured || !p["baseline"].get<bool>();
    std::vector<std::string> names;
    for (const auto& ph : p["phases"]) names.push_back(ph["phase"]);
    EXPECT_EQ(names, kPhaseOrder) << p["pairing"];
  }
  ASSERT_GT(j["pairings"][0]["n"].get<int>(), 0) << summary.out;
  if (!interfered_measured) {
    GTEST_SKIP() << "every interfered trial was flagged here: no phase bars to check\n"
                 << summary.out;
  }

  const std::string figures = dir_ + "/figures";
  auto report = RunCommand({Bin("codlctl"), "report", "latest", "--db", db, "--figures", figures});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto fig_rows = Lines(ReadFile(figures + "/phases.csv"));
  ASSERT_GE(fig_rows.size(), 2u);
  // The baseline's rows first, its phases in the victim's order, then its step and untimed rows.
  std::vector<std::string> labels;
  for (size_t i = 1; i < fig_rows.size() && CsvFields(fig_rows[i]).at(1) != "step"; ++i) {
    labels.push_back(CsvFields(fig_rows[i]).at(1));
  }
  EXPECT_EQ(labels, kPhaseOrder);
}

}  // namespace
}  // namespace codl::testing
