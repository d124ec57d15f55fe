// What codl-inject prints: the JSON-lines stream the agent parses, or a live line for people.
#pragma once

#include <cstdio>
#include <string>

#include "injectors/injector.h"

namespace codl::inject {

// Interval lines: {"t_s":…,"achieved":…,"target":…,"unit":…,"phase":…,"saturated":…[,"iops":…]}
// on stdout, flushed per line.
class JsonReporter final : public injectors::Reporter {
 public:
  JsonReporter(std::string unit, std::string phase)
      : unit_(std::move(unit)), phase_(std::move(phase)) {}
  void Report(const injectors::Sample& s) override;

 private:
  std::string unit_, phase_;
};

// A live line on stdout: refreshed in place with '\r' on a TTY, one line per second otherwise.
class HumanReporter final : public injectors::Reporter {
 public:
  HumanReporter(std::string unit, std::string phase);
  ~HumanReporter() override;
  void Report(const injectors::Sample& s) override;

 private:
  std::string unit_, phase_;
  bool tty_;
  bool dirty_ = false;  // a '\r' line is on screen
  double last_print_ = -1;
};

struct SummaryFields {
  std::string injector, unit, mode;  // mode: "calibrate" | "max" | "rate" | "level"
  double target_rate = 0;            // 0 for --max and --calibrate
  double peak_rate = 0;              // calibrated or --peak; 0 when not measured
  double level = -1;                 // --level only
  bool stopped_by_signal = false;
  injectors::RunSummary run;
};

void PrintSummaryJson(const SummaryFields& f);
void PrintSummaryHuman(const SummaryFields& f);

void PrintUsage(std::FILE* out);
void PrintList(bool json, const injectors::HostInfo& host);
void PrintInjectorHelp(const injectors::Injector& injector, const injectors::HostInfo& host);

}  // namespace codl::inject
