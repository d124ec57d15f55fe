// compare: several experiments side by side, pairing by pairing (lib/analysis/compare.h).
#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/results_output.h"
#include "lib/common/utf8.h"
#include "lib/spec/trial_metric.h"

namespace codl::cli {

int CmdCompare(const GlobalOptions& g, const std::vector<std::string>& ids, const std::string& db,
               const std::string& output, const std::string& metric, const std::string& report) {
  if (ids.size() < 2) {
    fprintf(stderr, "codlctl compare: give at least two experiment ids\n");
    return kExitBadInput;
  }
  if (output != "table" && output != "json" && output != "csv") {
    fprintf(stderr, "codlctl compare: -o '%s': expected table, json or csv\n", output.c_str());
    return kExitBadInput;
  }
  if (auto m = experiment::ParseTrialMetric(metric); !metric.empty() && !m.ok()) {
    fprintf(stderr, "codlctl compare: --metric: %s\n", TerminalSafe(m.error()).c_str());
    return kExitBadInput;
  }
  std::unique_ptr<ControllerClient> client;
  if (db.empty()) {
    auto c = ConnectController(g);
    if (!c.ok()) {
      fprintf(stderr, "codlctl compare: %s\n", TerminalSafe(c.error()).c_str());
      return kExitBadInput;
    }
    client = std::move(c.value());
  }
  return PrintComparison(client.get(), db, ids, output, metric, report, stdout);
}

}  // namespace codl::cli
