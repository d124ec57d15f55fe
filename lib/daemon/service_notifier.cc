#include "lib/daemon/service_notifier.h"

#include <chrono>
#include <cstdint>

#ifdef CODL_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace codl::daemon {
namespace {

void Notify(const std::string& state) {
#ifdef CODL_HAVE_SYSTEMD
  sd_notify(0, state.c_str());  // no $NOTIFY_SOCKET: returns 0 and does nothing
#else
  (void)state;
#endif
}

}  // namespace

bool ServiceNotifier::Supported() {
#ifdef CODL_HAVE_SYSTEMD
  return true;
#else
  return false;
#endif
}

ServiceNotifier::ServiceNotifier(std::function<bool()> healthy) : healthy_(std::move(healthy)) {
#ifdef CODL_HAVE_SYSTEMD
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if set) is this process.
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) watchdog_interval_s_ = usec / 2e6;
#endif
}

ServiceNotifier::~ServiceNotifier() { StopWatchdog(); }

void ServiceNotifier::Ready(const std::string& status) {
  Notify("READY=1\nSTATUS=" + status);
  std::lock_guard<std::mutex> lock(mu_);
  if (watchdog_interval_s_ > 0 && !watchdog_.joinable() && !stop_) {
    watchdog_ = std::thread([this] { WatchdogLoop(); });
  }
}

void ServiceNotifier::Stopping() {
  StopWatchdog();
  Notify("STOPPING=1");
}

void ServiceNotifier::StopWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void ServiceNotifier::WatchdogLoop() {
  const auto interval = std::chrono::duration<double>(watchdog_interval_s_);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    if (!healthy_ || healthy_()) Notify("WATCHDOG=1");
    lock.lock();
    cv_.wait_for(lock, interval, [this] { return stop_; });
  }
}

}  // namespace codl::daemon
