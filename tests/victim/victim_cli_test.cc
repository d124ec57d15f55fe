// Runs the real codl-victim binary (and experiments/victims/pytorch_cnn.py when PyTorch is
// importable): output schema, phases per stage, deterministic data, usage errors, fallbacks.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/victim/victim_test_util.h"

namespace {

namespace fs = std::filesystem;
using codl::victim::test_util::ReadFile;
using codl::victim::test_util::TempDir;
using nlohmann::json;

struct Output {
  int exit_code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv through the shell, capturing both streams.
Output RunCommand(const std::vector<std::string>& argv) {
  TempDir io;
  std::string cmd;
  for (const auto& a : argv) cmd += Quote(a) + " ";
  cmd += ">" + (io / "out") + " 2>" + (io / "err") + " </dev/null";
  const int status = std::system(cmd.c_str());
  Output o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = ReadFile(io / "out");
  o.err = ReadFile(io / "err");
  return o;
}

std::string BinDir() {
  if (const char* d = std::getenv("CODL_BIN_DIR")) return d;
  return fs::read_symlink("/proc/self/exe").parent_path().string();  // tests land beside it
}

std::string Victim() { return BinDir() + "/codl-victim"; }

std::string SourceDir() {
  if (const char* d = std::getenv("CODL_SOURCE_DIR")) return d;
  return CODL_TEST_SOURCE_DIR;
}

std::vector<json> ParseLines(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    EXPECT_TRUE(j.is_object()) << line;
    lines.push_back(j);
  }
  return lines;
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.insert(k);
  return keys;
}

// The dataset records a run prints before its config line when it generates the dataset.
std::vector<json> DatasetRecords(const std::vector<json>& lines) {
  std::vector<json> records;
  for (const json& j : lines) {
    if (j.value("dataset", false)) records.push_back(j);
  }
  return records;
}

// Checks config / steps / summary (after any dataset records) and returns the step lines.
std::vector<json> CheckSchema(const Output& o, int steps, int warmup) {
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::vector<json> lines = ParseLines(o.out);
  lines.erase(lines.begin(), lines.begin() + static_cast<long>(DatasetRecords(lines).size()));
  EXPECT_EQ(lines.size(), static_cast<size_t>(steps + warmup + 2)) << o.out;
  if (lines.size() < 2) return {};
  EXPECT_EQ(lines.front().value("config", false), true) << lines.front();
  const json& summary = lines.back();
  EXPECT_EQ(summary.value("summary", false), true) << summary;
  EXPECT_EQ(summary.value("steps", -1), steps);
  EXPECT_GT(summary.value("median_step_time_s", 0.0), 0.0);
  EXPECT_GT(summary.value("samples_per_s", 0.0), 0.0);
  std::vector<json> step_lines(lines.begin() + 1, lines.end() - 1);
  for (size_t i = 0; i < step_lines.size(); ++i) {
    const json& s = step_lines[i];
    EXPECT_EQ(s.value("step", -1), static_cast<int>(i)) << s;
    EXPECT_TRUE(s["step_time_s"].is_number()) << s;
    EXPECT_GT(s.value("step_time_s", 0.0), 0.0) << s;
    EXPECT_EQ(s.contains("warmup"), static_cast<int>(i) < warmup) << s;
    EXPECT_TRUE(s["phases"].is_object()) << s;
    for (const auto& [k, v] : s["phases"].items()) {
      EXPECT_TRUE(v.is_number() && v.get<double>() >= 0) << k << " in " << s;
    }
  }
  return step_lines;
}

std::string MakeDataset(const TempDir& dir, const std::string& seed = "1") {
  const std::string data = dir / "data";
  Output g = RunCommand({Victim(), "gen-data", "--dir", data, "--samples", "24", "--sample-size",
                         "48KiB", "--seed", seed});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  return data;
}

TEST(VictimCli, EveryLineIsJsonAndPhasesAreThoseOfTheStagesRun) {
  TempDir dir;
  const std::string data = MakeDataset(dir);
  const std::vector<std::string> base = {Victim(),       "run", "--dir",          data,
                                         "--batch-size", "4",   "--gemm-dim",     "64",
                                         "--steps",      "3",   "--warmup-steps", "1"};
  struct Case {
    std::vector<std::string> extra;
    std::set<std::string> phases;
  } cases[] = {
      {{}, {"data_wait_s", "read_s", "decode_s", "h2d_s", "compute_s"}},
      {{"--decode-work", "0"}, {"data_wait_s", "read_s", "h2d_s", "compute_s"}},
      {{"--h2d-size", "0", "--gemm-flops", "0"}, {"data_wait_s", "read_s", "decode_s"}},
      {{"--ranks", "2", "--allreduce-size", "256KiB"},
       {"data_wait_s", "read_s", "decode_s", "h2d_s", "compute_s", "comm_s"}},
      {{"--profile", "io-bound", "--gemm-count", "0", "--h2d-size", "64KiB"},
       {"data_wait_s", "read_s", "h2d_s"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), c.extra.begin(), c.extra.end());
    SCOPED_TRACE(::testing::PrintToString(c.extra));
    Output o = RunCommand(argv);
    for (const json& s : CheckSchema(o, 3, 1)) EXPECT_EQ(Keys(s["phases"]), c.phases) << s;
    std::vector<json> lines = ParseLines(o.out);
    if (lines.empty()) continue;
    EXPECT_EQ(Keys(lines.back()["phase_medians"]), c.phases);
    EXPECT_EQ(lines.front().value("ranks", 0),
              c.extra.size() > 1 && c.extra[0] == "--ranks" ? 2 : 1);
  }
}

TEST(VictimCli, RunWithoutSubcommandAndIoUringReader) {
  TempDir dir;
  const std::string data = MakeDataset(dir);
  // The DESIGN sketch's form: no subcommand, --data.
  Output o = RunCommand({Victim(), "--data", data, "--steps", "2", "--warmup-steps", "0",
                         "--batch-size", "4", "--gemm-dim", "32"});
  CheckSchema(o, 2, 0);
  Output u = RunCommand({Victim(), "run", "--dir", data, "--reader", "io_uring", "--steps", "2",
                         "--batch-size", "4", "--gemm-dim", "32", "--read-block", "16KiB"});
  if (u.exit_code == 1 && u.err.find("io_uring") != std::string::npos) {
    GTEST_SKIP() << "io_uring unavailable here: " << u.err;
  }
  CheckSchema(u, 2, 2);
  EXPECT_EQ(ParseLines(u.out).front().value("reader", ""), "io_uring");
}

TEST(VictimCli, GeneratesTheDatasetWhenMissingAndChecksExplicitShape) {
  TempDir dir;
  Output o = RunCommand({Victim(), "run", "--dir", dir / "auto", "--samples", "8", "--sample-size",
                         "8KiB", "--batch-size", "2", "--steps", "1", "--gemm-dim", "32"});
  CheckSchema(o, 1, 2);
  EXPECT_NE(o.err.find("generating 8 samples"), std::string::npos) << o.err;
  // Generation is a phase of its own on stdout: a record when it starts, one when it ends, all
  // before the config line.
  const std::vector<json> lines = ParseLines(o.out);
  const std::vector<json> records = DatasetRecords(lines);
  ASSERT_GE(records.size(), 2u) << o.out;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(lines[i], records[i]) << "dataset records come first";
    EXPECT_EQ(records[i].value("total", -1), 8) << records[i];
    EXPECT_EQ(records[i].value("sample_size", -1), 8192) << records[i];
    EXPECT_GE(records[i].value("elapsed_s", -1.0), 0.0) << records[i];
    if (i > 0) {
      EXPECT_GE(records[i]["generated"], records[i - 1]["generated"]);
    }
  }
  EXPECT_EQ(records.front().value("generated", -1), 0);
  EXPECT_EQ(records.back().value("generated", -1), 8);
  // An existing dataset is not generated again: no records.
  Output again = RunCommand({Victim(), "run", "--dir", dir / "auto", "--batch-size", "2", "--steps",
                             "1", "--gemm-dim", "32"});
  CheckSchema(again, 1, 2);
  EXPECT_TRUE(DatasetRecords(ParseLines(again.out)).empty()) << again.out;
  EXPECT_EQ(fs::file_size(dir / "auto/sample-00000007.bin"), 8192u);
  Output mismatch = RunCommand({Victim(), "run", "--dir", dir / "auto", "--samples", "9"});
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_NE(mismatch.err.find("holds 8 samples"), std::string::npos) << mismatch.err;
}

