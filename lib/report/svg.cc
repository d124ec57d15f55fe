// SVG helpers: see svg.h.
#include "lib/report/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "lib/analysis/phase_order.h"
#include "lib/common/units.h"
#include "lib/common/utf8.h"

namespace codl::report {

std::string Escape(std::string_view raw) {
  const std::string text = ValidUtf8(raw);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7F) {
      // As on the terminal (TerminalSafe): a saved report opened with `cat` or `less` must not
      // drive that terminal either, and a browser would show nothing for these bytes.
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

std::string Fixed(double v, int decimals) {
  if (!std::isfinite(v)) return kMissing;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Slowdown(double v) { return std::isfinite(v) ? Fixed(v, 2) + "\u00d7" : kMissing; }

std::string CiLabel(double low, double high) {
  if (!std::isfinite(low) || !std::isfinite(high)) return "";
  return "[" + Fixed(low, 2) + ", " + Fixed(high, 2) + "]";
}

std::string PValue(double p) {
  if (!std::isfinite(p)) return kMissing;
  if (p < 0.001) return "<0.001";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

std::string Percent(double fraction, int decimals) {
  if (!std::isfinite(fraction)) return kMissing;
  return Fixed(fraction * 100, decimals) + "%";
}

std::string Duration(double seconds) {
  return std::isfinite(seconds) ? FormatDuration(seconds) : kMissing;
}

std::string RateLabel(double value, std::string_view unit) {
  if (!std::isfinite(value)) return kMissing;
  return FormatRate(value, unit.empty() ? "bytes/s" : unit);
}

std::string Tick(double v) {
  if (!std::isfinite(v)) return kMissing;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

DisplayUnit RateDisplayUnit(double max, std::string_view unit) {
  const bool bytes = unit.empty() || unit == "bytes/s";
  static const char* const kBinary[] = {"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"};
  static const char* const kDecimal[] = {"", "k", "M", "G", "T"};
  const double base = bytes ? 1024 : 1000;
  DisplayUnit d;
  int i = 0;
  for (double a = std::isfinite(max) ? std::fabs(max) : 0; i < 4 && a >= base; ++i) {
    a /= base;
    d.divisor *= base;
  }
  d.label = bytes ? kBinary[i] : std::string(kDecimal[i]) + std::string(unit);
  return d;
}

std::string PhaseLabel(const std::string& phase) { return experiment::PhaseLabel(phase); }

double TextWidth(std::string_view text, double font_px) {
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xc0) != 0x80;  // UTF-8 code points
  return 0.62 * font_px * static_cast<double>(chars);
}

const char* const kChartStyle = R"css(
svg { display: block; font-size: 12px; font-family: sans-serif; }
svg text { font-family: sans-serif; }
.axis text { fill: #555; font-size: 11px; }
.axis .axis-title, .axis-title { fill: #444; font-size: 12px; }
.grid { stroke: #eee; }
.tick, .domain { stroke: #999; }
.ref { stroke: #888; stroke-dasharray: 4 4; }
.chart-title { font-weight: 600; font-size: 13px; }
.chart-sub { fill: #555; font-size: 11px; }
.legend { font-size: 12px; }
.row-label { font-size: 13px; font-weight: 600; }
.col-label { font-size: 13px; }
.slot { fill: none; stroke: #ddd; stroke-dasharray: 3 3; }
.cell rect { stroke: #fff; }
.cell:hover rect { stroke: #222; stroke-width: 2; }
.cell-value { font-size: 18px; font-weight: 700; font-variant-numeric: tabular-nums; }
.cell-ci { font-size: 11.5px; font-variant-numeric: tabular-nums; }
.cell-np { font-size: 10.5px; opacity: .8; }
.cell-warn { font-size: 13px; }
[data-significant="false"] .cell-value { font-weight: 400; }
.bar-label { font-size: 10.5px; fill: #333; }
.group-label { font-size: 11.5px; fill: #333; }
.steps { fill: none; stroke: #333; stroke-width: 1.2; }
.step { fill: #333; }
.warmup { fill: #fff; stroke: #999; stroke-width: 1.2; }
.point:hover circle, .step-point:hover circle { stroke: #222; stroke-width: 2; }
)css";

std::string StandaloneSvg(const std::string& inline_svg) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  const size_t open_end = inline_svg.find('>');
  if (inline_svg.rfind("<svg", 0) != 0 || open_end == std::string::npos) return inline_svg;
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\"" + inline_svg.substr(4, open_end - 4 + 1);
  // A white ground: a transparent figure turns unreadable on a dark slide or viewer.
  out += "\n<style>" + std::string(kChartStyle) + "</style>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  return out + inline_svg.substr(open_end + 2);
}

double Scale::operator()(double v) const {
  if (d1 == d0) return (r0 + r1) / 2;
  return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
}

namespace {

double NiceStep(double span, int target) {
  const double raw = span / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

void Pad(double* lo, double* hi) {
  if (!std::isfinite(*lo) || !std::isfinite(*hi)) {
    *lo = 0;
    *hi = 1;
  }
  if (*hi < *lo) std::swap(*lo, *hi);
  if (*hi - *lo < 1e-12) {
    const double pad = std::max(std::fabs(*lo) * 0.1, 0.5);
    *lo -= pad;
    *hi += pad;
  }
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  Pad(&lo, &hi);
  const double step = NiceStep(hi - lo, target);
  // Multiples of the step, not a running sum, so rounding errors do not accumulate.
  const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last && ticks.size() < 50; ++k)
    ticks.push_back(k == 0 ? 0.0 : k * step);
  return ticks;
}

void NiceDomain(double* lo, double* hi, int target) {
  Pad(lo, hi);
  const double step = NiceStep(*hi - *lo, target);
  *lo = std::floor(*lo / step + 1e-9) * step;
  *hi = std::ceil(*hi / step - 1e-9) * step;
}

Svg::Svg(double width, double height, std::string_view css_class, std::string_view label) {
  // No xmlns: inline SVG in HTML5 needs none, and the page holds no URLs at all.
  out_ = "<svg class=\"" + Escape(css_class) + "\" width=\"" + Num(width) + "\" height=\"" +
         Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) +
         "\" role=\"img\" aria-label=\"" + Escape(label) + "\">\n";
}

Svg& Svg::Rect(double x, double y, double w, double h, std::string_view attrs) {
  out_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(0.0, w)) +
          "\" height=\"" + Num(std::max(0.0, h)) + "\" " + std::string(attrs) + "/>\n";
  return *this;
}

Svg& Svg::Line(double x1, double y1, double x2, double y2, std::string_view attrs) {
  out_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
          Num(y2) + "\" " + std::string(attrs) + "/>\n";
  return *this;
}

Svg& Svg::Circle(double cx, double cy, double r, std::string_view attrs) {
  out_ += "<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"" + Num(r) + "\" " +
          std::string(attrs) + "/>\n";
  return *this;
}

Svg& Svg::Polyline(const std::vector<std::pair<double, double>>& points, std::string_view attrs) {
  out_ += "<polyline points=\"";
  for (size_t i = 0; i < points.size(); ++i) {
    out_ += (i ? " " : "") + Num(points[i].first) + "," + Num(points[i].second);
  }
  out_ += "\" fill=\"none\" " + std::string(attrs) + "/>\n";
  return *this;
}

Svg& Svg::Text(double x, double y, std::string_view text, std::string_view attrs) {
  out_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" " + std::string(attrs) + ">" +
          Escape(text) + "</text>\n";
  return *this;
}

Svg& Svg::Open(std::string_view tag, std::string_view attrs) {
  out_ += "<" + std::string(tag) + (attrs.empty() ? "" : " ") + std::string(attrs) + ">";
  return *this;
}

Svg& Svg::Close(std::string_view tag) {
  out_ += "</" + std::string(tag) + ">\n";
  return *this;
}

Svg& Svg::Title(std::string_view text) {
  out_ += "<title>" + Escape(text) + "</title>";
  return *this;
}

Svg& Svg::Raw(std::string_view markup) {
  out_ += markup;
  return *this;
}

std::string Svg::Finish() { return out_ + "</svg>\n"; }

void BottomAxis(Svg& svg, const Scale& x, const Scale& y, const std::vector<double>& ticks,
                const TickFormat& label, std::string_view title) {
  svg.Open("g", "class=\"axis\"");
  for (double t : ticks) {
    const double px = x(t);
    svg.Line(px, y.r1, px, y.r0, "class=\"grid\"");
    svg.Line(px, y.r0, px, y.r0 + 5, "class=\"tick\"");
    svg.Text(px, y.r0 + 18, label(t), "text-anchor=\"middle\"");
  }
  svg.Line(x.r0, y.r0, x.r1, y.r0, "class=\"domain\"");
  svg.Text((x.r0 + x.r1) / 2, y.r0 + 38, title, "class=\"axis-title\" text-anchor=\"middle\"");
  svg.Close("g");
}

void LeftAxis(Svg& svg, const Scale& x, const Scale& y, const std::vector<double>& ticks,
              const TickFormat& label, std::string_view title) {
  svg.Open("g", "class=\"axis\"");
  for (double t : ticks) {
    const double py = y(t);
    svg.Line(x.r0, py, x.r1, py, "class=\"grid\"");
    svg.Line(x.r0 - 5, py, x.r0, py, "class=\"tick\"");
    svg.Text(x.r0 - 8, py + 4, label(t), "text-anchor=\"end\"");
  }
  svg.Line(x.r0, y.r0, x.r0, y.r1, "class=\"domain\"");
  // Clear of the widest tick label (11 px), so the title never runs into one.
  double widest = 0;
  for (double t : ticks) widest = std::max(widest, TextWidth(label(t), 11));
  const double cx = x.r0 - 8 - widest - 12, cy = (y.r0 + y.r1) / 2;
  svg.Text(cx, cy, title,
           "class=\"axis-title\" text-anchor=\"middle\" transform=\"rotate(-90 " + Num(cx) + " " +
               Num(cy) + ")\"");
  svg.Close("g");
}

void RightAxis(Svg& svg, const Scale& x, const Scale& y, const std::vector<double>& ticks,
               const TickFormat& label, std::string_view title, std::string_view colour) {
  const std::string fill = "fill=\"" + Escape(colour) + "\"";
  svg.Open("g", "class=\"axis\"");
  for (double t : ticks) {
    const double py = y(t);
    svg.Line(x.r1, py, x.r1 + 5, py, "class=\"tick\"");
    svg.Text(x.r1 + 8, py + 4, label(t), fill);
  }
  svg.Line(x.r1, y.r0, x.r1, y.r1, "class=\"domain\"");
  const double cx = x.r1 + 74, cy = (y.r0 + y.r1) / 2;
  svg.Text(cx, cy, title,
           "class=\"axis-title\" text-anchor=\"middle\" " + fill + " transform=\"rotate(90 " +
               Num(cx) + " " + Num(cy) + ")\"");
  svg.Close("g");
}

namespace {

struct Rgb {
  double r, g, b;
};

Rgb Hex(unsigned v) { return {double(v >> 16 & 0xff), double(v >> 8 & 0xff), double(v & 0xff)}; }

Rgb Mix(Rgb a, Rgb b, double t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

// ColorBrewer OrRd (sequential), light to dark.
constexpr std::array<unsigned, 9> kOrRd = {0xfff7ec, 0xfee8c8, 0xfdd49e, 0xfdbb84, 0xfc8d59,
                                           0xef6548, 0xd7301f, 0xb30000, 0x7f0000};
constexpr unsigned kSpeedup = 0xc6dbef;  // light blue
constexpr unsigned kUnknown = 0xe3e3e3;

Rgb SlowdownRgb(double s, double max) {
  if (!std::isfinite(s)) return Hex(kUnknown);
  if (s < 1) return Mix(Hex(kOrRd[0]), Hex(kSpeedup), std::clamp((1 - s) / 0.25, 0.0, 1.0));
  const double top = std::isfinite(max) && max > 1 ? max : 2;
  const double t = std::clamp((s - 1) / (top - 1), 0.0, 1.0) * (kOrRd.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), kOrRd.size() - 2);
  return Mix(Hex(kOrRd[i]), Hex(kOrRd[i + 1]), t - i);
}

}  // namespace

std::string SlowdownColour(double slowdown, double max) {
  const Rgb c = SlowdownRgb(slowdown, max);
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(std::lround(c.r)), int(std::lround(c.g)),
                int(std::lround(c.b)));
  return buf;
}

bool DarkTextOn(double slowdown, double max) {
  const Rgb c = SlowdownRgb(slowdown, max);
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b > 140;
}

std::string SeriesColour(size_t i) {
  // Tableau 10, minus its grey: distinguishable, and readable on white.
  static const char* const kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                         "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};
  return kColours[i % std::size(kColours)];
}

}  // namespace codl::report
