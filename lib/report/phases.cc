// The per-phase breakdown: which part of a training step the interference slows. Computed here
// from the trials, not from PairingSummary::phases, because a bar needs the per-trial values
// for its bootstrap CI and the small phases are summed per trial into one bar.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lib/analysis/pairing_order.h"
#include "lib/analysis/phase_order.h"
#include "lib/analysis/stats.h"
#include "lib/common/csv.h"
#include "lib/report/charts.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

using experiment::ExperimentResults;
using experiment::kNaN;
using experiment::PairingSummary;

constexpr double kMinorShare = 0.01;  // phases under 1 % of the step share one bar
constexpr const char* kOtherLabel = "other (< 1 %)";
constexpr const char* kOtherColour = "#9d9d9d";

// One bar series: a phase, or the sum of the minor ones.
struct Series {
  std::string label;              // "read" or kOtherLabel
  std::vector<std::string> keys;  // the phases summed, e.g. {"read_s"}
};

// The measured trials of one pairing.
struct Group {
  const PairingSummary* pairing = nullptr;
  std::vector<const TrialRecord*> trials;
};

double StepTime(const TrialRecord& t) {
  std::vector<double> steps;
  for (const auto& s : t.steps) {
    if (!s.warmup && std::isfinite(s.step_time_s)) steps.push_back(s.step_time_s);
  }
  if (!steps.empty()) return experiment::Median(steps);
  double sum = 0;  // no steps stored: the phases are the best estimate of the step there is
  for (const auto& [name, v] : t.phase_medians) sum += std::isfinite(v) ? v : 0;
  return sum;
}

// Sum of `keys` in one trial's phase medians; NaN when the trial reports none of them.
double TrialValue(const TrialRecord& t, const std::vector<std::string>& keys) {
  double sum = 0;
  bool any = false;
  for (const auto& k : keys) {
    auto it = t.phase_medians.find(k);
    if (it != t.phase_medians.end() && std::isfinite(it->second)) sum += it->second, any = true;
  }
  return any ? sum : kNaN;
}

