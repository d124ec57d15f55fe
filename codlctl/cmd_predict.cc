// codlctl predict: slowdowns a victim was not measured under, from the singles of one
// experiment (its sensitivity profile), compared with measured combinations where they exist.
// The model and its limits: lib/analysis/predict.h; docs/results.md, "Prediction".
#include <CLI/CLI.hpp>

#include <algorithm>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/results_output.h"
#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/predict.h"
#include "lib/analysis/predict_format.h"
#include "lib/analysis/results.h"
#include "lib/common/utf8.h"
#include "lib/spec/spec.h"
#include "lib/spec/trial_metric.h"
#include "lib/store/store.h"

namespace codl::cli {
namespace {

// --metric, else the experiment's victim.metric, else elapsed (as `codlctl results`).
Result<experiment::TrialMetric> MetricFor(const ExperimentRecord& e, const std::string& metric) {
  if (!metric.empty()) return experiment::ParseTrialMetric(metric);
  return experiment::ReadStoredExperiment(e).metric();
}

int Fail(const std::string& message, int code) {
  fprintf(stderr, "codlctl predict: %s\n", message.c_str());
  return code;
}

// The measured pairs of experiment `id`: one per workload antagonist (whose command is
// `command`, when given) with measured trials; returns how many workload antagonists matched.
int AddWorkloadPairs(const std::string& id, const experiment::ExperimentSpec& spec,
                     const std::vector<TrialRecord>& trials, const experiment::TrialMetric& metric,
                     bool all_trials, const std::vector<std::string>* command,
                     std::vector<experiment::MeasuredPair>* pairs) {
  const auto samples = experiment::MeasuredSamples(trials, metric, all_trials);
  int matched = 0;
  for (const auto& a : spec.antagonists) {
    if (!a.workload || (command != nullptr && a.workload->command != *command)) continue;
    ++matched;
    auto pair = experiment::MeasuredPairOf(id, samples, a.name, metric.HigherIsFaster());
    if (pair.n > 0) pairs->push_back(std::move(pair));
  }
  return matched;
}

// Experiments in `db` that measured the pair directly: the profile's victim command as the
// victim, beside a workload antagonist whose command is the neighbour's victim command.
// "" and the pairs found, or why the search could not be done.
std::string FindMeasuredPairs(const std::string& db, const ExperimentRecord& profile,
                              const ExperimentRecord& neighbour,
                              const experiment::TrialMetric& metric, bool all_trials,
                              std::vector<experiment::MeasuredPair>* pairs) {
  if (db.empty()) {
    return "the controller lists no experiments; give --db FILE to search a results database";
  }
  const auto pspec_stored = experiment::ReadStoredExperiment(profile);
  const experiment::ExperimentSpec* pspec = pspec_stored.spec.get();
  if (pspec == nullptr)
    return "the victim profile's YAML does not parse: " + pspec_stored.parse_error;
  const auto nspec_stored = experiment::ReadStoredExperiment(neighbour);
  const experiment::ExperimentSpec* nspec = nspec_stored.spec.get();
  if (nspec == nullptr) return "the neighbour's YAML does not parse: " + nspec_stored.parse_error;
  auto store = store::Store::OpenExisting(db);
  if (!store.ok()) return store.error();
  auto list = (*store)->ListExperiments();
  if (!list.ok()) return list.error();
  for (const ExperimentRecord& e : *list) {
    const auto spec_stored = experiment::ReadStoredExperiment(e);
    const experiment::ExperimentSpec* spec = spec_stored.spec.get();
    if (spec == nullptr || spec->victim.command != pspec->victim.command) continue;
    const bool runs_neighbour = std::any_of(
        spec->antagonists.begin(), spec->antagonists.end(),
        [&](const auto& a) { return a.workload && a.workload->command == nspec->victim.command; });
    if (!runs_neighbour) continue;
    auto trials = (*store)->GetTrials(e.id, true);
    if (!trials.ok()) continue;
    AddWorkloadPairs(e.id, *spec, *trials, metric, all_trials, &nspec->victim.command, pairs);
  }
  return "";
}

// --measured ID...: each must have P's victim command and a workload antagonist (any command:
// a neighbour job run for a fixed count of steps as N's victim differs from the same job run
// until stopped as a workload). Every workload antagonist of each is a measured pair. "" or
// why one cannot be used.
std::string ExplicitMeasuredPairs(ControllerClient* client, const PredictCliOptions& o,
                                  const ExperimentRecord& profile,
                                  const experiment::TrialMetric& metric,
                                  std::vector<experiment::MeasuredPair>* pairs) {
  const auto pspec_stored = experiment::ReadStoredExperiment(profile);
  const experiment::ExperimentSpec* pspec = pspec_stored.spec.get();
  if (pspec == nullptr)
    return "the victim profile's YAML does not parse: " + pspec_stored.parse_error;
  for (const std::string& id : o.measured) {
    auto rec = LoadRecords(client, o.db, id);
    if (!rec.ok()) return id + ": " + rec.error();
    const auto spec_stored = experiment::ReadStoredExperiment(rec->first);
    const experiment::ExperimentSpec* spec = spec_stored.spec.get();
    if (spec == nullptr) return id + ": its YAML does not parse: " + spec_stored.parse_error;
    if (spec->victim.command != pspec->victim.command)
      return id + ": its victim command is not the victim profile's (" + profile.id + ")";
    if (AddWorkloadPairs(rec->first.id, *spec, rec->second, metric, o.all_trials, nullptr, pairs) ==
        0)
      return id + ": it has no workload antagonist (a neighbour job)";
  }
  return "";
}

// codlctl predict --victim-profile P --neighbour N (lib/analysis/predict.h, "Prediction from
// profiles").
int PredictFromProfiles(const GlobalOptions& g, const PredictCliOptions& o,
                        experiment::CombinationModel model) {
  if (o.victim_profile.empty() || o.neighbour.empty()) {
    return Fail(std::string("--victim-profile and --neighbour must be given together (missing ") +
                    (o.victim_profile.empty() ? "--victim-profile" : "--neighbour") + ")",
                kExitBadInput);
  }
  if (!o.combinations.empty()) {
    return Fail(
        "--combination asks one experiment's singles; it does not apply to "
        "--victim-profile/--neighbour",
        kExitBadInput);
  }
  if (o.id != "latest") {
    return Fail("an experiment ID ('" + TerminalSafe(o.id) +
                    "') and --victim-profile/--neighbour exclude each other",
                kExitBadInput);
  }
  std::unique_ptr<ControllerClient> client;
  if (o.db.empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) return Fail(c.error(), kExitBadInput);
    client = std::move(c.value());
  }
  auto prof = LoadRecords(client.get(), o.db, o.victim_profile);
  if (!prof.ok()) {
    return Fail(
        "--victim-profile " + TerminalSafe(o.victim_profile) + ": " + TerminalSafe(prof.error()),
        ExitCodeFor(prof.status()));
  }
  auto nb = LoadRecords(client.get(), o.db, o.neighbour);
  if (!nb.ok()) {
    return Fail("--neighbour " + TerminalSafe(o.neighbour) + ": " + TerminalSafe(nb.error()),
                ExitCodeFor(nb.status()));
  }
  auto metric = MetricFor(prof->first, o.metric);
  if (!metric.ok()) return Fail("--metric: " + metric.error(), kExitBadInput);

