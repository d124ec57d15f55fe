#include "controller/settle.h"

#include <algorithm>
#include <cstdio>

namespace codl::controller {

SettleWindow::Verdict SettleWindow::Observe(double now_s, bool all_at_target) {
  if (!first_poll_s_) first_poll_s_ = now_s;
  if (!all_at_target) {
    held_since_s_.reset();  // a dip restarts the window: "held" means without a gap
  } else {
    if (!held_since_s_) held_since_s_ = now_s;
    const double held = now_s - *held_since_s_;
    longest_hold_s_ = std::max(longest_hold_s_, held);
    if (held >= window_s_) return Verdict::kSettled;
  }
  if (now_s - *first_poll_s_ >= give_up_s_) return Verdict::kDidNotSettle;
  return Verdict::kWaiting;
}

std::string DidNotSettleReason(const SettleWindow& w, double waited_s) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%s: targets held for at most %.3g s of the %.3g s settle window within %.3g s",
                kDidNotSettle, w.longest_hold_s(), w.window_s(), waited_s);
  return buf;
}

std::string TooShortReason(const std::string& antagonist, int samples, int min_samples) {
  if (samples >= min_samples) return "";
  return std::string(kTooShortToJudge) + ": " + antagonist + " had " + std::to_string(samples) +
         " samples in the victim's run (fewer than " + std::to_string(min_samples) + ")";
}

}  // namespace codl::controller
