// The Prometheus /metrics endpoint both daemons serve (`--metrics-listen`, `metrics_listen:`).
// Header-only on purpose: its two users already link prometheus-cpp, and codl_daemon does not
// need to.
#pragma once

#include <cctype>
#include <exception>
#include <map>
#include <memory>
#include <string>

#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

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

// The base-unit suffix of a rate metric for an injector's unit, so that one metric never mixes
// units (Prometheus convention: the unit is in the name, never in a label):
//   "bytes/s" -> "bytes_per_second", "busbw bytes/s" -> "bus_bytes_per_second",
//   "FLOP/s" -> "flop_per_second", "IOPS"/"ops/s" -> "operations_per_second",
//   anything else "X/s" -> "x_per_second" (lower case, other characters as '_').
inline std::string RateMetricSuffix(const std::string& unit) {
  if (unit == "bytes/s") return "bytes_per_second";
  if (unit == "busbw bytes/s") return "bus_bytes_per_second";
  if (unit == "FLOP/s") return "flop_per_second";
  if (unit == "IOPS" || unit == "ops/s") return "operations_per_second";
  std::string base = unit;
  const bool per_second = base.size() > 2 && base.compare(base.size() - 2, 2, "/s") == 0;
  if (per_second) base.resize(base.size() - 2);
  std::string out;
  for (char c : base) {
    const bool word = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (word) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty()) out = "units";
  return per_second ? out + "_per_second" : out;
}

// `name`{role} (e.g. codl_controller_connections): open connections on the daemon's listener by
// caller role ("unauthenticated": TCP, no authorized call yet), set from
// rpc::OpenConnectionsByRole() by the daemon's metrics refresh.
inline prometheus::Family<prometheus::Gauge>& RegisterConnectionsGauge(
    prometheus::Registry& registry, const std::string& name) {
  return prometheus::BuildGauge()
      .Name(name)
      .Help(
          "Open connections on the daemon's listener (unix socket or TCP), by the caller's "
          "role; \"unauthenticated\": TCP connections that have made no authorized call yet.")
      .Register(registry);
}
inline void SetConnectionsGauge(prometheus::Family<prometheus::Gauge>& family,
                                const std::map<std::string, int>& by_role) {
  for (const auto& [role, n] : by_role) family.Add({{"role", role}}).Set(n);
}

// codl_build_info{daemon, version} 1: the conventional way to put a build's version on a
// dashboard and to join it onto other series.
inline void RegisterBuildInfo(prometheus::Registry& registry, const std::string& daemon,
                              const std::string& version) {
  prometheus::BuildGauge()
      .Name("codl_build_info")
      .Help("Build of this daemon (value 1; labels daemon, version).")
      .Register(registry)
      .Add({{"daemon", daemon}, {"version", version}})
      .Set(1);
}

// The registry in the text exposition format (what /metrics serves): for tests and debugging.
inline std::string ExpositionText(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace codl::daemon
