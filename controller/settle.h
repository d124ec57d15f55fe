// Settle and judgement rules of one trial (docs/validity.md, "Settle"):
// - the victim starts only once every antagonist has held >= settle_fraction of its target for
//   the whole `settle` window, polled without a gap; a poll below the line restarts the window.
//   When no window completes within settle + the grace, the trial is "did not settle".
// - a trial whose victim window holds fewer than `min_antagonist_samples` samples of some
//   antagonist is "too short to judge": its "held its target" verdict would rest on noise.
// Both verdicts flag the trial; the reasons below start its error text, so they are stored and
// shown wherever the error is.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace codl::controller {

inline constexpr const char* kDidNotSettle = "did not settle";
inline constexpr const char* kTooShortToJudge = "too short to judge";

class SettleWindow {
 public:
  enum class Verdict { kWaiting, kSettled, kDidNotSettle };

  // window_s: how long the targets must be held; give_up_s: how long after the first poll to
  // keep trying for a complete window.
  SettleWindow(double window_s, double give_up_s) : window_s_(window_s), give_up_s_(give_up_s) {}

  // One poll at monotonic time `now_s`: whether every antagonist was at its target then.
  Verdict Observe(double now_s, bool all_at_target);

  // The longest unbroken hold seen so far, for the "did not settle" message.
  double longest_hold_s() const { return longest_hold_s_; }
  double window_s() const { return window_s_; }

 private:
  double window_s_;
  double give_up_s_;
  std::optional<double> first_poll_s_;
  std::optional<double> held_since_s_;  // start of the current unbroken hold
  double longest_hold_s_ = 0;
};

// The latest telemetry sample of each antagonist of a trial, fed from the agents' streams (the
// settle step waits on it instead of polling). An antagonist is at target when its latest
// sample is at or above its line and fresh: a stream that went quiet (a dead antagonist, a lost
// stream) must not keep an old sample counting as "held". Not thread-safe: the caller locks.
class TargetBoard {
 public:
  // stale_s: how old a sample may be and still count (antagonists report at least 4x/s).
  explicit TargetBoard(double stale_s) : stale_s_(stale_s) {}
  // line: the rate at or above which `id` is at its target (0: any sample counts).
  void Expect(const std::string& id, double line) { entries_[id].line = line; }
  // False (and ignored) for an id that was not expected.
  bool OnSample(const std::string& id, double achieved, double now_s);
  bool AllAtTarget(double now_s) const;
  bool AtTarget(const std::string& id, double now_s) const;
  // The latest achieved rate of `id`, 0 before its first sample.
  double Latest(const std::string& id) const;
  // How long ago `id`'s latest sample arrived; infinity before its first.
  double SampleAgeS(const std::string& id, double now_s) const;

 private:
  struct Entry {
    double line = 0;
    std::optional<double> achieved;
    double at_s = 0;
  };
  double stale_s_;
  std::map<std::string, Entry> entries_;
};

// "did not settle: targets held for at most 1.2 s of the 3 s window within 13 s".
std::string DidNotSettleReason(const SettleWindow& w, double waited_s);

// "" when every antagonist left at least `min_samples` samples in the victim's window, else
// "too short to judge: membw had 3 samples in the victim's run (fewer than 5)".
std::string TooShortReason(const std::string& antagonist, int samples, int min_samples);

// How one antagonist's synchronized start went, in ms relative to the trial's common start on
// the controller's clock (docs/performance.md, "Synchronized start skew"). Optional fields are
// absent when the agent's codl-inject did not report them.
struct StartAccount {
  double skew_ms = 0;              // its wait ended (started_unix_ns): the recorded start skew
  std::optional<double> ready_ms;  // its setup and calibration were done (> 0: after the start)
  double setup_s = 0;              // Setup()'s measured duration
  double setup_estimate_s = 0;     // what its agent estimated for it
  std::optional<double> first_load_ms;  // its load first reached the resource (first submit)
  std::optional<double> first_done_ms;  // the first unit of that work came back
};

// "" unless the antagonist could not start on time because its preparation ended after the
// common start; then why, e.g. "flood on h2 started 212 ms late: its setup took 0.561 s, over
// the agent's estimate of 0.35 s" (or, with the setup within its estimate: "its preparation
// ended 212 ms after the common start, its setup (0.2 s) within the estimate (0.35 s)").
std::string LateStartReason(const std::string& antagonist, const std::string& node,
                            const StartAccount& a);

// One line per antagonist per trial for the log, which the skew bench parses:
// "antagonist=flood node=h2 skew_ms=0.412 ready_ms=-226.301 setup_s=0.1234
//  setup_estimate_s=0.3500 first_load_ms=0.520 first_done_ms=0.811" (unknown fields: "-").
std::string FormatStartAccount(const std::string& antagonist, const std::string& node,
                               const StartAccount& a);

}  // namespace codl::controller
