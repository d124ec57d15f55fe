// ProgressView: live progress of an experiment. On a terminal: one redrawn line with a bar,
// trials done/total, the current pairing and the ETA. Otherwise (pipes, CI logs): one line per
// event. Colour only on a terminal and never when NO_COLOR is set (https://no-color.org).
// Phases before the trials show in place of the pairing: calibration, warm-up runs, and the
// victim generating its dataset ("dataset 120/256 samples").
// With json_lines (`codlctl run --log-format json`): neither, but one JSON log line per event
// with a message, in the daemons' log format (lib/daemon/logging.h, component "codlctl"), so that
// the stream it shares with the embedded daemons' logs stays one JSON object per line; level
// "warn" for what the terminal highlights.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "codl/v1/controller.pb.h"

namespace codl::cli {

class ProgressView {
 public:
  explicit ProgressView(FILE* out, bool json_lines = false);
  void OnEvent(const v1::ExperimentEvent& ev);
  void Finish();  // ends the redrawn line

 private:
  std::string Bar(int done, int total) const;
  FILE* out_;
  bool tty_;
  bool color_;
  bool drawn_ = false;
  bool json_lines_;
  // What runs before the first trial (calibration, warm-up runs), shown in the bar in place of
  // the state until a trial starts.
  std::string activity_;
};

// How the terminal view shows an event, decided from its kind alone (never from its text).
struct EventLook {
  bool above_bar = false;  // printed on a line of its own above the bar
  bool bad = false;        // highlighted: a failure, a flag, a warning
  bool activity = false;   // shown in the bar until the first trial (calibration, warm-up)
};
EventLook LookOf(const v1::ExperimentEvent& ev);

// Writes `text` (whole lines) to `out` on lines of their own: when a ProgressView has its bar
// drawn on `out`, the bar's line is cleared first and the bar drawn again after, so a log line
// of the embedded daemons (a warning) is never glued onto the bar. Safe from any thread.
void WriteAboveBar(FILE* out, std::string_view text);

std::string FormatEta(double seconds);
// "dataset 120/256 samples" while the victim generates its dataset, else "".
std::string DatasetNote(const v1::ExperimentStatus& status);
// `message` as codlctl's JSON log line at `level` (what --log-format json prints on stderr).
std::string JsonNote(const std::string& level, const std::string& message);
// Adaptive repetitions: "  stopped: <reason>", else "  <precision of the last block>", else "".
std::string AdaptiveNote(const v1::ExperimentStatus& status);

}  // namespace codl::cli
