#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

struct BadCase {
  const char* what;
  const char* yaml;
  const char* error;  // exact "FILE:LINE:COL: message"
};

// Documents the parser must reject, each with the exact message a user would see.
const BadCase kBad[] = {
    {"unknown top-level key", "name: x\nvictim: {command: [a]}\ncolour: red\n",
     "e.yaml:3:1: unknown top-level key 'colour' (expected one of: name, nodes, victim, "
     "antagonists, pairings, repetitions, order, settle, cooldown, calibration, lease, "
     "warmup_trials, min_antagonist_samples, agent_grace, tolerance, crosstalk, retry)"},
    {"unknown nested key", "name: x\nvictim:\n  command: [a]\n  comand: [b]\n",
     "e.yaml:4:3: victim: unknown key 'comand' (did you mean 'command'?) (expected one of: "
     "command, env, workdir, progress, warmup_steps, timeout, nodes, metric, cpus, numa, "
     "distributed, master_port, trace, cache)"},
    {"bad cache mode", "name: x\nvictim:\n  command: [a]\n  cache: {mode: hot, paths: [/d]}\n",
     "e.yaml:4:17: victim.cache.mode: 'hot' is not cold, warm or as-is"},
    {"cold cache without paths", "name: x\nvictim:\n  command: [a]\n  cache: {mode: cold}\n",
     "e.yaml:4:10: victim.cache: mode cold needs paths: the directories or files the victim "
     "reads"},
    {"relative cache path",
     "name: x\nvictim:\n  command: [a]\n  cache: {mode: warm, paths: [/d, data]}\n",
     "e.yaml:4:35: victim.cache.paths[1]: 'data' is not an absolute path"},
    {"retry kind unknown", "name: x\nvictim: {command: [a]}\nretry: {on: [agent_lost, oom]}\n",
     "e.yaml:3:26: retry.on[1]: unknown failure kind 'oom' (known: victim, victim_start, "
     "antagonist_start, agent_lost, controller_restart)"},
    {"retry attempts 0", "name: x\nvictim: {command: [a]}\nretry: {attempts: 0}\n",
     "e.yaml:3:19: retry.attempts: 0 is out of range [1, 10]"},
    {"retry kind twice", "name: x\nvictim: {command: [a]}\nretry: {on: [victim, victim]}\n",
     "e.yaml:3:22: retry.on[1]: 'victim' is listed twice"},
    {"retry not a mapping", "name: x\nvictim: {command: [a]}\nretry: 3\n",
     "e.yaml:3:8: retry: expected a mapping {attempts: N, on: [KIND, ...]}, got a scalar"},
    {"wrong type", "name: x\nvictim: {command: [a]}\nrepetitions: [1]\n",
     "e.yaml:3:14: repetitions: expected an integer, got a list"},
    {"integer garbage", "name: x\nvictim: {command: [a]}\nrepetitions: 2.5\n",
     "e.yaml:3:14: repetitions: expected an integer, got '2.5'"},
    {"level 0",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - name: s\n    injector: memcpy\n"
     "    levels: [0.5, 0]\n",
     "e.yaml:6:19: antagonists[0].levels[1]: 0 is out of range (0, 1]"},
    {"level 1.5",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - name: s\n    injector: memcpy\n"
     "    levels: [1.5]\n",
     "e.yaml:6:14: antagonists[0].levels[0]: 1.5 is out of range (0, 1]"},
    {"level not a number",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - name: s\n    injector: memcpy\n"
     "    levels: [half]\n",
     "e.yaml:6:14: antagonists[0].levels[0]: 'half' is not a number in (0, 1] or \"max\""},
    {"duplicate level",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - name: s\n    injector: memcpy\n"
     "    levels: [max, 0.5, max]\n",
     "e.yaml:6:24: antagonists[0].levels[2]: duplicate level max"},
    {"bad metric", "name: x\nvictim:\n  command: [a]\n  metric: p100\n",
     "e.yaml:4:11: victim.metric: 'p100' is not a metric; allowed: elapsed, throughput, mean, "
     "median, pNN (p1..p99)"},
    {"negative repetitions", "name: x\nvictim: {command: [a]}\nrepetitions: -1\n",
     "e.yaml:3:14: repetitions: -1 is out of range [1, 1000]"},
    {"too many repetitions", "name: x\nvictim: {command: [a]}\nrepetitions: 1001\n",
     "e.yaml:3:14: repetitions: 1001 is out of range [1, 1000]"},
    {"bad duration", "name: x\nvictim: {command: [a]}\nsettle: 3 days\n",
     "e.yaml:3:9: settle: '3 days': unknown duration unit 'days' (use ns, us, ms, s, m, h)"},
    {"zero timeout", "name: x\nvictim: {command: [a], timeout: 0s}\n",
     "e.yaml:2:33: victim.timeout: '0s' must be greater than 0"},
    {"missing victim.command", "name: x\nvictim:\n  workdir: /tmp\n",
     "e.yaml:3:3: victim: missing required key 'command'"},
    {"empty victim.command", "name: x\nvictim: {command: []}\n",
     "e.yaml:2:19: victim.command: must not be empty"},
    {"victim.command a string", "name: x\nvictim: {command: train.py}\n",
     "e.yaml:2:19: victim.command: expected a list of strings (argv), got a scalar"},
    {"missing name", "victim: {command: [a]}\n", "e.yaml:1:1: missing required key 'name'"},
    {"missing victim", "name: x\n", "e.yaml:1:1: missing required key 'victim'"},
    {"duplicate antagonist name",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: memcpy, levels: [1]}\n"
     "  - {name: s, injector: memcpy, levels: [1]}\n",
     "e.yaml:5:12: antagonists[1].name: duplicate antagonist name 's'"},
    {"bad antagonist name",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s@1, injector: memcpy, levels: "
     "[1]}\n",
     "e.yaml:4:12: antagonists[0].name: 's@1' must be 1-64 characters of A-Z, a-z, 0-9, '_' or "
     "'-'"},
    {"missing injector",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, levels: [1]}\n",
     "e.yaml:4:5: antagonists[0]: missing required key 'injector' (or 'workload': a real "
     "command)"},
    {"no levels or rates",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: memcpy}\n",
     "e.yaml:4:5: antagonists[0]: needs a non-empty 'levels' or 'rates' list (or a "
     "'tolerance' search)"},
    {"unknown antagonist key",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: memcpy, level: [1]}\n",
     "e.yaml:4:33: antagonists[0]: unknown key 'level' (did you mean 'levels'?) (expected one of: "
     "name, injector, workload, options, levels, rates, nodes, cpus, numa, tolerance)"},
    {"bad rate",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: memcpy, rates: "
     "[2GiB]}\n",
     "e.yaml:4:41: antagonists[0].rates[0]: '2GiB': a rate needs '/s' or 'IOPS' (examples: "
     "2GiB/s, 50kIOPS)"},
    {"option not a scalar",
     "name: x\nvictim: {command: [a]}\nantagonists:\n"
     "  - {name: s, injector: memcpy, levels: [1], options: {threads: [1, 2]}}\n",
     "e.yaml:4:65: antagonists[0].options.threads: expected a scalar value, got a list"},
    {"explicit pairing with unknown name",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: memcpy, levels: [1]}\n"
     "pairings: [[s, t]]\n",
     "e.yaml:5:16: pairings[0][1]: unknown antagonist 't'"},
    {"explicit pairing not a list of lists",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: memcpy, levels: [1]}\n"
     "pairings: [s]\n",
     "e.yaml:5:12: pairings[0]: expected a non-empty list of antagonist names, e.g. [storage, "
     "membw]"},
    {"unknown pairings mode", "name: x\nvictim: {command: [a]}\npairings: triples\n",
     "e.yaml:3:11: pairings: 'triples' is not one of singles, pairs, all, or a list of name lists"},
    {"regex without pattern", "name: x\nvictim:\n  command: [a]\n  progress: {format: regex}\n",
     "e.yaml:4:13: victim.progress: format: regex needs a pattern with one capture group"},
    {"regex without capture group",
     "name: x\nvictim:\n  command: [a]\n  progress: {format: regex, pattern: 'step=[0-9.]+'}\n",
     "e.yaml:4:38: victim.progress.pattern: needs a capture group around the metric, e.g. "
     "'step_time=([0-9.]+)'"},
    {"unknown progress format", "name: x\nvictim:\n  command: [a]\n  progress: {format: csv}\n",
     "e.yaml:4:22: victim.progress.format: 'csv' is not one of jsonl, regex, wall"},
    {"pattern with jsonl", "name: x\nvictim:\n  command: [a]\n  progress: {pattern: '(x)'}\n",
     "e.yaml:4:14: victim.progress.pattern: only used with format: regex"},
    {"bad env name", "name: x\nvictim:\n  command: [a]\n  env: {1X: y}\n",
     "e.yaml:4:9: victim.env: '1X' is not a valid variable name"},
    {"bad node selector scalar", "nodes: gpus\nname: x\nvictim: {command: [a]}\n",
     "e.yaml:1:8: nodes: 'gpus': expected 'all', a list of hostnames, {labels: {k: v}}, "
     "{hosts: [..]} or {count: N}"},
    {"bad node selector key", "nodes: {label: {role: gpu}}\nname: x\nvictim: {command: [a]}\n",
     "e.yaml:1:9: nodes: unknown key 'label' (did you mean 'labels'?) (expected one of: labels, "
     "hosts, count)"},
    {"node selector count 0", "name: x\nvictim: {command: [a], nodes: {count: 0}}\n",
     "e.yaml:2:39: victim.nodes.count: 0 is out of range [1, 100000]"},
    {"node selector two kinds", "name: x\nnodes: {count: 1, hosts: [a]}\nvictim: {command: [a]}\n",
     "e.yaml:2:8: nodes: a node selector takes exactly one of labels, hosts, count"},
    {"empty host list", "name: x\nnodes: []\nvictim: {command: [a]}\n",
     "e.yaml:2:8: nodes: the host list must not be empty"},
    {"bad bool", "name: x\nvictim: {command: [a]}\norder: {randomize: maybe}\n",
     "e.yaml:3:20: order.randomize: expected true or false, got 'maybe'"},
    {"quoted bool", "name: x\nvictim: {command: [a]}\norder: {randomize: \"true\"}\n",
     "e.yaml:3:20: order.randomize: expected true or false, got the string \"true\" (quoted values "
     "are strings: drop the quotes)"},
    {"quoted integer", "name: x\nvictim: {command: [a]}\nrepetitions: '3'\n",
     "e.yaml:3:14: repetitions: expected an integer, got the string \"3\" (quoted values are "
     "strings: drop the quotes)"},
    {"quoted level",
     "name: x\nvictim: {command: [a]}\nantagonists:\n  - name: s\n    injector: memcpy\n"
     "    levels: [\"0.5\"]\n",
     "e.yaml:6:14: antagonists[0].levels[0]: expected a number in (0, 1] or \"max\", got the "
     "string \"0.5\" (quoted values are strings: drop the quotes)"},
    {"two documents", "name: x\nvictim: {command: [a]}\n---\nname: y\n",
     "e.yaml:4:1: expected one YAML document, found 2"},
    {"negative seed", "name: x\nvictim: {command: [a]}\norder: {seed: -5}\n",
     "e.yaml:3:15: order.seed: expected an unsigned 64-bit integer, got '-5'"},
    {"calibration unknown key", "name: x\nvictim: {command: [a]}\ncalibration: {time: 2s}\n",
     "e.yaml:3:15: calibration: unknown key 'time' (expected one of: duration, max_age)"},
    {"calibration max_age zero", "name: x\nvictim: {command: [a]}\ncalibration: {max_age: 0s}\n",
     "e.yaml:3:24: calibration.max_age: '0s' must be greater than 0"},
    {"negative warmup_trials", "name: x\nvictim: {command: [a]}\nwarmup_trials: -1\n",
     "e.yaml:3:16: warmup_trials: -1 is out of range [0, 100]"},
    {"min_antagonist_samples negative",
     "name: x\nvictim: {command: [a]}\nmin_antagonist_samples: -1\n",
     "e.yaml:3:25: min_antagonist_samples: -1 is out of range [0, 10000]"},
    {"top level not a mapping", "- a\n- b\n",
     "e.yaml:1:1: the document must be a mapping, got a list"},
    {"empty document", "",
     "e.yaml:1:1: empty document: expected a mapping with at least name and victim"},
    {"YAML syntax error", "name: x\nsettle: 2s: 3s\n",
     "e.yaml:2:11: YAML syntax error: illegal map value"},
    {"duplicate key", "name: x\nname: y\nvictim: {command: [a]}\n",
     "e.yaml:2:1: duplicate key 'name'"},
};

