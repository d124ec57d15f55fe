#include "lib/analysis/predict_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lib/analysis/format_numbers.h"
#include "lib/common/csv.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::experiment {
namespace {

using Json = nlohmann::ordered_json;

// A `max` point sits at a measured (achieved) intensity: three significant digits, not six.
std::string Intensity(const CurveSummary& c, double x, bool at_max) {
  return c.absolute ? FormatRate(x, "bytes/s") : FixedOrDash(at_max ? "%.3g" : "%g", x);
}

// "membw: 0.25 -> 1.10x, 0.5 -> 1.31x (measured 1.29x)": the fitted knots, with the measured
// value where the fit pooled it away.
std::string CurveLine(const CurveSummary& c) {
  std::string s = c.antagonist + ":";
  bool first = true;
  for (const auto& k : c.fitted) {
    if (k.x == 0) continue;
    const bool at_max = std::any_of(c.measured.begin(), c.measured.end(),
                                    [&](const CurvePoint& m) { return m.at_max && m.x == k.x; });
    s += std::string(first ? " " : ", ") + Intensity(c, k.x, at_max) + (at_max ? " (max)" : "") +
         " -> " + FixedOrDash("%.3fx", k.slowdown);
    first = false;
    for (const auto& m : c.measured) {
      if (m.x == k.x && std::fabs(m.slowdown - k.slowdown) > 5e-4) {
        s += " (measured " + FixedOrDash("%.3fx", m.slowdown) + ")";
      }
    }
  }
  return s;
}

std::string Singles(const Prediction& p) {
  std::string s;
  for (double x : p.single_slowdowns) s += (s.empty() ? "" : " x ") + FixedOrDash("%.3f", x);
  return s.empty() ? "-" : s;
}

std::string Percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return FixedOrDash("%+.1f%%", 100 * fraction);
}

std::string MapeLine(const PredictionReport& r) {
  if (r.n_compared == 0) return "no prediction has a measurement to compare with";
  int combos = 0, interps = 0;
  for (const auto& p : r.predictions) {
    if (!std::isfinite(p.error)) continue;
    (p.left_out ? interps : combos) += 1;
  }
  std::string s = "MAPE " + FixedOrDash("%.1f%%", r.mape) + " over " +
                  std::to_string(r.n_compared) + " measured (combinations " +
                  FixedOrDash("%.1f%%", r.mape_combinations) + " over " + std::to_string(combos) +
                  ", left-out singles " + FixedOrDash("%.1f%%", r.mape_interpolations) + " over " +
                  std::to_string(interps) + "); largest error " +
                  FixedOrDash("%.1f%%", r.max_abs_error);
  return s;
}

}  // namespace

std::string FormatPredictionTable(const PredictionReport& r, const PredictionSource& src) {
  std::ostringstream out;
  out << "prediction from experiment " << TerminalSafe(src.name) << " (id " << src.experiment_id
      << "), metric " << src.metric << ", model " << r.model
      << (src.all_trials ? ", all trials (flagged included)" : ", held-target trials") << "\n";
  out << "sensitivity curves (intensity -> slowdown, fitted non-decreasing through 0 -> 1):\n";
  for (const auto& c : r.curves) out << "  " << TerminalSafe(CurveLine(c)) << "\n";
  std::vector<std::vector<std::string>> rows{
      {"combination", "predicted [" + FixedOrDash("%.0f", src.confidence * 100) + "% CI]",
       "singles", "measured", "n", "error"}};
  bool extrapolated = false, left_out = false;
  for (const auto& p : r.predictions) {
    std::string name =
        p.combination + (p.left_out ? " (left out)" : "") + (p.extrapolated ? " *" : "");
    extrapolated = extrapolated || p.extrapolated;
    left_out = left_out || p.left_out;
    rows.push_back({TerminalSafe(name),
                    FixedOrDash("%.3fx", p.predicted) + " [" + FixedOrDash("%.3f", p.ci_low) +
                        ", " + FixedOrDash("%.3f", p.ci_high) + "]",
                    Singles(p), FixedOrDash("%.3fx", p.measured),
                    p.n_measured ? std::to_string(p.n_measured) : "-", Percent(p.error)});
  }
  PrintAligned(rows, out);
  out << MapeLine(r) << "\n";
  for (const auto& s : r.skipped) out << "skipped: " << TerminalSafe(s) << "\n";
  if (left_out) {
    out << "(left out): a measured single predicted from the other points of its curve, so its "
           "error is the interpolation's\n";
  }
  if (extrapolated) {
    out << "*: extrapolated past the highest measured intensity of a curve; trust it less\n";
  }
  return out.str();
}

