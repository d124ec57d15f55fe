// What codl-inject prints: the JSON-lines stream the agent parses, or a live line for people.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
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

// A synchronized start's (--start-at --json) account of itself, the first line of the run:
//   {"started_unix_ns":W,"start_at_unix_ns":S,"ready_unix_ns":R,"setup_s":X,"setup_estimate_s":E}
// W: the wait ended (the load begins); S: the common start asked for; R: setup and calibration
// were done and the wait began (R > S: the preparation overran the start); X: Setup()'s own
// duration; E: the injector's estimate of it (Injector::SetupEstimateS).
struct StartAccount {
  int64_t started_unix_ns = 0;
  int64_t start_at_unix_ns = 0;
  int64_t ready_unix_ns = 0;
  double setup_s = 0;
  double setup_estimate_s = 0;
};

// Prints the StartAccount line, then {"first_load_unix_ns":N[,"first_done_unix_ns":M]}
// (Injector::FirstLoadTimes, when the injector tracks it), with the run's first interval line
// rather than at the start instant: at that instant the CPUs belong to the load starting here
// and on every other node sharing them, and the line wakes the agent (which replies to the
// controller at once). Passes every sample on; Finish() prints what no sample did (a run too
// short to report; nothing when it was stopped before the start). Only in a synchronized start,
// so plain runs keep their stream unchanged.
class StartAccountReporter final : public injectors::Reporter {
 public:
  // started_unix_ns comes from `gate` (the injector stamps it when its load begins).
  StartAccountReporter(const injectors::Injector& inj, StartAccount account,
                       const injectors::StartGate& gate, std::unique_ptr<injectors::Reporter> inner)
      : inj_(inj), account_(account), gate_(gate), inner_(std::move(inner)) {}
  void Report(const injectors::Sample& s) override;
  void Finish();

 private:
  const injectors::Injector& inj_;
  StartAccount account_;
  const injectors::StartGate& gate_;
  std::unique_ptr<injectors::Reporter> inner_;
  bool account_printed_ = false, first_load_printed_ = false;
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
