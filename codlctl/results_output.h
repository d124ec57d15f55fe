// Loading an experiment's records (from a controller, or straight from a database file with
// --db, no controller needed) and printing them as table/CSV/JSON or an HTML report.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::cli {

class ControllerClient;

// From `db` when non-empty, else from `client`.
Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> LoadRecords(ControllerClient* client,
                                                                          const std::string& db,
                                                                          const std::string& id);
// `metric`: the per-trial metric to analyse under; "" = the experiment's own victim.metric (from
// its stored YAML; elapsed when that cannot be read).
// `nothing_measured` (optional): set to experiment::NothingMeasured of what was printed.
int PrintResults(ControllerClient* client, const std::string& db, const std::string& id,
                 const std::string& output, FILE* out, const std::string& metric = "",
                 std::string* nothing_measured = nullptr);
// For an experiment that ended done: 0 when it measured what it set out to, else 1 with the
// reason on stderr ("codlctl: experiment ID measured nothing: ..."; experiment::NothingMeasured).
int MeasuredExitCode(ControllerClient* client, const std::string& db, const std::string& id);
// The same from a reason already computed ("" = something was measured).
int MeasuredExitCode(const std::string& id, const std::string& nothing_measured);
// The long (tidy) exports: `kind` "trials" (one row per trial), "phases" (per trial x rank x
// phase), "ranks" (per trial x rank), "phases-summary" (per pairing x phase) or
// "telemetry" (per trial x node);
// `output` csv | json (JSON lines) | table.
int PrintTidy(ControllerClient* client, const std::string& db, const std::string& id,
              const std::string& kind, const std::string& output, FILE* out,
              const std::string& metric = "");
// `codlctl compare`: `output` table | csv | json; `report` non-empty: also write the HTML section.
int PrintComparison(ControllerClient* client, const std::string& db,
                    const std::vector<std::string>& ids, const std::string& output,
                    const std::string& metric, const std::string& report, FILE* out);
// `codlctl profile`: the experiment's interference fingerprint (lib/analysis/profile.h);
// `output` table | json | csv.
int PrintProfile(ControllerClient* client, const std::string& db, const std::string& id,
                 const std::string& output, FILE* out);
// `codlctl crosstalk`: a crosstalk experiment's matrix (lib/analysis/crosstalk.h); `output`
// table | json | csv. An experiment without `crosstalk:` is refused (exit 2).
int PrintCrosstalk(ControllerClient* client, const std::string& db, const std::string& id,
                   const std::string& output, FILE* out);
// Injector name -> the resource it pressures, from the injector registry.
std::map<std::string, std::string> InjectorResources();
// `path` "" writes no HTML; `figures` non-empty also writes every figure there as SVG + CSV.
int WriteReport(ControllerClient* client, const std::string& db, const std::string& id,
                const std::string& path, const std::string& figures = "");

}  // namespace codl::cli