std::vector<double> Values(const Group& g, const Series& s) {
  std::vector<double> v;
  for (const TrialRecord* t : g.trials) {
    if (double x = TrialValue(*t, s.keys); std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// codl-victim's pipeline first, then the victim's own order (lib/analysis/phase_order.h).
std::vector<std::string> PhaseOrder(const std::vector<Group>& groups) {
  std::vector<const TrialRecord*> trials;
  for (const auto& g : groups) trials.insert(trials.end(), g.trials.begin(), g.trials.end());
  return experiment::OrderPhases(trials);
}

// Whether `phase` stays under 1 % of the step in every pairing (median over its trials).
bool Minor(const std::vector<Group>& groups, const std::string& phase) {
  for (const auto& g : groups) {
    std::vector<double> shares;
    for (const TrialRecord* t : g.trials) {
      const double v = TrialValue(*t, {phase}), step = StepTime(*t);
      if (std::isfinite(v) && step > 0) shares.push_back(v / step);
    }
    if (!shares.empty() && experiment::Median(shares) >= kMinorShare) return false;
  }
  return true;
}

std::vector<Series> MakeSeries(const std::vector<Group>& groups) {
  std::vector<Series> series;
  Series other{kOtherLabel, {}};
  for (const auto& phase : PhaseOrder(groups)) {
    if (Minor(groups, phase)) {
      other.keys.push_back(phase);
    } else {
      series.push_back({PhaseLabel(phase), {phase}});
    }
  }
  if (!other.keys.empty()) series.push_back(other);
  return series;
}

struct Bar {
  double median_s = kNaN, base_s = kNaN, slowdown = kNaN, ci_low = kNaN, ci_high = kNaN;
  size_t n = 0, n_base = 0;
};

// FNV-1a: a seed that is the same on every platform, unlike std::hash.
uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

Bar MakeBar(const Group& g, const Group& base, const Series& s, const ExperimentResults& r) {
  Bar b;
  const auto values = Values(g, s), base_values = Values(base, s);
  b.n = values.size();
  b.n_base = base_values.size();
  b.median_s = experiment::Median(values);
  b.base_s = experiment::Median(base_values);
  if (b.base_s > 0) b.slowdown = b.median_s / b.base_s;
  if (b.n >= 3 && b.n_base >= 3) {  // below that a bootstrap interval means nothing
    experiment::BootstrapOptions o;
    if (r.bootstrap_resamples > 0) o.resamples = r.bootstrap_resamples;
    o.confidence = r.confidence;
    o.seed = r.seed ^ Fnv1a(g.pairing->pairing + "/" + s.label);
    const auto ci = experiment::BootstrapMedianRatioCI(values, base_values, o);
    b.ci_low = ci.low;
    b.ci_high = ci.high;
  }
  return b;
}

std::string Colour(const std::vector<Series>& series, size_t i) {
  return series[i].label == kOtherLabel ? kOtherColour : SeriesColour(i);
}

// Splits a pairing key at '+' so long keys fit under a bar group, one antagonist a line.
std::vector<std::string> KeyLines(const PairingSummary& p) {
  if (p.antagonists.empty()) return {p.pairing};
  std::vector<std::string> lines;
  for (const auto& a : p.antagonists) lines.push_back(a.name + "@" + a.intensity);
  return lines;
}

std::string Joined(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ";") + k;
  return s;
}

class PhaseChart {
 public:
  PhaseChart(std::vector<Group> groups, std::vector<Series> series,
             std::vector<std::vector<Bar>> bars)
      : groups_(std::move(groups)), series_(std::move(series)), bars_(std::move(bars)) {
    LayOut();
  }

  std::string Draw() const {
    Svg svg(width_, height_, "phases", "per-phase slowdown of each pairing");
    DrawLegend(svg);
    LeftAxis(
        svg, x_, y_, NiceTicks(y_.d0, y_.d1, 5), [](double v) { return Slowdown(v); },
        "phase slowdown (\u00d7 baseline)");
    svg.Line(x_.r0, y_.r0, x_.r1, y_.r0, "class=\"domain\"");
    svg.Line(x_.r0, y_(1), x_.r1, y_(1), "class=\"ref\"");
    for (size_t g = 0; g < groups_.size(); ++g) DrawGroup(svg, g);
    return svg.Finish();
  }

 private:
  static constexpr double kBar = 44, kLeft = 74, kRight = 20, kTop = 48, kPlotH = 230;

  void LayOut() {
    double key_w = 0;
    for (const auto& g : groups_) {
      for (const auto& l : KeyLines(*g.pairing)) key_w = std::max(key_w, TextWidth(l, 11.5));
    }
    group_w_ = std::max({series_.size() * kBar + 30, 130.0, key_w + 16});
    double legend_w = kLeft;
    for (const auto& s : series_) legend_w += 34 + TextWidth(s.label, 12);
    width_ = std::max({kLeft + groups_.size() * group_w_ + kRight, 520.0, legend_w + kRight});
    size_t lines = 1;
    for (const auto& g : groups_) lines = std::max(lines, KeyLines(*g.pairing).size());
    height_ = kTop + kPlotH + 24 + 14 * lines;
    double hi = 1.1, lo = 0;
    for (const auto& row : bars_) {
      for (const Bar& b : row) {
        for (double v : {b.slowdown, b.ci_high}) {
          if (std::isfinite(v)) hi = std::max(hi, v);
        }
      }
    }
    NiceDomain(&lo, &hi, 5);
    x_ = Scale{0, 1, kLeft, width_ - kRight};
    y_ = Scale{lo, hi, kTop + kPlotH, kTop};
  }

  // One swatch per series, left to right, each entry as wide as its text.
  void DrawLegend(Svg& svg) const {
    double lx = kLeft;
    for (size_t i = 0; i < series_.size(); ++i) {
      svg.Rect(lx, 12, 12, 12, "fill=\"" + Colour(series_, i) + "\"");
      svg.Text(lx + 17, 22, series_[i].label, "class=\"legend\"");
      lx += 34 + TextWidth(series_[i].label, 12);
    }
  }

  void DrawGroup(Svg& svg, size_t g) const {
    const PairingSummary& p = *groups_[g].pairing;
    const double gx = kLeft + g * group_w_ + (group_w_ - series_.size() * kBar) / 2;
    for (size_t i = 0; i < series_.size(); ++i) DrawBar(svg, p, bars_[g][i], i, gx + i * kBar);
    const auto lines = KeyLines(p);
    for (size_t l = 0; l < lines.size(); ++l) {
      svg.Text(kLeft + g * group_w_ + group_w_ / 2, y_.r0 + 18 + 14 * l, lines[l],
               "class=\"group-label\" text-anchor=\"middle\"");
    }
  }

  void DrawBar(Svg& svg, const PairingSummary& p, const Bar& b, size_t i, double bx) const {
    const Series& s = series_[i];
    svg.Open("g", "class=\"bar\" data-pairing=\"" + Escape(p.pairing) + "\" data-phase=\"" +
                      Escape(Joined(s.keys)) + "\"");
    std::string title = p.pairing + "\n" + s.label + ": " + Slowdown(b.slowdown);
    if (std::isfinite(b.ci_low)) title += " " + CiLabel(b.ci_low, b.ci_high);
    title += "\nmedian " + Duration(b.median_s) + " vs baseline " + Duration(b.base_s) +
             " (n=" + std::to_string(b.n) + " vs " + std::to_string(b.n_base) + ")";
    if (s.keys.size() > 1 || s.label == kOtherLabel) title += "\nphases: " + Joined(s.keys);
    svg.Title(title);
    const double cx = bx + kBar / 2;
    if (!std::isfinite(b.slowdown)) {
      svg.Text(cx, y_.r0 - 5, kMissing, "class=\"bar-label\" text-anchor=\"middle\"");
      svg.Close("g");
      return;
    }
    const double top = y_(std::min(b.slowdown, y_.d1));
    svg.Rect(bx + 4, top, kBar - 8, y_.r0 - top, "fill=\"" + Colour(series_, i) + "\"");
    double label_y = top;
    if (std::isfinite(b.ci_low) && std::isfinite(b.ci_high)) {
      const std::string w = "stroke=\"#222\" stroke-width=\"1.2\"";
      svg.Line(cx, y_(b.ci_low), cx, y_(b.ci_high), w);
      svg.Line(cx - 5, y_(b.ci_low), cx + 5, y_(b.ci_low), w);
      svg.Line(cx - 5, y_(b.ci_high), cx + 5, y_(b.ci_high), w);
      label_y = std::min(label_y, y_(b.ci_high));
    }
    svg.Text(cx, label_y - 5, Slowdown(b.slowdown), "class=\"bar-label\" text-anchor=\"middle\"");
    svg.Close("g");
  }

  const std::vector<Group> groups_;
  const std::vector<Series> series_;
  const std::vector<std::vector<Bar>> bars_;  // [group][series]
  double group_w_ = 130, width_ = 520, height_ = 300;
  Scale x_, y_;
};

std::string PhaseCsv(const std::vector<Group>& groups, const std::vector<Series>& series,
                     const std::vector<std::vector<Bar>>& bars) {
  std::string csv =
      "pairing,phase,phases,median_s,baseline_median_s,slowdown,ci_low,ci_high,n,n_baseline\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < series.size(); ++i) {
      const Bar& b = bars[g][i];
      csv += CsvField(CsvText(groups[g].pairing->pairing)) + "," +
             CsvField(CsvText(series[i].label)) + "," + CsvField(CsvText(Joined(series[i].keys))) +
             "," + CsvNumber(b.median_s) + "," + CsvNumber(b.base_s) + "," + CsvNumber(b.slowdown) +
             "," + CsvNumber(b.ci_low) + "," + CsvNumber(b.ci_high) + "," + std::to_string(b.n) +
             "," + std::to_string(b.n_base) + "\n";
    }
  }
  return csv;
}

}  // namespace

