#include "lib/analysis/profile.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "lib/analysis/format_numbers.h"
#include "lib/common/csv.h"
#include "lib/common/utf8.h"
#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

using OrderedJson = nlohmann::ordered_json;

bool Significant(const ProfilePoint& p) {
  return std::isfinite(p.ci_low) && std::isfinite(p.ci_high) && (p.ci_low > 1 || p.ci_high < 1);
}

std::string LevelText(const ProfilePoint& p) { return p.max ? "max" : FixedOrDash("%g", p.level); }

std::string CiText(const ProfilePoint& p) {
  if (!std::isfinite(p.ci_low) || !std::isfinite(p.ci_high)) return "[n/a: n < 3]";
  return "[" + FixedOrDash("%.3f", p.ci_low) + ", " + FixedOrDash("%.3f", p.ci_high) + "]";
}

OrderedJson PointJson(const ProfilePoint& p) {
  return {{"level", p.max ? OrderedJson() : OrderedJson(p.level)},
          {"max", p.max},
          {"n", p.n},
          {"slowdown", JsonNumberOrNull(p.slowdown)},
          {"ci_low", JsonNumberOrNull(p.ci_low)},
          {"ci_high", JsonNumberOrNull(p.ci_high)},
          {"significant", Significant(p)}};
}

}  // namespace

std::vector<std::string> ProfileAntagonists(const ExperimentResults& results) {
  std::vector<std::string> names;
  std::shared_ptr<const ExperimentSpec> spec = results.spec;
  if (!spec) {  // results not made by Summarize: their YAML, if it parses
    if (auto parsed = ParseExperiment(results.yaml, "experiment.yaml"); parsed.ok())
      spec = std::make_shared<const ExperimentSpec>(std::move(*parsed));
  }
  if (spec) {
    for (const auto& a : spec->antagonists) {
      if (!a.workload) names.push_back(a.name);
    }
    return names;
  }
  for (const auto& p : results.pairings) {
    for (const auto& a : p.antagonists) {
      if (a.injector != kWorkloadInjector &&
          std::find(names.begin(), names.end(), a.name) == names.end())
        names.push_back(a.name);
    }
  }
  return names;
}

InterferenceProfile BuildProfile(const ExperimentResults& results,
                                 const std::vector<std::string>& antagonists,
                                 const std::map<std::string, std::string>& resources) {
  InterferenceProfile profile;
  profile.experiment_id = results.experiment_id;
  profile.name = results.name;
  profile.metric = results.metric;
  profile.state = results.state;
  for (const std::string& name : antagonists) {
    ProfileRow row;
    row.antagonist = name;
    for (const PairingSummary& p : results.pairings) {
      if (p.baseline || p.antagonists.size() != 1 || p.antagonists[0].name != name) continue;
      const AntagonistSummary& s = p.antagonists[0];
      if (s.injector == kWorkloadInjector || (!s.max && !(s.level > 0))) continue;  // a rate
      row.injector = s.injector;
      ProfilePoint point;
      point.max = s.max;
      point.level = s.max ? 1 : s.level;
      point.n = p.n;
      point.slowdown = p.slowdown;
      point.ci_low = p.ci_low;
      point.ci_high = p.ci_high;
      row.curve.push_back(point);
    }
    std::sort(row.curve.begin(), row.curve.end(), [](const ProfilePoint& a, const ProfilePoint& b) {
      return a.max != b.max ? b.max : a.level < b.level;
    });
    for (const ToleranceResult& t : results.tolerance) {
      if (t.name != name) continue;
      row.searched = true;
      row.tolerance = t;
    }
    if (!row.curve.empty()) {
      row.strongest = row.curve.back();
      row.at_max = row.strongest.max;
      row.at_level = row.strongest.level;
    }
    if (const auto it = resources.find(row.injector); it != resources.end())
      row.resource = it->second;
    profile.rows.push_back(std::move(row));
  }
  return profile;
}

std::string ProfileCurveText(const ProfileRow& row) {
  std::string text;
  for (const ProfilePoint& p : row.curve) {
    if (!text.empty()) text += "  ";
    text += LevelText(p) + ": " + FixedOrDash("%.2fx", p.slowdown) + (Significant(p) ? "*" : "");
  }
  return text.empty() ? "-" : text;
}

std::string ProfileToleratesText(const ProfileRow& row) {
  if (!row.searched) return "-";
  if (row.tolerance.tolerates_max) return "max (1)";
  return FixedOrDash("%g", row.tolerance.tolerated_level);
}

std::string ProfileBreaksText(const ProfileRow& row) {
  if (!row.searched) return "-";
  if (std::isfinite(row.tolerance.breaks_level))
    return FixedOrDash("%g", row.tolerance.breaks_level);
  return row.tolerance.tolerates_max ? "none <= 1" : "none found";
}

