#include "controller/settle.h"

#include <algorithm>
#include <cstdio>
#include <limits>

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

bool TargetBoard::OnSample(const std::string& id, double achieved, double now_s) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  it->second.achieved = achieved;
  it->second.at_s = now_s;
  return true;
}

bool TargetBoard::AtTarget(const std::string& id, double now_s) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.achieved) return false;
  const Entry& e = it->second;
  return now_s - e.at_s <= stale_s_ && *e.achieved >= e.line;
}

bool TargetBoard::AllAtTarget(double now_s) const {
  for (const auto& [id, e] : entries_) {
    if (!AtTarget(id, now_s)) return false;
  }
  return !entries_.empty();
}

double TargetBoard::Latest(const std::string& id) const {
  auto it = entries_.find(id);
  return it == entries_.end() || !it->second.achieved ? 0 : *it->second.achieved;
}

double TargetBoard::SampleAgeS(const std::string& id, double now_s) const {
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.achieved) return std::numeric_limits<double>::infinity();
  return now_s - it->second.at_s;
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

std::string LateStartReason(const std::string& antagonist, const std::string& node,
                            const StartAccount& a) {
  if (!a.ready_ms || *a.ready_ms <= 0) return "";
  char buf[256];
  if (a.setup_s > a.setup_estimate_s) {
    std::snprintf(buf, sizeof buf,
                  "%s on %s started %.3g ms late: its setup took %.3g s, over the agent's "
                  "estimate of %.3g s",
                  antagonist.c_str(), node.c_str(), a.skew_ms, a.setup_s, a.setup_estimate_s);
  } else {
    std::snprintf(buf, sizeof buf,
                  "%s on %s started %.3g ms late: its preparation ended %.3g ms after the "
                  "common start, its setup (%.3g s) within the estimate (%.3g s)",
                  antagonist.c_str(), node.c_str(), a.skew_ms, *a.ready_ms, a.setup_s,
                  a.setup_estimate_s);
  }
  return buf;
}

std::string FormatStartAccount(const std::string& antagonist, const std::string& node,
                               const StartAccount& a) {
  auto ms = [](const std::optional<double>& v) {
    if (!v) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", *v);
    return std::string(b);
  };
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "antagonist=%s node=%s skew_ms=%.3f ready_ms=%s setup_s=%.4f "
                "setup_estimate_s=%.4f first_load_ms=%s first_done_ms=%s",
                antagonist.c_str(), node.c_str(), a.skew_ms, ms(a.ready_ms).c_str(), a.setup_s,
                a.setup_estimate_s, ms(a.first_load_ms).c_str(), ms(a.first_done_ms).c_str());
  return buf;
}

}  // namespace codl::controller
