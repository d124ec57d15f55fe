#include "codlctl/watch_follow.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "lib/common/utf8.h"

namespace codl::cli {

std::string ControllerLostLine(const std::string& address, const std::string& id,
                               const std::string& error, bool reconnecting) {
  std::string line = "codlctl: lost the controller at " + address + " (" + error +
                     "); experiment " + id +
                     " is kept in its database (a restarted controller marks it interrupted "
                     "unless it resumes it; `codlctl resume " +
                     id + "` continues it)";
  return line + (reconnecting ? "; reconnecting until it is back (Ctrl-C stops watching)"
                              : "; re-attach with `codlctl watch " + id + "` once it is back");
}

Status FollowExperiment(ControllerClient* client, const std::string& id,
                        const std::function<void(const v1::ExperimentEvent&)>& on_event,
                        const FollowOptions& o) {
  double backoff_s = kFirstReconnectS;
  bool lost = false;        // said, and not back yet
  bool ever_heard = false;  // a controller never reached is an error at once, not a loss
  for (;;) {
    bool heard = false;
    Status s = client->Watch(id, [&](const v1::ExperimentEvent& ev) {
      if (lost) {
        o.say("codlctl: the controller at " + client->address() + " is back; watching " + id +
              " again");
        lost = false;
      }
      heard = ever_heard = true;
      on_event(ev);
    });
    if (s.ok() || s.code() != StatusCode::kUnavailable || !ever_heard) return s;
    if (heard) backoff_s = kFirstReconnectS;  // a new loss: start the backoff again
    if (!lost)
      o.say(ControllerLostLine(client->address(), id, TerminalSafe(s.message()), o.reconnect));
    if (!o.reconnect) return s;
    lost = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff_s));
    backoff_s = std::min(backoff_s * 2, kMaxReconnectS);
  }
}

}  // namespace codl::cli
