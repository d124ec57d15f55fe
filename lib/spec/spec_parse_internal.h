// Pieces of the experiment parser shared by its files (spec_parse.cc, victim_parse.cc,
// workload_parse.cc). Not
// a public interface: every function throws yaml::YamlError (FILE:LINE:COL) like the parser.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "lib/spec/spec.h"
#include "lib/yaml/yaml_reader.h"

namespace codl::experiment::parse_detail {

bool ValidEnvName(const std::string& s);
// nodes (top-level, victim.nodes, antagonists[i].nodes): labels, hosts, count.
NodeSelector ParseNodes(const YAML::Node& n, const std::string& path);
// cpus, numa and where of a victim or an antagonist (`m` reads the mapping `n` at `path`).
PlacementSpec ParsePlacement(const yaml::MapReader& m, const YAML::Node& n, const std::string& path,
                             const std::string& source_path);
// victim: its command, environment, progress, metric, placement, ranks, trace and cache.
// `nodes`: the experiment's selector (the victim's default); source_path: for relative paths.
VictimSpec ParseVictim(const YAML::Node& n, const std::string& path, const NodeSelector& nodes,
                       const std::string& source_path);
// victim.progress or antagonists[].workload.progress.
ProgressSpec ParseProgress(const YAML::Node& n, const std::string& path);
// antagonists[i].workload: a mapping of command, env, workdir, progress, metric, warmup_steps,
// settle.
WorkloadSpec ParseWorkload(const YAML::Node& n, const std::string& path);
// tolerance (top-level or antagonists[i].tolerance): slowdown, resolution, max_trials.
ToleranceSpec ParseTolerance(const YAML::Node& n, const std::string& path,
                             const std::string& source_path);

// retry: {attempts: 1..10, on: [failure kinds]}.
RetryPolicy ParseRetry(const YAML::Node& n, const std::string& path);

// crosstalk: `true`, `false` or {window: DURATION}: the idle window in seconds (0 for false).
double ParseCrosstalkWindow(const YAML::Node& n, const std::string& path);
// The victim of a crosstalk experiment: `sleep` for `window_s` on `nodes` (wall time, no steps).
VictimSpec CrosstalkIdleVictim(double window_s, const NodeSelector& nodes);

}  // namespace codl::experiment::parse_detail
