// Defaults and timeouts that more than one file (or more than one process) must agree on, in one
// place with the reason for each value. docs/configuration.md documents the user-visible ones.
// std-only: included by codlctl, codl-controller, codl-agent and codl-load-agents alike.
// Deadlines that must stay ordered across processes are derived here from one another, never
// written twice.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>

namespace codl::tunables {

// --- Addresses ---

// Where codl-controller listens and where everything else dials when no address was given (no
// flag, no config file key, no CODL_CONTROLLER). Loopback: a default must not expose the service
// on the network.
inline constexpr const char kDefaultControllerAddress[] = "127.0.0.1:7700";

// --- Leases and heartbeats ---

// The dead-man lease: an agent stops an antagonist after this much controller silence. Long
// enough to ride out a few lost heartbeats, short enough that a crashed controller leaves no
// load running for long. Experiments (`lease:`), both daemons (`--lease`) and `codlctl run
// --lease` default to it.
inline constexpr double kDefaultLeaseS = 10;
// The shortest lease anyone may ask for: under a second, ordinary scheduling jitter would stop
// antagonists mid-trial (and a hostile caller could make every start a no-op).
inline constexpr double kMinLeaseS = 1;
// How often agents heartbeat (the controller tells registered agents its own). Well below the
// lease, so that several heartbeats fit in one.
inline constexpr double kDefaultHeartbeatIntervalS = 1;
// How long after the controller starts an experiment whose nodes match no live agent waits for
// agents to (re-)register instead of failing (`agent_rejoin_grace`): a restarted controller's
// agents come back at their next reconnect, which backs off up to a few seconds.
inline constexpr double kDefaultAgentRejoinGraceS = 30;
// Faster than this, heartbeats from a large cluster would be the controller's main load.
inline constexpr double kMinHeartbeatIntervalS = 0.05;
// The embedded cluster of `codlctl run`: in-process, so heartbeats are cheap and a dead agent is
// noticed sooner.
inline constexpr double kEmbeddedHeartbeatIntervalS = 0.5;
inline constexpr double kEmbeddedAgentDeadAfterS = 3;
// An agent without a heartbeat for this many intervals (and at least kMinAgentDeadAfterS) is
// marked down: one late heartbeat is not a dead agent.
inline constexpr double kAgentDeadAfterHeartbeats = 3;
inline constexpr double kMinAgentDeadAfterS = 2;
inline double AgentDeadAfterS(double heartbeat_interval_s) {
  return std::max(kAgentDeadAfterHeartbeats * heartbeat_interval_s, kMinAgentDeadAfterS);
}
// ControllerOptions' value when its creator sets none; codl-controller's main derives its own
// from the heartbeat interval (AgentDeadAfterS).
inline constexpr double kDefaultAgentDeadAfterS = 5;

// --- Controller -> agent calls ---

// How long an agent waits for an antagonist's load to begin after a StartAntagonist request
// before it gives up and kills the child: setup can be slow (an io_uring file set is
// preallocated first). The controller sends its own value in the request (start_timeout_s);
// 0 there (an older controller) means this default.
inline constexpr double kAntagonistStartTimeoutS = 120;
// How much longer than the agent's start timeout the controller waits for the start's reply:
// the agent must be the one to give up (it then kills the child and says why), not the
// controller's deadline (which would leave a child the controller believes never started).
inline constexpr double kStartReplyMarginS = 30;
// The controller's StartAntagonist deadline for a request that carries `start_timeout_s`.
inline double StartDeadlineS(double start_timeout_s) {
  return (start_timeout_s > 0 ? start_timeout_s : kAntagonistStartTimeoutS) + kStartReplyMarginS;
}
// An estimate is arithmetic on the agent: a slow answer means a sick agent, and its start will
// tell.
inline constexpr double kEstimateSetupDeadlineS = 5;
// A status poll of one antagonist (settle by polling): answered from memory.
inline constexpr double kGetAntagonistDeadlineS = 3;
// A stop waits for the child to exit and its summary: seconds, not minutes.
inline constexpr double kStopAntagonistDeadlineS = 15;
inline constexpr double kStopAllDeadlineS = 10;
// The agent waits this long for a calibrating codl-inject beyond its duration (setup: buffers
// allocated and touched, files laid out) before it kills it.
inline constexpr double kCalibrationSetupS = 120;
// A calibration call runs for its duration plus the agent's setup allowance above, the spawn
// and the reply: derived, so the controller never gives up before the agent does.
inline constexpr double kCalibrateDeadlineMarginS = kCalibrationSetupS + 60;
static_assert(kCalibrateDeadlineMarginS > kCalibrationSetupS);
// A victim run may take victim.timeout; the agent then needs a little to kill and report it.
inline constexpr double kVictimDeadlineMarginS = 30;

// --- Agent -> controller calls ---

inline constexpr double kRegisterDeadlineS = 3;
// A heartbeat's deadline is its interval (at least this): a slower reply is a missed beat.
inline constexpr double kMinHeartbeatDeadlineS = 0.5;
inline constexpr double kPublishRendezvousDeadlineS = 5;
// A fetch waits up to its own wait_s on the controller; this much more for the reply.
inline constexpr double kFetchRendezvousMarginS = 5;

// --- codlctl -> controller calls ---

// Status, list, cancel, agents: answered from memory or one query.
inline constexpr double kCliCallDeadlineS = 10;
// A submit parses and stores the experiment (retried with the same idempotency key).
inline constexpr double kCliSubmitDeadlineS = 30;
// Results read every trial of an experiment from SQLite.
inline constexpr double kCliResultsDeadlineS = 60;
// A watch lasts as long as the experiment.
inline constexpr double kCliWatchDeadlineS = 7 * 24 * 3600.0;
// `codlctl calibrate`: the controller calibrates (kCalibrateDeadlineMarginS per call) and may
// retry; generous, as a calibration is rare and a timeout would waste it.
inline double CliCalibrateDeadlineS(double duration_s) { return duration_s * 4 + 300; }

// --- gRPC keepalive (every channel and every server) ---

// Clients ping an otherwise quiet connection that has a call open (a `watch` between events, a
// victim's long RunVictim) this often, with no limit on pings without data, so that a dead peer
// is noticed within a lease; clients never ping a connection with no call open.
inline constexpr int kClientKeepaliveMs = 10'000;
// How long a client waits for the ping's answer before it drops the connection.
inline constexpr int kClientKeepaliveTimeoutMs = 20'000;
// Servers accept pings this close together on a connection that sends no data. gRPC's default
// is 5 minutes, and a ping sooner is a "strike"; after two the server sends GOAWAY
// `too_many_pings` and the quiet watch is dropped. Derived from the client's interval, with room
// for timer jitter: the two must stay ordered.
inline constexpr int kServerMinPingIntervalMs = kClientKeepaliveMs / 2;
static_assert(kServerMinPingIntervalMs < kClientKeepaliveMs);

// "10s", "0.5s": a default in the form the duration flags parse (lib/common/units.h), so a
// flag's default text is made from the value above rather than written again.
inline std::string DurationFlagText(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", seconds);
  return buf;
}

}  // namespace codl::tunables
