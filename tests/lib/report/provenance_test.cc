// The report's provenance section: present with the stored provenance, escaped, absent for
// experiments stored before provenance existed.
#include <gtest/gtest.h>

#include <string>

#include "lib/analysis/results.h"
#include "lib/report/report.h"

namespace codl::report {
namespace {

std::string Render(const ExperimentRecord& e) {
  return RenderHtmlReport(e, {}, experiment::Summarize(e, {}));
}

TEST(ReportProvenanceTest, ShowsVersionsSeedNodesCalibrationsWarmupsAndLoad) {
  ExperimentRecord e;
  e.id = "p1";
  e.name = "prov";
  e.state = ExperimentState::kDone;
  e.provenance_json = R"({"codl_version":"0.1.0+abc","seed":7,"seed_source":"drawn",
    "started_unix_ms":1,"finished_unix_ms":2,
    "nodes":{"gpu-1":{"kernel":"Linux <6.8>","cpu_model":"EPYC","cpu_count":64,
      "governor":"performance","cpu_min_khz":1500000,"cpu_max_khz":3500000,
      "memory_bytes":1073741824,"gpu":{"gpu_count":"8"},"codl_version":"0.1.0+abc"}},
    "calibrations":[{"antagonist":"membw","node":"gpu-1","peak_rate":1e10,"unit":"bytes/s",
      "measured_unix_ms":5,"source":"cached"}],
    "warmup":[{"run":1,"wall_s":3.6,"ok":true,"error":""}],
    "trials":[{"index":0,"load_avg_1m":0.5}]})";
  const std::string html = Render(e);
  EXPECT_NE(html.find("<section id=\"provenance\">"), std::string::npos);
  EXPECT_NE(html.find("0.1.0+abc"), std::string::npos);
  EXPECT_NE(html.find("7 (drawn)"), std::string::npos);
  EXPECT_NE(html.find("Linux &lt;6.8&gt;"), std::string::npos) << "node text is escaped";
  EXPECT_NE(html.find("EPYC &times; 64"), std::string::npos);
  EXPECT_NE(html.find("performance, 1500&ndash;3500"), std::string::npos);
  EXPECT_NE(html.find("gpu_count=8"), std::string::npos);
  EXPECT_NE(html.find("cached"), std::string::npos);
  EXPECT_NE(html.find("#1 3.6 s"), std::string::npos);
  EXPECT_NE(html.find("0: 0.5"), std::string::npos);
}

TEST(ReportProvenanceTest, AbsentForAnExperimentWithoutProvenance) {
  ExperimentRecord e;
  e.id = "old";
  e.state = ExperimentState::kDone;  // provenance_json is "{}" as migrated rows read
  EXPECT_EQ(Render(e).find("id=\"provenance\""), std::string::npos);
  e.provenance_json = "not json";
  EXPECT_EQ(Render(e).find("id=\"provenance\""), std::string::npos);
}

}  // namespace
}  // namespace codl::report
