#include "injectors/gpu/duty_window.h"

#include <algorithm>

namespace codl::injectors::gpu {

double DutyWindow::WaitFor(double op_s) const {
  if (duty_.always_on()) return 0;
  const double now = Now();
  const double closed_for = duty_.WaitAt(now);
  if (closed_for > 0) return closed_for;
  const double end = duty_.WindowEndAt(now);
  const double start = std::max(now, busy_until_);
  // Unknown duration: only into an empty queue (Issued then books the rest of the window).
  const bool fits = op_s > 0 ? start + op_s <= end : busy_until_ <= now;
  if (fits) return 0;
  // Does not fit any more: the next window opens one period after this one did.
  return end - now + duty_.period() * (1 - duty_.duty());
}

void DutyWindow::Issued(double op_s) {
  if (duty_.always_on()) return;
  const double now = Now();
  const double start = std::max(now, busy_until_);
  busy_until_ = op_s > 0 ? start + op_s : std::max(start, duty_.WindowEndAt(now));
}

void DutyWindow::Idle() { busy_until_ = std::min(busy_until_, Now()); }

}  // namespace codl::injectors::gpu
