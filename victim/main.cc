// codl-victim: the reference training-pipeline proxy. Subcommands: gen-data, run.
// This file only dispatches; the pipeline lives in trainer.cc and the files it names.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/common/json_line.h"
#include "lib/common/version.h"
#include "victim/dataset.h"
#include "victim/options.h"
#include "victim/trainer.h"

namespace {

constexpr int kUsageError = 2;

int Usage(const std::string& message) {
  std::fprintf(stderr, "codl-victim: %s\n", message.c_str());
  return kUsageError;
}

int GenData(const std::vector<std::string>& args) {
  using namespace codl::victim;
  auto parsed = ParseGenDataArgs(args);
  if (!parsed.ok()) return Usage(parsed.error());
  if (parsed->help) {
    std::fputs(GenDataHelp().c_str(), stdout);
    return 0;
  }
  const GenDataOptions& o = parsed->options;
  const auto t0 = std::chrono::steady_clock::now();
  DatasetInfo info{o.dir, o.samples, o.sample_size, o.seed};
  if (codl::Status s = GenerateDataset(info); !s.ok()) {
    std::fprintf(stderr, "codl-victim: gen-data: %s\n", s.error().c_str());
    return 1;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  codl::JsonLine line;
  line.Add("gen_data", true).Add("dir", o.dir).Add("samples", o.samples);
  line.Add("sample_size", o.sample_size).Add("seed", o.seed);
  line.Add("bytes", o.sample_size * static_cast<uint64_t>(o.samples)).Add("elapsed_s", elapsed);
  std::puts(line.str().c_str());
  return 0;
}

int Run(const std::vector<std::string>& args) {
  using namespace codl::victim;
  auto parsed = ParseRunArgs(args);
  if (!parsed.ok()) return Usage(parsed.error());
  if (parsed->help) {
    std::fputs(RunHelp().c_str(), stdout);
    return 0;
  }
  return RunVictim(parsed->options, stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(codl::victim::TopLevelHelp().c_str(), stderr);
    return kUsageError;
  }
  const std::string command = args[0];
  if (command == "--version") {
    std::printf("codl-victim %s\n", codl::CodlVersion());
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(codl::victim::TopLevelHelp().c_str(), stdout);
    return 0;
  }
  if (command == "gen-data") return GenData({args.begin() + 1, args.end()});
  if (command == "run") return Run({args.begin() + 1, args.end()});
  // `codl-victim --data DIR --steps 60` (no subcommand) means run, as in the DESIGN sketch.
  if (command.rfind("--", 0) == 0) return Run(args);
  return Usage("unknown command '" + command +
               "'; commands: gen-data, run (see codl-victim --help)");
}
