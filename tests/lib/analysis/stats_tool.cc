// stats_tool: CoDL's statistics on data sets given as JSON lines, for scipy_crosscheck.py.
// Input, one object per line: {"t": [...], "c": [...]}, {"p": [...]} or
// {"base": [...], "singles": [[...], ...], "combo": [...]}.
// Output, one object per line: {"mw_u", "mw_p", "mw_method", "ci_low", "ci_high", "ci_exact"},
// {"holm": [...], "bh": [...]} or {"slowdown", "singles", "multiplicative", "additive", "ratio",
// "ci_low", "ci_high", "verdict"} (ComputeInteraction, default options).
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/analysis/interaction.h"
#include "lib/analysis/multiple_comparisons.h"
#include "lib/analysis/stats.h"

using namespace codl::experiment;

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto in = nlohmann::json::parse(line);
    nlohmann::json out;
    if (in.contains("combo")) {
      const InteractionSummary s =
          ComputeInteraction(in["base"].get<std::vector<double>>(),
                             in["singles"].get<std::vector<std::vector<double>>>(),
                             in["combo"].get<std::vector<double>>());
      out = {{"slowdown", s.slowdown},
             {"singles", s.single_slowdowns},
             {"multiplicative", s.multiplicative},
             {"additive", s.additive},
             {"ratio", s.ratio},
             {"ci_low", s.ci_low},
             {"ci_high", s.ci_high},
             {"verdict", ToString(s.verdict)}};
    } else if (in.contains("p")) {
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
