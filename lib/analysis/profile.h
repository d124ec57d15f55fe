// A victim's interference fingerprint (`codlctl profile`, docs/results.md "Profile"): one row
// per injector antagonist of an experiment, in the order of the YAML: the resource it
// pressures, its sensitivity curve (the victim's slowdown at each level it ran alone), the
// tolerance search's verdict where it had one, and the slowdown at its calibrated peak. Built
// from the same pairing summaries as `codlctl results`: nothing is measured again.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/analysis/results.h"

namespace codl::experiment {

struct ProfilePoint {
  double level = 0;  // requested fraction of the calibrated peak (1 for `max`)
  bool max = false;  // the open-loop `max` intensity
  int n = 0;         // measured trials
  double slowdown = kNaN;
  double ci_low = kNaN;  // NaN below 3 trials a side
  double ci_high = kNaN;
};

struct ProfileRow {
  std::string antagonist;
  std::string injector;
  std::string resource;  // what the injector pressures ("memory bandwidth"); "" when unknown
  std::vector<ProfilePoint> curve;  // the antagonist alone: ascending level, `max` last
  bool searched = false;            // it had a tolerance search
  ToleranceResult tolerance;        // when searched
  // The slowdown at its strongest level alone: `max` when it ran, else the highest level
  // (level 1 is the calibrated peak). at_level NaN: it never ran alone.
  double at_level = kNaN;
  bool at_max = false;
  ProfilePoint strongest;
};

struct InterferenceProfile {
  std::string experiment_id;
  std::string name;
  std::string metric;
  std::string state;  // the experiment's ("done", "running", ...)
  std::vector<ProfileRow> rows;
};

// `resources`: injector name -> the resource it pressures (the injector registry's); missing
// injectors get "". Workload antagonists have no level and are not rows.
InterferenceProfile BuildProfile(const ExperimentResults& results,
                                 const std::vector<std::string>& antagonists,
                                 const std::map<std::string, std::string>& resources);

// The antagonist names of `results`' experiment in YAML order (its injector antagonists), or
// the names seen in its pairings when the YAML does not parse.
std::vector<std::string> ProfileAntagonists(const ExperimentResults& results);

// "0.25: 1.02x  0.5: 1.08x*  1: 1.31x*" (* significant: the CI excludes 1).
std::string ProfileCurveText(const ProfileRow& row);
// "0.5625" or "max (1)", "-" when unsearched; breaks: "0.625", "none <= 1".
std::string ProfileToleratesText(const ProfileRow& row);
std::string ProfileBreaksText(const ProfileRow& row);

std::string FormatProfileTable(const InterferenceProfile& p);
std::string FormatProfileJson(const InterferenceProfile& p);
std::string FormatProfileCsv(const InterferenceProfile& p);

}  // namespace codl::experiment
