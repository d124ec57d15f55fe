// The wait of a synchronized start (codl-inject --start-at, Target::start): sleep on an absolute
// CLOCK_REALTIME deadline, then spin through the last stretch. A relative sleep in steps
// drifts by each step's timer slack and wake-up; an absolute deadline does not, and the spin
// covers the kernel's timer slack (50 us by default) and the wake-up itself whenever the CPU is
// free. (When it is not, nothing in user space can make the process run on time: that shows as
// a late started_unix_ns.)
#pragma once

#include <atomic>
#include <cstdint>

#include "injectors/core/injector.h"
#include "injectors/core/stop_token.h"

namespace codl::injectors {

// CLOCK_REALTIME in nanoseconds: the clock of --start-at and of every *_unix_ns codl-inject
// prints.
int64_t RealtimeNanos();

// How long before the deadline the sleep ends and the spin begins.
inline constexpr int64_t kStartSpinNs = 200'000;

// Returns true at `deadline_unix_ns` (at once when it has passed), false as soon as `stop`
// fires (checked at least every 20 ms while sleeping). spin_ns = 0: no spin (the wake-up is
// then the kernel's timer slack late, ~50 us): for threads that need not be first.
bool WaitUntilUnixNs(int64_t deadline_unix_ns, const StopToken& stop,
                     int64_t spin_ns = kStartSpinNs);

// Stamps `slot` with RealtimeNanos() unless it already holds a time: the first event wins.
void StampOnce(std::atomic<int64_t>& slot);

// Run()'s side of Target::start: waits for the gate (at once when `gate` is null) and stamps its
// started_unix_ns (first caller wins). False when `stop` fired first: the load must not begin.
bool AwaitStart(StartGate* gate, const StopToken& stop, int64_t spin_ns = kStartSpinNs);

}  // namespace codl::injectors
