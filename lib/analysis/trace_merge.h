// `codlctl trace`: a victim's profiler trace (victim.trace, Chrome-trace JSON as PyTorch's
// profiler writes it) with the trial's antagonists added as counter tracks on the same time axis,
// so that Perfetto shows what each antagonist achieved beside the steps it slowed.
#pragma once

#include <string>

#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::experiment {

struct MergedTrace {
  std::string json;        // the whole trace, with the counter events and their process name
  int counter_events = 0;  // how many were added
  std::string note;        // how the clocks were aligned, or why no counter was added
};

// Aligns the trace's clock on the trial's: the end of the trace's first `codl.step#K` range is
// the end of step K as the trial recorded it (VictimStep::t_s, seconds since the victim started,
// the axis of the antagonists' samples). Each antagonist instance's samples become a counter
// track "NAME achieved (UNIT)" with its achieved and target rate. Input that is not a trace
// (not JSON, no "traceEvents") is an error naming what was expected.
Result<MergedTrace> MergeTraceWithAntagonists(const std::string& trace_json,
                                              const TrialRecord& trial);

}  // namespace codl::experiment