TEST(ParseExperimentTest, RejectsBadDocumentsWithLocation) {
  for (const auto& c : kBad) {
    SCOPED_TRACE(c.what);
    auto r = ParseExperiment(c.yaml, "e.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), c.error);
  }
}

TEST(ParseExperimentTest, YamlSyntaxErrorHasLocation) {
  auto r = ParseExperiment("name: x\nvictim: {command: [a]\nrepetitions: 3\n", "e.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("e.yaml:", 0), 0u) << r.error();
  EXPECT_NE(r.error().find("YAML syntax error: "), std::string::npos) << r.error();
  auto tab = ParseExperiment("name: x\nvictim:\n\t- a\n", "e.yaml");
  ASSERT_FALSE(tab.ok());
  EXPECT_EQ(tab.error().rfind("e.yaml:3:", 0), 0u) << tab.error();
}

TEST(ParseExperimentTest, InvalidRegexNamesThePattern) {
  auto r = ParseExperiment(
      "name: x\nvictim:\n  command: [a]\n  progress: {format: regex, pattern: '([0-9'}\n",
      "e.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("e.yaml:4:38: victim.progress.pattern: invalid regex: ", 0), 0u)
      << r.error();
}

TEST(ParseExperimentTest, HooksArePrefixedWithLocation) {
  ParseHooks hooks;
  hooks.injector = [](const std::string& name) {
    return name == "memcpy" ? "" : "unknown injector '" + name + "' (known: memcpy)";
  };
  hooks.option = [](const std::string& injector, const std::string& key, const std::string& value) {
    return key == "threads" && value == "0" ? std::string("threads must be >= 1") : std::string();
  };
  const char* bad_injector =
      "name: x\nvictim: {command: [a]}\nantagonists:\n  - {name: s, injector: mmcpy, levels: "
      "[1]}\n";
  auto r = ParseExperiment(bad_injector, "e.yaml", hooks);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "e.yaml:4:25: antagonists[0].injector: unknown injector 'mmcpy' (known: memcpy)");

  const char* bad_option =
      "name: x\nvictim: {command: [a]}\nantagonists:\n"
      "  - {name: s, injector: memcpy, options: {threads: 0}, levels: [1]}\n";
  r = ParseExperiment(bad_option, "e.yaml", hooks);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "e.yaml:4:52: antagonists[0].options.threads: threads must be >= 1");
}

TEST(ParseExperimentTest, MinimalDocumentGetsDefaults) {
  auto r = ParseExperiment("name: x\nvictim: {command: [a]}\n", "e.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  const ExperimentSpec& s = *r;
  ExperimentSpec d;
  EXPECT_EQ(s.name, "x");
  EXPECT_EQ(s.source_path, "e.yaml");
  EXPECT_EQ(s.victim.command, std::vector<std::string>{"a"});
  EXPECT_EQ(s.victim.progress.format, ProgressSpec::Format::kJsonl);
  EXPECT_EQ(s.victim.progress.field, "step_time_s");
  EXPECT_EQ(s.victim.timeout_s, d.victim.timeout_s);
  EXPECT_EQ(s.nodes.kind, NodeSelector::Kind::kAll);
  EXPECT_TRUE(s.antagonists.empty());
  EXPECT_EQ(s.pairings, Pairings::kSingles);
  EXPECT_EQ(s.repetitions, d.repetitions);
  EXPECT_EQ(s.randomize, d.randomize);
  EXPECT_FALSE(s.seed_explicit);
  EXPECT_EQ(s.settle_s, d.settle_s);
  EXPECT_EQ(s.warmup_trials, 1);
  EXPECT_EQ(s.min_antagonist_samples, 5);
  EXPECT_DOUBLE_EQ(s.calibration_max_age_s, 24 * 3600);
  EXPECT_EQ(s.cooldown_s, d.cooldown_s);
  EXPECT_EQ(s.calibration_s, d.calibration_s);
  EXPECT_EQ(s.lease_s, d.lease_s);
}

const char kFull[] = R"(name: io-vs-loader
nodes: {labels: {role: gpu}}
victim:
  command: [codl-victim, --data, /scratch/victim, --steps, "60"]
  env: {OMP_NUM_THREADS: "4"}
  workdir: /scratch
  progress: {format: regex, pattern: 'step_time=([0-9.]+)'}
  warmup_steps: 5
  timeout: 10m
antagonists:
  - name: storage
    injector: io_uring
    options: {dir: /scratch/codl, block_size: 1MiB, queue_depth: 32}
    levels: [0.25, 0.5, max]
    rates: [2GiB/s]
    nodes: [gpu-1, gpu-2]
  - name: membw
    injector: memcpy
    levels: [1.0]
    nodes: {count: 1}
pairings: [[storage, membw], [membw]]
repetitions: 5
order: {randomize: false, seed: 18446744073709551615}
settle: 500ms
cooldown: 1s
calibration: {duration: 3s}
lease: 15s
)";

TEST(ParseExperimentTest, AbsentSeedIsDrawnAtRandomAndAnExplicitOneHonoured) {
  // Two parses of a file without a seed draw different seeds (a fixed default made every run
  // share one order); 2^-64 is the chance this fails by luck.
  const char* doc = "name: x\nvictim: {command: [a]}\n";
  auto a = ParseExperiment(doc, "e.yaml"), b = ParseExperiment(doc, "e.yaml");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->seed, b->seed);
  auto c = ParseExperiment("name: x\nvictim: {command: [a]}\norder: {seed: 42}\n", "e.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->seed, 42u);
  EXPECT_TRUE(c->seed_explicit);
}

TEST(ParseExperimentTest, WarmupCalibrationAgeAndSampleMinimum) {
  auto r = ParseExperiment(
      "name: x\nvictim: {command: [a]}\nwarmup_trials: 0\ncalibration: {max_age: 2h}\n"
      "min_antagonist_samples: 8\n",
      "e.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->warmup_trials, 0);
  EXPECT_DOUBLE_EQ(r->calibration_max_age_s, 7200);
  EXPECT_EQ(r->min_antagonist_samples, 8);
}

TEST(ParseExperimentTest, FullDocument) {
  auto r = ParseExperiment(kFull, "full.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  const ExperimentSpec& s = *r;
  EXPECT_EQ(s.name, "io-vs-loader");
  EXPECT_EQ(s.nodes.kind, NodeSelector::Kind::kLabels);
  EXPECT_EQ(s.nodes.labels.at("role"), "gpu");
  EXPECT_EQ(s.victim.command.size(), 5u);
  EXPECT_EQ(s.victim.command[4], "60");
  EXPECT_EQ(s.victim.env.at("OMP_NUM_THREADS"), "4");
  EXPECT_EQ(s.victim.workdir, "/scratch");
  EXPECT_EQ(s.victim.progress.format, ProgressSpec::Format::kRegex);
  EXPECT_EQ(s.victim.progress.pattern, "step_time=([0-9.]+)");
  EXPECT_EQ(s.victim.warmup_steps, 5);
  EXPECT_DOUBLE_EQ(s.victim.timeout_s, 600);
  EXPECT_EQ(s.victim.nodes.kind, NodeSelector::Kind::kLabels);  // inherited from nodes
  ASSERT_EQ(s.antagonists.size(), 2u);
  const auto& st = s.antagonists[0];
  EXPECT_EQ(st.name, "storage");
  EXPECT_EQ(st.injector, "io_uring");
  EXPECT_EQ(st.options.at("block_size"), "1MiB");
  EXPECT_EQ(st.options.at("queue_depth"), "32");
  ASSERT_EQ(st.intensities.size(), 4u);
  EXPECT_DOUBLE_EQ(st.intensities[0].level, 0.25);
  EXPECT_EQ(st.intensities[0].label, "0.25");
  EXPECT_DOUBLE_EQ(st.intensities[2].level, 1.0);
  EXPECT_EQ(st.intensities[2].label, "max");
  EXPECT_TRUE(st.intensities[2].max);  // its own intensity, not level 1
  EXPECT_FALSE(st.intensities[0].max);
  EXPECT_TRUE(st.intensities[3].absolute);
  EXPECT_DOUBLE_EQ(st.intensities[3].rate, 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(st.intensities[3].label, "2GiB/s");
  EXPECT_EQ(st.nodes.kind, NodeSelector::Kind::kHosts);
  EXPECT_EQ(st.nodes.hosts, (std::vector<std::string>{"gpu-1", "gpu-2"}));
  EXPECT_EQ(s.antagonists[1].nodes.kind, NodeSelector::Kind::kCount);
  EXPECT_EQ(s.antagonists[1].nodes.count, 1);
  EXPECT_EQ(s.pairings, Pairings::kExplicit);
  EXPECT_EQ(s.explicit_pairings,
            (std::vector<std::vector<std::string>>{{"storage", "membw"}, {"membw"}}));
  EXPECT_EQ(s.repetitions, 5);
  EXPECT_FALSE(s.randomize);
  EXPECT_EQ(s.seed, 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(s.settle_s, 0.5);
  EXPECT_DOUBLE_EQ(s.cooldown_s, 1);
  EXPECT_DOUBLE_EQ(s.calibration_s, 3);
  EXPECT_DOUBLE_EQ(s.lease_s, 15);
}

TEST(ParseExperimentTest, AntagonistNodesDefaultToTheVictims) {
  auto r = ParseExperiment(
      "name: x\nvictim: {command: [a], nodes: [h1]}\nantagonists:\n"
      "  - {name: s, injector: memcpy, levels: [1]}\n",
      "e.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->antagonists[0].nodes.kind, NodeSelector::Kind::kHosts);
  EXPECT_EQ(r->antagonists[0].nodes.hosts, std::vector<std::string>{"h1"});
}

TEST(ParseExperimentTest, RejectsOversizedPlans) {
  std::string yaml =
      "name: x\nvictim: {command: [a]}\npairings: all\nrepetitions: 1000\nantagonists:\n";
  for (int i = 0; i < 12; ++i) {
    yaml += "  - {name: a" + std::to_string(i) + ", injector: m, levels: [0.5, 1]}\n";
  }
  auto r = ParseExperiment(yaml, "e.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("e.yaml:3:11: pairings: the plan has ", 0), 0u) << r.error();
}

TEST(LoadExperimentFileTest, MissingFile) {
  auto r = LoadExperimentFile("/nonexistent/e.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("/nonexistent/e.yaml: cannot open", 0), 0u) << r.error();
}

// The full example of docs/experiment-format.md, kept as a file.
TEST(LoadExperimentFileTest, DocumentedExampleParses) {
  const std::string path = std::string(CODL_EXPERIMENT_TESTDATA) + "/full.yaml";
  auto r = LoadExperimentFile(path);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->source_path, path);
  EXPECT_EQ(r->antagonists.size(), 3u);
  // singles: 3 + 3 + 1 = 7 combinations, 2 baselines per block, 5 repetitions.
  EXPECT_EQ(ExpandPlan(*r).size(), 5u * (7 + 2));
}

// retry: the default retries infrastructure failures once, never a victim's own failure; a
// policy may name its kinds and attempts.
TEST(ParseExperimentTest, RetryHasADefaultAndTakesAttemptsAndKinds) {
  auto d = ParseExperiment("name: x\nvictim: {command: [a]}\n", "e.yaml");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->retry.attempts, 2);
  EXPECT_TRUE(d->retry.Retries(FailureKind::kAntagonistStart, 1));
  EXPECT_TRUE(d->retry.Retries(FailureKind::kControllerRestart, 1));
  EXPECT_TRUE(d->retry.Retries(FailureKind::kAgentLost, 1));
  EXPECT_TRUE(d->retry.Retries(FailureKind::kVictimStart, 1));
  EXPECT_FALSE(d->retry.Retries(FailureKind::kVictim, 1)) << "never a victim's own failure";
  EXPECT_FALSE(d->retry.Retries(FailureKind::kAntagonistStart, 2)) << "once";
  auto p = ParseExperiment("name: x\nvictim: {command: [a]}\nretry: {attempts: 4, on: [victim]}\n",
                           "e.yaml");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->retry.Retries(FailureKind::kVictim, 3));
  EXPECT_FALSE(p->retry.Retries(FailureKind::kVictim, 4));
  EXPECT_FALSE(p->retry.Retries(FailureKind::kAntagonistStart, 1));
}

}  // namespace
}  // namespace codl::experiment
