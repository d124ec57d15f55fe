#include "lib/report/figures.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "lib/report/charts.h"
#include "lib/report/svg.h"

namespace codl::report {

namespace fs = std::filesystem;

std::vector<Figure> AllFigures(const experiment::ExperimentResults& results,
                               const std::vector<TrialRecord>& trials) {
  std::vector<Figure> all{HeatmapFigure(results)};
  for (auto& f : SensitivityFigures(results, trials).charts) all.push_back(std::move(f));
  all.push_back(PhaseFigure(results, trials));
  all.push_back(StepSeriesFigure(results, trials));
  return all;
}

std::vector<FigureFile> RenderFigures(const experiment::ExperimentResults& results,
                                      const std::vector<TrialRecord>& trials) {
  std::vector<FigureFile> files;
  std::set<std::string> taken;
  for (const Figure& f : AllFigures(results, trials)) {
    if (f.svg.empty()) continue;
    std::string name = f.name;
    for (int k = 2; taken.count(name); ++k) name = f.name + "-" + std::to_string(k);
    taken.insert(name);
    files.push_back({name, StandaloneSvg(f.svg), f.csv});
  }
  return files;
}

namespace {

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !(out << text) || !(out.flush())) {
    return Err("cannot write '" + path.string() + "'");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> WriteFigures(const std::string& dir,
                                              const std::vector<FigureFile>& figures) {
  std::error_code ec;
  const fs::path root(dir);
  if (fs::exists(root, ec) && !fs::is_directory(root, ec)) {
    return InvalidArgument("--figures: '" + dir + "' exists and is not a directory");
  }
  fs::create_directories(root, ec);
  if (ec) return Err("--figures: cannot create '" + dir + "': " + ec.message());
  std::vector<std::string> written;
  for (const auto& f : figures) {
    for (const auto& [ext, text] : {std::pair{".svg", &f.svg}, std::pair{".csv", &f.csv}}) {
      const fs::path path = root / (f.name + ext);
      if (Status s = WriteText(path, *text); !s.ok()) return s;
      written.push_back(path.string());
    }
  }
  return written;
}

}  // namespace codl::report