std::string FormatPredictionJson(const PredictionReport& r, const PredictionSource& src) {
  Json j;
  j["experiment_id"] = src.experiment_id;
  j["name"] = src.name;
  j["metric"] = src.metric;
  j["model"] = r.model;
  j["confidence"] = src.confidence;
  j["curves"] = Json::array();
  for (const auto& c : r.curves) {
    Json measured = Json::array(), fitted = Json::array();
    for (const auto& p : c.measured)
      measured.push_back({{"x", p.x},
                          {"slowdown", JsonNumberOrNull(p.slowdown)},
                          {"n", p.n},
                          {"at_max", p.at_max}});
    for (const auto& p : c.fitted)
      fitted.push_back({{"x", p.x}, {"slowdown", JsonNumberOrNull(p.slowdown)}});
    j["curves"].push_back({{"antagonist", c.antagonist},
                           {"absolute", c.absolute},
                           {"measured", measured},
                           {"fitted", fitted}});
  }
  j["predictions"] = Json::array();
  for (const auto& p : r.predictions) {
    Json singles = Json::array();
    for (double x : p.single_slowdowns) singles.push_back(JsonNumberOrNull(x));
    j["predictions"].push_back({{"combination", p.combination},
                                {"predicted", JsonNumberOrNull(p.predicted)},
                                {"ci_low", JsonNumberOrNull(p.ci_low)},
                                {"ci_high", JsonNumberOrNull(p.ci_high)},
                                {"single_slowdowns", singles},
                                {"extrapolated", p.extrapolated},
                                {"left_out", p.left_out},
                                {"n_measured", p.n_measured},
                                {"measured", JsonNumberOrNull(p.measured)},
                                {"error", JsonNumberOrNull(p.error)}});
  }
  j["n_compared"] = r.n_compared;
  j["mape"] = JsonNumberOrNull(r.mape);
  j["mape_combinations"] = JsonNumberOrNull(r.mape_combinations);
  j["mape_interpolations"] = JsonNumberOrNull(r.mape_interpolations);
  j["max_abs_error"] = JsonNumberOrNull(r.max_abs_error);
  j["skipped"] = r.skipped;
  j["all_trials"] = src.all_trials;
  return j.dump(2) + "\n";
}

std::string FormatPredictionCsv(const PredictionReport& r, const PredictionSource& src) {
  std::ostringstream out;
  out << "experiment_id,metric,model,combination,predicted,ci_low,ci_high,single_slowdowns,"
         "extrapolated,left_out,n_measured,measured,error\n";
  for (const auto& p : r.predictions) {
    std::string singles;
    for (double x : p.single_slowdowns) singles += (singles.empty() ? "" : ";") + CsvRoundTrip(x);
    const std::vector<std::string> row = {CsvText(src.experiment_id),
                                          src.metric,
                                          r.model,
                                          CsvText(p.combination),
                                          CsvRoundTrip(p.predicted),
                                          CsvRoundTrip(p.ci_low),
                                          CsvRoundTrip(p.ci_high),
                                          singles,
                                          p.extrapolated ? "1" : "0",
                                          p.left_out ? "1" : "0",
                                          std::to_string(p.n_measured),
                                          CsvRoundTrip(p.measured),
                                          CsvRoundTrip(p.error)};
    std::string line;
    for (const auto& f : row) line += (line.empty() ? "" : ",") + CsvField(f);
    out << line << "\n";
  }
  return out.str();
}

}  // namespace codl::experiment

