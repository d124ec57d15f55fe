// What codl-inject prints: the protocol records the agent parses (injectors/core/protocol.h), or
// a live line for people.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "injectors/core/injector.h"
#include "injectors/core/protocol.h"

namespace codl::inject {

// protocol::Interval records on stdout, flushed per line.
class JsonReporter final : public injectors::Reporter {
 public:
  JsonReporter(std::string unit, std::string phase)
      : unit_(std::move(unit)), phase_(std::move(phase)) {}
  void Report(const injectors::Sample& s) override;

 private:
  std::string unit_, phase_;
};

// A synchronized start's (--start-at --json) account of itself: protocol::StartAccount.
using StartAccount = injectors::protocol::StartAccount;

// Prints the StartAccount record, then a protocol::FirstLoad (Injector::FirstLoadTimes, when
// the injector tracks it), with the run's first interval
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

void PrintSummaryJson(const SummaryFields& f);  // a protocol::Summary record
void PrintSummaryHuman(const SummaryFields& f);

// What an injector asks of codl-inject (HostServices): rendezvous values, victim variables and
// MPS status are protocol records on stdout in every mode (a person starting rank 1 by hand
// copies the value from there); notes are protocol::Note records with --json, else
// "codl-inject INJECTOR: text" on stderr, beside the live line.
class StdoutHostServices final : public injectors::HostServices {
 public:
  StdoutHostServices(const injectors::Descriptor& descriptor, bool json)
      : descriptor_(descriptor), json_(json) {}
  // The validated options, for the rendezvous key (before Setup).
  void SetOptions(const injectors::OptionValues* options) { options_ = options; }

  Status PublishRendezvous(std::string_view value) override;
  Status ExportVictimEnv(const std::map<std::string, std::string>& env) override;
  void Note(std::string_view text) override;
  void ReportMps(const injectors::protocol::MpsStatus& status) override;

 private:
  const injectors::Descriptor& descriptor_;
  const bool json_;
  const injectors::OptionValues* options_ = nullptr;
};

void PrintUsage(std::FILE* out);
void PrintList(bool json, const injectors::HostInfo& host);
void PrintInjectorHelp(const injectors::Injector& injector, const injectors::HostInfo& host);

}  // namespace codl::inject
