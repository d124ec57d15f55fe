// ProgressParser: turns a victim's stdout into steps and one metric (docs/victim.md, "Progress
// formats"). Three formats:
//   jsonl  every line that is a JSON object with a numeric `field` (default step_time_s) is a
//          step; its "phases" object gives per-phase times; lines with "summary":true, without
//          the field, or that are not JSON are ignored (the non-JSON ones are counted).
//   regex  every line where `pattern` matches is a step; its first capture group is the metric.
//   wall   the metric is the victim's wall time; stdout is not read.
// Whatever the format, a line {"dataset":true,"generated":K,"total":N} is the victim generating
// its dataset before it trains (codl-victim does, docs/victim.md): a progress record of that
// phase, never a step.
// The first `warmup_steps` steps (and any line marked "warmup":true) are kept but excluded from
// the metric and the phase medians. The metric is the median over measured steps.
// A failed victim (non-zero exit, signal, timeout, no parsable progress) is never a measurement:
// Finish() then returns ok=false with an error that says why.
// Not thread-safe: the caller serialises OnStdoutLine and Finish.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lib/common/records.h"
#include "lib/spec/progress_pattern.h"
#include "lib/spec/spec.h"

namespace codl::agent {

class ProgressParser {
 public:
  // keep_steps false (a workload antagonist, which may run for hours): only the latest step is
  // kept (steps() holds at most that one) and none is ever dropped; the metric is not used.
  ProgressParser(const codl::experiment::ProgressSpec& spec, int warmup_steps,
                 bool keep_steps = true);

  // What one line turned out to be.
  enum class LineKind { kOther, kStep, kDataset };
  // The victim's dataset generation as it last reported it.
  struct DatasetProgress {
    int64_t generated = 0;  // samples written so far
    int64_t total = 0;      // samples to write
    double t_s = 0;         // when it said so, since victim start
  };

  // One line of stdout, without its newline (a trailing '\r' is ignored); t_s since victim start.
  LineKind OnStdoutLine(std::string_view line, double t_s);

  struct Outcome {
    bool ok = false;
    std::string error;
    double value_s = 0;  // the trial's value: the median measured step time, or the wall time
    std::vector<codl::VictimStep> steps;          // every parsed step, warmup included
    std::map<std::string, double> phase_medians;  // over measured steps that report the phase
    std::vector<std::string> phase_order;         // phase_medians' names in first-reported order
    int lines = 0;                                // non-empty stdout lines seen
    int malformed_lines = 0;    // jsonl: not a JSON object, or the field not a finite number >= 0;
                                // regex: matched, but the capture is not a number
    int64_t dropped_steps = 0;  // steps beyond kMaxSteps (not kept: bounded memory and replies)
  };
  // A victim's output is bounded before it reaches memory and the RunVictim reply: at most this
  // many steps are kept (the metric is their median), each with at most kMaxPhases phases.
  static constexpr size_t kMaxSteps = 100000;
  static constexpr size_t kMaxPhases = 64;

  // exit_code: the exit status, or -signal when killed by a signal.
  Outcome Finish(int exit_code, bool timed_out, double wall_s,
                 const std::string& stderr_tail) const;

  // Steps parsed so far (for live telemetry).
  const std::vector<codl::VictimStep>& steps() const { return steps_; }
  // Steps parsed so far, warmup included (with keep_steps false too).
  int64_t parsed_steps() const { return parsed_steps_; }
  // The last dataset record (total 0: none seen).
  const DatasetProgress& dataset() const { return dataset_; }

 private:
  LineKind OnJsonLine(std::string_view line, double t_s);
  LineKind OnRegexLine(std::string_view line, double t_s);
  // A dataset record in a line that is not JSON progress (regex, wall): kOther when it is none.
  LineKind OnOtherLine(std::string_view line, double t_s);
  // nullopt when `j` is no dataset record; else kDataset for a well-formed one (dataset_ updated)
  // and kOther for a bad one (counted as malformed).
  std::optional<LineKind> OnDatasetRecord(const nlohmann::ordered_json& j, double t_s);
  // `phases`: the step's phase names in the order the line listed them.
  bool AddStep(codl::VictimStep step, bool marked_warmup, const std::vector<std::string>& phases);

  codl::experiment::ProgressSpec spec_;
  int warmup_steps_;
  bool keep_steps_ = true;
  int64_t parsed_steps_ = 0;
  std::shared_ptr<const re2::RE2> regex_;
  std::string regex_error_;  // set when the pattern does not compile or has no capture group
  std::vector<codl::VictimStep> steps_;
  int lines_ = 0;
  int malformed_ = 0;
  int64_t dropped_steps_ = 0;
  std::vector<std::string> phase_order_;  // every phase name, in first-reported order
  std::set<std::string> phase_seen_;      // the same names, to look up
  DatasetProgress dataset_;
};

}  // namespace codl::agent
