// ProgressView: live progress of an experiment. On a terminal: one redrawn line with a bar,
// trials done/total, the current pairing and the ETA. Otherwise (pipes, CI logs): one line per
// event. Colour only on a terminal and never when NO_COLOR is set (https://no-color.org).
#pragma once

#include <cstdio>
#include <string>

#include "codl/v1/controller.pb.h"

namespace codl::cli {

class ProgressView {
 public:
  explicit ProgressView(FILE* out);
  void OnEvent(const v1::ExperimentEvent& ev);
  void Finish();  // ends the redrawn line

 private:
  std::string Bar(int done, int total) const;
  FILE* out_;
  bool tty_;
  bool color_;
  bool drawn_ = false;
  // What runs before the first trial (calibration, warm-up runs), shown in the bar in place of
  // the state until a trial starts.
  std::string activity_;
};

std::string FormatEta(double seconds);
// Adaptive repetitions: "  stopped: <reason>", else "  <precision of the last block>", else "".
std::string AdaptiveNote(const v1::ExperimentStatus& status);

}  // namespace codl::cli