Figure PhaseFigure(const ExperimentResults& results, const std::vector<TrialRecord>& trials) {
  Figure f;
  f.name = "phases";
  std::vector<Group> groups;  // the baseline first, as SortedPairings puts it
  for (const PairingSummary* p : experiment::SortedPairings(results)) {
    Group g{p, {}};
    for (const auto& t : trials) {
      if (t.pairing == p->pairing && t.state == TrialState::kDone && !t.phase_medians.empty()) {
        g.trials.push_back(&t);
      }
    }
    if (!g.trials.empty() || p->baseline) groups.push_back(std::move(g));
  }
  if (groups.empty() || !groups.front().pairing->baseline) return f;  // no baseline, no ratio
  const Group base = groups.front();
  groups.erase(groups.begin());
  if (groups.empty()) return f;
  std::vector<Group> all = groups;
  all.push_back(base);
  const std::vector<Series> series = MakeSeries(all);

  std::vector<std::vector<Bar>> bars;
  for (const auto& g : groups) {
    bars.emplace_back();
    for (const auto& s : series) bars.back().push_back(MakeBar(g, base, s, results));
  }
  f.csv = PhaseCsv(groups, series, bars);
  f.svg = PhaseChart(groups, series, bars).Draw();
  return f;
}

}  // namespace codl::report