  experiment::ProfilePredictOptions po;
  po.predict.model = model;
  po.predict.seed = prof->first.seed;
  po.predict.higher_is_faster = metric->HigherIsFaster();
  po.predict.at_max = experiment::AchievedAtMaxOf(prof->second, o.all_trials);
  po.profile_id = prof->first.id;
  po.neighbour_id = nb->first.id;
  auto report = experiment::PredictFromProfile(
      prof->second, experiment::MeasuredSamples(prof->second, *metric, o.all_trials),
      experiment::VictimPressure(nb->second), po);
  if (!report.ok()) return Fail(TerminalSafe(report.error()), kExitBadInput);

  std::vector<experiment::MeasuredPair> pairs;
  experiment::ProfilePredictionSource src;
  if (o.measured.empty()) {
    src.not_searched =
        FindMeasuredPairs(o.db, prof->first, nb->first, *metric, o.all_trials, &pairs);
  } else if (std::string why = ExplicitMeasuredPairs(client.get(), o, prof->first, *metric, &pairs);
             !why.empty()) {
    return Fail("--measured " + TerminalSafe(why), kExitBadInput);
  }
  experiment::CompareWithMeasured(std::move(pairs), &*report);
  src.profile_id = prof->first.id;
  src.profile_name = prof->first.name;
  src.neighbour_id = nb->first.id;
  src.neighbour_name = nb->first.name;
  src.metric = metric->Name();
  src.confidence = po.predict.confidence;
  src.all_trials = o.all_trials;
  std::string text = o.output == "json"  ? experiment::FormatProfilePredictionJson(*report, src)
                     : o.output == "csv" ? experiment::FormatProfilePredictionCsv(*report, src)
                                         : experiment::FormatProfilePredictionTable(*report, src);
  fputs(text.c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddPredictOptions(CLI::App* cmd, PredictCliOptions* o) {
  cmd->add_option("id", o->id, "experiment whose singles form the profile: id or 'latest'")
      ->default_val("latest");
  cmd->add_option("--db", o->db, "read this results database, no controller");
  cmd->add_option("--combination", o->combinations,
                  "NAME@INTENSITY[+NAME@INTENSITY...] to predict, e.g. membw@0.5+cpu@0.25 or "
                  "membw@0.375 (repeatable; default: every measured combination, and every "
                  "measured single predicted from the rest of its curve)");
  cmd->add_option("--model", o->model,
                  "how singles combine: multiplicative (S_A x S_B) | additive (S_A + S_B - 1)")
      ->capture_default_str();
  cmd->add_option("--metric", o->metric,
                  "per-trial metric: elapsed | throughput | mean | median | pNN (default: the "
                  "experiment's victim.metric)");
  cmd->add_option("-o,--output", o->output, "table | json | csv")->capture_default_str();
  cmd->add_flag("--all-trials", o->all_trials,
                "use flagged trials too (an antagonist missed its target), as the results' "
                "\"all trials\" figures do; on a loaded machine the held-target trials may be too "
                "few");
  cmd->add_option("--victim-profile", o->victim_profile,
                  "prediction from profiles: the experiment whose victim was swept by injector "
                  "antagonists (its singles: one sensitivity curve per injector); with "
                  "--neighbour, instead of ID");
  cmd->add_option("--neighbour", o->neighbour,
                  "prediction from profiles: the experiment where the neighbour job ran as the "
                  "victim beside injectors at max (its pressure per injector); with "
                  "--victim-profile");
  cmd->add_option("--measured", o->measured,
                  "with --victim-profile/--neighbour: an experiment that measured the pair (P's "
                  "victim beside the neighbour job as a workload antagonist) to report the "
                  "error against, instead of searching --db (repeatable)");
  cmd->footer(
      "Each antagonist's singles give a sensitivity curve: slowdown against intensity, fitted\n"
      "non-decreasing through (0, 1) and interpolated linearly (past the highest measured\n"
      "intensity the last segment is extended, marked *). A combination is predicted from the\n"
      "curves (default: product of the singles' slowdowns), with a bootstrap CI that resamples\n"
      "the baseline and the singles. Where the experiment measured a combination, the error\n"
      "(predicted / measured - 1) and the MAPE over all of them are printed.\n\n"
      "From profiles (--victim-profile P --neighbour N): P's singles give a curve per injector,\n"
      "N (the neighbour job run as the victim) its pressure per injector (1 - achieved / peak\n"
      "of the injector at max beside it); the neighbour counts as each injector at level =\n"
      "its pressure, and the curves' values combine as above, with a bootstrap CI. Pairs\n"
      "measured in the --db file (P's victim command beside a workload antagonist running N's\n"
      "victim command, or those named with --measured) give the error and the MAPE.\n\n"
      "  codlctl predict latest --db codl-results.db\n"
      "  codlctl predict latest --db codl-results.db --combination membw@0.75+cpu@0.5 -o json\n"
      "  codlctl predict --victim-profile P --neighbour N --db codl-results.db\n"
      "  codlctl predict --victim-profile P --neighbour N --measured M --db codl-results.db");
}

int CmdPredict(const GlobalOptions& g, const PredictCliOptions& o) {
  if (o.output != "table" && o.output != "json" && o.output != "csv") {
    return Fail("-o '" + o.output + "': expected table, json or csv", kExitBadInput);
  }
  auto model = experiment::ParseCombinationModel(o.model);
  if (!model.ok()) return Fail("--model: " + model.error(), kExitBadInput);
  if (!o.victim_profile.empty() || !o.neighbour.empty()) return PredictFromProfiles(g, o, *model);
  if (!o.measured.empty())
    return Fail("--measured goes with --victim-profile and --neighbour", kExitBadInput);
  std::unique_ptr<ControllerClient> client;
  if (o.db.empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) return Fail(c.error(), kExitBadInput);
    client = std::move(c.value());
  }
  auto rec = LoadRecords(client.get(), o.db, o.id);
  if (!rec.ok()) return Fail(rec.error(), ExitCodeFor(rec.status()));
  auto metric = MetricFor(rec->first, o.metric);
  if (!metric.ok()) return Fail("--metric: " + metric.error(), kExitBadInput);

  experiment::PredictOptions po;
  po.model = *model;
  po.seed = rec->first.seed;
  po.higher_is_faster = metric->HigherIsFaster();
  po.at_max = experiment::AchievedAtMaxOf(rec->second, o.all_trials);
  auto report = experiment::PredictSlowdowns(
      experiment::MeasuredSamples(rec->second, *metric, o.all_trials), o.combinations, po);
  if (!report.ok()) return Fail(report.error(), kExitBadInput);
  const experiment::PredictionSource src{rec->first.id, rec->first.name, metric->Name(),
                                         po.confidence, o.all_trials};
  std::string text = o.output == "json"  ? experiment::FormatPredictionJson(*report, src)
                     : o.output == "csv" ? experiment::FormatPredictionCsv(*report, src)
                                         : experiment::FormatPredictionTable(*report, src);
  fputs(text.c_str(), stdout);
  return kExitOk;
}

}  // namespace codl::cli
