// Following an experiment over WatchExperiment so that losing the controller does not lose the
// watcher: the study is durable (it lives in the controller's database), so a watcher says so
// and how to re-attach, and with `reconnect` retries with backoff and carries on once the
// controller is back (its stream opens with the experiment's current status, so nothing is
// replayed and nothing after the gap is missed: the status carries the counts).
#pragma once

#include <functional>
#include <string>

#include "codl/v1/controller.pb.h"
#include "codlctl/controller_client.h"
#include "lib/common/result.h"

namespace codl::cli {

struct FollowOptions {
  bool reconnect = false;
  // How a line of codlctl's own reaches stderr (above a progress bar, or as a JSON note).
  std::function<void(const std::string& line)> say;
};

// The reconnect backoff: the first retry after this, doubling up to kMaxReconnectS.
inline constexpr double kFirstReconnectS = 0.5;
inline constexpr double kMaxReconnectS = 10;

// Watches `id` until its stream ends. A controller not reached at all is the error it gives
// (exit 3, as before). A lost one (UNAVAILABLE after the stream had begun): without
// `o.reconnect`, says that the study is kept and how to re-attach, and returns the error; with
// it, says so once per loss, retries (kFirstReconnectS doubling to kMaxReconnectS) until the
// controller answers again, says so, and goes on. Other errors are returned at once.
Status FollowExperiment(ControllerClient* client, const std::string& id,
                        const std::function<void(const v1::ExperimentEvent&)>& on_event,
                        const FollowOptions& o);

// The words for a watcher that lost its controller: the study is kept, how to re-attach.
std::string ControllerLostLine(const std::string& address, const std::string& id,
                               const std::string& error, bool reconnecting);

}  // namespace codl::cli
