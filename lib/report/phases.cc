// Where a pairing's step time went: a stacked bar per pairing (the baseline first) of each
// on-path phase's mean time per step, with what the victim does not time on top, and the
// antagonist x phase matrix of added milliseconds per step. Both from the attribution Summarize
// computed (PairingSummary::attribution and ::phases; lib/analysis/attribution.h), so the
// report, the table and JSON show the same figures.
#include <algorithm>
#include <cmath>
#include <set>

#include "lib/analysis/attribution.h"
#include "lib/analysis/pairing_order.h"
#include "lib/common/csv.h"
#include "lib/report/charts.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

using experiment::ExperimentResults;
using experiment::PairingSummary;
using experiment::PhaseSlowdown;

constexpr double kMinorShare = 0.01;  // phases under 1 % of the step share one segment
constexpr const char* kOtherLabel = "other (< 1 %)";
constexpr const char* kUntimedLabel = "untimed";
constexpr const char* kOtherColour = "#9d9d9d";
constexpr const char* kUntimedColour = "#dcdcdc";

const PhaseSlowdown* FindPhase(const PairingSummary& p, const std::string& phase) {
  for (const auto& ph : p.phases) {
    if (ph.phase == phase) return &ph;
  }
  return nullptr;
}

// The pairings with per-step figures, the baseline first (SortedPairings puts it there).
std::vector<const PairingSummary*> Drawn(const ExperimentResults& r) {
  std::vector<const PairingSummary*> out;
  for (const PairingSummary* p : experiment::SortedPairings(r)) {
    if (std::isfinite(p->attribution.step_s) && !p->phases.empty()) out.push_back(p);
  }
  if (out.empty() || !out.front()->baseline) return {};
  return out;
}

// On-path phases in the pairings' order (each pairing lists its phases in pipeline order).
std::vector<std::string> OnPathPhases(const std::vector<const PairingSummary*>& drawn) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const PairingSummary* p : drawn) {
    for (const auto& ph : p->phases) {
      if (ph.on_path && seen.insert(ph.phase).second) out.push_back(ph.phase);
    }
  }
  return out;
}

// One stacked segment: a phase, the minor phases together, or the untimed rest.
struct Series {
  std::string label;
  std::vector<std::string> keys;  // phases summed; empty for the untimed rest
  std::string colour;
};

std::vector<Series> MakeSeries(const std::vector<const PairingSummary*>& drawn) {
  std::vector<Series> series;
  Series other{kOtherLabel, {}, kOtherColour};
  for (const std::string& phase : OnPathPhases(drawn)) {
    bool minor = true;
    for (const PairingSummary* p : drawn) {
      const PhaseSlowdown* ph = FindPhase(*p, phase);
      if (ph && ph->mean_s >= kMinorShare * p->attribution.step_s) minor = false;
    }
    if (minor) {
      other.keys.push_back(phase);
    } else {
      series.push_back({PhaseLabel(phase), {phase}, SeriesColour(series.size())});
    }
  }
  if (!other.keys.empty()) series.push_back(other);
  series.push_back({kUntimedLabel, {}, kUntimedColour});
  return series;
}

// A segment's figures in one pairing: mean per step, and (interfered) what it adds.
struct Segment {
  double mean_s = 0, added_s = experiment::kNaN, low = experiment::kNaN, high = experiment::kNaN;
  bool significant = false;
};

Segment SegmentOf(const PairingSummary& p, const Series& s) {
  Segment seg;
  if (s.keys.empty()) {  // untimed: the step less every on-path phase
    double timed = 0;
    for (const auto& ph : p.phases) {
      if (ph.on_path && std::isfinite(ph.mean_s)) timed += ph.mean_s;
    }
    seg.mean_s = std::max(0.0, p.attribution.step_s - timed);
    seg.added_s = p.attribution.unexplained_s;
    return seg;
  }
  double added = 0;
  bool any_added = false;
  for (const auto& k : s.keys) {
    const PhaseSlowdown* ph = FindPhase(p, k);
    if (!ph) continue;
    if (std::isfinite(ph->mean_s)) seg.mean_s += ph->mean_s;
    if (std::isfinite(ph->added_s)) added += ph->added_s, any_added = true;
    if (s.keys.size() == 1) {
      seg.low = ph->added_ci_low;
      seg.high = ph->added_ci_high;
      seg.significant = ph->significant;
    }
  }
  if (any_added) seg.added_s = added;
  return seg;
}

std::string Ms(double s) { return Duration(s); }

