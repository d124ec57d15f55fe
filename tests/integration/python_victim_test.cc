// An unmodified PyTorch script as the victim (issue 27): victim.command is
// [python3, -m, codl.run, SCRIPT, ...] with no set-up. The agent puts the codl package on the
// victim's PYTHONPATH and reads its records from the progress channel (CODL_PROGRESS_FD) while
// the script's own prints go to stdout; the results carry per-phase slowdowns. Real controller
// and agent (embedded in `codlctl run`), real codl-inject. Skips where Debian's python3 has no
// torch.
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/test_util.h"

namespace codl::testing {
namespace {

using nlohmann::json;

constexpr const char* kPython = "/usr/bin/python3";

std::string Experiment(const std::string& script) {
  return std::string(
             "name: python-victim\n"
             "victim:\n"
             "  command: [") +
         kPython + ", -m, codl.run, --warmup-steps, '2', " + script +
         ", --steps, '14', --workers, '1', --width, '8', --samples, '512']\n"
         "  env: {OMP_NUM_THREADS: '1'}\n"
         "  progress: {format: jsonl, field: step_time_s}\n"
         "  timeout: 120s\n"
         "antagonists:\n"
         "  - {name: membw, injector: memcpy, options: {threads: 1, buffer_size: 8MiB}, rates: "
         "[20MiB/s]}\n"
         "repetitions: 2\n"
         "min_antagonist_samples: 0\n"
         "warmup_trials: 0\n"
         "order: {seed: 5}\n"
         "settle: 1s\n"
         "calibration: {duration: 1s}\n"
         "lease: 5s\n";
}

TEST(PythonVictim, UnmodifiedScriptUnderCodlRunGetsPerPhaseSlowdowns) {
  if (RunCommand({kPython, "-c", "import torch"}, 120).exit_code != 0)
    GTEST_SKIP() << kPython << " cannot import torch (Debian: apt install python3-torch)";
  const std::string dir = MakeTempDir("codl-python-victim");
  const std::string script = SourceDir() + "/experiments/victims/plain_train.py";
  WriteFile(dir + "/exp.yaml", Experiment(script));
  const std::string db = dir + "/r.db";
  auto run = RunCommand(
      {Bin("codlctl"), "run", dir + "/exp.yaml", "--db", db, "-o", "json", "--scratch-root", dir},
      400, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  auto phases =
      RunCommand({Bin("codlctl"), "results", "latest", "--db", db, "--phases", "-o", "json"});
  ASSERT_EQ(phases.exit_code, 0) << phases.err;
  std::map<int, std::vector<std::string>> per_trial;
  for (const auto& line : Lines(phases.out)) {
    const json j = json::parse(line);
    per_trial[j["trial"].get<int>()].push_back(j["phase"]);
  }
  ASSERT_EQ(per_trial.size(), 4u) << phases.out;
  const std::vector<std::string> want = {"data_wait_s", "forward_s", "backward_s", "optimizer_s",
                                         "other_s"};
  for (const auto& [trial, names] : per_trial) EXPECT_EQ(names, want) << "trial " << trial;

  const json results = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(results.is_object()) << run.out;
  bool interfered = false;
  for (const auto& p : results["pairings"]) {
    if (p["n"] == 0) continue;
    std::set<std::string> names;
    for (const auto& ph : p["phases"]) {
      names.insert(ph["phase"].get<std::string>());
      if (!p["baseline"].get<bool>()) {
        interfered = true;
        EXPECT_TRUE(ph["slowdown"].is_number()) << ph;
        EXPECT_GT(ph["slowdown"].get<double>(), 0) << ph;
      }
    }
    EXPECT_TRUE(names.count("forward_s") && names.count("data_wait_s")) << p;
  }
  EXPECT_TRUE(interfered) << "no interfered pairing was measured\n" << run.out;
  if (!getenv("CODL_KEEP_TEST_DIR")) RemoveTree(dir);
}

}  // namespace
}  // namespace codl::testing
