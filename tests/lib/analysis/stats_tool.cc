// stats_tool: CoDL's statistics on data sets given as JSON lines, for scipy_crosscheck.py.
// Input, one object per line: {"t": [...], "c": [...]} or {"p": [...]}.
// Output, one object per line: {"mw_u", "mw_p", "mw_method", "ci_low", "ci_high", "ci_exact"}
// or {"holm": [...], "bh": [...]}.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/analysis/multiple_comparisons.h"
#include "lib/analysis/stats.h"

using namespace codl::experiment;

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto in = nlohmann::json::parse(line);
    nlohmann::json out;
    if (in.contains("p")) {
      const auto p = in["p"].get<std::vector<double>>();
      out["holm"] = HolmAdjust(p);
      out["bh"] = BenjaminiHochbergAdjust(p);
    } else {
      const auto t = in["t"].get<std::vector<double>>();
      const auto c = in["c"].get<std::vector<double>>();
      const MannWhitneyResult mw = MannWhitneyU(t, c);
      const ConfidenceInterval ci = BootstrapMedianRatioCI(t, c);
      out = {{"mw_u", mw.u},     {"mw_p", mw.p_value}, {"mw_method", ToString(mw.method)},
             {"ci_low", ci.low}, {"ci_high", ci.high}, {"ci_exact", ci.exact}};
    }
    std::cout << out.dump() << "\n";
  }
  return 0;
}
