// libFuzzer target: the experiment YAML parser and planner (lib/spec), as the controller runs
// them on a submitted experiment. Any crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  auto spec = codl::experiment::ParseExperiment(yaml, "<fuzz>", codl::experiment::ParseHooks{});
  if (spec.ok()) {
    auto plan = codl::experiment::ExpandPlan(*spec);
    (void)codl::experiment::EstimateDurationSeconds(*spec, plan, 10);
  }
  return 0;
}