TEST(VictimCli, SameSeedSameBytesOtherSeedOtherBytes) {
  TempDir a, b, c;
  const std::string da = MakeDataset(a, "7"), db = MakeDataset(b, "7"), dc = MakeDataset(c, "8");
  int identical_to_other_seed = 0;
  for (int i = 0; i < 24; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/sample-%08d.bin", i);
    const std::string fa = ReadFile(da + name), fb = ReadFile(db + name), fc = ReadFile(dc + name);
    ASSERT_EQ(fa.size(), 48u * 1024) << name;
    EXPECT_EQ(fa, fb) << name;
    identical_to_other_seed += fa == fc;
  }
  EXPECT_EQ(identical_to_other_seed, 0);
  std::set<std::string> distinct;
  for (int i = 0; i < 3; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/sample-%08d.bin", i);
    distinct.insert(ReadFile(da + name));
  }
  EXPECT_EQ(distinct.size(), 3u) << "samples of one dataset must differ from each other";
}

TEST(VictimCli, BadInputExitsTwoNamingTheOption) {
  TempDir dir;
  const std::string d = dir / "d";
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> want;  // substrings of stderr
  } cases[] = {
      {{"run", "--dir", d, "--batch-size", "0"}, {"--batch-size", "[1, 65536]"}},
      {{"run", "--dir", d, "--threads", "1000"}, {"--threads", "[1, 256]"}},
      {{"run", "--dir", d, "--reader", "aio"}, {"--reader", "posix, io_uring"}},
      {{"run", "--dir", d, "--profile", "fast"}, {"--profile", "io-bound"}},
      {{"run", "--dir", d, "--sample-size", "12XB"}, {"--sample-size", "unknown size unit"}},
      {{"run", "--dir", d, "--read-block", "1000"}, {"--read-block", "[4KiB, 1GiB]"}},
      {{"run", "--dir", d, "--device", "tpu"}, {"--device", "auto, cpu, cuda"}},
      {{"run", "--dir", d, "--steps"}, {"--steps needs a value"}},
      {{"run", "--dir", d, "--bogus", "1"}, {"unknown option '--bogus'"}},
      {{"run", "--steps", "3"}, {"--dir is required"}},
      {{"gen-data", "--dir", d, "--samples", "0"}, {"--samples", "[1, 10000000]"}},
      {{"train"}, {"unknown command 'train'"}},
      {{}, {"Usage"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {Victim()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Output o = RunCommand(argv);
    EXPECT_EQ(o.exit_code, 2) << ::testing::PrintToString(c.args) << " stderr: " << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
    for (const std::string& w : c.want)
      EXPECT_NE(o.err.find(w), std::string::npos) << w << " not in: " << o.err;
  }
  EXPECT_FALSE(fs::exists(d)) << "a rejected command must not create the dataset";
}

TEST(VictimCli, HelpTeachesEveryRunOption) {
  Output top = RunCommand({Victim(), "--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("gen-data"), std::string::npos);
  Output run = RunCommand({Victim(), "run", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* opt :
       {"--dir",        "--profile",  "--reader",         "--io-mode",    "--queue-depth",
        "--read-block", "--threads",  "--prefetch",       "--batch-size", "--decode-work",
        "--h2d-size",   "--gemm-dim", "--gemm-count",     "--gemm-flops", "--compute-threads",
        "--device",     "--ranks",    "--allreduce-size", "--steps",      "--warmup-steps",
        "--seed",       "io-bound",   "compute-bound",    "data_wait_s",  "read_s",
        "comm_s"}) {
    EXPECT_NE(run.out.find(opt), std::string::npos) << opt << " missing from run --help";
  }
  EXPECT_EQ(RunCommand({Victim(), "gen-data", "--help"}).exit_code, 0);
}

TEST(VictimCli, ShortSampleFileFailsWithStatusOneNamingIt) {
  TempDir dir;
  const std::string data = MakeDataset(dir);
  fs::resize_file(data + "/sample-00000005.bin", 10);
  Output o = RunCommand(
      {Victim(), "run", "--dir", data, "--batch-size", "24", "--steps", "1", "--gemm-dim", "32"});
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.err.find("sample-00000005.bin"), std::string::npos) << o.err;
}

// O_DIRECT refused (ramfs) must fall back to POSIX_FADV_DONTNEED and say so. ramfs is mounted in a
// private mount namespace, which needs root (or user namespaces); skipped where neither works.
TEST(VictimCli, FallsBackToFadviseWhereODirectIsRefused) {
  TempDir dir;
  const std::string mnt = dir / "ramfs";
  fs::create_directories(mnt);
  Output probe = RunCommand({"unshare", "-m", "sh", "-c", "mount -t ramfs ramfs " + Quote(mnt)});
  if (probe.exit_code != 0)
    GTEST_SKIP() << "cannot mount ramfs in a private namespace: " << probe.err;
  const std::string inner =
      "mount -t ramfs ramfs " + Quote(mnt) + " && " + Quote(Victim()) + " run --dir " +
      Quote(mnt + "/d") + " --samples 8 --sample-size 8KiB --batch-size 2 --steps 2 --gemm-dim 32";
  Output o = RunCommand({"unshare", "-m", "sh", "-c", inner});
  CheckSchema(o, 2, 2);
  const std::vector<json> lines = ParseLines(o.out);
  const json config = lines.at(DatasetRecords(lines).size());  // after the dataset records
  EXPECT_EQ(config.value("io_mode", ""), "fadvise") << config;
  EXPECT_NE(config.value("io_note", "").find("O_DIRECT refused"), std::string::npos) << config;
  EXPECT_NE(o.err.find("POSIX_FADV_DONTNEED"), std::string::npos) << o.err;
}

std::string PythonWithTorch() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    if (RunCommand({py, "-c", "import torch"}).exit_code == 0) return py;
  }
  return "";
}

TEST(PytorchVictim, PrintsTheSameJsonLines) {
  const std::string py = PythonWithTorch();
  if (py.empty())
    GTEST_SKIP()
        << "PyTorch is not importable by python3 or /usr/bin/python3 (apt install python3-torch)";
  TempDir dir;
  Output o = RunCommand({py, SourceDir() + "/experiments/victims/pytorch_cnn.py", "--data",
                         dir / "cnn", "--samples", "48", "--batch-size", "8", "--steps", "3",
                         "--warmup-steps", "1", "--workers", "1", "--device", "cpu"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const json& s : CheckSchema(o, 3, 1)) {
    EXPECT_EQ(Keys(s["phases"]), (std::set<std::string>{"data_wait_s", "compute_s"})) << s;
    EXPECT_TRUE(s["loss"].is_number()) << s;
  }
  const json config = ParseLines(o.out).front();
  EXPECT_TRUE(config.value("io_mode", "") == "direct" || config.value("io_mode", "") == "fadvise")
      << config;
}

}  // namespace
