// Small helpers for writing inline SVG by hand: escaping, number formatting that never prints
// "nan", linear scales with "nice" ticks, axes, and the report's colour scales. Internal to
// codl_report; the charts in charts*.cc are built from these.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace codl::report {

// Escapes & < > " ' for HTML/SVG text and attribute values alike; control bytes other than
// newline and tab become \xNN (as TerminalSafe writes them) and invalid UTF-8 U+FFFD.
std::string Escape(std::string_view text);

// A coordinate or length: "%.1f" with trailing ".0" dropped. Non-finite -> "0", so a stray NaN
// never reaches the page (callers skip non-finite points; this is the last guard).
std::string Num(double v);

// Human figures: "–" (en dash) for non-finite values.
inline constexpr const char* kMissing = "\u2013";
std::string Fixed(double v, int decimals);                   // "1.42"
std::string Slowdown(double v);                              // "1.42×"
std::string CiLabel(double low, double high);                // "[1.30, 1.55]"; "" when unknown
std::string PValue(double p);                                // "0.008", "<0.001"
std::string Percent(double fraction, int decimals = 0);      // 0.5 -> "50%"
std::string Duration(double seconds);                        // FormatDuration or "–"
std::string RateLabel(double value, std::string_view unit);  // FormatRate or "–"

// A plain tick label: "%g", so 0.5 -> "0.5", 20 -> "20".
std::string Tick(double v);

// How a rate axis reads: values divided by `divisor` are in `label`, e.g. {2^30, "GiB/s"} for
// bytes/s up to a few GiB/s, {1000, "kIOPS"}; so ticks land on round numbers of that unit.
struct DisplayUnit {
  double divisor = 1;
  std::string label;
};
DisplayUnit RateDisplayUnit(double max, std::string_view unit);

// "read_s" -> "read": the report speaks of phases, not of their JSON field names.
std::string PhaseLabel(const std::string& phase);

// About how wide `text` is in the report's sans-serif at `font_px` (0.62 em a character; an
// estimate that errs wide, for laying out labels before a browser measures them).
double TextWidth(std::string_view text, double font_px);

// The CSS of every chart (classes used by the SVG written here), shared by the HTML page and
// the standalone figures: generic font families only, no URLs.
extern const char* const kChartStyle;

// One chart's <svg> made a standalone file: the SVG namespace, an XML declaration and
// kChartStyle inside it, so it renders alike in a browser, an editor or a LaTeX pipeline.
std::string StandaloneSvg(const std::string& inline_svg);

// Linear map of the domain [d0, d1] onto the range [r0, r1].
struct Scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  double operator()(double v) const;
};

// Round-number ticks covering [lo, hi] (about `target` of them): 1, 2, 2.5 or 5 times a power
// of ten. NiceDomain widens [lo, hi] to the outer ticks; a zero-width range is padded first.
std::vector<double> NiceTicks(double lo, double hi, int target = 5);
void NiceDomain(double* lo, double* hi, int target = 5);

// Appends SVG elements to a string. Text and titles are escaped; `attrs` is raw markup that
// the caller builds (escape user text in it with Escape()).
class Svg {
 public:
  Svg(double width, double height, std::string_view css_class, std::string_view label);

  Svg& Rect(double x, double y, double w, double h, std::string_view attrs = "");
  Svg& Line(double x1, double y1, double x2, double y2, std::string_view attrs = "");
  Svg& Circle(double cx, double cy, double r, std::string_view attrs = "");
  Svg& Polyline(const std::vector<std::pair<double, double>>& points, std::string_view attrs);
  Svg& Text(double x, double y, std::string_view text, std::string_view attrs = "");
  Svg& Open(std::string_view tag, std::string_view attrs = "");  // <g ...>
  Svg& Close(std::string_view tag);
  Svg& Title(std::string_view text);  // hover text of the element just opened
  Svg& Raw(std::string_view markup);

  std::string Finish();

 private:
  std::string out_;
};

using TickFormat = std::function<std::string(double)>;

// Axes with tick marks, tick labels, light grid lines across the plot and a title.
// `x`/`y` give the plot area: x.r0..x.r1 by y.r1..y.r0 (SVG y grows downwards).
void BottomAxis(Svg& svg, const Scale& x, const Scale& y, const std::vector<double>& ticks,
                const TickFormat& label, std::string_view title);
void LeftAxis(Svg& svg, const Scale& x, const Scale& y, const std::vector<double>& ticks,
              const TickFormat& label, std::string_view title);
// Secondary axis on the right edge of the plot area (no grid lines).
void RightAxis(Svg& svg, const Scale& x, const Scale& y, const std::vector<double>& ticks,
               const TickFormat& label, std::string_view title, std::string_view colour);

// Slowdown colour: 1.0 (and below) near-white, rising through orange to dark red at `max`.
// Speedups (< 1) get a faint blue so they stand out from noise-free neutrals. NaN -> grey.
std::string SlowdownColour(double slowdown, double max);
// Whether dark text is readable on SlowdownColour(slowdown, max).
bool DarkTextOn(double slowdown, double max);
// Distinguishable colours for series (antagonists, phases), cycling after 8.
std::string SeriesColour(size_t i);

}  // namespace codl::report