namespace codl::experiment {

std::string FormatProfilePredictionTable(const ProfilePrediction& r,
                                         const ProfilePredictionSource& src) {
  std::ostringstream out;
  out << "prediction from profiles: victim profile " << TerminalSafe(src.profile_name) << " (id "
      << TerminalSafe(src.profile_id) << ") beside neighbour " << TerminalSafe(src.neighbour_name)
      << " (id " << TerminalSafe(src.neighbour_id) << "), metric " << src.metric << ", model "
      << r.model << (src.all_trials ? ", all trials (flagged included)" : ", held-target trials")
      << "\n";
  std::vector<std::vector<std::string>> rows{
      {"resource", "curve", "neighbour pressure", "n", "slowdown at it"}};
  for (const auto& res : r.resources) {
    rows.push_back(
        {TerminalSafe(res.injector), TerminalSafe(res.antagonist),
         FixedOrDash("%.3f", res.pressure) + " (" + TerminalSafe(res.neighbour_antagonist) + ")",
         std::to_string(res.n_pressure),
         FixedOrDash("%.3fx", res.slowdown) + (res.extrapolated ? " *" : "")});
  }
  PrintAligned(rows, out);
  for (const auto& s : r.skipped) out << "skipped: " << TerminalSafe(s) << "\n";
  out << "predicted slowdown: " << FixedOrDash("%.3fx", r.predicted) << " ["
      << FixedOrDash("%.3f", r.ci_low) << ", " << FixedOrDash("%.3f", r.ci_high) << "] ("
      << FixedOrDash("%.0f", src.confidence * 100) << "% CI)\n";
  if (!src.not_searched.empty()) {
    out << "measured pairs: not searched: " << TerminalSafe(src.not_searched) << "\n";
  } else if (r.measured.empty()) {
    out << "no measured pair: no experiment in the database ran the profile's victim command "
           "beside a workload antagonist running the neighbour's victim command\n";
  } else {
    std::vector<std::vector<std::string>> m{
        {"measured in", "neighbour", "n", "measured", "predicted", "error"}};
    for (const auto& p : r.measured) {
      m.push_back({TerminalSafe(p.experiment_id), TerminalSafe(p.name) + "@run",
                   std::to_string(p.n), FixedOrDash("%.3fx", p.measured),
                   FixedOrDash("%.3fx", r.predicted), Percent(p.error)});
    }
    PrintAligned(m, out);
    out << "MAPE " << FixedOrDash("%.1f%%", r.mape) << " over " << r.n_compared << " measured pair"
        << (r.n_compared == 1 ? "" : "s") << "\n";
  }
  if (r.extrapolated) {
    out << "*: the pressure lies past the highest measured level of the curve; trust it less\n";
  }
  return out.str();
}

std::string FormatProfilePredictionJson(const ProfilePrediction& r,
                                        const ProfilePredictionSource& src) {
  Json j;
  j["victim_profile"] = src.profile_id;
  j["victim_profile_name"] = src.profile_name;
  j["neighbour"] = src.neighbour_id;
  j["neighbour_name"] = src.neighbour_name;
  j["metric"] = src.metric;
  j["model"] = r.model;
  j["confidence"] = src.confidence;
  j["resources"] = Json::array();
  for (const auto& res : r.resources) {
    j["resources"].push_back({{"injector", res.injector},
                              {"antagonist", res.antagonist},
                              {"neighbour_antagonist", res.neighbour_antagonist},
                              {"pressure", JsonNumberOrNull(res.pressure)},
                              {"n_pressure", res.n_pressure},
                              {"slowdown", JsonNumberOrNull(res.slowdown)},
                              {"extrapolated", res.extrapolated}});
  }
  j["skipped"] = r.skipped;
  j["predicted"] = JsonNumberOrNull(r.predicted);
  j["ci_low"] = JsonNumberOrNull(r.ci_low);
  j["ci_high"] = JsonNumberOrNull(r.ci_high);
  j["extrapolated"] = r.extrapolated;
  j["measured_searched"] = src.not_searched.empty();
  j["measured"] = Json::array();
  for (const auto& p : r.measured) {
    j["measured"].push_back({{"experiment_id", p.experiment_id},
                             {"name", p.name},
                             {"n", p.n},
                             {"measured", JsonNumberOrNull(p.measured)},
                             {"predicted", JsonNumberOrNull(r.predicted)},
                             {"error", JsonNumberOrNull(p.error)}});
  }
  j["n_compared"] = r.n_compared;
  j["mape"] = JsonNumberOrNull(r.mape);
  j["all_trials"] = src.all_trials;
  return j.dump(2) + "\n";
}

std::string FormatProfilePredictionCsv(const ProfilePrediction& r,
                                       const ProfilePredictionSource& src) {
  std::ostringstream out;
  out << "victim_profile,neighbour,metric,model,predicted,ci_low,ci_high,pressures,"
         "extrapolated,measured_experiment_id,measured_name,n_measured,measured,error\n";
  std::string pressures;  // "memcpy=0.23;cpu=0.41"
  for (const auto& res : r.resources) {
    pressures += (pressures.empty() ? "" : ";") + res.injector + "=" + CsvRoundTrip(res.pressure);
  }
  std::vector<MeasuredPair> pairs = r.measured;
  if (pairs.empty()) pairs.emplace_back();  // the prediction alone
  for (const auto& p : pairs) {
    const std::vector<std::string> row = {CsvText(src.profile_id),
                                          CsvText(src.neighbour_id),
                                          src.metric,
                                          r.model,
                                          CsvRoundTrip(r.predicted),
                                          CsvRoundTrip(r.ci_low),
                                          CsvRoundTrip(r.ci_high),
                                          CsvText(pressures),
                                          r.extrapolated ? "1" : "0",
                                          CsvText(p.experiment_id),
                                          CsvText(p.name),
                                          p.experiment_id.empty() ? "" : std::to_string(p.n),
                                          CsvRoundTrip(p.measured),
                                          CsvRoundTrip(p.error)};
    std::string line;
    for (const auto& f : row) line += (line.empty() ? "" : ",") + CsvField(f);
    out << line << "\n";
  }
  return out.str();
}

}  // namespace codl::experiment
