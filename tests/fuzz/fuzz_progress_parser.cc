// libFuzzer target: the agent's victim progress parser on arbitrary stdout. The first byte picks
// the format (jsonl / regex with a fixed pattern / wall) and the warmup count; the rest is
// stdout, fed line by line, then Finish().
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/progress_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  codl::experiment::ProgressSpec spec;
  switch (data[0] % 3) {
    case 0: spec.format = codl::experiment::ProgressSpec::Format::kJsonl; break;
    case 1:
      spec.format = codl::experiment::ProgressSpec::Format::kRegex;
      spec.pattern = R"(step \d+ took ([0-9.eE+-]+) s)";
      break;
    default: spec.format = codl::experiment::ProgressSpec::Format::kWall;
  }
  codl::agent::ProgressParser parser(spec, (data[0] >> 2) % 4);
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  double t = 0;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    parser.OnStdoutLine(line, t += 0.01);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  (void)parser.Finish(0, false, t, "");
  return 0;
}
