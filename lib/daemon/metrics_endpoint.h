// The Prometheus /metrics endpoint both daemons serve (`--metrics-listen`, `metrics_listen:`).
// Header-only on purpose: its two users already link prometheus-cpp, and codl_daemon does not
// need to.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "lib/common/result.h"

namespace codl::daemon {

// Serves `registry` on http://LISTEN/metrics, or says why it cannot (port taken, bad address).
inline Result<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const std::string& listen, const std::shared_ptr<prometheus::Registry>& registry) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return InvalidArgument("--metrics-listen '" + listen + "': " + e.what());
  }
  exposer->RegisterCollectable(registry);
  return exposer;
}

}  // namespace codl::daemon