std::string FormatProfileTable(const InterferenceProfile& p) {
  std::ostringstream out;
  double threshold = kNaN;
  for (const auto& r : p.rows) {
    if (r.searched) threshold = r.tolerance.threshold;
  }
  out << "profile of " << TerminalSafe(p.name) << " (experiment " << TerminalSafe(p.experiment_id)
      << ", metric " << TerminalSafe(p.metric);
  if (std::isfinite(threshold)) out << ", tolerated: slowdown <= " << FixedOrDash("%g", threshold);
  out << ")\n";
  if (p.state != "done") {
    out << "partial: the experiment is " << TerminalSafe(p.state)
        << "; searches not finished say `running`\n";
  }
  if (p.rows.empty()) {
    out << "no injector antagonists: nothing to profile\n";
    return out.str();
  }
  std::vector<std::vector<std::string>> rows = {{"resource", "antagonist", "tolerates", "breaks",
                                                 "at peak", "[95% CI]", "search",
                                                 "curve (level: slowdown, * significant)"}};
  for (const ProfileRow& r : p.rows) {
    std::string search = "-";
    if (r.searched) {
      search = r.tolerance.stop_reason + ", " + std::to_string(r.tolerance.trials) + " trials";
    }
    rows.push_back({TerminalSafe(r.resource.empty() ? r.injector : r.resource),
                    TerminalSafe(r.antagonist), ProfileToleratesText(r), ProfileBreaksText(r),
                    std::isfinite(r.at_level)
                        ? FixedOrDash("%.3fx", r.strongest.slowdown) + (r.at_max ? " (max)" : "")
                        : "-",
                    std::isfinite(r.at_level) ? CiText(r.strongest) : "-", search,
                    ProfileCurveText(r)});
  }
  PrintAligned(rows, out);
  out << "tolerates: the highest level (fraction of the calibrated peak) whose slowdown's CI "
         "stays under the threshold; breaks: the lowest whose CI is above it\n";
  return out.str();
}

std::string FormatProfileJson(const InterferenceProfile& p) {
  OrderedJson j = {{"experiment_id", p.experiment_id},
                   {"name", p.name},
                   {"metric", p.metric},
                   {"state", p.state},
                   {"rows", OrderedJson::array()}};
  for (const ProfileRow& r : p.rows) {
    OrderedJson curve = OrderedJson::array();
    for (const ProfilePoint& point : r.curve) curve.push_back(PointJson(point));
    OrderedJson row = {
        {"antagonist", r.antagonist},
        {"injector", r.injector},
        {"resource", r.resource},
        {"curve", curve},
        {"at_peak", std::isfinite(r.at_level) ? PointJson(r.strongest) : OrderedJson()}};
    if (r.searched) {
      row["tolerance"] = {{"slowdown", r.tolerance.threshold},
                          {"tolerated_level", r.tolerance.tolerated_level},
                          {"breaks_level", JsonNumberOrNull(r.tolerance.breaks_level)},
                          {"tolerates_max", r.tolerance.tolerates_max},
                          {"trials", r.tolerance.trials},
                          {"max_trials", r.tolerance.max_trials},
                          {"stop_reason", r.tolerance.stop_reason}};
    } else {
      row["tolerance"] = nullptr;
    }
    j["rows"].push_back(std::move(row));
  }
  return j.dump(2) + "\n";
}

std::string FormatProfileCsv(const InterferenceProfile& p) {
  std::ostringstream out;
  out << "experiment_id,resource,antagonist,injector,level,max,n,slowdown,ci_low,ci_high,"
         "tolerated_level,breaks_level,tolerates_max,stop_reason\n";
  for (const ProfileRow& r : p.rows) {
    const std::string tail = r.searched ? CsvRoundTrip(r.tolerance.tolerated_level) + "," +
                                              CsvRoundTrip(r.tolerance.breaks_level) + "," +
                                              (r.tolerance.tolerates_max ? "true" : "false") + "," +
                                              CsvField(CsvText(r.tolerance.stop_reason))
                                        : ",,,";
    // One line per curve point (a row with no point still gets one, its figures empty).
    std::vector<ProfilePoint> points = r.curve;
    const bool none = points.empty();
    if (none) points.push_back(ProfilePoint{});
    for (const ProfilePoint& point : points) {
      out << CsvField(CsvText(p.experiment_id)) << "," << CsvField(CsvText(r.resource)) << ","
          << CsvField(CsvText(r.antagonist)) << "," << CsvField(CsvText(r.injector)) << ","
          << (none || point.max ? "" : CsvRoundTrip(point.level)) << ","
          << (point.max ? "true" : "false") << "," << (none ? "" : std::to_string(point.n)) << ","
          << CsvRoundTrip(point.slowdown) << "," << CsvRoundTrip(point.ci_low) << ","
          << CsvRoundTrip(point.ci_high) << "," << tail << "\n";
    }
  }
  return out.str();
}

}  // namespace codl::experiment