class StackedChart {
 public:
  StackedChart(std::vector<const PairingSummary*> drawn, std::vector<Series> series)
      : drawn_(std::move(drawn)), series_(std::move(series)) {
    double hi = 0;
    for (const PairingSummary* p : drawn_) hi = std::max(hi, p->attribution.step_s);
    double lo = 0;
    hi *= 1.15;
    NiceDomain(&lo, &hi, 5);
    double legend_w = kLeft;
    for (const auto& s : series_) legend_w += 34 + TextWidth(s.label, 12);
    double key_w = 0;
    for (const PairingSummary* p : drawn_) key_w = std::max(key_w, TextWidth(p->pairing, 11.5));
    group_w_ = std::max(70.0, key_w + 24);
    width_ = std::max({kLeft + drawn_.size() * group_w_ + kRight, 520.0, legend_w + kRight});
    x_ = Scale{0, 1, kLeft, width_ - kRight};
    y_ = Scale{lo, hi, kTop + kPlotH, kTop};
  }

  std::string Draw() const {
    Svg svg(width_, kTop + kPlotH + 40, "phases",
            "time per step of each pairing by phase, the baseline first");
    double lx = kLeft;
    for (const auto& s : series_) {
      svg.Rect(lx, 12, 12, 12, "fill=\"" + s.colour + "\"");
      svg.Text(lx + 17, 22, s.label, "class=\"legend\"");
      lx += 34 + TextWidth(s.label, 12);
    }
    LeftAxis(
        svg, x_, y_, NiceTicks(y_.d0, y_.d1, 5), [](double v) { return Ms(v); },
        "time per step (mean)");
    svg.Line(x_.r0, y_.r0, x_.r1, y_.r0, "class=\"domain\"");
    for (size_t g = 0; g < drawn_.size(); ++g) DrawBar(svg, *drawn_[g], kLeft + g * group_w_);
    return svg.Finish();
  }

 private:
  // kLeft: room for tick labels such as "12.5 ms" and the axis title beside them.
  static constexpr double kBar = 36, kLeft = 96, kRight = 20, kTop = 48, kPlotH = 230;

  void DrawBar(Svg& svg, const PairingSummary& p, double gx) const {
    const double bx = gx + (group_w_ - kBar) / 2, cx = gx + group_w_ / 2;
    double bottom = 0;
    for (const Series& s : series_) {
      const Segment seg = SegmentOf(p, s);
      if (!(seg.mean_s > 0)) continue;
      std::string title = p.pairing + "\n" + s.label + ": " + Ms(seg.mean_s) + " per step";
      if (!p.baseline && std::isfinite(seg.added_s)) {
        title += " (" + experiment::AddedTime(seg.added_s);
        if (std::isfinite(seg.low)) {
          title +=
              " [" + experiment::AddedTime(seg.low) + ", " + experiment::AddedTime(seg.high) + "]";
        }
        title += " vs baseline)";
      }
      if (s.keys.size() > 1) title += "\nphases: " + JoinKeys(s.keys);
      svg.Open("g", "class=\"bar\" data-pairing=\"" + Escape(p.pairing) + "\" data-phase=\"" +
                        Escape(s.keys.empty() ? std::string(kUntimedLabel) : JoinKeys(s.keys)) +
                        "\"");
      svg.Title(title);
      const double top = y_(std::min(bottom + seg.mean_s, y_.d1)), base = y_(bottom);
      svg.Rect(bx, top, kBar, base - top, "fill=\"" + s.colour + "\"");
      svg.Close("g");
      bottom += seg.mean_s;
    }
    const double top = y_(std::min(p.attribution.step_s, y_.d1));
    const std::string label =
        p.baseline ? Ms(p.attribution.step_s) : experiment::AddedTime(p.attribution.added_s);
    svg.Text(cx, top - 5, label, "class=\"bar-label\" text-anchor=\"middle\"");
    svg.Text(cx, y_.r0 + 18, p.pairing, "class=\"group-label\" text-anchor=\"middle\"");
  }

  static std::string JoinKeys(const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "" : ";") + k;
    return s;
  }

  const std::vector<const PairingSummary*> drawn_;
  const std::vector<Series> series_;
  double group_w_ = 70, width_ = 520;
  Scale x_, y_;
};

