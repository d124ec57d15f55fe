// The report in a real browser: headless Chromium loads the page from a file, takes a
// screenshot and dumps the DOM after its scripts ran. Skipped when Chromium is not installed.
// The screenshot of the realistic synthetic report is left at <build>/report_screenshot.png.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/report/report.h"
#include "tests/lib/report/chromium.h"
#include "tests/lib/report/synthetic.h"

namespace codl::report {
namespace {

namespace fs = std::filesystem;

using testing::FindChromium;
using testing::ReadWholeFile;

// Console messages the page caused. Chromium logs them as
//   [pid:tid:time:INFO:CONSOLE:3] "Uncaught ReferenceError: ...", source: file:///...html (3)
// Everything else on its stderr (dbus, GPU, sandbox warnings) is the browser's own noise.
std::vector<std::string> PageConsoleLines(const std::string& stderr_text) {
  std::vector<std::string> lines;
  std::istringstream in(stderr_text);
  for (std::string line; std::getline(in, line);) {
    const bool console =
        line.find("CONSOLE") != std::string::npos && line.find("file://") != std::string::npos;
    if (console || line.find("Uncaught") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

class ReportBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) GTEST_SKIP() << "chromium not installed";
    std::string tmpl = ::testing::TempDir() + "codl_report_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  using Run = testing::ChromiumRun;

  // One bounded Chromium run with a fresh profile; `mode` is --screenshot=... or --dump-dom.
  Run Chromium(const std::string& mode, const fs::path& page, const std::string& tag) {
    return testing::RunChromium(chromium_, mode, page, dir_, tag);
  }

  fs::path WritePage(const std::string& html, const std::string& name) {
    const fs::path page = dir_ / name;
    std::ofstream(page, std::ios::binary) << html;
    return page;
  }

  std::string chromium_;
  fs::path dir_;
};

std::string RealisticReport() {
  testing::SyntheticOptions o;
  o.jitter = 0.04;
  o.excluded = true;
  o.combined = true;
  const testing::Synthetic s = testing::MakeSynthetic(o);
  return RenderHtmlReport(s.experiment, s.trials, experiment::Summarize(s.experiment, s.trials));
}

TEST_F(ReportBrowserTest, ScreenshotIsANonTrivialPng) {
  const fs::path page = WritePage(RealisticReport(), "report.html");
  const fs::path shot = dir_ / "shot.png";
  const Run r = Chromium("--screenshot=" + testing::ShellQuote(shot.string()), page, "shot");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(fs::exists(shot)) << r.err;
  EXPECT_GT(fs::file_size(shot), 10u * 1024);
  EXPECT_EQ(ReadWholeFile(shot).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_TRUE(PageConsoleLines(r.err).empty()) << PageConsoleLines(r.err).front();

  // Leave it where people (and the reviewers) look for it.
  if (const char* bin = std::getenv("CODL_BIN_DIR")) {
    std::error_code ec;
    fs::copy_file(shot, fs::path(bin).parent_path() / "report_screenshot.png",
                  fs::copy_options::overwrite_existing, ec);
  }
}

TEST_F(ReportBrowserTest, PageRendersWithoutScriptErrors) {
  const fs::path page = WritePage(RealisticReport(), "report.html");
  const Run r = Chromium("--dump-dom", page, "dom");
  ASSERT_EQ(r.rc, 0) << r.err;
  // The DOM after the page's scripts ran: the error hook never fired, the last script counted
  // the heatmap cells (5: four single pairings and the combined one).
  EXPECT_EQ(r.out.find("data-js-error"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("data-rendered=\"5\""), std::string::npos) << r.out.substr(0, 2000);
  size_t cells = 0;
  for (size_t at = r.out.find("class=\"cell\""); at != std::string::npos;
       at = r.out.find("class=\"cell\"", at + 1)) {
    ++cells;
  }
  EXPECT_EQ(cells, 5u);
  EXPECT_NE(r.out.find("</svg>"), std::string::npos);
  const auto console = PageConsoleLines(r.err);
  EXPECT_TRUE(console.empty()) << console.front();
}

// Every table of a realistic report fits a 1300 px window: the page does not scroll sideways
// and no table's right edge passes the window's (measured in Chromium after layout).
TEST_F(ReportBrowserTest, TablesFitA1300PixelWindow) {
  std::string html = RealisticReport();
  html.insert(html.rfind("</body>"),
              "<script>var right = 0; document.querySelectorAll('table').forEach(function (t) {"
              " right = Math.max(right, t.getBoundingClientRect().right); });"
              " document.body.dataset.tableRight = String(Math.ceil(right));"
              " document.body.dataset.pageWidth = String(document.documentElement.scrollWidth);"
              " document.body.dataset.tables = String(document.querySelectorAll('table').length);"
              "</script>\n");
  const fs::path page = WritePage(html, "fit.html");
  // A later --window-size overrides RunChromium's default.
  const Run r = Chromium("--window-size=1300,2400 --dump-dom", page, "fit");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto attribute = [&](const std::string& name) {
    const size_t at = r.out.find(name + "=\"");
    if (at == std::string::npos) return -1;
    return std::atoi(r.out.c_str() + at + name.size() + 2);
  };
  EXPECT_GE(attribute("data-tables"), 2) << "the pairings and the excluded trials at least";
  const int right = attribute("data-table-right");
  const int width = attribute("data-page-width");
  ASSERT_GT(right, 0) << r.out.substr(0, 2000);
  EXPECT_LE(right, 1300) << "a table runs past a 1300 px window";
  EXPECT_LE(width, 1300) << "the page scrolls sideways at 1300 px";
}

// The checks above can fail: a page with a script error is caught both ways.
TEST_F(ReportBrowserTest, DetectsAScriptError) {
  std::string html = RealisticReport();
  html.insert(html.rfind("</body>"), "<script>definitelyNotDefined();</script>\n");
  const fs::path page = WritePage(html, "broken.html");
  const Run r = Chromium("--dump-dom", page, "broken");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("data-js-error=\"Uncaught ReferenceError"), std::string::npos);
  EXPECT_FALSE(PageConsoleLines(r.err).empty()) << r.err;
}

}  // namespace
}  // namespace codl::report
