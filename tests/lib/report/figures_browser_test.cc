// Every figure `codlctl report --figures` exports, loaded on its own in headless Chromium: a
// script measures the bounding box of each <text> as laid out with real fonts and fails on two
// that intersect or one that leaves the SVG. The fixtures at the end show that it can fail.
// Skipped when Chromium is not installed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/report/figures.h"
#include "tests/lib/report/chromium.h"
#include "tests/lib/report/synthetic.h"

namespace codl::report {
namespace {

namespace fs = std::filesystem;

// Runs in the SVG document once it is parsed (the script is its last element). Boxes are in
// screen pixels after transforms, so rotated axis titles count as laid out; 0.5 px of slack
// absorbs anti-aliasing. Results go into attributes that --dump-dom prints.
constexpr const char* kTextCheck = R"js(<script><![CDATA[
(function () {
  var root = document.documentElement, box = root.getBoundingClientRect(), slack = 0.5;
  var texts = Array.prototype.filter.call(document.querySelectorAll('text'), function (t) {
    return t.textContent.trim().length > 0;
  });
  var rects = texts.map(function (t) { return t.getBoundingClientRect(); });
  var problems = [];
  function name(i) { return '"' + texts[i].textContent.trim() + '"'; }
  for (var i = 0; i < rects.length; i++) {
    var a = rects[i];
    if (a.left < box.left - slack || a.top < box.top - slack || a.right > box.right + slack ||
        a.bottom > box.bottom + slack) {
      problems.push('outside: ' + name(i));
    }
    for (var j = i + 1; j < rects.length; j++) {
      var b = rects[j];
      var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > slack && h > slack) problems.push('overlap: ' + name(i) + ' / ' + name(j));
    }
  }
  root.setAttribute('data-texts', String(texts.length));
  root.setAttribute('data-problems', problems.length ? problems.join(' | ') : 'none');
})();
]]></script>
)js";

struct TextCheck {
  int texts = -1;
  std::string problems;  // "none" when clean
};

std::string Attribute(const std::string& dom, const std::string& name) {
  const std::string key = name + "=\"";
  const size_t at = dom.find(key);
  if (at == std::string::npos) return "";
  const size_t end = dom.find('"', at + key.size());
  return dom.substr(at + key.size(), end - at - key.size());
}

class FiguresBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = testing::FindChromium();
    if (chromium_.empty()) GTEST_SKIP() << "chromium not installed";
    std::string tmpl = ::testing::TempDir() + "codl_figures_browser_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Loads a copy of `svg` with the check appended.
  TextCheck Check(const fs::path& svg) {
    std::string text = testing::ReadWholeFile(svg);
    const size_t end = text.rfind("</svg>");
    EXPECT_NE(end, std::string::npos) << svg;
    if (end == std::string::npos) return {};
    text.insert(end, kTextCheck);
    const fs::path page = dir_ / ("checked-" + svg.filename().string());
    std::ofstream(page, std::ios::binary) << text;
    const auto run = testing::RunChromium(chromium_, "--dump-dom", page, dir_, svg.stem().string());
    EXPECT_EQ(run.rc, 0) << run.err;
    TextCheck c;
    const std::string texts = Attribute(run.out, "data-texts");
    c.texts = texts.empty() ? -1 : std::stoi(texts);
    c.problems = Attribute(run.out, "data-problems");
    return c;
  }

  // Exports the figures of `s` as `codlctl report --figures` does, and checks every SVG.
  void ExpectCleanFigures(const testing::Synthetic& s, size_t want_figures) {
    const auto results = experiment::Summarize(s.experiment, s.trials);
    const fs::path out = dir_ / "figures";
    auto written = WriteFigures(out.string(), RenderFigures(results, s.trials));
    ASSERT_TRUE(written.ok()) << written.error();
    size_t svgs = 0;
    for (const auto& path : *written) {
      if (fs::path(path).extension() != ".svg") continue;
      ++svgs;
      const TextCheck c = Check(path);
      EXPECT_GT(c.texts, 3) << path;
      EXPECT_EQ(c.problems, "none") << path;
    }
    EXPECT_EQ(svgs, want_figures);
  }

  std::string chromium_;
  fs::path dir_;
};

TEST_F(FiguresBrowserTest, NoTextOverlapsOrLeavesAnyExportedFigure) {
  testing::SyntheticOptions o;
  o.jitter = 0.04;
  o.excluded = true;
  o.combined = true;
  o.pipeline = true;
  ExpectCleanFigures(testing::MakeSynthetic(o), 5);
}

// Long names, absolute rates and a slow phase: labels that grow.
TEST_F(FiguresBrowserTest, LongNamesAndRatesStayClear) {
  testing::SyntheticOptions o;
  o.jitter = 0.04;
  o.combined = true;
  testing::Synthetic s = testing::MakeSynthetic(o);
  for (auto& t : s.trials) {
    for (auto& a : t.antagonists) {
      if (a.name == "storage") a.name = "nvme-random-read-antagonist";
    }
    std::string& k = t.pairing;
    if (size_t at = k.find("storage@0.5"); at != std::string::npos) {
      k.replace(at, 11, "nvme-random-read-antagonist@512MiB/s");
    }
    if (size_t at = k.find("storage@1"); at != std::string::npos) {
      k.replace(at, 9, "nvme-random-read-antagonist@2GiB/s");
    }
  }
  ExpectCleanFigures(s, 5);
}

// Figures exported from a real run: CODL_FIGURES_DIR=DIR (what `codlctl report --figures DIR`
// wrote) checks every SVG in it the same way. Skipped when unset.
TEST_F(FiguresBrowserTest, FiguresInCodlFiguresDir) {
  const char* dir = std::getenv("CODL_FIGURES_DIR");
  if (!dir || !*dir) GTEST_SKIP() << "CODL_FIGURES_DIR not set";
  size_t svgs = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".svg") continue;
    ++svgs;
    const TextCheck c = Check(entry.path());
    EXPECT_GT(c.texts, 3) << entry.path();
    EXPECT_EQ(c.problems, "none") << entry.path();
  }
  EXPECT_GT(svgs, 0u) << dir;
}

// The check itself: text drawn on other text, and text past the edge, are caught.
TEST_F(FiguresBrowserTest, DetectsOverlappingAndEscapingText) {
  const fs::path svg = dir_ / "bad.svg";
  std::ofstream(svg) << "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                        "width=\"300\" height=\"120\" viewBox=\"0 0 300 120\">\n"
                        "<text x=\"20\" y=\"30\" font-size=\"14\">step time (ms)</text>\n"
                        "<text x=\"40\" y=\"34\" font-size=\"14\">125 ms</text>\n"
                        "<text x=\"260\" y=\"90\" font-size=\"14\">far too long a label</text>\n"
                        "<text x=\"20\" y=\"90\" font-size=\"14\">alone</text>\n</svg>\n";
  const TextCheck c = Check(svg);
  EXPECT_EQ(c.texts, 4);
  EXPECT_NE(c.problems.find("overlap: &quot;step time (ms)&quot; / &quot;125 ms&quot;"),
            std::string::npos)
      << c.problems;
  EXPECT_NE(c.problems.find("outside: &quot;far too long a label&quot;"), std::string::npos)
      << c.problems;
  EXPECT_EQ(c.problems.find("alone"), std::string::npos) << c.problems;
}

}  // namespace
}  // namespace codl::report