std::string PhaseCsv(const std::vector<const PairingSummary*>& drawn) {
  std::string csv =
      "pairing,phase,on_path,feeds,mean_s,baseline_mean_s,added_s,added_ci_low,added_ci_high,"
      "significant,near_zero,slowdown,n\n";
  auto row = [&csv](const PairingSummary& p, const std::string& phase, bool on_path,
                    const std::string& feeds, double mean, double base, double added, double lo,
                    double hi, bool sig, bool near_zero, double slowdown) {
    csv += CsvField(CsvText(p.pairing)) + "," + CsvField(CsvText(phase)) + "," +
           (on_path ? "true" : "false") + "," + CsvField(CsvText(feeds)) + "," + CsvNumber(mean) +
           "," + CsvNumber(base) + "," + CsvNumber(added) + "," + CsvNumber(lo) + "," +
           CsvNumber(hi) + "," + (sig ? "true" : "false") + "," + (near_zero ? "true" : "false") +
           "," + CsvNumber(slowdown) + "," + std::to_string(p.n) + "\n";
  };
  for (const PairingSummary* p : drawn) {
    for (const auto& ph : p->phases) {
      row(*p, ph.phase, ph.on_path, ph.feeds, ph.mean_s, ph.baseline_mean_s, ph.added_s,
          ph.added_ci_low, ph.added_ci_high, ph.significant, ph.near_zero, ph.slowdown);
    }
    const auto& a = p->attribution;
    row(*p, "step", true, "", a.step_s, a.baseline_step_s, a.added_s, a.ci_low, a.ci_high,
        a.ci_low > 0 || a.ci_high < 0, false, experiment::kNaN);
    row(*p, kUntimedLabel, true, "", experiment::kNaN, experiment::kNaN, a.unexplained_s,
        experiment::kNaN, experiment::kNaN, false, false, experiment::kNaN);
  }
  return csv;
}

}  // namespace

Figure PhaseFigure(const ExperimentResults& results, const std::vector<TrialRecord>& /*trials*/) {
  Figure f;
  f.name = "phases";
  const std::vector<const PairingSummary*> drawn = Drawn(results);
  if (drawn.size() < 2) return f;  // a baseline and at least one pairing beside it
  f.csv = PhaseCsv(drawn);
  f.svg = StackedChart(drawn, MakeSeries(drawn)).Draw();
  return f;
}

std::string PhaseMatrix(const ExperimentResults& results) {
  const std::vector<const PairingSummary*> drawn = Drawn(results);
  if (drawn.size() < 2) return "";
  std::vector<std::string> columns = OnPathPhases(drawn);
  std::set<std::string> seen(columns.begin(), columns.end());
  std::vector<std::string> overlapped;
  for (const PairingSummary* p : drawn) {
    for (const auto& ph : p->phases) {
      if (!ph.on_path && seen.insert(ph.phase).second) overlapped.push_back(ph.phase);
    }
  }
  std::string h =
      "<div class=\"scroll\"><table class=\"phase-matrix\">\n<thead><tr><th>pairing</th>"
      "<th>added per step</th>";
  for (const auto& c : columns) h += "<th>" + Escape(PhaseLabel(c)) + "</th>";
  h += "<th>untimed</th>";
  for (const auto& c : overlapped) {
    h += "<th class=\"overlapped\">" + Escape(PhaseLabel(c)) + " (overlapped)</th>";
  }
  h += "</tr></thead>\n<tbody>\n";
  auto cell = [](double added, double lo, double hi, bool sig) {
    if (!std::isfinite(added)) return std::string("<td>&ndash;</td>");
    std::string s = "<td" + std::string(sig ? " class=\"significant\"" : "") + ">" +
                    Escape(experiment::AddedTime(added)) + (sig ? "*" : "");
    if (std::isfinite(lo)) {
      s += "<br><small>[" + Escape(experiment::AddedTime(lo)) + ", " +
           Escape(experiment::AddedTime(hi)) + "]</small>";
    }
    return s + "</td>";
  };
  for (const PairingSummary* p : drawn) {
    if (p->baseline) continue;
    const auto& a = p->attribution;
    h += "<tr data-matrix-pairing=\"" + Escape(p->pairing) + "\"><th><code>" + Escape(p->pairing) +
         "</code></th>" + cell(a.added_s, a.ci_low, a.ci_high, a.ci_low > 0 || a.ci_high < 0);
    for (const auto& c : columns) {
      const PhaseSlowdown* ph = FindPhase(*p, c);
      h += ph ? cell(ph->added_s, ph->added_ci_low, ph->added_ci_high, ph->significant)
              : "<td>&ndash;</td>";
    }
    h += cell(a.unexplained_s, experiment::kNaN, experiment::kNaN, false);
    for (const auto& c : overlapped) {
      const PhaseSlowdown* ph = FindPhase(*p, c);
      std::string v = "<td>&ndash;</td>";
      if (ph && std::isfinite(ph->slowdown) && !ph->near_zero) {
        v = "<td class=\"overlapped\">" + Escape(Slowdown(ph->slowdown)) + "</td>";
      } else if (ph) {
        v = cell(ph->added_s, ph->added_ci_low, ph->added_ci_high, ph->significant);
      }
      h += v;
    }
    h += "</tr>\n";
  }
  return h + "</tbody></table></div>\n";
}

}  // namespace codl::report
