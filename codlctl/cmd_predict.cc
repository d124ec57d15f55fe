// codlctl predict: slowdowns a victim was not measured under, from the singles of one
// experiment (its sensitivity profile), compared with measured combinations where they exist.
// The model and its limits: lib/analysis/predict.h; docs/results.md, "Prediction".
#include <CLI/CLI.hpp>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/results_output.h"
#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/predict.h"
#include "lib/analysis/predict_format.h"
#include "lib/spec/spec.h"
#include "lib/spec/trial_metric.h"

namespace codl::cli {
namespace {

// --metric, else the experiment's victim.metric, else elapsed (as `codlctl results`).
Result<experiment::TrialMetric> MetricFor(const ExperimentRecord& e, const std::string& metric) {
  std::string name = metric;
  if (name.empty()) {
    auto spec = experiment::ParseExperiment(e.yaml, e.source_path);
    if (spec.ok()) name = spec->victim.metric;
  }
  if (name.empty()) return experiment::TrialMetric{};
  return experiment::ParseTrialMetric(name);
}

int Fail(const std::string& message, int code) {
  fprintf(stderr, "codlctl predict: %s\n", message.c_str());
  return code;
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
  cmd->footer(
      "Each antagonist's singles give a sensitivity curve: slowdown against intensity, fitted\n"
      "non-decreasing through (0, 1) and interpolated linearly (past the highest measured\n"
      "intensity the last segment is extended, marked *). A combination is predicted from the\n"
      "curves (default: product of the singles' slowdowns), with a bootstrap CI that resamples\n"
      "the baseline and the singles. Where the experiment measured a combination, the error\n"
      "(predicted / measured - 1) and the MAPE over all of them are printed.\n\n"
      "  codlctl predict latest --db codl-results.db\n"
      "  codlctl predict latest --db codl-results.db --combination membw@0.75+cpu@0.5 -o json");
}

int CmdPredict(const GlobalOptions& g, const PredictCliOptions& o) {
  if (o.output != "table" && o.output != "json" && o.output != "csv") {
    return Fail("-o '" + o.output + "': expected table, json or csv", kExitBadInput);
  }
  auto model = experiment::ParseCombinationModel(o.model);
  if (!model.ok()) return Fail("--model: " + model.error(), kExitBadInput);
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
