// The SVG helpers: escaping, number formatting without NaN, nice ticks, colour scales.
#include "lib/report/svg.h"

#include <gtest/gtest.h>

#include <cmath>

namespace codl::report {
namespace {

TEST(SvgTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(Escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(Escape("plain"), "plain");
}

// Regression (security issue, item 3): an experiment named with an OSC title, a clear-screen
// and CR/LF put those bytes raw into the saved report's <title> and <h1>.
TEST(SvgTest, ControlBytesAreWrittenVisibly) {
  EXPECT_EQ(Escape("evil\x1b]0;t\x07\x1b[2J\r\nFAKE\x7f"),
            "evil\\x1B]0;t\\x07\\x1B[2J\\x0D\nFAKE\\x7F");
  EXPECT_EQ(Escape("a\tb\nc"), "a\tb\nc");  // kept: the YAML and logs are shown as written
  EXPECT_EQ(Escape("bad \xff byte"), "bad \xEF\xBF\xBD byte");  // U+FFFD
}

TEST(SvgTest, NumbersNeverPrintNaN) {
  EXPECT_EQ(Num(12.0), "12");
  EXPECT_EQ(Num(12.25), "12.2");  // %.1f, round-half-even on the binary value
  EXPECT_EQ(Num(-0.01), "0");
  EXPECT_EQ(Num(std::nan("")), "0");
  EXPECT_EQ(Num(INFINITY), "0");
  EXPECT_EQ(Slowdown(1.4249), "1.42\u00d7");
  EXPECT_EQ(Slowdown(std::nan("")), "\u2013");
  EXPECT_EQ(CiLabel(1.3, 1.55), "[1.30, 1.55]");
  EXPECT_EQ(CiLabel(std::nan(""), 1), "");
  EXPECT_EQ(PValue(0.0079), "0.0079");
  EXPECT_EQ(PValue(0.0001), "<0.001");
  EXPECT_EQ(PValue(std::nan("")), "\u2013");
  EXPECT_EQ(Percent(0.5), "50%");
  EXPECT_EQ(Duration(std::nan("")), "\u2013");
  EXPECT_EQ(RateLabel(2.0 * 1024 * 1024 * 1024, "bytes/s"), "2.00 GiB/s");
  EXPECT_EQ(PhaseLabel("read_s"), "read");
}

TEST(SvgTest, NiceTicksAndDomains) {
  const std::vector<double> fifths = NiceTicks(0, 1, 5);
  ASSERT_EQ(fifths.size(), 6u);
  for (size_t i = 0; i < fifths.size(); ++i) EXPECT_NEAR(fifths[i], 0.2 * i, 1e-12);
  const auto ticks = NiceTicks(1, 2.4, 4);
  ASSERT_FALSE(ticks.empty());
  EXPECT_DOUBLE_EQ(ticks.front(), 1.0);
  EXPECT_LE(ticks.back(), 2.4);
  double lo = 0.93, hi = 2.47;
  NiceDomain(&lo, &hi, 5);
  EXPECT_DOUBLE_EQ(lo, 0.5);
  EXPECT_DOUBLE_EQ(hi, 2.5);
  lo = hi = 3;  // one point: padded, not a zero-width scale
  NiceDomain(&lo, &hi);
  EXPECT_LT(lo, 3);
  EXPECT_GT(hi, 3);
  lo = std::nan(""), hi = 1;
  NiceDomain(&lo, &hi);
  EXPECT_TRUE(std::isfinite(lo));
  EXPECT_TRUE(std::isfinite(hi));
}

TEST(SvgTest, ScaleMapsDomainOntoRange) {
  const Scale s{0, 10, 100, 0};
  EXPECT_DOUBLE_EQ(s(0), 100);
  EXPECT_DOUBLE_EQ(s(5), 50);
  EXPECT_DOUBLE_EQ((Scale{2, 2, 0, 10})(2), 5);  // degenerate domain: the middle
}

TEST(SvgTest, SlowdownColourScale) {
  EXPECT_EQ(SlowdownColour(1.0, 2.0), "#fff7ec");  // neutral
  EXPECT_EQ(SlowdownColour(2.0, 2.0), "#7f0000");  // the max
  EXPECT_EQ(SlowdownColour(5.0, 2.0), "#7f0000");  // clamped
  EXPECT_EQ(SlowdownColour(0.5, 2.0), "#c6dbef");  // a clear speedup
  EXPECT_EQ(SlowdownColour(std::nan(""), 2.0), "#e3e3e3");
  EXPECT_TRUE(DarkTextOn(1.0, 2.0));
  EXPECT_FALSE(DarkTextOn(2.0, 2.0));
  EXPECT_NE(SeriesColour(0), SeriesColour(1));
}

}  // namespace
}  // namespace codl::report
