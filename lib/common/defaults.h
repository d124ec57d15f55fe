// Defaults several binaries must agree on. One place, so codlctl, codl-agent, codl-controller
// and codl-load-agents cannot drift apart (docs/configuration.md documents the same values).
#pragma once

namespace codl {

// Where codl-controller listens and where everything else dials when no address was given
// (no flag, no config file key, no CODL_CONTROLLER). Loopback: a default must not expose
// the service on the network.
inline constexpr const char kDefaultControllerAddress[] = "127.0.0.1:7700";

}  // namespace codl
