// ServiceNotifier: tells the service manager how a daemon is doing (systemd Type=notify).
// READY=1 once the daemon serves, STOPPING=1 when it shuts down, and WATCHDOG=1 pings from a
// small thread at half of WATCHDOG_USEC when the unit sets WatchdogSec=. Built on libsystemd's
// sd_notify when CODL_HAVE_SYSTEMD; otherwise (and outside systemd: no $NOTIFY_SOCKET) every
// call is a no-op, so the daemons call it unconditionally.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace codl::daemon {

class ServiceNotifier {
 public:
  // `healthy`, when given, is asked before each watchdog ping; a false answer skips the ping, so
  // a wedged daemon is restarted by systemd instead of being kept alive by this thread.
  explicit ServiceNotifier(std::function<bool()> healthy = nullptr);
  ~ServiceNotifier();  // stops the watchdog thread
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // READY=1 with a STATUS= line; starts the watchdog thread when the watchdog is enabled.
  void Ready(const std::string& status);
  // STOPPING=1; stops the watchdog thread (systemd does not expect pings while stopping).
  void Stopping();

  // Interval between watchdog pings in seconds; 0 when the watchdog is off (or no libsystemd).
  double watchdog_interval_s() const { return watchdog_interval_s_; }
  static bool Supported();  // built with libsystemd

 private:
  void WatchdogLoop();
  void StopWatchdog();

  std::function<bool()> healthy_;
  double watchdog_interval_s_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread watchdog_;
};

}  // namespace codl::daemon
